"""Malformed, truncated and oversized RPC records over a real socket get an RPC
error or a closed connection; the engine never crashes or hangs and keeps
serving other clients."""
import os
import socket
import struct
import subprocess

import pytest

from engine_util import (MOUNT_PROG, NFS_PROG, Reader, RpcClient, auth_sys, call_header,  # noqa: F401
                         engine, xdr_opaque)


def still_serving(engine):
    assert engine.alive()
    c = RpcClient(engine.port)
    c.call(NFS_PROG, 0)  # NULL
    c.close()
    out = subprocess.run(["nfs-ls", engine.url("")], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr


def closed_or_reply(sock) -> bytes:
    """Reply record bytes, or b'' when the engine closed the connection."""
    sock.settimeout(10)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
            if len(data) >= 4 and len(data) >= 4 + (struct.unpack(">I", data[:4])[0] & 0x7FFFFFFF):
                break
    except ConnectionResetError:
        return b""
    return data


def is_rpc_error(reply: bytes) -> bool:
    """MSG_DENIED, or MSG_ACCEPTED with a non-SUCCESS accept_stat."""
    r = Reader(reply[4:])
    r.u32()
    assert r.u32() == 1  # REPLY
    if r.u32() == 1:
        return True
    r.u32()
    r.opaque()
    return r.u32() != 0


def test_rpc_level_errors(engine):
    c = RpcClient(engine.port)
    r = c.call_raw(NFS_PROG, 3, 1, b"")  # GETATTR without a handle
    assert r.u32() == 0 and (r.u32(), r.opaque()) and r.u32() == 4  # GARBAGE_ARGS
    r = c.call_raw(NFS_PROG, 3, 99)
    assert r.u32() == 0 and (r.u32(), r.opaque()) and r.u32() == 3  # PROC_UNAVAIL
    r = c.call_raw(NFS_PROG, 2, 0)
    assert r.u32() == 0 and (r.u32(), r.opaque()) and r.u32() == 2  # PROG_MISMATCH
    assert (r.u32(), r.u32()) == (3, 3)
    r = c.call_raw(123456, 1, 0)
    assert r.u32() == 0 and (r.u32(), r.opaque()) and r.u32() == 1  # PROG_UNAVAIL
    r = c.call_raw(NFS_PROG, 3, 0, rpcvers=3)
    assert r.u32() == 1 and r.u32() == 0  # MSG_DENIED, RPC_MISMATCH
    r = c.call_raw(NFS_PROG, 3, 0, cred=struct.pack(">I", 6) + xdr_opaque(b"x"))
    assert r.u32() == 1 and r.u32() == 1  # MSG_DENIED, AUTH_ERROR
    r = c.call_raw(NFS_PROG, 3, 1, xdr_opaque(b"\x01" * 32))  # handle-sized garbage
    assert r.u32() == 0 and (r.u32(), r.opaque()) and r.u32() == 0
    assert r.u32() == 10001  # NFS3ERR_BADHANDLE
    c.close()
    still_serving(engine)


@pytest.mark.parametrize("payload", [
    b"",                                   # empty record
    b"\x00\x00\x00\x01",                   # xid only
    os.urandom(200),                       # random bytes
    call_header(7, NFS_PROG, 3, 6)[:30],   # header cut inside the credential
    call_header(7, NFS_PROG, 3, 7) + xdr_opaque(b"\0" * 24) + struct.pack(">QII", 0, 100, 0) + struct.pack(">I", 1 << 30),
    call_header(7, NFS_PROG, 3, 16) + struct.pack(">I", 0xFFFFFFFF),  # huge handle length
    call_header(7, MOUNT_PROG, 3, 1) + struct.pack(">I", 5000) + b"/data",  # path longer than sent
], ids=["empty", "xid-only", "random", "cut-credential", "write-claims-1GiB", "huge-fh", "mount-cut"])
def test_malformed_records(engine, payload):
    s = socket.create_connection(("127.0.0.1", engine.port), timeout=10)
    s.sendall(struct.pack(">I", 0x80000000 | len(payload)) + payload)
    reply = closed_or_reply(s)
    if reply:
        assert is_rpc_error(reply)
    s.close()
    still_serving(engine)


def test_oversized_record_closes_the_connection(engine):
    s = socket.create_connection(("127.0.0.1", engine.port), timeout=10)
    s.sendall(struct.pack(">I", 0x80000000 | (64 << 20)) + b"\0" * 4096)
    assert closed_or_reply(s) == b""
    s.close()
    s = socket.create_connection(("127.0.0.1", engine.port), timeout=10)
    frag = b"\0" * 65536  # many non-last fragments adding up past the limit
    try:
        for _ in range(40):
            s.sendall(struct.pack(">I", len(frag)) + frag)
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert closed_or_reply(s) == b""
    s.close()
    still_serving(engine)


def test_truncated_record_and_abrupt_close(engine):
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", engine.port), timeout=10)
        s.sendall(struct.pack(">I", 0x80000000 | 1000) + b"\x00" * 10)
        s.close()
    # a half-sent record on an open connection does not block other clients
    stuck = socket.create_connection(("127.0.0.1", engine.port), timeout=10)
    stuck.sendall(struct.pack(">I", 0x80000000 | 1000) + b"\x00" * 10)
    still_serving(engine)
    stuck.close()


def test_fragmented_call_and_pipelined_requests(engine):
    c = RpcClient(engine.port)
    call = call_header(77, NFS_PROG, 3, 0)
    c.s.sendall(struct.pack(">I", 10) + call[:10] + struct.pack(">I", 0x80000000 | (len(call) - 10)) + call[10:])
    r = Reader(c.recv_record())
    assert r.u32() == 77
    batch = b"".join(struct.pack(">I", 0x80000000 | len(call_header(x, NFS_PROG, 3, 0))) +
                     call_header(x, NFS_PROG, 3, 0) for x in range(500, 564))
    c.s.sendall(batch)
    xids = {Reader(c.recv_record()).u32() for _ in range(64)}
    assert xids == set(range(500, 564))
    c.close()
