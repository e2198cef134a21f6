"""arc_util.py — helpers for the ARC tests: run `strata-engine arcsim`."""
import json
import subprocess
from pathlib import Path

from conftest import built

TRACES = Path("/work/shared/traces/arc")


def arcsim_cmd() -> list:
    return [str(built("bin/strata-engine")), "arcsim"]


def run_arcsim(*args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run(arcsim_cmd() + [str(a) for a in args], capture_output=True,
                          text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def arcsim_json(*args) -> dict:
    """{(policy, pages): result} from one `arcsim --json` run."""
    out = run_arcsim(*args, "--json").stdout.splitlines()
    rows = [json.loads(line) for line in out]
    return {(r["policy"], r["pages"]): r for r in rows}
