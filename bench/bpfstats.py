"""The BPF programs a process holds, with the kernel's run statistics of each
(kernel.bpf_stats_enabled): what the cost benchmarks read before and after a window."""
import json
import re
import subprocess
from pathlib import Path


def programs_of(pid: int) -> dict:
    """{program name: (run count, run time ns)} of the BPF programs pid holds open."""
    ids = set()
    for f in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            ids.update(int(m) for m in re.findall(r"^prog_id:\s*(\d+)", f.read_text(), re.M))
        except OSError:
            pass
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], check=True, capture_output=True,
                                      text=True).stdout)
    return {p["name"]: (p.get("run_cnt", 0), p.get("run_time_ns", 0)) for p in progs if p.get("id") in ids}
