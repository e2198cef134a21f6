"""A read late after its interval's end moves nothing between seconds (bpf/aggregate.h,
"Intervals"): the real engine answers GETATTRs from a reference client inside [0.2, 0.8) of
every wall second while strata-collect counts them; the collector is stopped (SIGSTOP) from
0.9 s into a second to 0.6 s into the next, five times, so that it reads each of those
seconds' counts well after the next one began. Every second's nfs.ops and nfs.latency record
holds exactly the requests answered in that second, the two datasets alike."""
import signal
import time

from collect_util import Collector
from engine_util import Engine, mkpool
from lifecycle_storm import REF, NfsReference


def until(wall):
    time.sleep(max(0.0, wall - time.time()))


def test_late_reads_keep_every_second_exact(tmp_path):
    eng = Engine(tmp_path, mkpool(tmp_path, nvdevs=1, size="64M")).start()
    c = ref = None
    try:
        ref = NfsReference(eng)         # its MOUNT before the datasets exist
        c = Collector("--engine-pid", eng.proc.pid)
        c.add("ops", "nfs.ops", "-", f"client={REF}")
        c.add("lat", "nfs.latency", "-", f"client={REF}")
        c.wait_status(lambda s: "nfs" in s["attached"])
        ref.start()
        stalled = []
        for _ in range(5):
            second = int(time.time()) + 1
            until(second + 0.9)
            c.proc.send_signal(signal.SIGSTOP)
            until(second + 1.6)
            c.proc.send_signal(signal.SIGCONT)
            stalled.append(second)
            until(second + 2.5)
        ref.stopping.set()
        ref.join(timeout=10)
        until(max(ref.sent) + 2.5)      # the last reference second read
    finally:
        if ref is not None:
            ref.stop()
        if c is not None:
            assert c.stop() == 0
        eng.stop()
    assert ref.error is None, ref.error
    records = {rid: {r["t"]: sum(r["data"].values()) if rid == "ops" else
                     sum(sum(b.values()) for b in r["data"].values())
                     for r in c.data(rid) if not r.get("partial")} for rid in ("ops", "lat")}
    compared = [t for t in sorted(ref.sent) if t not in ref.unknown]
    assert set(stalled) <= set(compared), (stalled, ref.unknown)
    for rid, stored in records.items():
        wrong = {t: (stored.get(t), ref.sent[t]) for t in compared if stored.get(t) != ref.sent[t]}
        assert not wrong, f"{rid}: (stored, answered) by second, read late after {stalled}: {wrong}"
    assert sum(ref.sent[t] for t in compared) >= 100 * len(compared)
