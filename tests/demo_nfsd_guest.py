"""The guest side of tests/test_demo_nfsd.py, run inside a kernel-matrix guest as root:
`strata demo --server nfsd` shortened for one emulated CPU, its output folder copied to
OUT/out (the archive checkpointed: SQLite's WAL stays on the guest's own file system),
what it printed to OUT/stdout and OUT/stderr, and what it left behind to OUT/after.json:
processes, loop devices and mounts of its scratch folder, nfsd's threads, the exports."""
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from demo_util import STRATA, leftovers

# 16 MiB: at the ~500 reads a second one emulated CPU serves, the reads after the drop bring
# the set back into the page cache before the last seconds (with 32 MiB a third of it was
# still cold then)
ARGS = ["--server", "nfsd", "--duration", "20", "--working-set", "16M", "--clients", "4", "--threads", "1",
        "--rate", "0", "--no-png"]  # PNG export starts Chromium: minutes on one emulated CPU


def main(out: Path) -> int:
    local = Path("/tmp/demo-nfsd")
    proc = subprocess.run([*STRATA, "demo", *ARGS, "-o", str(local), "--color", "none"], capture_output=True,
                          text=True, timeout=900)
    (out / "stdout").write_text(proc.stdout)
    (out / "stderr").write_text(proc.stderr)
    scratch = next((line.split("scratch files in", 1)[1].strip() for line in proc.stdout.splitlines()
                    if "scratch files in" in line), None)
    threads = Path("/proc/fs/nfsd/threads")
    after = {"rc": proc.returncode,
             "leftovers": leftovers(scratch) if scratch else ["the demo named no scratch folder"],
             "nfsd_threads": int(threads.read_text()) if threads.exists() else 0,
             "exports": subprocess.run(["exportfs"], capture_output=True, text=True).stdout.strip(),
             "mountd": subprocess.run(["pgrep", "-x", "rpc.mountd"], capture_output=True, text=True).stdout.strip()}
    (out / "after.json").write_text(json.dumps(after, indent=1) + "\n")
    if (local / "archive.db").exists():
        with sqlite3.connect(local / "archive.db") as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copytree(local, out / "out")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
