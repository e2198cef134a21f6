"""Hostile clients against the real engine over real TCP (raw ONC RPC): a client
that never reads its replies does not stall others (whether its READs run on the
workers or on the event loop's thread), nor does a read waiting for a (modelled)
disk; idle connections cost no
thread; unfinished records are bounded in memory and time; connections are
limited per address and in total (also when descriptors run out); MOUNT DUMP
and EXPORT answer only addresses some export allows.  Every refusal and
closure is counted in the stats."""
import select
import socket
import struct
import subprocess
import time

import pytest

from engine_util import (MOUNT_PROG, NFS_PROG, Engine, Reader, RpcClient, call_header, create, mkpool, read,
                         write, xdr_opaque)

MIB = 1 << 20


def start(tmp_path, *extra, exports=("data",)):
    return Engine(tmp_path, mkpool(tmp_path), exports=exports, extra=list(extra)).start()


@pytest.fixture
def stop_after():
    started = []
    yield started.append
    for eng in started:
        if eng.proc:
            assert eng.stop() == 0


def connect(eng, src="127.0.0.1", timeout=10, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", eng.port))
    return s


def client(eng, src="127.0.0.1", timeout=10) -> RpcClient:
    c = RpcClient.__new__(RpcClient)
    c.s, c.xid = connect(eng, src, timeout), 1000
    return c


def closed_by_engine(s, timeout=10) -> bool:
    """True when the engine closes the socket (EOF or reset) within timeout."""
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:
        return False
    return True


def net(eng) -> dict:
    return eng.stats()["net"]


def wait_for(pred, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def threads(pid) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


# READs of 1 MiB run on the workers, of 64 KiB from the ARC on the event loop's thread
@pytest.mark.parametrize("count,size", [(64, MIB), (256, 64 << 10)])
def test_a_client_not_reading_its_replies_stalls_no_one(tmp_path, stop_after, count, size):
    eng = start(tmp_path, exports=("data:no_root_squash",))  # root creates the file
    stop_after(eng)
    c = RpcClient(eng.port)
    root = c.mount()
    _, fh = create(c, root, "big")
    write(c, fh, 0, b"\xab" * MIB, 2)
    # pipelined READs of 16 MiB or more into a 4 KiB receive buffer, never read
    hostile = connect(eng, rcvbuf=4096)
    reads = b"".join(struct.pack(">I", 0x80000000 | len(p)) + p for p in
                     (call_header(5000 + i, NFS_PROG, 3, 6) + xdr_opaque(fh) +
                      struct.pack(">QI", i * size % MIB, size) for i in range(count)))
    hostile.sendall(reads)
    assert wait_for(lambda: net(eng)["queued_reply_bytes"] >= MIB)
    # the old engine held every worker in a blocking send: these never came back
    getattr_ = xdr_opaque(root)
    slowest = 0.0
    for _ in range(50):
        t = time.monotonic()
        r = c.call(NFS_PROG, 1, getattr_)
        assert r.u32() == 0
        slowest = max(slowest, time.monotonic() - t)
    other = RpcClient(eng.port, timeout=5)
    other.call(NFS_PROG, 0)
    other.close()
    s = net(eng)
    # what waits for the hostile client stays near one connection's reply queue
    assert s["queued_reply_bytes"] <= 4 * MIB + 2 * MIB, s
    assert slowest < 5, slowest
    hostile.close()
    c.close()


def test_idle_connections_cost_no_thread(tmp_path, stop_after):
    eng = start(tmp_path)
    stop_after(eng)
    RpcClient(eng.port).call(NFS_PROG, 0)
    before = threads(eng.proc.pid)
    socks = [connect(eng, src=f"127.0.1.{i % 50 + 1}") for i in range(600)]
    assert wait_for(lambda: eng.stats()["rpc"]["connections_open"] >= 600)
    assert threads(eng.proc.pid) <= before, "a thread per connection"
    c = client(eng, src="127.0.0.1")
    c.call(NFS_PROG, 0)
    c.close()
    for s in socks:
        s.close()
    assert wait_for(lambda: eng.stats()["rpc"]["connections_open"] == 0)


def test_unfinished_records_are_bounded_and_timed_out(tmp_path, stop_after):
    eng = start(tmp_path, "--record-mem-max", "2M", "--record-timeout", "1s")
    stop_after(eng)
    socks = []
    for i in range(12):
        s = connect(eng, src=f"127.0.2.{i + 1}")
        s.sendall(struct.pack(">I", 0x80000000 | MIB) + b"\0" * (512 << 10))
        socks.append(s)
    assert wait_for(lambda: net(eng)["record_mem_waits"] >= 1)
    s = net(eng)
    # past 2 MiB only records of at most 64 KiB grow, one per connection
    assert s["unfinished_record_bytes"] <= 2 * MIB + 12 * (64 << 10), s
    # a small call still gets through while the memory is taken
    c = RpcClient(eng.port)
    c.call(NFS_PROG, 0)
    assert all(closed_by_engine(s) for s in socks)
    s = net(eng)
    assert s["record_timeouts"] >= 12 and s["unfinished_record_bytes"] == 0, s
    c.call(NFS_PROG, 0)  # kept: it finished its record
    c.close()


def test_connections_per_address_are_limited(tmp_path, stop_after):
    eng = start(tmp_path, "--max-connections-per-addr", "5", exports=("data:allow=127.0.0.0/24",))
    stop_after(eng)
    held = [client(eng) for _ in range(5)]
    for c in held:
        c.call(NFS_PROG, 0)
    assert closed_by_engine(connect(eng))
    assert net(eng)["refused_per_addr"] == 1
    other = client(eng, src="127.0.0.2")  # another address has its own share
    other.call(NFS_PROG, 0)
    # an address no export allows gets 4 connections and 4 KiB records
    outsiders = [client(eng, src="127.0.5.1") for _ in range(4)]
    for c in outsiders:
        c.call(NFS_PROG, 0)
    assert closed_by_engine(connect(eng, src="127.0.5.1"))
    assert net(eng)["refused_per_addr"] == 2
    big = call_header(9, MOUNT_PROG, 3, 1) + xdr_opaque(b"/data" + b"x" * 5000)
    outsiders[0].send_record(big)
    assert closed_by_engine(outsiders[0].s)
    held[0].send_record(big)  # an allowed address may send it: MNT says NOENT
    assert Reader(held[0].recv_record()).u32() == 9
    for c in held + outsiders + [other]:
        c.close()


def test_addresses_no_export_allows_share_an_eighth_of_the_connections(tmp_path, stop_after):
    eng = start(tmp_path, "--max-connections", "16", exports=("data:allow=127.0.0.1/32",))
    stop_after(eng)
    outsiders = [client(eng, src=f"127.0.8.{i + 1}") for i in range(2)]
    for c in outsiders:
        c.call(NFS_PROG, 0)
    assert closed_by_engine(connect(eng, src="127.0.8.3"))
    assert net(eng)["refused"] == 1
    inside = client(eng)  # the allowed keep the rest
    inside.call(NFS_PROG, 0)
    for c in outsiders + [inside]:
        c.close()


def test_idle_connections_make_room_and_time_out(tmp_path, stop_after):
    eng = start(tmp_path, "--max-connections", "8", "--idle-timeout", "5s")
    stop_after(eng)
    idle = [connect(eng) for _ in range(8)]
    assert wait_for(lambda: eng.stats()["rpc"]["connections_open"] == 8)
    time.sleep(1.2)  # idle long enough to be evicted for a newcomer
    c = client(eng)
    c.call(NFS_PROG, 0)
    assert net(eng)["evicted_idle"] == 1
    readable, _, _ = select.select(idle, [], [], 0.5)
    assert len(readable) == 1 and closed_by_engine(readable[0])
    # the rest are closed once idle for --idle-timeout
    assert all(closed_by_engine(s) for s in idle)
    assert net(eng)["closed_idle"] >= 7
    for s in idle:
        s.close()


def test_running_out_of_descriptors_locks_no_one_out(tmp_path, stop_after):
    eng = start(tmp_path)
    stop_after(eng)
    subprocess.run(["prlimit", f"--pid={eng.proc.pid}", "--nofile=160:160"], check=True)
    time.sleep(0.6)  # the engine looks at its descriptor limit every 250 ms
    idle = [connect(eng, src=f"127.0.3.{i % 20 + 1}") for i in range(200)]
    assert wait_for(lambda: net(eng)["refused"] >= 1)  # past the descriptors: told at once
    time.sleep(1.2)
    c = client(eng)  # an idle connection makes room
    c.call(NFS_PROG, 0)
    assert net(eng)["evicted_idle"] >= 1
    c.close()
    for s in idle:
        s.close()


def denied(reply: Reader) -> bool:
    """MSG_DENIED, AUTH_ERROR."""
    return reply.u32() == 1 and reply.u32() == 1


def test_dump_and_export_only_to_allowed_addresses(tmp_path, stop_after):
    eng = start(tmp_path, exports=("data:allow=127.0.0.1/32",))
    stop_after(eng)
    inside = client(eng)
    inside.mount()
    r = inside.call(MOUNT_PROG, 5)  # EXPORT
    assert r.u32() == 1 and r.opaque() == b"/data"
    assert r.u32() == 1 and r.opaque() == b"127.0.0.1/32"
    r = inside.call(MOUNT_PROG, 2)  # DUMP
    assert r.u32() == 1 and r.opaque() == b"127.0.0.1" and r.opaque() == b"/data"
    outside = client(eng, src="127.0.0.9")
    outside.call(MOUNT_PROG, 0)  # NULL answers
    assert denied(outside.call_raw(MOUNT_PROG, 3, 5))
    assert denied(outside.call_raw(MOUNT_PROG, 3, 2))
    r = outside.call(MOUNT_PROG, 1, xdr_opaque(b"/data"))
    assert r.u32() == 13  # MNT3ERR_ACCES
    assert eng.stats()["rpc"]["rejects"] >= 2
    inside.close()
    outside.close()


def test_a_read_waiting_for_a_device_holds_no_other_connection(tmp_path, stop_after):
    """Cache hits are answered on the event loop's thread; a read that misses the ARC
    goes to a worker first: the loop answers another connection meanwhile."""
    pool = mkpool(tmp_path)
    eng = Engine(tmp_path, pool, exports=("data:no_root_squash",)).start()
    c = RpcClient(eng.port)
    _, fh = create(c, c.mount(), "cold")
    data = bytes(range(256)) * 32
    write(c, fh, 0, data, 2)
    c.close()
    assert eng.stop() == 0
    # restarted with an empty ARC and a disk whose every seek takes 500 ms
    eng = Engine(tmp_path, pool, exports=("data:no_root_squash",),
                 extra=["--vdev-model", "hdd:seek=500ms,settle=500ms"]).start()
    stop_after(eng)
    slow, quick = client(eng), client(eng)
    slow.send_record(call_header(7, NFS_PROG, 3, 6) + xdr_opaque(fh) + struct.pack(">QI", 0, len(data)))
    root = quick.mount()
    assert quick.call(NFS_PROG, 1, xdr_opaque(root)).u32() == 0  # GETATTR
    assert select.select([slow.s], [], [], 0)[0] == [], "the miss was answered before the hit"
    reply = Reader(slow.recv_record())
    assert reply.u32() == 7 and [reply.u32() for _ in range(4)] == [1, 0, 0, 0] and reply.u32() == 0
    assert reply.u32() == 0  # NFS3_OK
    reply.post_op_attr()
    assert reply.u32() == len(data) and reply.u32() == 1 and reply.opaque() == data
    assert eng.stats()["arc"]["misses"] >= 1
    slow.close()
    quick.close()


def test_reads_of_no_bytes_are_answered(tmp_path, stop_after):
    """READs of 0 bytes, at the start and the end of a file (the event loop's
    in-memory check once walked every record of the 64-bit range for them)."""
    eng = start(tmp_path, exports=("data:no_root_squash",))
    stop_after(eng)
    c = RpcClient(eng.port)
    _, fh = create(c, c.mount(), "f")
    write(c, fh, 0, b"\x01" * 8192, 2)
    for off in (0, 4096, 8192):
        assert read(c, fh, off, 0) == (b"", int(off == 8192))
    c.close()
