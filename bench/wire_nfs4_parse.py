"""What reading an NFSv4 COMPOUND's main op (bpf/wire_nfs4.h) costs the wire layer's ingress
program per call packet, against an NFSv3 call of the same size as the peer, measured in the
same run: the kernel's own run time of BPF_PROG_TEST_RUN (build/tests/wire_test_run) over
crafted connections, in alternating rounds. Needs root."""
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_wire_parse import READ, Conn, Harness, call, compound, op4, record, reply  # noqa: E402

CALLS, ROUNDS = (100, 1) if os.environ.get("BENCH_SMOKE") == "1" else (800, 7)   # smoke mode: bench/run.sh


def kinds():
    linux = [op4("sequence"), op4("putfh"), op4("read")]
    libnfs = [op4("putrootfh"), op4("lookup"), op4("getattr"), op4("access"), op4("open"), op4("getfh")]
    return {"nfs3 READ": lambda x: call(x, READ, args=b"\0" * 60),
            "nfs4 SEQUENCE PUTFH READ": lambda x: compound(x, linux),
            "nfs4 PUTROOTFH LOOKUP GETATTR ACCESS OPEN": lambda x: compound(x, libnfs)}


def ingress_ns_per_call(h, make):
    """Kernel ns per call packet over CALLS calls (their replies interleaved)."""
    c, packets = Conn(), []
    packets += c.syn()
    for i in range(CALLS):
        packets += c.send(record(make(i + 1))) + c.answer(record(reply(i + 1)))
    before = h.stats()["run_ns"][0]
    h.run(packets)
    return (h.stats()["run_ns"][0] - before) / CALLS


def main():
    if os.geteuid() != 0:
        print("wire_nfs4_parse: skipped (BPF_PROG_TEST_RUN needs root)")
        return
    h = Harness()
    samples = {k: [] for k in kinds()}
    for _ in range(ROUNDS):
        for name, make in kinds().items():
            samples[name].append(ingress_ns_per_call(h, make))
    h.close()
    base = statistics.median(samples["nfs3 READ"])
    print(f"wire ingress run time per call packet (median of {ROUNDS} rounds x {CALLS} calls):")
    for name, s in samples.items():
        m = statistics.median(s)
        print(f"  {name:45s} {m:7.0f} ns   x{m / base:.2f} of nfs3")


if __name__ == "__main__":
    main()
