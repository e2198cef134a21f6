"""The collector's status file: what `strata collect` is doing with its archive, kept
outside the archive's file system so that it can be written when the archive cannot.

One JSON object, replaced atomically at each change of state, in the runtime folder
(/run/strata for root, else $XDG_RUNTIME_DIR/strata or /tmp/strata-UID), named after
the archive's absolute path; removed when the collector ends. `strata datasets list`
shows it while its process runs:

    {"pid": 1234, "archive": "/var/lib/strata/archive.db", "state": "holding",
     "since": 1700000000, "problem": "...: the disk is full ...", "held_since": 1699999990,
     "datasets": 3, "errors": ["disk.latency[device=sdz]: ..."], "dropped": {"disk.ops[op]": 2},
     "live": "/run/strata/collect-0123456789abcdef.sock"}

state "writing": the archive takes every second; "holding": it cannot be written and
the events are held in memory (problem says why, held_since from which second; they are
stored as one span per dataset when it can be). datasets: how many it collects; errors:
the last problems it said that are not the archive's (a dataset refused, the daemon's
errors); dropped: per dataset, the records not stored because it was destroyed or
suspended while they were collected (collect/collector.py; what a suspend means, so
not shown by the commands). daemon: what the daemon's status records say that explains a dataset counting
nothing (daemon_summary: datasets waiting and why, the wire ports followed and whether
any call was seen on them). live: the socket of the collector's live feed
(collect/livefeed.py), null when it has none. `strata datasets list` and `strata doctor`
show it (running()); reasons() gives, per dataset, why it counts nothing.
"""
import hashlib
import json
import os
import time

from strata.datasets.errors import ArchiveError


def runtime_dir() -> str:
    if os.geteuid() == 0:
        return "/run/strata"
    base = os.environ.get("XDG_RUNTIME_DIR")
    return os.path.join(base, "strata") if base else f"/tmp/strata-{os.getuid()}"


def status_path(archive_path: str) -> str:
    return os.path.join(runtime_dir(), f"collect-{_digest(archive_path)}.json")


def socket_path(archive_path: str) -> str:
    """The collector's live feed (collect/livefeed.py), beside its status file."""
    return os.path.join(runtime_dir(), f"collect-{_digest(archive_path)}.sock")


def _digest(archive_path: str) -> str:
    return hashlib.sha256(os.path.abspath(archive_path).encode()).hexdigest()[:16]


class StatusFile:
    def __init__(self, archive_path: str):
        self.archive, self.path = os.path.abspath(archive_path), status_path(archive_path)
        self.live = None     # the live feed's socket, while there is one

    def write(self, state: str, problem: str = "", held_since: int | None = None, datasets: int = 0,
              errors: list = (), dropped: dict | None = None, daemon: dict | None = None):
        """Best effort: a runtime folder that cannot be written costs only this file."""
        record = {"pid": os.getpid(), "archive": self.archive, "state": state, "since": int(time.time()),
                  "problem": problem, "held_since": held_since, "datasets": datasets, "errors": list(errors),
                  "dropped": dict(dropped or {}), "daemon": daemon or {}, "live": self.live}
        tmp = f"{self.path}.{os.getpid()}"
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o755, exist_ok=True)
            with open(tmp, "w") as f:
                json.dump(record, f)
            os.replace(tmp, self.path)
        except OSError:
            pass

    def remove(self):
        try:
            os.unlink(self.path)
        except OSError:
            pass


def daemon_summary(msg: dict) -> dict:
    """The part of a daemon status record (collectors/FORMAT.md) that explains datasets
    counting nothing; it changes rarely, so the status file is rewritten only then."""
    wire = msg.get("wire")
    return {"waiting": [str(i) for i in msg.get("waiting") or []],
            "problems": [str(e) for e in msg.get("errors") or []],
            "wire": None if not isinstance(wire, dict) else
            {"ports": list(wire.get("ports") or []), "seen": bool(wire.get("calls"))}}


def reasons(record: dict | None, infos) -> dict:
    """{dataset name: why it counts nothing} for the active datasets of infos that the
    collector's status explains: refused (its own error), waiting (the daemon's problems),
    or a wire dataset while no call was seen on the ports followed."""
    if not record:
        return {}
    daemon = record.get("daemon") or {}
    out = {}
    for info in infos:
        if info.state != "active":
            continue
        own = [e[len(info.name) + 2:] for e in record.get("errors") or [] if e.startswith(f"{info.name}: ")]
        wire = daemon.get("wire")
        if own:
            out[info.name] = own[-1]
        elif str(info.id) in daemon.get("waiting", []):
            out[info.name] = "waiting: " + ("; ".join(daemon.get("problems") or []) or "its layer is not present")
        elif info.name.startswith("wire.") and wire and not wire["seen"]:
            ports = ", ".join(map(str, wire["ports"])) or "none"
            out[info.name] = (f"no RPC call seen on the ports followed ({ports}); a server on another port: "
                              "strata collect --wire-port PORT")
    return out


def read(archive_path: str) -> dict | None:
    """The status of the collector writing archive_path, or None when none runs."""
    return _live(status_path(archive_path))


def refuse_written(archive_path: str):
    """ArchiveError when a running collector writes the archive at archive_path: a file
    never replaced (its data would be gone under it)."""
    writer = read(archive_path) if os.path.exists(archive_path) else None
    if writer:
        raise ArchiveError(f"{archive_path} is the archive a running collector (pid {writer.get('pid')}) writes; "
                           "not replaced (write to another file)")


def _live(path: str) -> dict | None:
    """The status record at path if its collector runs; a record whose process is gone
    (killed with -9) is removed when this user may."""
    try:
        with open(path) as f:
            record = json.load(f)
        if not isinstance(record, dict):
            return None
        os.kill(int(record["pid"]), 0)
    except PermissionError:
        return record  # it runs, as another user
    except ProcessLookupError:
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record


def running() -> list:
    """The status of every collector running, of this user's runtime folder and the system's."""
    found = []
    for folder in dict.fromkeys((runtime_dir(), "/run/strata")):
        try:
            names = sorted(n for n in os.listdir(folder) if n.startswith("collect-") and n.endswith(".json"))
        except OSError:
            continue
        found += [r for r in (_live(os.path.join(folder, n)) for n in names) if r]
    return found
