"""The kernel matrix: on one kernel (a guest of a Debian kernel, kernels.py, or this host),
`strata doctor --json`, `strata statistics --json`, the view tests (the tests marked
@pytest.mark.view), one dataset of each layer added to a bare collector and, in a guest, the
datasets of `strata demo --server nfsd` added to one with nfsd loaded; summarized into
build/vm/matrix/KERNEL.json, which tests/test_kernels.py checks and tests/vm/table.py turns
into the README's table."""
import json
import platform
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from strata.datasets.names import parse
from strata.demos.nfsd import DATASETS as NFSD_DEMO_DATASETS

from . import guest, jobs, kernels

REPO = kernels.REPO
RESULTS = kernels.VMDIR / "matrix"
# view (the name in @pytest.mark.view) -> the collector layer whose support decides it
VIEW_LAYERS = {"nfs": "nfs", "cache": "cache", "vdev": "vdev", "disk": "disk", "fs": "fs", "wire": "wire",
               "archive": "disk"}
VIEWS = list(VIEW_LAYERS)


def view_test_files() -> list[str]:
    """The test files holding view tests (found by their marker, never listed by hand)."""
    return sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_*.py")
                  if "pytest.mark.view(" in p.read_text())


def inside_script(out: Path, guest_run: bool) -> str:
    """The shell script that runs on the kernel under test, writing into out."""
    env = "STRATA_GUEST=1 " if guest_run else ""
    files = " ".join(view_test_files())
    return "\n".join([
        f"cd {REPO}",
        f".venv/bin/strata doctor --json > {out}/doctor.json 2> {out}/doctor.err",
        f".venv/bin/strata statistics --json > {out}/statistics.json 2> {out}/statistics.err",
        f"{env}.venv/bin/python -m pytest -m view -p no:cacheprovider -q -o addopts= --durations=0 "
        f"--junitxml={out}/junit.xml --basetemp=/tmp/strata-matrix {files} > {out}/pytest.log 2>&1",
        "echo pytest exit $?",
        # each layer's dataset added to a bare collector (the engine's probes in the probe
        # fixture): an ack, or one error line
        "sleep 120 | build/tests/strata-probe-fixture > /dev/null & fixture=$!; sleep 2",
        f"printf '{ADDS}quit\\n' | timeout 60 build/bin/strata-collect --engine-pid $fixture --fs-pid $$ "
        f"--interval 1 > {out}/adds.out 2> {out}/adds.err",
        "kill $fixture",
        *([] if not guest_run else [
            # the nfsd demo's datasets, nfsd loaded: acks, then a status naming its layers attached
            "modprobe nfsd",
            f"(printf '{DEMO_ADDS}'; sleep 4; echo quit) | timeout 60 build/bin/strata-collect --interval 1 "
            f"> {out}/demo_adds.out 2> {out}/demo_adds.err",
        ]),
    ])


# One dataset per layer, as added to a bare collector (collectors/FORMAT.md).
LAYER_STATS = {"nfs": "nfs.ops", "cache": "zil.latency", "vdev": "vdev.ops", "disk": "disk.ops", "fs": "fs.ops",
               "wire": "wire.ops"}
ADDS = "".join(f"add {layer} {stat} -\\n" for layer, stat in LAYER_STATS.items())


def _add_line(i: int, text: str) -> str:
    name = parse(text)
    return " ".join([f"add d{i}", name.statistic, name.breakdown or "-", *(f"{f}={v}" for f, v in name.filters)])


DEMO_ADDS = "".join(_add_line(i, text) + "\\n" for i, text in enumerate(NFSD_DEMO_DATASETS))


def demo_adds(out: Path) -> dict:
    """The collector's answers to the nfsd demo's datasets: {"acks": n, "errors": [...], "attached":
    the layers its last status record names, "stderr": its tail}."""
    acks, errors, attached = 0, [], []
    try:
        lines = (out / "demo_adds.out").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("type") == "ack" and rec.get("id"):
            acks += 1
        elif rec.get("type") == "error":
            errors.append(rec.get("message", ""))
        elif rec.get("type") == "status":
            attached, errors = rec.get("attached", []), errors + rec.get("errors", [])
    err = out / "demo_adds.err"
    return {"datasets": len(NFSD_DEMO_DATASETS), "acks": acks, "errors": errors, "attached": attached,
            "stderr": err.read_text(errors="replace")[-2000:] if err.exists() else ""}


def layer_adds(out: Path) -> dict:
    """layer -> the collector's answer to adding its dataset: {"ok": True} or the error record."""
    answers = {}
    try:
        lines = (out / "adds.out").read_text().splitlines()
    except OSError:
        return answers
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("type") in ("ack", "error") and rec.get("id") in LAYER_STATS:
            answers[rec["id"]] = rec
    return answers


def _view_results(junit: Path) -> dict:
    """view -> {"state": "ok" | "refused" | "failed", "tests": [...], "why": ...}."""
    views: dict = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        prop = case.find("properties/property[@name='view']")
        if prop is None:
            continue
        name = f"{case.get('classname')}::{case.get('name')}"
        skipped, failed = case.find("skipped"), case.find("failure")
        if failed is None:
            failed = case.find("error")
        v = views.setdefault(prop.get("value"), {"state": "ok", "tests": [], "why": ""})
        v["tests"].append(name)
        if failed is not None:
            v["state"] = "failed"
            v["why"] = (failed.get("message") or "")[:300]
        elif skipped is not None and v["state"] != "failed":
            v["state"] = "refused"
            v["why"] = skipped.get("message") or ""
    return views


def summarize(kernel: str, release: str, out: Path, seconds: float, boot_seconds: float | None) -> dict:
    def load(name):
        try:
            return json.loads((out / name).read_text())
        except (OSError, json.JSONDecodeError):
            return None
    junit = out / "junit.xml"
    result = {
        "kernel": kernel, "release": release, "seconds": round(seconds, 1),
        "boot_seconds": boot_seconds, "measured": int(time.time()),
        "doctor": load("doctor.json"), "statistics": load("statistics.json"),
        "views": _view_results(junit) if junit.exists() else {},
        "adds": layer_adds(out),
        "demo_adds": demo_adds(out) if kernel != "host" else None,
        "adds_stderr": (out / "adds.err").read_text(errors="replace")[-2000:] if (out / "adds.err").exists() else "",
        "pytest_tail": (out / "pytest.log").read_text(errors="replace")[-3000:] if (out / "pytest.log").exists() else "",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{kernel}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def run(kernel: str, timeout: float = 900) -> dict:
    """Runs the matrix on KERNEL: a key of kernels.KERNELS (a guest), or "host"."""
    runs = kernels.VMDIR / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for old in runs.glob(f"matrix-{kernel}-*"):  # the last run's folder is kept until the next
        shutil.rmtree(old, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"matrix-{kernel}-", dir=runs))
    if kernel == "host":
        start = time.monotonic()
        subprocess.run(["sh", "-c", inside_script(folder, False)], timeout=timeout, check=False,
                       capture_output=True)
        return summarize("host", platform.release(), folder, time.monotonic() - start, None)
    r = guest.run(kernel, inside_script(folder, True), folder, timeout)
    return summarize(kernel, r.release, folder, r.seconds, r.boot_seconds)


def required_version(reason: str) -> tuple[int, int] | None:
    """The kernel version a refusal names ("... (Linux 5.17+) ...")."""
    m = re.search(r"Linux (\d+)\.(\d+)\+", reason)
    return (int(m.group(1)), int(m.group(2))) if m else None


def release_version(release: str) -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", release).groups()
    return int(major), int(minor)


def start(kernel: str) -> None:
    """The matrix of kernel, in the background (tests/vm/jobs.py)."""
    jobs.submit(f"matrix-{kernel}", run, kernel)


def result(kernel: str) -> dict:
    return jobs.result(f"matrix-{kernel}", run, kernel)
