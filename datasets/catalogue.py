"""What can be collected: the statistics catalogue.

The truth is `strata-collect --catalogue` (collectors/FORMAT.md: {"v":1,
"statistics":[{"name","unit","kind","layer","breakdowns","filters","source",
"description","supported","reason"}]});
when that program is not built, the documented built-in list stands in, with
`supported` unknown (None). Dataset names are validated against it.
"""
import json
import subprocess
from dataclasses import dataclass, field

from ..cli.binaries import MissingBinary, find_binary
from .errors import ArchiveError

NFS = ["op", "client", "tier", "file"]
DISK = ["device", "op"]
WIRE = ["op", "client", "version", "status", "server"]


@dataclass(frozen=True)
class Statistic:
    statistic: str
    unit: str
    kind: str                      # heatmap | counter | gauge
    breakdowns: list = field(default_factory=list)
    filters: list = field(default_factory=list)
    layer: str = ""
    probe: str = ""                # probes that fire per event ("" when sampled, e.g. gauges)
    supported: bool | None = None  # None: unknown (collector not built)
    reason: str = ""
    description: str = ""


def _builtin(name, unit, kind, breakdowns, layer, probe, filters=None):
    return Statistic(name, unit, kind, list(breakdowns), list(breakdowns if filters is None else filters),
                     layer, probe, None, "strata-collect is not built: support unknown")


NFS_OP = "usdt strata:nfs_ops"
BLOCK = "tracepoints block:block_rq_issue, block:block_rq_complete"
TC = "tc clsact ingress and egress (ONC RPC over TCP)"
BUILTIN = [
    _builtin("nfs.ops", "operations", "counter", NFS, "nfs", NFS_OP),
    _builtin("nfs.latency", "ns", "heatmap", NFS, "nfs", NFS_OP),
    _builtin("nfs.size", "bytes", "heatmap", NFS, "nfs", NFS_OP),
    _builtin("arc.accesses", "records", "counter", NFS + ["hit/miss"], "nfs", NFS_OP, NFS),
    _builtin("l2arc.latency", "ns", "heatmap", ["op", "file"], "cache",
             "usdt strata:l2arc_read, strata:l2arc_write"),
    _builtin("zil.latency", "ns", "heatmap", ["file"], "cache", "usdt strata:zil_commit"),
    _builtin("disk.ops", "operations", "counter", DISK, "disk", BLOCK),
    _builtin("disk.latency", "ns", "heatmap", DISK, "disk", BLOCK),
    _builtin("disk.size", "bytes", "heatmap", DISK, "disk", BLOCK),
    _builtin("disk.offset", "bytes", "heatmap", DISK, "disk", BLOCK),
    _builtin("wire.ops", "operations", "counter", WIRE, "wire", TC),
    _builtin("wire.latency", "ns", "heatmap", WIRE, "wire", TC),
    _builtin("wire.size", "bytes", "heatmap", WIRE, "wire", TC),
] + [_builtin(g, "bytes", "gauge", [], "cache", "")
     for g in ("arc.size", "arc.c", "arc.p", "arc.hdr_size", "arc.data_size", "l2arc.size")]


def _probe(source: str) -> str:
    """The probes of a catalogue `source`; sampled sources (engine stats socket) fire no probe."""
    return source if source.startswith(("usdt", "tracepoint", "tc ")) else ""


def parse(text: str) -> list:
    """Statistics from the collector's --catalogue JSON (collectors/FORMAT.md); ArchiveError if malformed."""
    try:
        doc = json.loads(text)
        items = doc["statistics"] if isinstance(doc, dict) else doc
        out = []
        for it in items:
            kind = it["kind"]
            if kind not in ("heatmap", "counter", "gauge"):
                raise ValueError(f"unknown kind {kind!r}")
            breakdowns = [str(b) for b in it.get("breakdowns", [])]
            out.append(Statistic(str(it.get("name") or it["statistic"]), str(it.get("unit", "")), kind,
                                 breakdowns, [str(f) for f in it.get("filters", breakdowns)],
                                 str(it.get("layer", "")), _probe(str(it.get("source") or it.get("probe", ""))),
                                 bool(it.get("supported", True)), str(it.get("reason", "")),
                                 str(it.get("description", ""))))
        return out
    except (ValueError, KeyError, TypeError) as e:
        raise ArchiveError(f"strata-collect --catalogue printed an unreadable catalogue ({e})") from None


_cache = {}


def load() -> tuple:
    """(statistics, source): from strata-collect when built, else the built-in list."""
    if "value" in _cache:
        return _cache["value"]
    try:
        binary = find_binary("strata-collect")
        proc = subprocess.run([binary, "--catalogue"], capture_output=True, text=True, timeout=20)
        if proc.returncode != 0:
            raise ArchiveError(f"strata-collect --catalogue failed: {proc.stderr.strip()[:200]}")
        value = (parse(proc.stdout), binary)
    except (MissingBinary, OSError, subprocess.TimeoutExpired):
        value = (list(BUILTIN), "built-in list")
    _cache["value"] = value
    return value


def by_name(statistics=None) -> dict:
    return {s.statistic: s for s in (statistics if statistics is not None else load()[0])}
