"""What the wire layer's TC programs cost per packet: the kernel's own run time of
BPF_PROG_TEST_RUN (tests/wire_test_run) over crafted NFSv3 connections (READ calls and
their replies, OUTSTANDING calls in flight, three datasets as in the parse tests), ns per
call packet (ingress) and per reply packet (egress). The peer is the same programs built
from another git revision (default main), measured in the same run in alternating rounds.
With --trios the peers are this tree's two program trios instead, bpf_loop and bounded
(bpf/wire.bpf.c). Two workloads: one record per packet (the walk's inline path) and BATCH
records per packet (its loop).
Needs root.   usage: [ROUNDS=N] [BATCH=N] wire_run_cost.py [REV | --trios]"""
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_wire_parse import PORT, READ, Conn, call, record, reply  # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"   # smoke mode (bench/run.sh): the trios, one short round
CALLS, OUTSTANDING, ROUNDS = (400, 8, 1) if SMOKE else (4000, 8, int(os.environ.get("ROUNDS", 7)))
BATCH = int(os.environ.get("BATCH", 8))
BPF_CFLAGS = "-g -O2 -target bpf -D__TARGET_ARCH_x86 -D__bpf__ -Wall".split()


def build_at(rev, out):
    """build/tests/wire_test_run as of git revision rev, in directory out."""
    src = out / "src"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "bpf", "collectors", "engine", "tests"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    inc = [f"-I{ROOT / 'build'}", f"-I{src / 'bpf'}", f"-I{src / 'engine'}", f"-I{src / 'collectors'}"]
    subprocess.run(["clang", *BPF_CFLAGS, *inc, "-c", str(src / "bpf/wire.bpf.c"), "-o", str(out / "wire.bpf.o")],
                   check=True)
    skel = subprocess.run(["bpftool", "gen", "skeleton", str(out / "wire.bpf.o")], check=True,
                          capture_output=True).stdout
    (out / "wire.skel.h").write_bytes(skel)
    libs = subprocess.run(["pkg-config", "--libs", "libbpf"], check=True, capture_output=True,
                          text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-std=gnu11", "-D_GNU_SOURCE", f"-I{out}", *inc[1:], f"-I{src / 'tests'}",
                    str(src / "tests/wire_test_run.c"), "-o", str(out / "wire_test_run"), *libs], check=True)
    return out / "wire_test_run"


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


def measure(runners, make_packets, packets_per_dir):
    """{peer: (call ns, reply ns)} per packet, medians over ROUNDS alternating rounds."""
    samples = {name: ([], []) for name in runners}
    for n in range(ROUNDS):
        packets = make_packets(40000 + n)
        for name, r in runners.items():
            before = r.run_ns([])
            after = r.run_ns(packets)
            samples[name][0].append((after[0] - before[0]) / packets_per_dir)
            samples[name][1].append((after[1] - before[1]) / packets_per_dir)
    return {name: (statistics.median(c), statistics.median(r)) for name, (c, r) in samples.items()}


def report(title, medians, base):
    print(title)
    bc, br = medians[base]
    for name, (c, r) in medians.items():
        print(f"  {name:12s} call {c:6.0f} ns (x{c / bc:.2f})   reply {r:6.0f} ns (x{r / br:.2f})")


def main():
    if os.geteuid() != 0:
        print("wire_run_cost: skipped (BPF_PROG_TEST_RUN needs root)")
        return
    rev = sys.argv[1] if len(sys.argv) > 1 else "--trios" if SMOKE else "main"
    this = ROOT / "build/tests/wire_test_run"
    with tempfile.TemporaryDirectory() as tmp:
        if rev == "--trios":
            base, runners = "bpf_loop", {"bpf_loop": Runner(this), "bounded": Runner(this, "--bounded")}
        else:
            base, runners = rev, {rev: Runner(build_at(rev, Path(tmp))), "this tree": Runner(this)}
        one = measure(runners, workload, CALLS)
        many = measure(runners, batched, CALLS // BATCH)
        for r in runners.values():
            r.close()
    report(f"wire BPF run time per packet, one record a packet (median of {ROUNDS} rounds x {CALLS} "
           f"NFSv3 READs, {OUTSTANDING} outstanding):", one, base)
    report(f"wire BPF run time per packet, {BATCH} records a packet (median of {ROUNDS} rounds x "
           f"{CALLS} NFSv3 READs):", many, base)


if __name__ == "__main__":
    main()
