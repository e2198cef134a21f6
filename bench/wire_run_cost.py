"""What the wire layer's TC programs cost per packet: the kernel's own run time of
BPF_PROG_TEST_RUN (tests/wire_test_run) over crafted NFSv3 connections (READ calls and
their replies, OUTSTANDING calls in flight, three datasets as in the parse tests), ns per
call packet (ingress) and per reply packet (egress). Three workloads: one record per packet
(the walk's inline path), BATCH records per packet (its loop), and READ replies of LARGE
bytes in Ethernet-sized segments (most reply packets lie within a record's body).

The peers are measured in the same run, in alternating rounds (the order rotated each
round), and compared round by round: each figure is the median of the rounds' ratios with
its 95 % interval (order statistics, bench/losses.py; from 6 rounds on).
- REV (default main): both program trios (bpf_loop and bounded, bpf/wire.bpf.c) of this
  tree against the same trios built from git revision REV with its own Makefile.
- --trios: this tree's bounded trio against its bpf_loop trio.
Needs root.   usage: [ROUNDS=N] [BATCH=N] [CALLS=N] [LARGE=N] wire_run_cost.py [REV | --trios]"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from losses import median_interval  # noqa: E402
from test_wire_parse import PORT, READ, Conn, call, record, reply  # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"   # smoke mode (bench/run.sh): the trios, one short round
CALLS, OUTSTANDING, ROUNDS = ((400, 8, 1) if SMOKE else
                              (int(os.environ.get("CALLS", 4000)), 8, int(os.environ.get("ROUNDS", 7))))
BATCH = int(os.environ.get("BATCH", 8))
LARGE = int(os.environ.get("LARGE", 32768))
SEGMENT = 1448  # TCP payload bytes a segment on Ethernet (MSS at MTU 1500)


def build_at(rev, out):
    """build/tests/wire_test_run as of git revision rev, built by its own Makefile in out."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    (out / "build").mkdir()
    shutil.copy(ROOT / "build/vmlinux.h", out / "build/vmlinux.h")  # this kernel's, as this tree's build
    subprocess.run(["make", "-C", str(out), "build/tests/wire_test_run"], check=True, capture_output=True)
    return out / "build/tests/wire_test_run"


class Runner:
    def __init__(self, binary, *options):
        self.proc = subprocess.Popen([str(binary), *options, str(PORT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run_ns(self, packets):
        """Kernel run time (ingress, egress) summed over packets."""
        for direction, frame in packets:
            self.proc.stdin.write(f"{direction} {frame.hex()}\n")
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.startswith("{"), line
        ns = line.split('"run_ns":[')[1].split("]")[0].split(",")
        return int(ns[0]), int(ns[1])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def workload(cport):
    """One connection: CALLS READ calls, each its own packet, with OUTSTANDING in flight."""
    c, packets = Conn(cport=cport), []
    packets += c.syn()
    for i in range(CALLS + OUTSTANDING):
        if i < CALLS:
            packets += c.send(record(call(i + 1, READ, args=b"\0" * 60)))
        if i >= OUTSTANDING:
            packets += c.answer(record(reply(i + 1 - OUTSTANDING, body=b"\0" * 100)))
    return packets


def batched(cport):
    """One connection: CALLS READ calls, BATCH records to a packet both ways (as a client
    that pipelines its calls and a server that answers them in one send)."""
    c, packets = Conn(cport=cport), []
    packets += c.syn()
    for first in range(1, CALLS + 1, BATCH):
        xids = range(first, first + BATCH)
        packets += c.send(b"".join(record(call(x, READ, args=b"\0" * 60)) for x in xids))
        packets += c.answer(b"".join(record(reply(x, body=b"\0" * 100)) for x in xids))
    return packets


def large(cport):
    """One connection: CALLS // BATCH READ calls, one at a time, each answered with LARGE
    bytes in SEGMENT-byte segments (all but the first within the reply record's body)."""
    c, packets = Conn(cport=cport), []
    packets += c.syn()
    for x in range(1, CALLS // BATCH + 1):
        packets += c.send(record(call(x, READ, args=b"\0" * 60)))
        data = record(reply(x, body=b"\0" * LARGE))
        for at in range(0, len(data), SEGMENT):
            packets += c.answer(data[at:at + SEGMENT])
    return packets


def measure(runners, make_packets):
    """{peer: [(call ns, reply ns) per packet, one pair a round]}, ROUNDS alternating rounds."""
    samples = {name: [] for name in runners}
    names = list(runners)
    for n in range(ROUNDS):
        packets = make_packets(40000 + n)
        calls = sum(d == "i" for d, _ in packets)
        replies = len(packets) - calls
        for name in names[n % len(names):] + names[:n % len(names)]:
            before = runners[name].run_ns([])
            after = runners[name].run_ns(packets)
            samples[name].append(((after[0] - before[0]) / calls, (after[1] - before[1]) / replies))
    return samples


def ratio(xs, base, i):
    """'xR [lo, hi]': the median of the rounds' ratios xs/base in field i, its 95 % interval."""
    med, (lo, hi) = median_interval([x[i] / b[i] for x, b in zip(xs, base)])
    return f"x{med:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None else "")


def report(title, samples, pairs):
    print(title)
    for name, xs in samples.items():
        print(f"  {name:18s} call {statistics.median(x[0] for x in xs):6.0f} ns   "
              f"reply {statistics.median(x[1] for x in xs):6.0f} ns")
    for name, base in pairs:
        print(f"  {name} / {base}: call {ratio(samples[name], samples[base], 0)}   "
              f"reply {ratio(samples[name], samples[base], 1)}")


def main():
    if os.geteuid() != 0:
        print("wire_run_cost: skipped (BPF_PROG_TEST_RUN needs root)")
        return
    rev = sys.argv[1] if len(sys.argv) > 1 else "--trios" if SMOKE else "main"
    this = ROOT / "build/tests/wire_test_run"
    with tempfile.TemporaryDirectory() as tmp:
        if rev == "--trios":
            runners = {"bpf_loop": Runner(this), "bounded": Runner(this, "--bounded")}
            pairs = [("bounded", "bpf_loop")]
        else:
            peer = build_at(rev, Path(tmp))
            runners, pairs = {}, []
            for trio, option in (("bpf_loop", []), ("bounded", ["--bounded"])):
                runners[f"{rev} {trio}"] = Runner(peer, *option)
                runners[f"this {trio}"] = Runner(this, *option)
                pairs.append((f"this {trio}", f"{rev} {trio}"))
        one = measure(runners, workload)
        many = measure(runners, batched)
        big = measure(runners, large)
        for r in runners.values():
            r.close()
    report(f"wire BPF run time per packet, one record a packet (medians of {ROUNDS} rounds x {CALLS} "
           f"NFSv3 READs, {OUTSTANDING} outstanding; ratios of the rounds' ratios, 95 % intervals):", one, pairs)
    report(f"wire BPF run time per packet, {BATCH} records a packet (medians of {ROUNDS} rounds x "
           f"{CALLS} NFSv3 READs):", many, pairs)
    report(f"wire BPF run time per packet, READ replies of {LARGE} bytes in {SEGMENT}-byte segments "
           f"(medians of {ROUNDS} rounds x {CALLS // BATCH} READs, one in flight):", big, pairs)


if __name__ == "__main__":
    main()
