"""The kernel matrix's guest (tests/vm/): boot-to-command time per kernel, and the RPC
rate one libnfs connection gets from the engine inside it (TCG, one vCPU) against the
same run on this host, as a ratio. KERNELS (default "5.10 6.1 6.12"), SECONDS_EACH (5).
BENCH_SMOKE=1 (bench/run.sh): 6.1 only, booted once, loads of 1 s.

  .venv/bin/python bench/vm_guest.py
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from vm import guest, kernels  # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"   # smoke mode (bench/run.sh): one kernel, one boot, 1 s loads
SECONDS = 1 if SMOKE else int(os.environ.get("SECONDS_EACH", "5"))
# one engine on loopback, one strata-load client, one thread, 8 KiB random reads from the ARC
SCRIPT = f"""cd {REPO}
d=$(mktemp -d /tmp/bench-XXXX)
build/bin/strata-engine mkpool $d/pool --size 256m > /dev/null
build/bin/strata-engine serve --pool $d/pool --export /export:mode=1777 --listen 127.0.0.1:0 \\
    --port-file $d/port > /dev/null 2>&1 & engine=$!
while ! grep -q mount= $d/port 2>/dev/null; do sleep 0.1; done
nfs=$(sed -n 's/.*nfs=[0-9.]*:\\([0-9]*\\).*/\\1/p' $d/port); mnt=$(sed -n 's/.*mount=[0-9.]*:\\([0-9]*\\).*/\\1/p' $d/port)
build/bin/strata-load --server 127.0.0.1 --nfsport $nfs --mountport $mnt --export /export --profile randread \\
    --io-size 8k --working-set 8m --clients 1 --threads 1 --setup --duration {SECONDS} --json - > $d/report.json
kill $engine; wait
python3 -c "import json,sys; r=json.load(open('$d/report.json')); print(json.dumps({{'ops': r['ops'].get('read', 0), 'seconds': {SECONDS}}}))"
rm -rf $d
"""


def rate(output: str) -> float:
    r = json.loads(output.strip().splitlines()[-1])
    return r["ops"] / r["seconds"]


def main() -> int:
    runs = kernels.VMDIR / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    host = rate(subprocess.run(["sh", "-c", SCRIPT], capture_output=True, text=True, check=True).stdout)
    print(f"host {os.uname().release}: {host:,.0f} RPC/s (one connection, one request in flight)")
    for series in os.environ.get("KERNELS", "6.1-security" if SMOKE else "5.10-security 6.1-security 6.12").split():
        folder = Path(tempfile.mkdtemp(prefix=f"bench-{series}-", dir=runs))
        start = time.monotonic()
        first = guest.run(series, "true", folder) if not SMOKE else None
        boot_to_command = time.monotonic() - start
        r = guest.run(series, SCRIPT, folder, timeout=300)
        if first is None:   # smoke mode: the load's run stands for the boot's (an upper bound)
            first, boot_to_command = r, r.seconds
        if r.rc != 0:
            print(f"{series}: the load failed in the guest:\n{r.output[-2000:]}")
            return 1
        g = rate(r.output)
        print(f"{first.release}: boot {first.boot_seconds:.1f} s (kernel to stage 2), boot to command "
              f"{boot_to_command:.1f} s; {g:,.0f} RPC/s in the guest = {g / host:.3f} of this host's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
