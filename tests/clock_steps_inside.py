"""Runs inside a qemu guest (tests/test_clock_steps.py), never on this machine: `strata
collect` archives disk.ops of a loop device under steady direct writes while the guest's
wall clock is stepped back 30 s, then forward 1 h. Prints one JSON object: the writes the
kernel completed, the archive's counts and second labels, and its spans."""
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STRATA = str(REPO / ".venv" / "bin" / "strata")


def step(seconds):
    subprocess.run(["date", "-s", f"@{time.time() + seconds:.3f}"], check=True, capture_output=True)


def main(work):
    image = Path(work) / "disk.img"
    with open(image, "wb") as f:
        f.truncate(32 << 20)
    dev = subprocess.run(["losetup", "--find", "--show", str(image)], check=True, capture_output=True,
                         text=True).stdout.strip()
    name = os.path.basename(dev)
    stat = Path(f"/sys/block/{name}/stat")
    archive = str(Path(work) / "a.db")
    ops = f"disk.ops[device={name}][op]"
    subprocess.run([STRATA, "datasets", "create", ops, "--archive", archive], check=True, capture_output=True)
    before = int(stat.read_text().split()[4])
    proc = subprocess.Popen([STRATA, "collect", "--archive", archive], stderr=subprocess.PIPE, text=True)
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            subprocess.run(["dd", "if=/dev/zero", f"of={dev}", "bs=4k", "count=10", "oflag=direct"],
                           capture_output=True, check=True)
            time.sleep(0.3)

    def records():
        try:
            with closing(sqlite3.connect(f"file:{archive}?mode=ro", uri=True)) as c:
                return c.execute("SELECT count(*) FROM records WHERE step = 1").fetchone()[0]
        except sqlite3.Error:
            return 0

    deadline = time.monotonic() + 120
    while records() == 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    w = threading.Thread(target=writer)
    w.start()
    time.sleep(4)
    step(-30)
    time.sleep(36)     # the daemon waits for the wall clock to pass its next boundary again
    step(3600)
    time.sleep(5)
    stop.set()
    w.join()
    time.sleep(3)
    proc.terminate()
    err = proc.communicate(timeout=60)[1]
    kernel = int(stat.read_text().split()[4]) - before
    subprocess.run(["losetup", "-d", dev], check=False)
    with closing(sqlite3.connect(archive)) as c:
        labels = [t for (t,) in c.execute("SELECT t FROM records WHERE step = 1 ORDER BY t")]
        spans = c.execute("SELECT t, seconds, cause FROM spans").fetchall()
    from strata.datasets.archive import Archive
    with Archive.open(archive) as a:
        r = a.query(ops, labels[0], labels[-1] + 1)
        counted = {k: int(r.values[i].sum()) for i, k in enumerate(r.keys)}
    print(json.dumps({"rc": proc.returncode, "stderr": err, "kernel_writes": kernel, "counted": counted,
                      "labels": labels, "spans": spans}))


if __name__ == "__main__":
    main(sys.argv[1])
