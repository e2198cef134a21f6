"""fsunfollowed.py — prints part 3 of bench/collect_fs.sh: an unfollowed process's
time per getppid and per 64-byte pread64 with no fs dataset and with one following another
process through each hook, means and ratios (to no dataset, paired by round) with 95 %
intervals; then the hooks' BPF time per unfollowed syscall.

argv: CALLS BATCHES FOLLOWED_IOPS "ROUND HOOK GETPPID_NS PREAD_NS;..." "HOOK RUNS NS;..."
"""
import statistics
import sys

# two-sided 95 % quantiles of Student's t, by degrees of freedom (beyond 30: 2.0)
T95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
       2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04]


def interval(xs):
    """Mean and half-width of its 95 % interval (0 for a single value)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, 0.0
    t = T95[len(xs) - 2] if len(xs) - 2 < len(T95) else 2.0
    return m, t * statistics.stdev(xs) / len(xs) ** 0.5


def main():
    calls, batches, iops = (int(a) for a in sys.argv[1:4])
    runs = {}  # round -> hook -> (getppid, pread)
    for row in filter(str.strip, sys.argv[4].split(";")):
        r, hook, g, p = row.split()
        runs.setdefault(r, {})[hook] = (float(g), float(p))
    hooks = list(next(iter(runs.values())))
    what = "whole runs" if batches == 1 else f"the fastest of {batches} batches"
    print(f"an unfollowed process, {calls} getppid then {calls} pread64 of 64 B (page cache) ({what}), beside "
          f"a followed reader at {iops} reads/s; {len(runs)} rounds, order rotated; mean ± 95 %:")
    labels = {"off": "no fs dataset", "alone": "no fs dataset, reader stopped"}
    for hook in ["off"] + [h for h in hooks if h != "off"]:
        cells = []
        for i, name in ((0, "getppid"), (1, "pread64")):
            m, hw = interval([rr[hook][i] for rr in runs.values()])
            cell = f"{name} {m:7.1f} ± {hw:5.1f} ns"
            if hook != "off":
                rm, rhw = interval([rr[hook][i] / rr["off"][i] for rr in runs.values()])
                cell += f" (x{rm:.3f} ± {rhw:.3f})"
            cells.append(cell)
        label = labels.get(hook, f"fs dataset, --fs-hook {hook}")
        print(f"  {label:<34} " + "   ".join(cells))
    stats = [row.split() for row in filter(str.strip, sys.argv[5].split(";"))]
    syscalls = 2 * calls * batches
    if stats:
        print(f"BPF statistics over one unfollowed run ({syscalls} syscalls; the followed reader stopped):")
    for hook, n, ns in stats:
        n, ns = int(n), int(ns)
        per_run = ns / n if n else 0.0
        print(f"  --fs-hook {hook:<13} {n:>9} program runs ({n / syscalls:.2f} per syscall), "
              f"{per_run:.1f} ns per run, {ns / syscalls:.1f} ns per syscall")


if __name__ == "__main__":
    main()
