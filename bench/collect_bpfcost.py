"""What strata's disk layer costs per block completion against libbpf-tools' biolatency,
both attached to the same fio random reads on a private loop device, from the kernel's BPF
statistics (kernel.bpf_stats_enabled: each program's own run time, steadier than
throughput on a shared VM). A window starts biolatency -D and one strata-collect with one
or four disk datasets, the two attached in alternating order (the first program on a
tracepoint warms the request's cache lines for the second), runs fio SECS seconds and reads
both collectors' BPF time per completion (issue + completion programs). Configurations
rotate round by round; each window's strata/biolatency ratio is its own peer comparison.
COLLECT_BINS="label=path ..." compares several collector builds (before/after) in one run;
SETS="1 4 5" chooses the dataset sets (5: the four and disk.queue, which a build before
disk.queue refuses, so leave it out there); BIOLATENCY="-D -Q" times biolatency's queued mode
(insert to completion) as the peer instead.
Needs root, fio and biolatency.   usage: [ROUNDS=N] [SECS=N] [SETS=..] collect_bpfcost.py"""
import os
import re
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
if os.environ.get("BENCH_SMOKE") == "1":  # smoke mode (bench/run.sh): one short round
    ROUNDS, SECS = 1, 1
DATASETS = {
    1: "add l disk.latency device\n",
    4: "add o disk.ops op\nadd l disk.latency device\nadd s disk.size op\nadd f disk.offset device\n",
    5: "add o disk.ops op\nadd l disk.latency device\nadd s disk.size op\nadd f disk.offset device\n"
       "add q disk.queue device\n",
}
SETS = [int(n) for n in os.environ.get("SETS", "1 4 5").split()]
BIOLATENCY = os.environ.get("BIOLATENCY", "-D").split()


def owned_runs(pid, pattern):
    """(run count of the completion programs, run time of all programs) of pid's BPF
    programs whose name matches pattern."""
    mine = {name: stats for name, stats in programs_of(pid).items() if re.match(pattern, name)}
    return (sum(cnt for name, (cnt, _) in mine.items() if "complete" in name),
            sum(ns for _, ns in mine.values()))


def start_biolatency():
    return subprocess.Popen(["biolatency", *BIOLATENCY], stdout=subprocess.DEVNULL)


def start_strata(binary, adds, work):
    proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=open(work / "collect.out", "w"), text=True)
    proc.stdin.write(adds)
    proc.stdin.flush()
    return proc


def window(binary, nsets, strata_first, dev, work):
    """ns per completion: (strata, biolatency)."""
    starters = [lambda: start_strata(binary, DATASETS[nsets], work), start_biolatency]
    if not strata_first:
        starters.reverse()
    procs = []
    for start in starters:
        procs.append(start())
        time.sleep(1.5)  # loaded, verified, attached
    strata, bio = procs if strata_first else procs[::-1]
    before = owned_runs(strata.pid, "disk_"), owned_runs(bio.pid, "block_rq_")
    subprocess.run(["fio", "--name=bench", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
                    "--ioengine=psync", f"--runtime={SECS}", "--time_based", "--size=256M"],
                   check=True, stdout=subprocess.DEVNULL)
    after = owned_runs(strata.pid, "disk_"), owned_runs(bio.pid, "block_rq_")
    strata.stdin.close()
    strata.wait(timeout=30)
    bio.send_signal(2)
    bio.wait(timeout=30)
    return tuple((a[1] - b[1]) / max(a[0] - b[0], 1) for a, b in zip(after, before))


def main():
    if os.geteuid() != 0 or not shutil.which("biolatency") or not shutil.which("fio"):
        print("collect_bpfcost: skipped (needs root, fio and biolatency)")
        return
    bins = dict(b.split("=", 1) for b in os.environ.get("COLLECT_BINS", "").split()) or \
        {"strata": str(ROOT / "build/bin/strata-collect")}
    configs = [(label, n) for label in bins for n in SETS]
    was = Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip()
    Path("/proc/sys/kernel/bpf_stats_enabled").write_text("1")
    samples = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(["truncate", "-s", "256M", str(work / "disk.img")], check=True)
        dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(work / "disk.img")],
                             check=True, capture_output=True, text=True).stdout.strip()
        try:
            for r in range(ROUNDS):
                for i in range(len(configs)):
                    label, n = configs[(i + r) % len(configs)]
                    samples[(label, n)].append(window(bins[label], n, (r + i) % 2 == 0, dev, work))
        finally:
            subprocess.run(["losetup", "-d", dev])
            Path("/proc/sys/kernel/bpf_stats_enabled").write_text(was)
    print(f"disk layer, fio randread 4k psync on a loop device, BPF ns per completion (issue + completion), "
          f"{ROUNDS} rounds of {SECS:.0f} s; biolatency {' '.join(BIOLATENCY)} attached beside strata in every window:")
    for (label, n), xs in samples.items():
        ratio, (lo, hi) = median_interval([s / b for s, b in xs])
        interval = f" [{lo:.2f}, {hi:.2f}]" if lo is not None else ""
        print(f"  {label:10s} {n} dataset{'s' if n > 1 else ' '}: strata {statistics.median(s for s, _ in xs):5.0f} ns, "
              f"biolatency {statistics.median(b for _, b in xs):5.0f} ns, strata/biolatency x{ratio:.2f}{interval}")


if __name__ == "__main__":
    main()
