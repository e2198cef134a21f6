"""What the fs layer's tier costs: fio's 4 KiB random preads of a file followed by strata
(--fs-comm fio), in windows that alternate fs.latency[op] alone ("plain") with the same
dataset and fs.ops[tier] beside it ("tier"), from the kernel's BPF statistics
(kernel.bpf_stats_enabled). Per window: the fs programs' run time per followed syscall,
the tier programs' (block_bio_queue and sched_switch, which run for every bio and context
switch of the machine and stop at the gate for other processes) per followed syscall and
per run. Two workloads: "cached" (the file in the page cache: the tier programs only see
the rest of the machine) and "cold" (O_DIRECT preads: every op issues a bio and waits).
Figures as medians over rounds, and the tier/plain ratio of the fs programs' ns per op in
the same round. Needs root and fio.   usage: [ROUNDS=N] [SECS=N] collect_fstier.py"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bpfstats import programs_of  # noqa: E402
from losses import median_interval  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ROUNDS, SECS = int(os.environ.get("ROUNDS", 6)), float(os.environ.get("SECS", 3))
MODES = {"plain": "add l fs.latency op\n", "tier": "add l fs.latency op\nadd t fs.ops tier\n"}
WORKLOADS = {"cached": [], "cold": ["--direct=1"]}
FILE_MB = 64
if os.environ.get("BENCH_SMOKE") == "1":  # smoke mode (bench/run.sh): one short round, the cold reads
    ROUNDS, SECS, FILE_MB = 1, 1, 8
    WORKLOADS = {"cold": WORKLOADS["cold"]}


def window(mode, workload, path, work):
    """(fs programs' ns per followed syscall, tier programs' ns per followed syscall, tier ns per run)."""
    proc = subprocess.Popen([str(ROOT / "build/bin/strata-collect"), "--fs-comm", "fio"], stdin=subprocess.PIPE,
                            stdout=open(work / "collect.out", "w"), text=True)
    proc.stdin.write(MODES[mode])
    proc.stdin.flush()
    time.sleep(1.5)  # loaded, verified, attached
    before = programs_of(proc.pid)
    subprocess.run(["fio", "--name=fstier", f"--filename={path}", "--rw=randread", "--bs=4k", "--ioengine=psync",
                    f"--runtime={SECS}", "--time_based", f"--size={path.stat().st_size}", "--fadvise_hint=random",
                    "--startdelay=2",  # the collector finds the new fio processes (--fs-comm) meanwhile
                    *WORKLOADS[workload]], check=True, stdout=subprocess.DEVNULL)
    after = programs_of(proc.pid)
    proc.stdin.close()
    proc.wait(timeout=30)
    delta = {n: (after[n][0] - before.get(n, (0, 0))[0], after[n][1] - before.get(n, (0, 0))[1]) for n in after}
    ops = sum(c for n, (c, _) in delta.items() if "exit" in n) or 1
    fs_ns = sum(t for n, (_, t) in delta.items() if not n.startswith("fs_tier"))
    tier_runs = sum(c for n, (c, _) in delta.items() if n.startswith("fs_tier"))
    tier_ns = sum(t for n, (_, t) in delta.items() if n.startswith("fs_tier"))
    return fs_ns / ops, tier_ns / ops, tier_ns / max(tier_runs, 1)


def main():
    if os.geteuid() != 0 or not shutil.which("fio"):
        print("collect_fstier: skipped (needs root and fio)")
        return
    was = Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip()
    Path("/proc/sys/kernel/bpf_stats_enabled").write_text("1")
    samples = {(w, m): [] for w in WORKLOADS for m in MODES}
    try:
        with tempfile.TemporaryDirectory(dir=ROOT / "build") as tmp:
            work = Path(tmp)
            path = work / "data"
            path.write_bytes(os.urandom(FILE_MB << 20))
            for r in range(ROUNDS):
                for w in WORKLOADS:
                    for m in (list(MODES) if r % 2 == 0 else list(MODES)[::-1]):
                        samples[(w, m)].append(window(m, w, path, work))
    finally:
        Path("/proc/sys/kernel/bpf_stats_enabled").write_text(was)
    print(f"fs layer, fio randread 4k psync followed by --fs-comm fio, BPF ns per followed syscall, "
          f"{ROUNDS} rounds of {SECS:.0f} s, plain and tier alternating:")
    for w in WORKLOADS:
        plain, tier = samples[(w, "plain")], samples[(w, "tier")]
        ratios = [t[0] / p[0] for p, t in zip(plain, tier) if p[0] and t[0]]  # windows where fio was followed
        ratio, (lo, hi) = median_interval(ratios) if ratios else (float("nan"), (None, None))
        interval = f" [{lo:.2f}, {hi:.2f}]" if lo is not None else ""
        print(f"  {w:6s}: fs programs plain {statistics.median(p[0] for p in plain):5.0f} ns, "
              f"with tier {statistics.median(t[0] for t in tier):5.0f} ns (x{ratio:.2f}{interval}); "
              f"tier programs {statistics.median(t[1] for t in tier):5.0f} ns per followed syscall, "
              f"{statistics.median(t[2] for t in tier):4.0f} ns per run")


if __name__ == "__main__":
    main()
