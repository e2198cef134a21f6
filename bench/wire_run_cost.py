"""What the wire layer's TC programs cost per packet: the kernel's own run time of
BPF_PROG_TEST_RUN (tests/wire_test_run) over crafted NFSv3 connections (READ calls and
their replies, OUTSTANDING calls in flight, three datasets as in the parse tests), ns per
call packet (ingress) and per reply packet (egress). The peer is the same programs built
from another git revision (default main), measured in the same run in alternating rounds.
Needs root.   usage: [ROUNDS=N] wire_run_cost.py [REV]"""
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_wire_parse import PORT, READ, Conn, call, record, reply  # noqa: E402

CALLS, OUTSTANDING, ROUNDS = 4000, 8, int(os.environ.get("ROUNDS", 7))
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
    def __init__(self, binary):
        self.proc = subprocess.Popen([str(binary), str(PORT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

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


def main():
    if os.geteuid() != 0:
        print("wire_run_cost: skipped (BPF_PROG_TEST_RUN needs root)")
        return
    rev = sys.argv[1] if len(sys.argv) > 1 else "main"
    with tempfile.TemporaryDirectory() as tmp:
        runners = {rev: Runner(build_at(rev, Path(tmp))), "this tree": Runner(ROOT / "build/tests/wire_test_run")}
        samples = {name: ([], []) for name in runners}
        for n in range(ROUNDS):
            packets = workload(40000 + n)
            for name, r in runners.items():
                before = r.run_ns([])
                after = r.run_ns(packets)
                samples[name][0].append((after[0] - before[0]) / CALLS)
                samples[name][1].append((after[1] - before[1]) / CALLS)
        for r in runners.values():
            r.close()
    print(f"wire BPF run time per packet (median of {ROUNDS} rounds x {CALLS} NFSv3 READs, "
          f"{OUTSTANDING} outstanding):")
    base = {k: statistics.median(v) for k, v in zip(("call", "reply"), samples[rev])}
    for name, (calls, replies) in samples.items():
        c, r = statistics.median(calls), statistics.median(replies)
        print(f"  {name:12s} call {c:6.0f} ns (x{c / base['call']:.2f})   reply {r:6.0f} ns (x{r / base['reply']:.2f})")


if __name__ == "__main__":
    main()
