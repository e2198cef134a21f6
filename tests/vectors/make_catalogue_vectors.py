"""Writes tests/vectors/catalogue.json, the pinned catalogue: the statistics (name, kind,
unit, layer) that archives and Prometheus series are named after, and filter texts with
the key bytes the bpf/ programs store for them (or null: refused).

Written here from the protocols and the kernel, independently of collectors/statistics.def:
NFSv3 and MOUNT v3 procedure numbers (RFC 1813), IPv4-mapped IPv6 addresses (RFC 4291),
little-endian integers. A change to the catalogue that breaks one of these changes what
stored data means, and must change this file on purpose. One case per line so the C test
can read it with sscanf.
Usage: python3 tests/vectors/make_catalogue_vectors.py > tests/vectors/catalogue.json
"""
import ipaddress
import json
import struct

STATISTICS = [
    ("nfs.ops", "counter", "operations", "nfs"), ("nfs.latency", "heatmap", "ns", "nfs"),
    ("nfs.size", "heatmap", "bytes", "nfs"), ("arc.accesses", "counter", "records", "nfs"),
    ("l2arc.latency", "heatmap", "ns", "cache"), ("zil.latency", "heatmap", "ns", "cache"),
    ("disk.ops", "counter", "operations", "disk"), ("disk.latency", "heatmap", "ns", "disk"),
    ("disk.size", "heatmap", "bytes", "disk"), ("disk.offset", "heatmap", "bytes", "disk"),
    ("vdev.ops", "counter", "operations", "vdev"), ("vdev.latency", "heatmap", "ns", "vdev"),
    ("vdev.size", "heatmap", "bytes", "vdev"),
    ("arc.size", "gauge", "bytes", "engine"), ("arc.c", "gauge", "bytes", "engine"),
    ("arc.p", "gauge", "bytes", "engine"), ("arc.hdr_size", "gauge", "bytes", "engine"),
    ("arc.data_size", "gauge", "bytes", "engine"), ("l2arc.size", "gauge", "bytes", "engine"),
]

NFS3_PROCS = ["null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write", "create",
              "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir", "readdirplus",
              "fsstat", "fsinfo", "pathconf", "commit"]                      # RFC 1813 section 3
MOUNT3_PROCS = ["mnt_null", "mnt", "dump", "umnt", "umntall", "export"]     # RFC 1813 appendix I
CLOSED = {
    # (statistic, field): {text: key value}
    ("nfs.ops", "op"): {**{p: i for i, p in enumerate(NFS3_PROCS)},
                        **{p: 0x10000 | i for i, p in enumerate(MOUNT3_PROCS)}},
    ("disk.ops", "op"): {"read": 0, "write": 1, "sync": 2, "flush": 3, "discard": 4, "other": 5},
    ("l2arc.latency", "op"): {"read": 0, "write": 1},
    ("nfs.latency", "tier"): {"none": 0, "arc": 1, "l2arc": 2, "pool": 3, "zil": 4},
    ("vdev.latency", "op"): {"read": 0, "write": 1, "flush": 2},       # STRATA_VDEV_*, engine/strata_probes.h
}
REFUSED = [("nfs.ops", "op", "reed"), ("nfs.ops", "op", "READ"), ("nfs.ops", "op", "proc6"),
           ("disk.ops", "op", "getattr"), ("l2arc.latency", "op", "commit"), ("nfs.latency", "tier", "flash"),
           ("nfs.ops", "client", "10.0.0.300"), ("nfs.ops", "client", "host.example"),
           ("nfs.ops", "client", "1.2.3"), ("nfs.ops", "client", "fe80::1%eth0"), ("nfs.ops", "file", "-1"), ("nfs.ops", "file", "+5"),
           ("nfs.ops", "file", "18446744073709551616"), ("nfs.ops", "file", "0x10"),
           ("vdev.ops", "vdev", "4294967296"), ("vdev.ops", "vdev", "a"), ("vdev.ops", "op", "discard")]


def u32(v):
    return struct.pack("<I", v).ljust(16, b"\0")


def address(text):
    a = ipaddress.ip_address(text)
    return (b"\0" * 10 + b"\xff\xff" + a.packed) if a.version == 4 else a.packed


def cases():
    for (stat, fld), texts in CLOSED.items():
        for text, value in texts.items():
            yield stat, fld, text, u32(value)
    for text in ["10.0.0.3", "127.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "fd00::7", "::ffff:10.0.0.3"]:
        yield "nfs.ops", "client", text, address(text)
    for n in [0, 1, 42, 2**32, 2**64 - 1]:
        yield "nfs.ops", "file", str(n), struct.pack("<Q", n).ljust(16, b"\0")
    for n in [0, 3, 2**32 - 1]:
        yield "vdev.ops", "vdev", str(n), u32(n)
    for stat, fld, text in REFUSED:
        yield stat, fld, text, None


def main():
    print('{"definition": "tests/vectors/make_catalogue_vectors.py: pinned statistics, and filter texts '
          'with the 16 key bytes they select (hex; null: refused)",')
    print(' "statistics": [')
    print(",\n".join(f'  {{"statistic": "{n}", "kind": "{k}", "unit": "{u}", "layer": "{l}"}}'
                     for n, k, u, l in STATISTICS) + "],")
    print(' "keys": [')
    print(",\n".join(f'  {{"statistic": "{s}", "field": "{f}", "text": {json.dumps(t)}, '
                     f'"key": {json.dumps(k.hex() if k is not None else None)}}}' for s, f, t, k in cases()))
    print(" ]}")


if __name__ == "__main__":
    main()
