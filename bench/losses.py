"""What configurations switched on and off during one load cost (bench/collectlib.sh
toggled_load). Each window is compared with the mean of the nearest windows without
datasets before and after it, which cancels the machine's drift:
- throughput loss: the load's replies per second (whole seconds inside the window);
- CPU per operation: busy CPU time of the whole machine (/proc/stat) per reply, which a
  hypervisor's steal or a neighbour's burst moves less than throughput;
each as the median over the windows with its 95 % interval (order statistics,
distribution-free). Also the kernel's BPF run time per operation, per run, and that time
as a share of the machine's CPUs at the measured rate: what the programs cost directly.
usage: losses.py LOAD_JSON WINDOWS TITLE CONFIG=LABEL...   (config "none" is the base)"""
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass

TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count()


@dataclass
class Window:
    cfg: str
    on: float
    off: float
    bpf_runs: int
    bpf_ns: int
    bpf_secs: float
    busy_ticks: int
    steal_ticks: int
    rate: float | None = None  # replies per second, whole seconds inside the window

    @property
    def cpu_ns_per_op(self):
        return self.busy_ticks * TICK_NS / (self.rate * (self.off - self.on))

    @property
    def steal(self):
        return self.steal_ticks * TICK_NS / (CPUS * 1e9 * (self.off - self.on))


def read_windows(report_path, windows_path):
    report = json.load(open(report_path))
    start, ops = report["start_unix"], report["per_second"]["ops"]
    windows = []
    for line in open(windows_path):
        cfg, on, off, runs, ns, secs, busy, steal = line.split()
        w = Window(cfg, float(on), float(off), int(runs), int(ns), float(secs), int(busy), int(steal))
        inside = [n for i, n in enumerate(ops) if start + i >= w.on and start + i + 1 <= w.off]
        w.rate = statistics.mean(inside) if inside and min(inside) > 0 else None
        windows.append(w)
    return windows


def median_interval(xs):
    """Median of xs and the 95 % interval of order statistics around it (binomial);
    (None, None) for fewer than 6 values."""
    xs, n = sorted(xs), len(xs)
    lo = None
    for k in range(n // 2 + 1):  # the largest k with P(Binomial(n, 1/2) <= k) <= 2.5 %
        if sum(math.comb(n, j) for j in range(k + 1)) / 2 ** n > 0.025:
            break
        lo = k
    return statistics.median(xs), (xs[lo], xs[n - 1 - lo]) if lo is not None else (None, None)


def relative(windows, cfg, value):
    """100 * (value(w) / mean of value over w's neighbours without datasets - 1), per window of cfg."""
    base = [w for w in windows if w.cfg == "none" and w.rate]
    out = []
    for w in windows:
        if w.cfg != cfg or not w.rate:
            continue
        near = [b for b in base if b.on < w.on][-1:] + [b for b in base if b.on > w.on][:1]
        if near:
            out.append(100 * (value(w) / statistics.mean(value(b) for b in near) - 1))
    return out


def summary(xs):
    med, (lo, hi) = median_interval(xs)
    return f"{med:+5.1f} %" + (f" [{lo:+.1f}, {hi:+.1f}]" if lo is not None else "")


def main():
    windows = read_windows(sys.argv[1], sys.argv[2])
    title, labels = sys.argv[3], dict(a.split("=", 1) for a in sys.argv[4:])
    base = [w for w in windows if w.cfg == "none" and w.rate]
    if not base:
        print(f"{title}: {len(windows)} windows; none without datasets held a whole second of the load")
        return
    print(f"{title}: {len(windows)} windows; no datasets: median {statistics.median(w.rate for w in base):.0f} "
          f"ops/s, {statistics.median(w.cpu_ns_per_op for w in base):.0f} ns of CPU per op, "
          f"steal {100 * statistics.median(w.steal for w in windows):.1f} % (median window)")
    for cfg, label in labels.items():
        mine = [w for w in windows if w.cfg == cfg and w.rate]
        if not mine:
            print(f"  {label}: no whole second measured")
            continue
        loss = [-x for x in relative(windows, cfg, lambda w: w.rate)]
        cpu = relative(windows, cfg, lambda w: w.cpu_ns_per_op)
        ops = sum(w.rate * w.bpf_secs for w in mine)
        runs, run_ns = sum(w.bpf_runs for w in mine), sum(w.bpf_ns for w in mine)
        share = run_ns / ops * statistics.median(w.rate for w in mine) / (CPUS * 1e9) * 100
        print(f"  {label}\n"
              f"      throughput loss {summary(loss)}, CPU per op {summary(cpu)} "
              f"(medians of {len(cpu)} windows, 95 % intervals)")
        if runs:
            print(f"      BPF {run_ns / ops:.0f} ns/op, {run_ns / max(runs, 1):.0f} ns/run, {runs / ops:.2f} runs/op: "
                  f"{share:.2f} % of {CPUS} CPUs")
        else:
            print("      BPF time not measured (the kernel's BPF statistics were off in these windows)")


if __name__ == "__main__":
    main()
