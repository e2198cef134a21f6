"""The steps every demo scenario takes, on the lab harness (strata.lab): a
scratch folder, a fresh archive with the collector filling it, and a strata-load
run that falls back to 127.0.0.1 clients when network namespaces are missing.
Each resource goes on the caller's Teardown as it is made."""
import json
import shutil
import tempfile
import time
from pathlib import Path

from strata.lab.collect import Collection, create_datasets
from strata.lab.load import Load, LoadError

DROP_CACHES = "/proc/sys/vm/drop_caches"
NO_NETNS = ("network namespaces are unavailable: clients are told apart by AUTH_SYS "
            "machine name only, and all come from 127.0.0.1")


def say(echo, text: str):
    echo(f"strata demo: {text}")


def scratch(undo, echo) -> Path:
    """A temporary folder, removed at teardown."""
    work = Path(tempfile.mkdtemp(prefix="strata-demo-"))
    undo.callback(shutil.rmtree, work, True)
    say(echo, f"scratch files in {work}")
    return work


def collect(work: Path, archive_path: str, datasets: list, undo, first: str, engine_pid=None,
            options=(), timeout: float = 60) -> Collection:
    """`strata collect` into a fresh archive_path holding `datasets`; returns once the
    collector has written a second of `first` (CollectError after timeout seconds)."""
    archive = Path(archive_path)
    for stale in (archive, Path(f"{archive}-wal"), Path(f"{archive}-shm")):
        stale.unlink(missing_ok=True)
    create_datasets(archive_path, datasets)
    coll = Collection(work, archive_path, engine_pid, options).start()
    undo.callback(coll.stop)
    coll.wait_for_data(first, timeout)
    return coll


def run_load(work: Path, out: Path, args_for, facts, watch, timeout: float, undo, echo) -> dict:
    """One strata-load run (args_for(netns) is its command line), watched by watch(load)
    while it runs; when namespaces are missing, again from 127.0.0.1 (facts.netns and
    facts.notes say so). Writes out/load.json; returns the report."""
    def once(netns, tag):
        load = Load(work, tag).start(args_for(netns))
        undo.callback(load.stop)
        watch(load)
        return load.wait(timeout=timeout)

    try:
        report = once(facts.netns, "run")
    except LoadError as e:
        if not facts.netns or "namespace" not in str(e).lower() and "netns" not in str(e).lower():
            raise
        facts.netns = False
        facts.notes.append(NO_NETNS)
        say(echo, NO_NETNS)
        report = once(False, "run-nonetns")
    (out / "load.json").write_text(json.dumps(report, indent=1) + "\n")
    rate = report.get("ops_per_sec", {}).get("total", 0)
    say(echo, f"load done: {report.get('ops_total', 0):,} ops, {rate:,.0f} ops/s, {report.get('errors', 0)} errors")
    return report


def drop_cache_halfway(load, facts, duration: float, check, echo):
    """Watches a read phase of `duration` seconds that began at facts.run_start: check()
    every half second (it raises when the server or collector failed), and the page
    cache dropped once, halfway (facts.drop_at)."""
    while load.running():
        time.sleep(0.5)
        check()
        if facts.drop_at is None and time.time() >= facts.run_start + duration / 2:
            facts.drop_at = int(time.time())   # when the drop begins: on a slow machine it takes seconds
            Path(DROP_CACHES).write_text("3\n")
            say(echo, "page cache dropped (halfway): reads go to the disk until it fills again")
