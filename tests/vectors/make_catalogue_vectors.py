"""Writes tests/vectors/catalogue.json, the pinned catalogue: the statistics (name, kind,
unit, layer) that archives and Prometheus series are named after, and filter texts with
the key bytes the bpf/ programs store for them (or null: refused).

Written here from the protocols and the kernel, independently of catalogue/statistics.def:
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
    ("disk.queue", "heatmap", "ns", "disk"),
    ("vdev.ops", "counter", "operations", "vdev"), ("vdev.latency", "heatmap", "ns", "vdev"),
    ("vdev.size", "heatmap", "bytes", "vdev"),
    ("wire.ops", "counter", "operations", "wire"), ("wire.latency", "heatmap", "ns", "wire"),
    ("wire.size", "heatmap", "bytes", "wire"),
    ("fs.ops", "counter", "operations", "fs"), ("fs.latency", "heatmap", "ns", "fs"),
    ("fs.size", "heatmap", "bytes", "fs"),
    ("nfsd.ops", "counter", "operations", "nfsd"), ("nfsd.latency", "heatmap", "ns", "nfsd"),
    ("nfsd.size", "heatmap", "bytes", "nfsd"), ("nfsd.queue", "heatmap", "ns", "nfsd"),
    ("nfsd.io.ops", "counter", "operations", "nfsd_io"), ("nfsd.io.latency", "heatmap", "ns", "nfsd_io"),
    ("nfsd.io.size", "heatmap", "bytes", "nfsd_io"),
    ("arc.size", "gauge", "bytes", "engine"), ("arc.c", "gauge", "bytes", "engine"),
    ("arc.p", "gauge", "bytes", "engine"), ("arc.hdr_size", "gauge", "bytes", "engine"),
    ("arc.data_size", "gauge", "bytes", "engine"), ("l2arc.size", "gauge", "bytes", "engine"),
]

NFS3_PROCS = ["null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write", "create",
              "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir", "readdirplus",
              "fsstat", "fsinfo", "pathconf", "commit"]                      # RFC 1813 section 3
MOUNT3_PROCS = ["mnt_null", "mnt", "dump", "umnt", "umntall", "export"]     # RFC 1813 appendix I
# NFSv4.x opcodes (RFC 7530 section 16, RFC 5661 section 18, RFC 7862 section 15, RFC 8276)
# with no NFSv3 procedure of the same meaning
NFS4_OWN_OPS = {4: "close", 7: "delegpurge", 8: "delegreturn", 10: "getfh", 12: "lock", 13: "lockt", 14: "locku",
                17: "nverify", 18: "open", 19: "openattr", 20: "open_confirm", 21: "open_downgrade", 22: "putfh",
                23: "putpubfh", 24: "putrootfh", 30: "renew", 31: "restorefh", 32: "savefh", 33: "secinfo",
                35: "setclientid", 36: "setclientid_confirm", 37: "verify", 39: "release_lockowner",
                40: "backchannel_ctl", 41: "bind_conn_to_session", 42: "exchange_id", 43: "create_session",
                44: "destroy_session", 45: "free_stateid", 46: "get_dir_delegation", 47: "getdeviceinfo",
                48: "getdevicelist", 49: "layoutcommit", 50: "layoutget", 51: "layoutreturn", 52: "secinfo_no_name",
                53: "sequence", 54: "set_ssv", 55: "test_stateid", 56: "want_delegation", 57: "destroy_clientid",
                58: "reclaim_complete", 59: "allocate", 60: "copy", 61: "copy_notify", 62: "deallocate",
                63: "io_advise", 64: "layouterror", 65: "layoutstats", 66: "offload_cancel", 67: "offload_status",
                69: "seek", 70: "write_same", 71: "clone", 72: "getxattr", 73: "setxattr", 74: "listxattrs",
                75: "removexattr"}
CLOSED = {
    # (statistic, field): {text: key value}
    ("nfs.ops", "op"): {**{p: i for i, p in enumerate(NFS3_PROCS)},
                        **{p: 0x10000 | i for i, p in enumerate(MOUNT3_PROCS)}},
    ("disk.ops", "op"): {"read": 0, "write": 1, "sync": 2, "flush": 3, "discard": 4, "other": 5,
                         "missed": 6},
    ("l2arc.latency", "op"): {"read": 0, "write": 1},
    ("nfs.latency", "tier"): {"none": 0, "arc": 1, "l2arc": 2, "pool": 3, "zil": 4},
    ("fs.ops", "tier"): {"cache": 5, "disk": 6},                      # page cache or block I/O in the op
    ("vdev.latency", "op"): {"read": 0, "write": 1, "flush": 2},       # STRATA_VDEV_*, engine/strata_probes.h
    # NFSv4 COMPOUNDs by main op: ops meaning an NFSv3 procedure share its key; others 0x40000 + opcode
    ("wire.ops", "op"): {"read": 6, "mnt": 0x10001, "compound": 0x40000,
                         **{p: 0x40000 | i for i, p in NFS4_OWN_OPS.items()}},
    ("wire.ops", "version"): {"nfs3": 3, "nfs4": 4, "mount3": 0x10003},
    # nfsstat3 (RFC 1813 section 2.6); accept_stat + 0x10000, reject_stat + 0x20000 (RFC 5531)
    ("wire.latency", "status"): {"ok": 0, "noent": 2, "acces": 13, "stale": 70, "jukebox": 10008,
                                 "prog_unavail": 0x10001, "garbage_args": 0x10004, "auth_error": 0x20001},
    # nfsd.*: the same op, version and status keys as wire.*; unread: a status not read (NFSv4)
    ("nfsd.ops", "op"): {"null": 0, "read": 6, "write": 7, "commit": 21, "compound": 0x40000},
    ("nfsd.ops", "version"): {"nfs3": 3, "nfs4": 4},
    ("nfsd.latency", "status"): {"ok": 0, "noent": 2, "unread": 0x30000},
    ("nfsd.io.ops", "op"): {"read": 6, "write": 7},
    ("fs.ops", "op"): {s: i for i, s in enumerate(                     # strata's own numbering (fs.bpf.c)
        ["read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2",
         "fsync", "fdatasync", "openat", "close"])},
}
REFUSED = [("nfs.ops", "op", "reed"), ("nfs.ops", "op", "READ"), ("nfs.ops", "op", "proc6"),
           ("disk.ops", "op", "getattr"), ("l2arc.latency", "op", "commit"), ("nfs.latency", "tier", "flash"),
           ("nfs.ops", "client", "10.0.0.300"), ("nfs.ops", "client", "host.example"),
           ("nfs.ops", "client", "1.2.3"), ("nfs.ops", "client", "fe80::1%eth0"), ("nfs.ops", "file", "-1"), ("nfs.ops", "file", "+5"),
           ("nfs.ops", "file", "18446744073709551616"), ("nfs.ops", "file", "0x10"),
           ("nfs.ops", "file", "object:-1"), ("nfs.ops", "file", "object:"), ("nfs.ops", "file", "export:dir/f"),
           ("vdev.ops", "vdev", "4294967296"), ("vdev.ops", "vdev", "a"), ("vdev.ops", "op", "discard"),
           ("wire.ops", "server", "10.0.0.1"), ("wire.ops", "server", "10.0.0.1:65536"),
           ("wire.ops", "server", "10.0.0.1:"), ("wire.ops", "server", "::ffff:10.0.0.1"),
           ("wire.ops", "status", "fine"), ("wire.ops", "version", "nfs5"), ("wire.ops", "op", "read_plus"), ("wire.ops", "op", "nfs4_read"),
           ("fs.ops", "op", "pread"), ("fs.ops", "file", "relative/path"), ("fs.ops", "file", "inode:7:0:12"),
           ("fs.ops", "process", "nocolon"), ("fs.ops", "process", "x:0"), ("fs.ops", "process", ":12"),
           ("nfsd.ops", "status", "fine"), ("nfsd.ops", "export", "fsid:1:0001"),
           ("nfsd.ops", "export", "fsid:9:00000001"), ("nfsd.ops", "export", "fsid:1:0000000G"),
           ("nfsd.io.ops", "export", "relative/path")]


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
    for text in ["127.0.0.1", "fd00::7"]:
        yield "nfsd.ops", "client", text, address(text)
    for n in [0, 1, 42, 2**32, 2**64 - 1]:
        yield "nfs.ops", "file", f"object:{n}", struct.pack("<Q", n).ljust(16, b"\0")
    for n in [0, 3, 2**32 - 1]:
        yield "vdev.ops", "vdev", str(n), u32(n)
    # export: 1, the fsid type (fs/nfsd/nfsfh.h), two zero bytes, the fsid's first 12 bytes
    # as nfsd's fsid table prints them (32-bit words in host order, here little-endian)
    yield "nfsd.ops", "export", "fsid:1:00000007", bytes([1, 1, 0, 0]) + struct.pack("<I", 7).ljust(12, b"\0")
    yield "nfsd.io.ops", "export", "fsid:6:0a0b0c0d0000000100000002", \
        bytes([1, 6, 0, 0]) + struct.pack("<III", 0x0a0b0c0d, 1, 2)   # a 16-byte uuid: its first 12 kept
    yield "nfsd.ops", "export", "none", bytes(16)
    # server: IPv4 as the mapped address with the port (big endian) in bytes 0-1; IPv6 alone
    for text, addr, port in [("10.0.0.1:2049", "10.0.0.1", 2049), ("127.0.0.1:20048", "127.0.0.1", 20048)]:
        yield "wire.ops", "server", text, struct.pack(">H", port) + address(addr)[2:]
    yield "wire.ops", "server", "fd00::1", address("fd00::1")
    # fs: inode:MAJ,MIN:INO is (inode number, kernel dev_t major << 20 | minor), comm:pid
    # is (tgid, the comm's first 12 bytes, zero-padded); all little-endian
    for major, minor, ino in [(7, 0, 12), (259, 1, 2**40 + 5)]:
        yield "fs.ops", "file", f"inode:{major},{minor}:{ino}", struct.pack("<QII", ino, major << 20 | minor, 0)
    for comm, pid in [("ganesha.nfsd", 1234), ("fio", 7)]:
        yield "fs.ops", "process", f"{comm}:{pid}", struct.pack("<I", pid) + comm.encode()[:12].ljust(12, b"\0")
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
