"""What can be collected: the statistics catalogue, and the key texts each field takes.

The one source is catalogue/statistics.def. `make` compiles it into the collector and
writes it as catalogue.json next to this module (package data): the same JSON that
`strata-collect --catalogue` prints (collectors/FORMAT.md), less this host's support.
Reading it starts no program. with_support() merges what the collector says about this
host into it, and refuses a collector whose catalogue is not this one.
"""
import ipaddress
import re
import json
import os
from dataclasses import dataclass, field, replace
from importlib import resources

from .errors import ArchiveError
from .suggest import did_you_mean

SYS_BLOCK = "/sys/class/block"
SHORT_LIST = 8      # a key set up to this long is listed whole in errors; longer: the 3 nearest

@dataclass(frozen=True)
class Statistic:
    statistic: str
    unit: str
    kind: str                      # heatmap | counter | gauge
    breakdowns: list = field(default_factory=list)
    filters: list = field(default_factory=list)
    layer: str = ""
    probe: str = ""                # probes that fire per event ("" when sampled, e.g. gauges)
    supported: bool | None = None  # None: not asked (this host's support comes from the collector)
    reason: str = ""
    description: str = ""
    ops: str = ""                  # the key set of the "op" field
    unrecorded: dict = field(default_factory=dict)  # op -> {"why", "counted_by"}: ops it never records


@dataclass(frozen=True)
class Catalogue:
    statistics: tuple              # Statistic, in catalogue order
    dimensions: dict               # field -> its values: "op", a key set, "address", "u64", "u32", "device"
    key_values: dict               # key set -> {text: the key value it stands for}, in catalogue order

    @property
    def keysets(self) -> dict:
        """Key set -> tuple of its texts."""
        return {name: tuple(values) for name, values in self.key_values.items()}

    def by_name(self) -> dict:
        return {s.statistic: s for s in self.statistics}

    def texts_in(self, keyset: str, low: int, high: int) -> frozenset:
        """The texts of a key set whose key values lie in [low, high]."""
        return frozenset(t for t, v in self.key_values.get(keyset, {}).items() if low <= v <= high)


def _statistic(it: dict) -> Statistic:
    source = str(it["source"])
    return Statistic(str(it["name"]), str(it["unit"]), str(it["kind"]), [str(b) for b in it["breakdowns"]],
                     [str(f) for f in it["filters"]], str(it["layer"]),
                     source if source.startswith(("usdt", "tracepoint", "tc ")) else "",
                     None, "", str(it["description"]), str(it["ops"]),
                     {str(op): {"why": str(u["why"]), "counted_by": str(u["counted_by"])}
                      for op, u in it["unrecorded"].items()})


def parse(text: str) -> Catalogue:
    """A catalogue from its JSON (catalogue.json or `strata-collect --catalogue`); ArchiveError if malformed."""
    try:
        doc = json.loads(text)
        stats = tuple(_statistic(it) for it in doc["statistics"])
        for s in stats:
            if s.kind not in ("heatmap", "counter", "gauge"):
                raise ValueError(f"unknown kind {s.kind!r}")
        return Catalogue(stats, {str(d["name"]): str(d["values"]) for d in doc["dimensions"]},
                         {str(k["name"]): {str(t["text"]): int(t["value"]) for t in k["keys"]}
                          for k in doc["keysets"]})
    except (ValueError, KeyError, TypeError) as e:
        raise ArchiveError(f"unreadable statistics catalogue ({e})") from None


_cache = {}


def load() -> Catalogue:
    """This package's catalogue (catalogue.json)."""
    if "value" not in _cache:
        try:
            text = resources.files(__package__).joinpath("catalogue.json").read_text()
        except OSError as e:
            raise ArchiveError(f"the statistics catalogue is missing ({e}): run `make`") from None
        _cache["value"] = parse(text)
    return _cache["value"]


def by_name() -> dict:
    return load().by_name()


def with_support(text: str) -> list:
    """The statistics with this host's support, from `strata-collect --catalogue` output;
    ArchiveError if that collector was built from another catalogue."""
    theirs = parse(text)
    ours = load()
    if theirs != ours:
        raise ArchiveError("strata-collect was built from another statistics catalogue than this "
                           "strata package's: rebuild both (`make`)")
    support = {it["name"]: it for it in json.loads(text)["statistics"]}
    return [replace(s, supported=bool(support[s.statistic].get("supported")),
                    reason=str(support[s.statistic].get("reason", ""))) for s in ours.statistics]


def host_devices() -> list:
    """Block devices this host has now (names under /sys/class/block)."""
    try:
        return sorted(os.listdir(SYS_BLOCK))
    except OSError:
        return []


def check_value(stat: Statistic, fld: str, value: str, allow_absent_device: bool = False):
    """ArchiveError naming the valid values unless `value` is one that field `fld` of `stat` takes."""
    cat = load()
    kind = cat.dimensions.get(fld, "")
    if kind == "op":
        kind = stat.ops
    if kind in cat.keysets:
        valid = cat.keysets[kind]
        if value not in valid:
            hint = (len(valid) > SHORT_LIST and did_you_mean(value, valid, "`strata statistics --json`")
                    or f"; valid: {', '.join(valid)}")
            raise ArchiveError(f"{stat.statistic} has no {fld} {value!r}{hint}")
        if cat.dimensions.get(fld) == "op" and value in stat.unrecorded:
            u = stat.unrecorded[value]
            raise ArchiveError(f"{stat.statistic} records no op {value}: {u['why']}; "
                               f"{u['counted_by']}[op={value}] counts them")
    elif kind == "address":
        try:
            ipaddress.ip_address(value)
            if "%" in value:
                raise ValueError("a scoped address")
        except ValueError:
            raise ArchiveError(f"{fld} {value!r} is not an IPv4 or IPv6 address") from None
    elif kind == "file" and stat.layer == "fs":
        if not (value.startswith("/") or re.fullmatch(r"inode:\d+,\d+:\d+", value)):
            raise ArchiveError(f"file {value!r} is not an absolute path or inode:MAJ,MIN:INO")
    elif kind == "file":
        number = re.fullmatch(r"(?:object:)?(\d+)", value)
        if (not re.fullmatch(r"[^:/\s]+:/[^\n]*", value)) and not (number and int(number[1]) < 2**64):
            raise ArchiveError(f"file {value!r} is not EXPORT:/path or object:ID")
    elif kind == "export":
        if not (value.startswith("/") or value == "none" or re.fullmatch(r"fsid:[0-7]:(?:[0-9a-f]{8})+", value)):
            raise ArchiveError(f"export {value!r} is not an absolute path, fsid:TYPE:HEX or none")
    elif kind == "process":
        if not re.fullmatch(r"[^:]{1,15}:[1-9]\d*", value):
            raise ArchiveError(f"process {value!r} is not comm:pid")
    elif kind in ("u64", "u32"):
        bits = int(kind[1:])
        if not value.isascii() or not value.isdigit() or int(value) >= 2**bits:
            raise ArchiveError(f"{fld} {value!r} is not a decimal number below 2^{bits}")
    elif kind == "device":
        if "/" in value or value in (".", ".."):
            raise ArchiveError(f"device {value!r} is not a block device name")
        if not allow_absent_device and not os.path.exists(os.path.join(SYS_BLOCK, value)):
            have = ", ".join(host_devices()) or "none"
            raise ArchiveError(f"this host has no block device {value!r}; valid devices: {have} "
                               "(--allow-absent-device for one that will appear later)")
    elif kind == "server":
        _check_server(fld, value)


def _check_server(fld: str, value: str):
    """A wire server key: IPv4 ADDRESS:PORT, or an IPv6 address (no port: bpf/wire_rpc.h)."""
    try:
        addr = ipaddress.ip_address(value)
        if addr.version == 6 and addr.ipv4_mapped is None and "%" not in value:
            return
    except ValueError:
        host, sep, port = value.rpartition(":")
        try:
            if sep and port.isascii() and port.isdigit() and int(port) < 65536 and \
                    ipaddress.ip_address(host).version == 4:
                return
        except ValueError:
            pass
    raise ArchiveError(f"{fld} {value!r} is neither IPv4 ADDRESS:PORT nor an IPv6 address")
