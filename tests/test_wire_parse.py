"""bpf/wire.bpf.c's parser in the kernel, through BPF_PROG_TEST_RUN (build/tests/wire_test_run):
crafted TCP segments carrying ONC RPC records — several per packet, one over many packets,
split headers, multi-fragment records, retransmissions, gaps, streams joined mid-way, garbage,
connections ended by FIN and RST — and NFSv4.x COMPOUNDs (main op after SEQUENCE / PUTFH / SAVEFH..., bounds that keep
`compound`), with the expected operations, statuses and stream counters checked, and the
interval parity a reply is counted under; then
100,000 mutated packets (v3, MOUNT and v4 records; half through each hooks layout) run
without a failure. Every test runs on both program trios: with bpf_loop (Linux 5.17+) and
bounded (older kernels). One process loads a trio once; each test starts from emptied maps."""
import json
import os
import random
import socket
import struct
import subprocess
import time

import pytest

from conftest import built

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF_PROG_TEST_RUN needs root (or CAP_BPF)")

PORT, NFS, MOUNT, NLM = 2049, 100003, 100005, 100021
GETATTR, LOOKUP, READ, WRITE = 1, 3, 6, 7
COUNTERS = ["calls", "replies", "joined", "desyncs", "resyncs", "unmatched", "foreign", "pending_full"]
SYN, ACK, RST, FIN = 0x02, 0x10, 0x04, 0x01


TRIOS = ["bpf_loop", "bounded"]


class Harness:
    """One loaded wire.bpf.c trio ("bpf_loop" or "bounded") for the module; before each test,
    reset (maps emptied, as just loaded) and set to hooks "tc" (calls run the ingress program,
    replies the egress one) or "lo" (both run the loopback program, which must tell them apart
    by port and count the same)."""

    def __init__(self, ports=(PORT,), trio="bpf_loop"):
        option = ["--bounded"] if trio == "bounded" else []
        self.proc = subprocess.Popen([str(built("tests/wire_test_run")), *option, *map(str, ports)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def start(self, hooks):
        self.hooks = hooks
        self.proc.stdin.write(f"hooks {hooks}\nreset\n")
        self.proc.stdin.flush()
        assert self.reply_after("reset") == "reset\n"

    def run(self, packets):
        for direction, frame in packets:
            self.proc.stdin.write(f"{direction} {frame.hex()}\n")

    def reply_after(self, first):
        """The first line starting with first; nothing else (a "fail" line) may come before it."""
        lines = []
        while True:
            line = self.proc.stdout.readline()
            assert line, "wire_test_run died"
            if line.startswith(first):
                break
            lines.append(line)
        assert not lines, lines  # a "fail" line: a run failed or did not return TC_ACT_UNSPEC
        return line

    def stats(self):
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        s = json.loads(self.reply_after("{"))
        s["counters"] = dict(zip(COUNTERS, s["counters"]))
        s["ops"] = {int(k): v for k, v in s["ops"].items()}
        s["status"] = {int(k): v for k, v in s["status"].items()}
        return s

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture(scope="module", params=TRIOS)
def loaded(request):
    h = Harness(trio=request.param)
    yield h
    h.close()


@pytest.fixture(params=["tc", "lo"])
def kernel(request, loaded):
    loaded.start(request.param)
    yield loaded
    loaded.stats()  # a test's last packets ran without a failure


def tcp_frame(src, dst, sport, dport, seq, payload=b"", flags=ACK, v6=False):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xffffffff, 0, 5 << 4, flags, 65535, 0, 0)
    if v6:
        ip = struct.pack("!IHBB16s16s", 6 << 28, len(tcp) + len(payload), 6, 64, src, dst)
        return b"\0" * 12 + b"\x86\xdd" + ip + tcp + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    return b"\0" * 12 + b"\x08\x00" + ip + tcp + payload


def record(body, last=True):
    return struct.pack("!I", (0x80000000 if last else 0) | len(body)) + body


def call(xid, proc, prog=NFS, vers=3, args=b"", msg_type=0):
    return struct.pack("!IIIIIIIIII", xid, msg_type, 2, prog, vers, proc, 0, 0, 0, 0) + args


def reply(xid, status=0, accept=0, denied=None, body=b""):
    if denied is not None:
        return struct.pack("!IIII", xid, 1, 1, denied) + struct.pack("!II", 0, 0)
    head = struct.pack("!IIIIII", xid, 1, 0, 0, 0, accept)
    return head + (struct.pack("!I", status) + body if accept == 0 else b"")


class Conn:
    """Both directions of one TCP connection, client 10.0.0.2:cport -> server 10.0.0.1:2049."""

    def __init__(self, cport=40000, v6=False):
        self.cport, self.v6 = cport, v6
        if v6:
            self.client, self.server = socket.inet_pton(socket.AF_INET6, "fd00::2"), socket.inet_pton(
                socket.AF_INET6, "fd00::1")
        else:
            self.client, self.server = socket.inet_aton("10.0.0.2"), socket.inet_aton("10.0.0.1")
        self.cseq, self.sseq = 1000, 900000

    def syn(self):
        out = [("i", tcp_frame(self.client, self.server, self.cport, PORT, self.cseq, flags=SYN, v6=self.v6)),
               ("e", tcp_frame(self.server, self.client, PORT, self.cport, self.sseq, flags=SYN | ACK, v6=self.v6))]
        self.cseq += 1
        self.sseq += 1
        return out

    def send(self, data, flags=ACK, advance=True):
        f = ("i", tcp_frame(self.client, self.server, self.cport, PORT, self.cseq, data, flags, self.v6))
        if advance:
            self.cseq += len(data)
        return [f]

    def answer(self, data, flags=ACK):
        f = ("e", tcp_frame(self.server, self.client, PORT, self.cport, self.sseq, data, flags, self.v6))
        self.sseq += len(data)
        return [f]


def pieces(data, sizes):
    """data cut after each of sizes bytes (the rest last)."""
    out, at = [], 0
    for n in sizes:
        out.append(data[at:at + n])
        at += n
    return out + [data[at:]]


def test_one_call_and_reply(kernel):
    c = Conn()
    kernel.run(c.syn() + c.send(record(call(1, GETATTR, args=b"\0" * 36))) + c.answer(record(reply(1, body=b"\0" * 84))))
    s = kernel.stats()
    assert s["ops"] == {GETATTR: 1} and s["status"] == {0: 1}
    size = (4 + 40 + 36) + (4 + 28 + 84)  # call record + reply record, markers included
    from strata.datasets import llhist
    assert s["size"] == {str(llhist.bucket(size)): 1}
    assert s["counters"]["calls"] == 1 and s["counters"]["replies"] == 1
    assert sum(s["counters"][k] for k in ("joined", "desyncs", "resyncs", "unmatched")) == 0


def test_replies_counted_under_their_intervals_parity(kernel):
    """A reply counts under the parity agg_epoch gives its packet's time on CLOCK_MONOTONIC
    (bpf_ktime_get_ns, the clock of the boundaries; time.monotonic_ns here): before a
    boundary an hour ahead, the parity written; after one a second past, the other."""
    c = Conn()
    kernel.run(c.syn())
    for xid, (ahead_s, parity, odd) in enumerate([(3600, 0, 0), (3600, 1, 1), (-1, 0, 2), (-1, 1, 2)], 1):
        boundary = time.monotonic_ns() + ahead_s * 10**9
        kernel.proc.stdin.write(f"epoch {boundary & ~1 | parity}\n")
        kernel.run(c.send(record(call(xid, GETATTR))) + c.answer(record(reply(xid))))
        s = kernel.stats()
        assert s["odd"] == odd and s["ops"] == {GETATTR: xid}


def test_several_records_per_packet_both_ways(kernel):
    c = Conn()
    procs = [GETATTR, LOOKUP, READ, READ, WRITE] * 8  # a test-run frame holds at most ~3.5 KiB
    calls = b"".join(record(call(100 + i, p, args=b"\1" * 20)) for i, p in enumerate(procs))
    replies = b"".join(record(reply(100 + i, body=b"\0" * 8)) for i in range(len(procs)))
    kernel.run(c.syn() + c.send(calls) + c.answer(replies))
    s = kernel.stats()
    assert s["ops"] == {GETATTR: 8, LOOKUP: 8, READ: 16, WRITE: 8}
    assert s["counters"]["desyncs"] == 0


def test_calls_sharing_an_inline_slot_are_matched(kernel):
    """xids 1, 17, 33 and 49 share inline slot 1 (xid % 16): the later calls take free slots,
    a retransmission of one of them updates it in place, and replies in reverse order each
    find their own call (none unmatched, none left for wire_pending)."""
    c = Conn()
    procs = {1: GETATTR, 17: LOOKUP, 33: READ, 49: WRITE}
    calls = b"".join(record(call(x, p, args=b"\1" * 20)) for x, p in procs.items())
    packets = c.syn() + c.send(calls) + c.send(record(call(33, READ, args=b"\1" * 20)))
    for x in reversed(procs):
        packets += c.answer(record(reply(x, body=b"\0" * 8)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {GETATTR: 1, LOOKUP: 1, READ: 1, WRITE: 1}
    assert s["counters"]["unmatched"] == 0 and s["counters"]["desyncs"] == 0 and s["counters"]["calls"] == 5


def test_one_record_over_many_packets_and_split_headers(kernel):
    """A 1 MiB WRITE in 1448-byte segments, its marker and header cut mid-way; a reply split
    inside its header; then the next call still parses."""
    c = Conn()
    big = record(call(7, WRITE, args=os.urandom(1 << 20)))
    packets = c.syn() + c.send(big[:2]) + c.send(big[2:11])
    for at in range(11, len(big), 1448):
        packets += c.send(big[at:at + 1448])
    for chunk in pieces(record(reply(7, body=b"\0" * 100)), [13]):
        packets += c.answer(chunk)
    packets += c.send(record(call(8, LOOKUP))) + c.answer(record(reply(8, status=2)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {WRITE: 1, LOOKUP: 1}
    assert s["status"] == {0: 1, 2: 1}  # ok, noent
    assert s["counters"]["desyncs"] == 0


def test_multi_fragment_records(kernel):
    c = Conn()
    body = call(9, WRITE, args=b"\2" * 2500)
    frags = record(body[:1000], last=False) + record(body[1000:2000], last=False) + record(body[2000:])
    rbody = reply(9, body=b"\0" * 500)
    rfrags = record(rbody[:30], last=False) + record(rbody[30:])
    kernel.run(c.syn() + c.send(frags) + c.answer(rfrags) + c.send(record(call(10, GETATTR)))
               + c.answer(record(reply(10))))
    s = kernel.stats()
    assert s["ops"] == {WRITE: 1, GETATTR: 1}
    from strata.datasets import llhist
    assert str(llhist.bucket(len(frags) + len(rfrags))) in s["size"]


def test_retransmission_counts_once(kernel):
    c = Conn()
    first = record(call(11, READ))
    packets = c.syn() + c.send(first)
    packets += [packets[-1]]  # the same segment again
    packets += c.answer(record(reply(11))) + c.send(record(call(12, READ))) + c.answer(record(reply(12)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {READ: 2} and s["counters"]["desyncs"] == 0


def test_gap_desyncs_then_resyncs_on_a_call(kernel):
    """A segment never seen: at a record boundary, the next call is followed at once (the
    missing call's reply is unmatched); in the middle of a record, the stream loses sync and
    finds it again on the next call header."""
    c = Conn()
    packets = c.syn() + c.send(record(call(20, READ))) + c.answer(record(reply(20)))
    lost = record(call(21, READ, args=b"\0" * 100))
    c.cseq += len(lost)  # the host never saw this segment
    packets += c.answer(record(reply(21)))  # its reply: no pending call
    packets += c.send(record(call(22, LOOKUP))) + c.answer(record(reply(22)))
    two = record(call(23, WRITE, args=b"\0" * 1000)) + record(call(24, READ))
    packets += c.send(two[:200])
    c.cseq += 900  # lost: the WRITE's end and the READ's marker and header
    packets += c.send(two[1100:])
    packets += c.answer(record(reply(23)) + record(reply(24)))
    packets += c.send(record(call(25, GETATTR))) + c.answer(record(reply(25)))
    kernel.run(packets)
    s = kernel.stats()
    # the WRITE's header was seen before the loss and its reply matched: it happened, it counts;
    # the READ's header was lost: its reply is unmatched
    assert s["ops"] == {READ: 1, LOOKUP: 1, WRITE: 1, GETATTR: 1}
    assert s["counters"]["desyncs"] == 1 and s["counters"]["resyncs"] == 1
    assert s["counters"]["unmatched"] == 2


def test_reordered_segments_are_bridged(kernel):
    """Segment B arrives before A (two CPUs' backlogs, a multi-queue NIC): B is walked at
    once, A fills the hole when it comes; nothing is lost or counted twice."""
    c = Conn()
    packets = c.syn()
    a = c.send(record(call(80, READ)) + record(call(81, LOOKUP)))
    b = c.send(record(call(82, GETATTR)))
    packets += b + a + a  # B, then A, then A again (a retransmission)
    packets += c.answer(record(reply(80)) + record(reply(81)) + record(reply(82)))
    packets += c.send(record(call(83, READ))) + c.answer(record(reply(83)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {READ: 2, LOOKUP: 1, GETATTR: 1}
    assert s["counters"]["desyncs"] == 0 and s["counters"]["unmatched"] == 0


def test_body_bytes_out_of_order_are_not_needed(kernel):
    """Segments of one WRITE's body arriving out of order lose nothing: the body is not parsed."""
    c = Conn()
    whole = record(call(95, WRITE, args=b"\0" * 3000))
    syn = c.syn()
    p1, p2, p3 = c.send(whole[:1000]), c.send(whole[1000:2000]), c.send(whole[2000:])
    packets = syn + p1 + p3 + p2 + c.send(record(call(96, READ)))
    packets += c.answer(record(reply(95)) + record(reply(96)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {WRITE: 1, READ: 1} and s["counters"]["desyncs"] == 0


def test_late_segment_ending_mid_record_gives_the_hole_up(kernel):
    c = Conn()
    packets = c.syn()
    whole = record(call(90, WRITE, args=b"\0" * 600))
    a1 = c.send(whole[:300])
    a2 = c.send(whole[300:])
    b = c.send(record(call(91, GETATTR)))
    packets += b + a1 + a2
    packets += c.answer(record(reply(91)) + record(reply(90)))
    kernel.run(packets)
    s = kernel.stats()
    # the WRITE's header was in the late segment, so it is followed; the hole's rest is given up
    assert s["ops"] == {GETATTR: 1, WRITE: 1}
    assert s["counters"]["desyncs"] == 1 and s["counters"]["unmatched"] == 0


def test_stream_joined_midway_waits_for_a_call_header(kernel):
    """No SYN seen (collector started under load): a segment starting inside a record is not
    counted; the next one that starts with a call is."""
    c = Conn()
    big = record(call(30, WRITE, args=b"\0" * 2500))
    c.cseq += 100
    packets = c.send(big[100:])  # the tail of a record
    packets += c.answer(record(reply(30)))  # no call seen for it
    packets += c.send(record(call(31, GETATTR))) + c.answer(record(reply(31)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {GETATTR: 1}
    assert s["counters"]["joined"] == 2 and s["counters"]["resyncs"] == 2 and s["counters"]["unmatched"] == 0


def test_statuses_mount_and_foreign_programs(kernel):
    c = Conn()
    packets = c.syn()
    packets += c.send(record(call(40, READ))) + c.answer(record(reply(40, accept=1)))  # PROG_UNAVAIL
    packets += c.send(record(call(41, READ))) + c.answer(record(reply(41, denied=1)))  # AUTH_ERROR
    packets += c.send(record(call(42, 1, prog=MOUNT, vers=3))) + c.answer(record(reply(42, status=13)))
    packets += c.send(record(call(43, 2, prog=NLM, vers=4))) + c.answer(record(reply(43)))
    packets += c.send(record(call(44, 0, prog=NFS, vers=4))) + c.answer(record(reply(44)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {READ: 2, 0x10001: 1, 0: 1}
    assert s["status"] == {0x10001: 1, 0x20001: 1, 13: 1, 0: 1}
    assert s["counters"]["foreign"] == 1 and s["counters"]["unmatched"] == 1 and s["counters"]["desyncs"] == 0


def test_garbage_and_huge_markers_desync_without_counting(kernel):
    c = Conn(40001)
    packets = c.syn() + c.send(record(call(50, READ, msg_type=7))) + c.answer(record(reply(50)))
    d = Conn(40002)
    packets += d.syn() + d.send(struct.pack("!I", 0xffffffff) + b"\0" * 40)
    e = Conn(40003)
    packets += e.syn() + e.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    f = Conn(40004)  # a healthy neighbour
    packets += f.syn() + f.send(record(call(51, GETATTR))) + f.answer(record(reply(51)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {GETATTR: 1}
    assert s["counters"]["desyncs"] == 3


def test_reset_mid_record_then_new_connection(kernel):
    c = Conn(40010)
    half = record(call(60, WRITE, args=b"\0" * 4000))[:1500]
    packets = c.syn() + c.send(half) + c.send(b"", flags=RST | ACK)
    d = Conn(40010)  # the same ports again: a new connection
    d.cseq, d.sseq = 77777, 55555
    packets += d.syn() + d.send(record(call(61, READ))) + d.answer(record(reply(61)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {READ: 1} and s["counters"]["desyncs"] == 0


def test_fin_ends_its_direction_and_the_connection_with_the_second(kernel):
    """The client's FIN (carrying its last call) leaves the connection's pending calls: the
    reply sent after it counts. The server's FIN then ends the connection: a later segment
    on the same ports starts over, joined mid-way."""
    c = Conn(40020)
    packets = c.syn() + c.send(record(call(80, READ)), flags=FIN | ACK)
    packets += c.answer(record(reply(80))) + c.answer(b"", flags=FIN | ACK)
    packets += c.send(record(call(81, READ)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {READ: 1} and s["counters"]["unmatched"] == 0
    assert s["counters"]["joined"] == 1 and s["counters"]["resyncs"] == 1


def test_reset_from_the_server_ends_the_connection(kernel):
    """An RST from either side drops both directions and the calls pending."""
    c = Conn(40021)
    packets = c.syn() + c.send(record(call(82, READ))) + c.answer(b"", flags=RST | ACK)
    packets += c.answer(record(reply(82)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {} and s["counters"]["joined"] == 1 and s["counters"]["replies"] == 0


@pytest.mark.parametrize("trio", TRIOS)
def test_loopback_client_ports_also_followed(trio):
    """On loopback, clients whose port numbers are also followed server ports: the SYN, the
    SYN-ACK, calls and replies each read the right way, with or without the SYN seen."""
    h = Harness((PORT, 40030, 40031), trio)
    try:
        h.start("lo")
        c, d = Conn(40030), Conn(40031)
        packets = c.syn() + c.send(record(call(90, READ))) + c.answer(record(reply(90)))
        packets += d.send(record(call(91, WRITE))) + d.answer(record(reply(91)))
        h.run(packets)
        s = h.stats()
        assert s["ops"] == {READ: 1, WRITE: 1} and s["counters"]["unmatched"] == 0
        assert s["counters"]["joined"] == 2 and s["counters"]["resyncs"] == 2
    finally:
        h.close()


def test_ipv6(kernel):
    c = Conn(v6=True)
    kernel.run(c.syn() + c.send(record(call(70, LOOKUP))) + c.answer(record(reply(70))))
    assert kernel.stats()["ops"] == {LOOKUP: 1}


# NFSv4.x COMPOUNDs (RFC 7530, 5661, 7862): the main op counted (bpf/wire_nfs4.h)
OP4 = {"access": 3, "close": 4, "commit": 5, "create": 6, "getattr": 9, "getfh": 10, "link": 11, "lookup": 15,
       "lookupp": 16, "open": 18, "putfh": 22, "putpubfh": 23, "putrootfh": 24, "read": 25, "readdir": 26,
       "remove": 28, "rename": 29, "renew": 30, "restorefh": 31, "savefh": 32, "setattr": 34, "write": 38, "sequence": 53,
       "read_plus": 68, "illegal": 10044}
V4 = 0x40000
MKDIR, SYMLINK, MKNOD, RENAME, LINK, READDIR, SETATTR, ACCESS, COMMIT, REMOVE = 9, 10, 11, 14, 15, 16, 2, 4, 21, 12


def opaque(b):
    return struct.pack("!I", len(b)) + b + b"\0" * (-len(b) % 4)


def op4(name, fh=b"\7" * 28, ctype=2, component=b"a-name", bitmap=2):
    """One operation with plausible arguments (only the prefix ops' sizes matter to the parser)."""
    code = OP4[name]
    if name == "sequence":
        return struct.pack("!I", code) + os.urandom(16) + struct.pack("!IIII", 1, 0, 0, 0)
    if name == "putfh":
        return struct.pack("!I", code) + opaque(fh)
    if name in ("putrootfh", "putpubfh", "savefh", "restorefh", "getfh", "lookupp", "illegal"):
        return struct.pack("!I", code)
    if name == "create":
        return struct.pack("!II", code, ctype) + opaque(b"name") + struct.pack("!II", 0, 0)
    if name == "lookup":
        return struct.pack("!I", code) + opaque(component)
    if name == "getattr":
        return struct.pack("!II", code, bitmap) + struct.pack("!II", 0x0010011a, 0x00b0a23a)[:4 * bitmap]
    if name == "access":
        return struct.pack("!II", code, 0x1f)
    if name in ("read", "write"):
        return struct.pack("!I", code) + b"\0" * 16 + struct.pack("!QI", 0, 4096)
    return struct.pack("!I", code) + opaque(b"a-name") + struct.pack("!II", 1, 0x18)


def compound(xid, ops, tag=b"", minor=1, cred_len=None, numops=None):
    """A COMPOUND call with AUTH_SYS credentials (stamp, machine name, uid, gid, gids)."""
    cred = struct.pack("!I", 7) + opaque(b"client-host") + struct.pack("!III", 1000, 1000, 1) + struct.pack("!I", 1000)
    head = struct.pack("!IIIIIII", xid, 0, 2, NFS, 4, 1, 1) + struct.pack("!I", len(cred) if cred_len is None else cred_len)
    body = b"".join(ops)
    return (head + cred + struct.pack("!II", 0, 0) + opaque(tag)
            + struct.pack("!II", minor, len(ops) if numops is None else numops) + body)


def test_nfs4_compound_main_ops(kernel):
    c = Conn()
    cases = [
        ([op4("sequence"), op4("putfh"), op4("read")], READ),
        ([op4("sequence"), op4("putfh"), op4("write"), op4("getattr")], WRITE),
        ([op4("sequence"), op4("putfh"), op4("savefh"), op4("putfh"), op4("rename")], RENAME),
        ([op4("sequence"), op4("putfh"), op4("savefh"), op4("putfh"), op4("link"), op4("getattr")], LINK),
        ([op4("sequence"), op4("putfh"), op4("lookup"), op4("getfh"), op4("getattr")], LOOKUP),
        ([op4("putfh", fh=b"\1" * 128), op4("lookupp")], LOOKUP),
        ([op4("putrootfh"), op4("lookup")], LOOKUP),
        # a path walked for the op that follows (libnfs opens with PUTROOTFH LOOKUP dir OPEN name)
        ([op4("putrootfh"), op4("lookup"), op4("lookup", component=b"x" * 255), op4("open"), op4("getfh")],
         V4 | OP4["open"]),
        ([op4("putrootfh"), op4("lookupp"), op4("lookup"), op4("read")], READ),
        ([op4("putrootfh"), op4("lookup"), op4("getattr"), op4("access"), op4("open"), op4("getfh")],
         V4 | OP4["open"]),
        ([op4("sequence"), op4("putfh"), op4("open"), op4("getfh"), op4("access"), op4("getattr")],
         V4 | OP4["open"]),
        ([op4("putfh"), op4("getattr", bitmap=0)], GETATTR),
        ([op4("putfh"), op4("access"), op4("getattr")], ACCESS),
        ([op4("putfh"), op4("savefh"), op4("putfh"), op4("link"), op4("getattr"), op4("restorefh"),
          op4("getattr")], LINK),
        ([op4("putfh", fh=b"\1" * 1), op4("read_plus")], READ),
        ([op4("putrootfh"), op4("getfh"), op4("getattr")], V4 | OP4["getfh"]),
        ([op4("putpubfh"), op4("readdir")], READDIR),
        ([op4("putfh"), op4("open"), op4("getfh")], V4 | OP4["open"]),
        ([op4("sequence"), op4("putfh"), op4("close")], V4 | OP4["close"]),
        ([op4("sequence")], V4 | OP4["sequence"]),  # a lone SEQUENCE: a v4.1 lease renewal
        ([op4("renew")], V4 | OP4["renew"]),
        ([op4("putfh"), op4("create", ctype=2)], MKDIR),
        ([op4("putfh"), op4("create", ctype=5)], SYMLINK),
        ([op4("putfh"), op4("create", ctype=7)], MKNOD),
        ([op4("putfh"), op4("setattr")], SETATTR),
        ([op4("putfh"), op4("access")], ACCESS),
        ([op4("putfh"), op4("commit")], COMMIT),
        ([op4("putfh"), op4("remove")], REMOVE),
    ]
    packets = c.syn()
    for i, (ops, _) in enumerate(cases):
        packets += c.send(record(compound(300 + i, ops, tag=b"t" * (i % 6), minor=i % 3)))
        packets += c.answer(record(reply(300 + i, status=10013 if i == 0 else 0)))
    kernel.run(packets)
    s = kernel.stats()
    want = {}
    for _, op in cases:
        want[op] = want.get(op, 0) + 1
    assert s["ops"] == want
    assert s["status"] == {10013: 1, 0: len(cases) - 1}  # COMPOUND4res status (NFS4ERR_GRACE)
    assert s["counters"]["desyncs"] == 0


def test_nfs4_compounds_not_read_within_bounds_stay_compound(kernel):
    c = Conn()
    bad = [
        compound(400, [op4("putfh"), op4("read")], tag=b"x" * 300),               # tag over NFS4_TAG_MAX
        compound(401, [op4("putfh", fh=b"\1" * 129), op4("read")]),              # fh over NFS4_FHSIZE
        compound(402, [op4("putfh")] * 10 + [op4("read")]),                      # main op beyond 10 ops
        compound(403, [op4("putfh"), op4("illegal")]),                           # not an NFSv4 opcode
        compound(404, [op4("putfh"), op4("create", ctype=1)]),                   # CREATE of a regular file
        compound(405, [], numops=0),
        compound(406, [op4("putfh"), op4("read")], cred_len=401),                # credentials over 400 bytes
        compound(407, [op4("sequence")], numops=2),                             # ops end with the record
        compound(408, [op4("putrootfh"), op4("lookup", component=b"x" * 1100), op4("open")]),  # a name too long
        compound(409, [op4("putfh"), struct.pack("!II", 9, 9) + b"\0" * 36, op4("write")]),  # a bitmap too long
    ]
    packets = c.syn()
    for i, body in enumerate(bad):
        packets += c.send(record(body)) + c.answer(record(reply(400 + i)))
    # a fragment ending after numops: the next bytes (a marker of 25 = OP_READ) are not an op
    head = compound(410, [op4("read")])
    head, rest = head[:-len(op4("read"))], b"\0" * 25
    packets += c.send(record(head, last=False) + record(rest, last=False) + record(b"\0" * 8))
    packets += c.answer(record(reply(410)))
    kernel.run(packets)
    s = kernel.stats()
    assert s["ops"] == {V4: len(bad) + 1}
    assert s["counters"]["desyncs"] == 0


def test_nfs4_ops_found_when_the_header_spans_packets(kernel):
    """The call header cut in two: the ops that follow in the second packet still name the op;
    ops that lie in a later packet than the header's end cannot be read (compound)."""
    c = Conn()
    whole = record(compound(500, [op4("sequence"), op4("putfh"), op4("write")]))
    packets = c.syn() + c.send(whole[:17]) + c.send(whole[17:]) + c.answer(record(reply(500)))
    late = record(compound(501, [op4("sequence"), op4("putfh"), op4("read")]))
    packets += c.send(late[:4 + 28]) + c.send(late[4 + 28:]) + c.answer(record(reply(501)))
    kernel.run(packets)
    assert kernel.stats()["ops"] == {WRITE: 1, V4: 1}


def scenario_packets():
    """Every crafted packet of a mixed scenario, to mutate."""
    c, out = Conn(41000), []
    out += c.syn()
    for i in range(20):
        out += c.send(record(call(1000 + i, [GETATTR, READ, WRITE, LOOKUP][i % 4], args=b"\3" * (i * 37))))
        out += c.answer(record(reply(1000 + i, body=b"\0" * (i * 11))))
    for i, ops in enumerate([[op4("sequence"), op4("putfh"), op4("read")], [op4("putrootfh"), op4("getfh")],
                             [op4("putfh"), op4("savefh"), op4("putfh"), op4("rename")], [op4("sequence")],
                             [op4("putfh"), op4("create", ctype=5)]]):
        out += c.send(record(compound(1500 + i, ops, tag=b"mutate"[:i])))
        out += c.answer(record(reply(1500 + i, status=i)))
    out += c.send(record(call(2000, WRITE, args=b"\0" * 2000), last=False) + record(b"\0" * 10))
    out += Conn(41001, v6=True).syn()
    return out


def mutate(rng, frame):
    b = bytearray(frame)
    kind = rng.randrange(5)
    if kind == 0:  # flip bytes anywhere after the Ethernet header
        for _ in range(rng.randrange(1, 8)):
            b[rng.randrange(14, len(b))] = rng.randrange(256)
    elif kind == 1:  # truncate (test runs need a whole IP header: the kernel refuses less)
        del b[rng.randrange(54, max(55, len(b))):]
    elif kind == 2:  # random payload after the TCP header
        at = min(len(b), 54)
        b[at:] = rng.randbytes(rng.randrange(0, 200))
    elif kind == 3:  # a record marker anywhere
        at = rng.randrange(14, max(15, len(b) - 4))
        b[at:at + 4] = struct.pack("!I", rng.choice([0, 0x80000000, 0xffffffff, 0x7fffffff, rng.getrandbits(32)]))
    else:  # sequence number shifted
        if len(b) >= 54:
            b[38:42] = struct.pack("!I", rng.getrandbits(32))
    return bytes(b)


def test_100000_mutated_packets(kernel):
    """100,000 in all: 50,000 through each hooks layout, each from its own seed."""
    rng = random.Random(f"1405-{kernel.hooks}")
    base = scenario_packets()
    n = 0
    while n < 50_000:
        batch = []
        for _ in range(5000):
            direction, frame = rng.choice(base)
            batch.append((rng.choice("ie") if rng.random() < 0.1 else direction, mutate(rng, frame)))
        kernel.run(batch)
        n += len(batch)
        s = kernel.stats()  # raises on any failed run
    assert s["runs"] == n
    assert s["counters"]["replies"] <= s["counters"]["calls"]
    assert sum(s["ops"].values()) == s["counters"]["replies"]
