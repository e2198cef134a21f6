"""The working sets of a duet in fresh process pairs (checks/duet_pairs.py): written
once per check, copied to every pair.

Writing the profile's working set to both engines of every pair through NFS cost
a pair up to 2.8 s at a load average of 10. So each side's own engine writes it
once, before the first pair, into a pool of its own (a B build that lays out its
pool differently keeps its own layout), one paired strata-load sending every
write to both (A or B first, at random); the engines are then stopped. Every
pair starts its engines on copies of those pools: the two sides' copies are made
in a random order per pair (neither side's files always reach the page cache
first), holding only the pools' data segments (copy_file_range, a reflink on file
systems that have them), and the ARC each engine had after writing is filled
again by reading the working set once (a sequential read against each side, both
at once, FILL_THREADS reads of FILL_IO in flight). So each pair's engines start from the pools and ARC contents they had
when every pair wrote its own.
"""
import contextlib
import dataclasses
import errno
import os
import random
from pathlib import Path

from strata.checks import engines
from strata.checks.duet import paired_args
from strata.checks.errors import CheckError
from strata.checks.sides import load_args
from strata.lab.load import Load

SETUP_TIMEOUT = 300
# lengths of the ARC-filling reads tried until one reads the whole set (what one read leaves in
# the ARC the next reads at ARC speed)
WARM_SECONDS = (0.5, 0.5, 1, 2, 4)
FILL_THREADS = 8     # its reads in flight: one 8 KiB read at a time reads 16 MiB in 1-4 s at a load average of 10
FILL_IO = "128k"     # and 128 KiB reads need 16 times fewer round trips


def copy_sparse(src: str, dst: str):
    """dst as a copy of src; only src's data segments are copied, its holes stay holes."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        offset = 0
        while offset < size:
            try:
                data = os.lseek(fin.fileno(), offset, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:        # no data after offset
                    break
                raise
            hole = os.lseek(fin.fileno(), data, os.SEEK_HOLE)
            while data < hole:
                copied = os.copy_file_range(fin.fileno(), fout.fileno(), hole - data, data, data)
                if copied == 0:
                    break
                data += copied
            offset = hole
        fout.truncate(size)


def write_working_sets(prof, sides: dict, options: dict) -> dict:
    """Each side's pool (in its work folder's pool/) with the working set written by that
    side's engine; returns {side: vdev files}. options: the duet's load options."""
    written = {}
    with contextlib.ExitStack() as undo:
        for s in random.sample(list(sides.values()), len(sides)):
            work = s.work / "pool"
            work.mkdir()
            host, nfsport, mountport, _, _ = engines.private_engine(prof, work, undo, s.binary)
            written[s.name] = dataclasses.replace(s, work=work, host=host, ports=(nfsport, mountport))
        first, second = random.sample(list(written.values()), 2)
        Load(work, "setup").start(paired_args(first, second, {**options, "setup_only": True})) \
            .wait(timeout=SETUP_TIMEOUT)
    return {name: tuple(engines.vdev_paths(prof, s.work)) for name, s in written.items()}


def copy_pools(pools: dict, sides: dict):
    """Copies of each side's written pool into its (pair's) work folder, the sides in a
    random order; sets each side's pool to its copies."""
    for name in random.sample(list(sides), len(sides)):
        s = sides[name]
        s.pool = tuple(str(s.work / Path(v).name) for v in pools[name])
        for src, dst in zip(pools[name], s.pool):
            copy_sparse(src, dst)


def remove_pools(sides: dict):
    """Deletes a stopped pair's pool copies."""
    for s in sides.values():
        for v in s.pool:
            Path(v).unlink(missing_ok=True)


def fill_arcs(sides: dict, options: dict):
    """Reads each side's whole working set once, a sequential read against each side, both
    at once (started in a random order); tries longer reads until both cover the set."""
    for seconds in WARM_SECONDS:
        opts = {**options, "profile": "seqread", "rate": None, "duration": f"{int(seconds * 1000)}ms",
                "clients": 1, "threads": FILL_THREADS, "io_size": FILL_IO}
        loads = []
        try:
            for s in random.sample(list(sides.values()), len(sides)):
                loads.append(Load(s.work, f"arc-{s.name}").start(load_args(s, opts)))
            reports = [load.wait(timeout=SETUP_TIMEOUT) for load in loads]
        finally:
            for load in loads:
                load.stop()
        if all(r["ops"].get("read", 0) * r["config"]["io_size"] >= r["config"]["working_set"] for r in reports):
            return
    raise CheckError(f"reading the working set back took over {WARM_SECONDS[-1]}s")
