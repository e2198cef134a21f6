"""Helpers for the engine tests: a pool in a temp dir, a real strata-engine on
127.0.0.1 ephemeral ports, libnfs URLs, the stats socket, and a minimal
ONC-RPC/NFSv3 client (struct-packed XDR) for protocol and robustness tests."""
import json
import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from strata.lab.binaries import find_binary


def engine_binary() -> str:
    """STRATA_ENGINE (e.g. the sanitizer build) or build/bin/strata-engine."""
    return os.environ.get("STRATA_ENGINE") or find_binary("strata-engine")


def mkpool(tmp: Path, nvdevs=2, size="256M", recordsize=None) -> str:
    paths = ",".join(str(tmp / f"vdev{i}") for i in range(nvdevs))
    cmd = [engine_binary(), "mkpool", paths, "--size", size]
    if recordsize:
        cmd += ["--recordsize", recordsize]
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)
    return paths


class Engine:
    """A running strata-engine serving export `data` (and any extra exports).
    `data`'s root is 1777 (export roots are 0755 otherwise): the tests write
    there as a squashed root."""

    def __init__(self, tmp: Path, pool: str, exports=("data:mode=1777",), extra=()):
        self.tmp, self.pool, self.exports, self.extra = tmp, pool, list(exports), list(extra)
        self.proc = None

    def start(self):
        self.port_file = self.tmp / "port"
        self.stats_socket = self.tmp / "stats.sock"
        if self.port_file.exists():
            self.port_file.unlink()
        cmd = [engine_binary(), "serve", "--pool", self.pool, "--listen", "127.0.0.1:0",
               "--port-file", str(self.port_file), "--stats-socket", str(self.stats_socket),
               "--no-rpcbind", "--arc-max", "256M", "--sync-interval", "1s"]
        for e in self.exports:
            cmd += ["--export", e]
        cmd += self.extra
        self.stderr = open(self.tmp / "engine.err", "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr)
        try:
            line = self.proc.stdout.readline().decode()
            if not line.startswith("listening"):
                raise RuntimeError(f"engine did not start: {(self.tmp / 'engine.err').read_text()}")
            fields = dict(kv.split("=", 1) for kv in line.split()[1:])
            self.port = int(fields["nfs"].rsplit(":", 1)[1])
            self.mount_port = int(fields["mount"].rsplit(":", 1)[1])
            assert self.port_file.read_text().strip() == line.strip()
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            self.stderr.close()
            raise
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        rc = self.proc.returncode if self.proc else 0
        self.proc = None
        self.stderr.close()
        return rc

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def url(self, path: str, export="data") -> str:
        return f"nfs://127.0.0.1/{export}/{path}?nfsport={self.port}&mountport={self.mount_port}"

    def stats(self) -> dict:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(str(self.stats_socket))
        s.sendall(b"stats\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        return json.loads(data)


@pytest.fixture
def engine(tmp_path):
    pool = mkpool(tmp_path)
    eng = Engine(tmp_path, pool).start()
    yield eng
    if eng.proc:
        assert eng.stop() == 0


def nfs_put(eng: Engine, local: Path, name: str):
    subprocess.run(["nfs-cp", str(local), eng.url(name)], check=True, capture_output=True, timeout=120)


def nfs_get(eng: Engine, name: str, local: Path):
    subprocess.run(["nfs-cp", eng.url(name), str(local)], check=True, capture_output=True, timeout=120)


# --- a minimal ONC RPC client -------------------------------------------------

NFS_PROG, MOUNT_PROG = 100003, 100005


def xdr_opaque(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def auth_sys(uid=0, gid=0) -> bytes:
    body = struct.pack(">I", 0) + xdr_opaque(b"test") + struct.pack(">III", uid, gid, 0)
    return struct.pack(">I", 1) + xdr_opaque(body)


def call_header(xid, prog, vers, proc, rpcvers=2, cred=None) -> bytes:
    return (struct.pack(">IIIIII", xid, 0, rpcvers, prog, vers, proc)
            + (cred if cred is not None else auth_sys()) + struct.pack(">II", 0, 0))


class Reader:
    def __init__(self, data: bytes):
        self.d, self.p = data, 0

    def u32(self):
        v = struct.unpack_from(">I", self.d, self.p)[0]
        self.p += 4
        return v

    def u64(self):
        v = struct.unpack_from(">Q", self.d, self.p)[0]
        self.p += 8
        return v

    def opaque(self):
        n = self.u32()
        v = self.d[self.p:self.p + n]
        self.p += n + (-n % 4)
        return v

    def fattr(self):
        f = struct.unpack_from(">IIIII QQ II QQ IIIIII", self.d, self.p)
        self.p += 84
        return {"type": f[0], "mode": f[1], "nlink": f[2], "uid": f[3], "gid": f[4],
                "size": f[5], "fileid": f[10]}

    def post_op_attr(self):
        return self.fattr() if self.u32() else None

    def wcc(self):
        if self.u32():
            self.p += 24
        return self.post_op_attr()


class RpcClient:
    """One TCP connection; call() sends a record and returns the reply record."""

    def __init__(self, port, timeout=10):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.xid = 1000

    def close(self):
        self.s.close()

    def send_record(self, payload: bytes):
        self.s.sendall(struct.pack(">I", 0x80000000 | len(payload)) + payload)

    def recv_record(self) -> bytes:
        out = b""
        while True:
            hdr = self._read(4)
            (h,) = struct.unpack(">I", hdr)
            out += self._read(h & 0x7FFFFFFF)
            if h & 0x80000000:
                return out

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def call_raw(self, prog, vers, proc, args=b"", **kw):
        self.xid += 1
        self.send_record(call_header(self.xid, prog, vers, proc, **kw) + args)
        reply = Reader(self.recv_record())
        assert reply.u32() == self.xid
        assert reply.u32() == 1  # REPLY
        return reply

    def call(self, prog, proc, args=b"", vers=3, cred=None):
        """Accepted SUCCESS reply positioned at the results (cred: auth_sys() by default)."""
        r = self.call_raw(prog, vers, proc, args, cred=cred)
        assert r.u32() == 0, "MSG_DENIED"
        r.u32()
        r.opaque()
        stat = r.u32()
        assert stat == 0, f"accept_stat {stat}"
        return r

    def mount(self, path="/data") -> bytes:
        r = self.call(MOUNT_PROG, 1, xdr_opaque(path.encode()))
        assert r.u32() == 0
        return r.opaque()


# --- NFSv3 calls on an RpcClient ---------------------------------------------------

NO_SATTR = struct.pack(">IIIIII", 0, 0, 0, 0, 0, 0)


def diropargs(fh, name):
    return xdr_opaque(fh) + xdr_opaque(name.encode())


def create(c, dirfh, name, how=1):
    r = c.call(NFS_PROG, 8, diropargs(dirfh, name) + struct.pack(">I", how) + NO_SATTR)
    st = r.u32()
    if st:
        return st, None
    assert r.u32() == 1
    return 0, r.opaque()


def lookup(c, dirfh, name):
    r = c.call(NFS_PROG, 3, diropargs(dirfh, name))
    st = r.u32()
    return (st, r.opaque()) if st == 0 else (st, None)


def write(c, fh, off, data, stable):
    r = c.call(NFS_PROG, 7, xdr_opaque(fh) + struct.pack(">QII", off, len(data), stable) + xdr_opaque(data))
    assert r.u32() == 0
    r.wcc()
    count, committed = r.u32(), r.u32()
    return count, committed, r.d[r.p:r.p + 8]


def commit(c, fh):
    """COMMIT of the whole file: (status, write verifier)."""
    r = c.call(NFS_PROG, 21, xdr_opaque(fh) + struct.pack(">QI", 0, 0))
    st = r.u32()
    r.wcc()
    return st, r.d[r.p:r.p + 8]


def write_status(c, fh, off, data, stable=0):
    """WRITE's nfsstat3 alone (errors included)."""
    r = c.call(NFS_PROG, 7, xdr_opaque(fh) + struct.pack(">QII", off, len(data), stable) + xdr_opaque(data))
    return r.u32()


def rss_bytes(pid) -> int:
    """Resident set size of a process, from /proc/PID/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def read(c, fh, off, count):
    r = c.call(NFS_PROG, 6, xdr_opaque(fh) + struct.pack(">QI", off, count))
    assert r.u32() == 0
    r.post_op_attr()
    n, eof = r.u32(), r.u32()
    return r.opaque(), eof
