"""What nfsd.*[tier] and nfsd.queue cost per request, run by bench/collect_nfsd.sh inside a
kernel-matrix guest whose nfsd serves EXPORT (its files set up): windows of SECS seconds of
one strata-load client (randread 8 KiB from the page cache, 4 streams) alternate, in an
order that rotates every round, three sets of datasets, one collector per window:
  plain  nfsd.latency[op]
  tier   the same and nfsd.latency[tier] (the tier programs on every bio and context switch,
         and the dequeue that starts each request's record)
  queue  the same as plain and nfsd.queue[op] (enqueue, data arrival, whole call read, dequeue)
Per window, the BPF run time and runs of every program the collector holds
(kernel.bpf_stats_enabled) per NFS request (/proc/net/rpc/nfsd's count): under TCG a run
costs microseconds whatever it does, so the runs per request say what real hardware pays;
per round the ratios tier/plain and queue/plain; medians with their 95 % intervals over
ROUNDS rounds. With TIER_BEFORE (another strata-collect build) every window is run with
both builds, alternating, and per round and set the ratio this build/before. Absolute ns
are TCG-emulated; the ratios and runs are the result.   usage: nfsdtiercost.py REPO EXPORT"""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bpfstats import programs_of  # noqa: E402
from losses import median_interval  # noqa: E402

ROUNDS, SECS = int(os.environ.get("TIER_ROUNDS", 6)), os.environ.get("TIER_SECS", "4")
if os.environ.get("BENCH_SMOKE") == "1":
    ROUNDS, SECS = 1, "1"
MODES = {"plain": "add l nfsd.latency op\n", "tier": "add l nfsd.latency op\nadd t nfsd.latency tier\n",
         "queue": "add l nfsd.latency op\nadd q nfsd.queue op\n"}


def requests() -> int:
    line = next(ln for ln in Path("/proc/net/rpc/nfsd").read_text().splitlines() if ln.startswith("proc3 "))
    return sum(map(int, line.split()[2:]))


def window(repo: Path, export: str, mode: str, collect: str) -> tuple:
    """(BPF ns, program runs, {program: runs}) of the collector's programs per NFS request over
    one window of mode."""
    proc = subprocess.Popen([collect], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc.stdin.write(MODES[mode])
    proc.stdin.flush()
    acks, deadline = 0, time.monotonic() + 120
    for line in proc.stdout:  # loaded, verified, attached (the guest is slow): its datasets acked
        if time.monotonic() > deadline:
            proc.kill()
            sys.exit(f"nfsdtiercost: the collector did not attach nfsd for {mode} in 120 s")
        acks += '"type":"ack"' in line
        if acks == MODES[mode].count("add") and '"attached":[' in line and '"nfsd"' in line.split('"attached":[')[1]:
            break
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # the rest of its records, unread
    time.sleep(1)
    before, ops = programs_of(proc.pid), requests()
    subprocess.run([str(repo / "build/bin/strata-load"), "--server", "127.0.0.1", "--export", export,
                    "--profile", "randread", "--io-size", "8k", "--threads", "4", "--duration", SECS,
                    "--files", "4", "--file-size", "1m"], check=True, stdout=subprocess.DEVNULL)
    after, ops = programs_of(proc.pid), requests() - ops
    proc.stdin.close()
    proc.wait(timeout=60)
    ns = sum(t - before.get(n, (0, 0))[1] for n, (_, t) in after.items())
    each = {n: (c - before.get(n, (0, 0))[0]) / max(ops, 1) for n, (c, _) in after.items()}
    return ns / max(ops, 1), sum(each.values()), each


def interval(xs: list) -> str:
    med, (lo, hi) = median_interval(xs)
    return f"x{med:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if lo is not None else "")


def main(repo: Path, export: str) -> None:
    builds = {"this": str(repo / "build/bin/strata-collect")}
    if os.environ.get("TIER_BEFORE"):
        builds["before"] = os.environ["TIER_BEFORE"]
    samples = {(b, m): [] for b in builds for m in MODES}
    order = list(MODES)
    for r in range(ROUNDS):
        for m in order[r % 3:] + order[:r % 3]:
            for b in (list(builds) if r % 2 == 0 else list(builds)[::-1]):
                samples[b, m].append(window(repo, export, m, builds[b]))
    print(f"nfsd tier and queue, {os.uname().release}: BPF ns per NFS request (randread 8k from the page cache, "
          f"1 client x 4 streams), {ROUNDS} rounds of {SECS} s windows, modes rotating:")
    for b in builds:
        for m in MODES:
            med, _ = median_interval([x[0] for x in samples[b, m]])
            runs, _ = median_interval([x[1] for x in samples[b, m]])
            line = f"  {b + ' ' if len(builds) > 1 else ''}{m:5s}: {med:6.0f} ns per request, {runs:5.2f} program runs per request"
            if m != "plain":
                line += ", " + interval([x[0] / p[0] for x, p in zip(samples[b, m], samples[b, "plain"]) if p[0]]) + " of plain"
            print(line)
            names = sorted({n for _, _, each in samples[b, m] for n in each})
            print("         runs per request: " + ", ".join(
                f"{n} {median_interval([each.get(n, 0) for _, _, each in samples[b, m]])[0]:.2f}" for n in names))
    if "before" in builds:
        for m in MODES:
            print(f"  {m:5s} this/before: " + interval([x[0] / p[0] for x, p in zip(samples["this", m], samples["before", m])
                                                     if p[0]]) + " BPF ns per request, "
                  + interval([x[1] / p[1] for x, p in zip(samples["this", m], samples["before", m]) if p[1]])
                  + " program runs per request")

if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
