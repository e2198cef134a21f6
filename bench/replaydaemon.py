#!/usr/bin/env python3
"""A stand-in for strata-collect in benchmarks of what reads the archive (`strata collect
--collector bench/replaydaemon.py`, bench/web_live.py): it speaks the daemon's protocol
(collectors/FORMAT.md: acks, an interval record and one data record per dataset each
second, the first after an `add` partial) with records taken in turn from a pool, the JSON
file $STRATA_REPLAY: {"kinds": {NAME: KIND}, "pool": [{NAME: DATA}, ...]}, NAME a dataset
name (`nfs.latency[client]`). No BPF: the collector's supervisor, its archive and its
readers are the real ones, the events replayed. Stdlib only."""
import json
import os
import selectors
import sys
import time


def main():
    if "--check-privileges" in sys.argv:
        return 0
    with open(os.environ["STRATA_REPLAY"]) as f:
        replay = json.load(f)
    kinds, pool = replay["kinds"], replay["pool"]
    added = {}                      # daemon id -> [dataset name, partial]
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ)
    out, pending = sys.stdout, b""
    next_second = int(time.time()) + 1
    while True:
        for _ in sel.select(timeout=max(next_second - time.time(), 0)):
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return 0
            *lines, pending = (pending + chunk).split(b"\n")
            for words in (ln.decode().split() for ln in lines):
                if words and not control(words, kinds, added, out):
                    return 0
            out.flush()
        if time.time() >= next_second:
            t = next_second - 1
            records = pool[t % len(pool)]
            out.write(json.dumps({"v": 1, "type": "interval", "t": t, "mono_ms": 1000, "step_ms": 0}) + "\n")
            for ident, entry in added.items():
                name, partial = entry
                msg = {"v": 1, "type": "data", "t": t, "id": ident, "kind": kinds[name], "data": records[name]}
                if partial:
                    msg["partial"] = True
                    entry[1] = False
                out.write(json.dumps(msg, separators=(",", ":")) + "\n")
            out.flush()
            next_second += 1


def control(words, kinds, added, out) -> bool:
    """Answer one control line; False for `quit`."""
    if words[0] == "quit":
        return False
    if words[0] == "add" and len(words) >= 4:
        name = words[2] + ("" if words[3] == "-" else f"[{words[3]}]")
        if name in kinds:
            added[words[1]] = [name, True]
            out.write(json.dumps({"v": 1, "type": "ack", "id": words[1], "ok": True}) + "\n")
        else:
            out.write(json.dumps({"v": 1, "type": "error", "id": words[1],
                                  "message": f"{name} is not replayed"}) + "\n")
    elif words[0] == "remove" and len(words) >= 2:
        added.pop(words[1], None)
        out.write(json.dumps({"v": 1, "type": "ack", "id": words[1], "ok": True}) + "\n")
    return True


if __name__ == "__main__":
    sys.exit(main())
