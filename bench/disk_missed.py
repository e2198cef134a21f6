"""Where the disk layer's missed completions come from (catalogue/STATISTICS.md, op
"missed"). Each round writes with fio to a fresh loop device while four counters watch it:

  kernel     /sys/block/DEV/stat, completed writes
  perf       `perf stat` of the block_rq_complete tracepoint, filtered to the device (the
             tracepoint firing, through perf's own probe; "-" without perf installed)
  probe      build/bench/strata-disk-missed: an independent tp_btf issue/completion pairing,
             its completion program's runs for the device, the requests issued again while
             their previous issue still waited, and the runs the kernel reported skipping
  strata     strata-collect's disk.ops[device=DEV][op]: write and missed

After fio, direct writes sweep twice through the device's request tags, so that every
request whose completion was not seen has been issued again (and counted missed).

    sudo .venv/bin/python bench/disk_missed.py [ROUNDS] [SECONDS]     (defaults 3, 15)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLLECT = REPO / "build" / "bin" / "strata-collect"
PROBE = REPO / "build" / "bench" / "strata-disk-missed"


def writes(dev):
    return int(Path(f"/sys/block/{dev}/stat").read_text().split()[4])


class Collect:
    """strata-collect counting disk.ops of one device by op."""

    def __init__(self, dev):
        self.proc = subprocess.Popen([str(COLLECT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.counts, self.acked = {}, threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        self.proc.stdin.write(f"add d disk.ops op device={dev}\n")
        self.proc.stdin.flush()
        if not self.acked.wait(30):
            raise SystemExit("strata-collect did not answer")

    def _read(self):
        for line in self.proc.stdout:
            rec = json.loads(line)
            if rec["type"] in ("ack", "error"):
                if rec["type"] == "error":
                    print(rec["message"], file=sys.stderr)
                self.acked.set()
            elif rec["type"] == "data":
                for op, n in rec["data"].items():
                    self.counts[op] = self.counts.get(op, 0) + n

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(30)
        return self.counts


def round_(seconds):
    folder = tempfile.mkdtemp(prefix="strata-disk-missed-")
    image = Path(folder) / "disk.img"
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(image)], check=True,
                         capture_output=True, text=True).stdout.strip()
    name = os.path.basename(dev)
    try:
        st = os.stat(dev)
        devt = os.major(st.st_rdev) << 20 | os.minor(st.st_rdev)
        collect = Collect(name)
        probe = subprocess.Popen([str(PROBE), dev], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert probe.stdout.readline().strip() == "attached"
        perf = subprocess.Popen(["perf", "stat", "-x,", "-e", "block:block_rq_complete", "--filter", f"dev == {devt}",
                                 "-a"], stderr=subprocess.PIPE, text=True) if shutil.which("perf") else None
        time.sleep(1)
        before = writes(name)
        subprocess.run(["fio", "--name=w", f"--filename={dev}", "--rw=randwrite", "--bs=4k", "--direct=1",
                        "--ioengine=libaio", "--iodepth=16", f"--runtime={seconds}", "--time_based",
                        "--size=60m", "--output=/dev/null"], check=True)
        sweep = 2 * int(Path(f"/sys/block/{name}/queue/nr_requests").read_text())
        subprocess.run(["dd", "if=/dev/zero", f"of={dev}", "oflag=direct", "bs=4k", f"count={sweep}", "status=none"],
                       check=True)
        time.sleep(2)            # the collector's last second
        kernel = writes(name) - before
        hits = "-"
        if perf:
            perf.send_signal(2)
            hits = int(perf.communicate()[1].strip().splitlines()[-1].split(",")[0])
        seen = json.loads(probe.communicate("")[0])
        counted = collect.stop()
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        shutil.rmtree(folder, ignore_errors=True)
    return {"kernel": kernel, "perf": hits, "probe": seen, "strata": counted}


def main():
    smoke = os.environ.get("BENCH_SMOKE") == "1"   # smoke mode (bench/run.sh): one round of one second
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1 if smoke else 3
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 1 if smoke else 15
    for need in (COLLECT, PROBE):
        if not need.exists():
            raise SystemExit(f"{need} is not built: run `make`")
    print(f"{'kernel':>8} {'perf':>8} {'probe':>8} {'reissue':>7} {'unmatch':>7} {'rec.miss':>8} "
          f"{'strata':>8} {'missed':>6}")
    for _ in range(rounds):
        r = round_(seconds)
        p = r["probe"]
        print(f"{r['kernel']:>8} {r['perf']:>8} {p['completes']:>8} {p['reissues']:>7} {p['unmatched']:>7} "
              f"{sum(p['recursion_misses'].values()):>8} {r['strata'].get('write', 0):>8} "
              f"{r['strata'].get('missed', 0):>6}", flush=True)


if __name__ == "__main__":
    main()
