"""bench/arc_peer/replay.py — the peer side of bench/arc_sim.sh, run by it in a
throwaway venv: replays an ARC-paper trace (.lis[.zst]) through a reference
cache and prints one JSON line (page accesses, hit ratio, seconds, rate).

--peer libcachesim: libCacheSim's ARC or LRU (PyPI `libcachesim`, C core).  The
  trace is first expanded to its binary oracleGeneral format, one 24-byte
  record per 512-byte block (= page, the accesses strata-engine arcsim makes);
  the conversion is not timed, only process_trace() is.  Its hash table size
  (--hashpower, log2 buckets; default 24) matters a lot for speed.
--peer cachetools: fallback when libcachesim does not install: cachetools'
  LRUCache driven from Python (LRU only; it has no ARC), timed the same way.
"""
import argparse
import json
import subprocess
import sys
import time

import numpy as np

ORACLE = np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])


def page_ids(trace: str) -> np.ndarray:
    """Every 512-byte block of every request, in order."""
    if trace.endswith(".zst"):
        text = subprocess.run(["zstd", "-dc", trace], check=True, capture_output=True).stdout
    else:
        with open(trace, "rb") as f:
            text = f.read()
    fields = np.array(text.split(), dtype=np.uint64).reshape(-1, 4)
    start, nblocks = fields[:, 0], fields[:, 1].astype(np.int64)
    total = int(nblocks.sum())
    first = np.repeat(np.cumsum(nblocks) - nblocks, nblocks)
    return np.repeat(start, nblocks) + (np.arange(total) - first).astype(np.uint64)


def run_libcachesim(ids, pages, policy, tmp, hashpower):
    import libcachesim as lcs
    rec = np.zeros(len(ids), dtype=ORACLE)
    rec["id"], rec["size"], rec["next"] = ids, 1, -1
    rec.tofile(tmp)
    reader = lcs.TraceReader(tmp, lcs.TraceType.ORACLE_GENERAL_TRACE)
    kw = {"hashpower": hashpower} if hashpower else {}
    cache = (lcs.ARC if policy == "arc" else lcs.LRU)(cache_size=pages, **kw)
    t0 = time.perf_counter()
    miss_ratio, _ = cache.process_trace(reader)
    sec = time.perf_counter() - t0
    name = f"libCacheSim {getattr(lcs, '__version__', '?')} hashpower={hashpower or 'default'}"
    return name, round(len(ids) * (1 - miss_ratio)), sec


def run_cachetools(ids, pages, policy, tmp, hashpower):
    if policy != "lru":
        raise SystemExit("cachetools has no ARC")
    import cachetools
    cache, hits, keys = cachetools.LRUCache(maxsize=pages), 0, ids.tolist()
    t0 = time.perf_counter()
    for k in keys:
        if k in cache:
            cache[k]            # a get: moves k to the MRU end
            hits += 1
        else:
            cache[k] = True
    return "cachetools (Python) " + cachetools.__version__, hits, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", choices=["libcachesim", "cachetools"], required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--pages", type=int, required=True)
    ap.add_argument("--policy", choices=["arc", "lru"], default="arc")
    ap.add_argument("--hashpower", type=int, help="libCacheSim hash table size (log2)")
    ap.add_argument("--tmp", required=True, help="scratch path for an expanded trace")
    a = ap.parse_args()
    ids = page_ids(a.trace)
    run = run_libcachesim if a.peer == "libcachesim" else run_cachetools
    name, hits, sec = run(ids, a.pages, a.policy, a.tmp, a.hashpower)
    print(json.dumps({"peer": name, "policy": a.policy, "pages": a.pages,
                      "accesses": len(ids), "hits": hits,
                      "hit_ratio": 100.0 * hits / len(ids), "seconds": sec,
                      "accesses_per_s": len(ids) / sec}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
