"""Throughput loss of configurations switched on and off during one load
(bench/collectlib.sh toggled_load): each window's throughput (the load's per-second
replies, whole seconds inside the window only) against the mean of the nearest windows
without datasets before and after it, which cancels the machine's drift. Prints, per
configuration, the median loss with its 95 % interval (order statistics of the windows,
distribution-free), the kernel's BPF run time per operation and per run, and that run
time as a share of the machine's CPU at the measured rate (what the programs cost
directly, whatever the noise does to throughput).
usage: losses.py LOAD_JSON WINDOWS TITLE CONFIG=LABEL...   (config "none" is the base)"""
import json
import math
import os
import statistics
import sys


def window_rates(report, windows):
    """[(config, t_on, t_off, ops_per_s or None, runs, run_ns)] in time order."""
    start, ops = report["start_unix"], report["per_second"]["ops"]
    out = []
    for cfg, on, off, runs, ns in windows:
        inside = [n for i, n in enumerate(ops) if start + i >= on and start + i + 1 <= off]
        out.append((cfg, on, off, statistics.mean(inside) if inside else None, runs, ns))
    return out


def median_interval(xs):
    """Median of xs and the 95 % interval of order statistics around it (binomial)."""
    xs, n = sorted(xs), len(xs)
    lo, hi = 0, n - 1
    for k in range(n // 2 + 1):  # the widest k with P(fewer than k+1 below the median) <= 2.5 %
        if sum(math.comb(n, j) for j in range(k + 1)) / 2 ** n > 0.025:
            break
        lo, hi = k, n - 1 - k
    return statistics.median(xs), (xs[lo], xs[hi]) if n >= 6 else (None, None)


def main():
    report = json.load(open(sys.argv[1]))
    windows = [(c, float(a), float(b), int(r), int(ns)) for c, a, b, r, ns in (l.split() for l in open(sys.argv[2]))]
    title, labels = sys.argv[3], dict(a.split("=", 1) for a in sys.argv[4:])
    rated = window_rates(report, windows)
    base = [(on, rate) for cfg, on, _, rate, _, _ in rated if cfg == "none" and rate]
    print(f"{title}: {len(windows)} windows; no datasets: median {statistics.median(r for _, r in base):.0f} ops/s")
    for cfg, label in labels.items():
        losses, ops, runs, run_ns = [], 0.0, 0, 0
        for c, on, off, rate, r, ns in rated:
            if c != cfg or not rate:
                continue
            before = [x for t, x in base if t < on][-1:]
            after = [x for t, x in base if t > on][:1]
            if before or after:
                losses.append(100 * (1 - rate / statistics.mean(before + after)))
            ops += rate * (off - on)
            runs += r
            run_ns += ns
        if not losses:
            print(f"  {label}: no whole second measured")
            continue
        med, (lo, hi) = median_interval(losses)
        interval = f" [{lo:+.1f}, {hi:+.1f}]" if lo is not None else ""
        rate = statistics.median(x for c, _, _, x, _, _ in rated if c == cfg and x)
        share = run_ns / ops * rate / (os.cpu_count() * 1e9) * 100
        print(f"  {label:48s} throughput loss {med:+5.1f} %{interval} (median of {len(losses)} windows, 95 %); "
              f"BPF {run_ns / ops:4.0f} ns/op, {run_ns / max(runs, 1):4.0f} ns/run, {runs / ops:.2f} runs/op, "
              f"{share:.2f} % of {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
