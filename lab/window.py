"""A time window of some datasets, as a self-contained archive file (the format
`strata datasets archive` writes): only whole seconds of steady load, so a
comparison never sees a half-collected first or last second."""
import math
import os
import tempfile

import numpy as np

from strata.datasets import extract
from strata.datasets.archive import Archive


def _records(qr):
    """(second, data) per collected column of a QueryResult, in the collector's record form."""
    for col, t in enumerate(qr.times.tolist()):
        if qr.present.size and not qr.present[col]:
            continue
        data = {}
        for k, key in enumerate(qr.keys):
            if qr.kind == "heatmap":
                nz = np.flatnonzero(qr.counts[k, col])
                if nz.size:
                    data[key] = {str(int(qr.buckets[j])): int(qr.counts[k, col, j]) for j in nz}
            elif qr.kind == "counter":
                if qr.values[k, col]:
                    data[key] = int(qr.values[k, col])
            elif not math.isnan(qr.values[k, col]):
                data[key] = float(qr.values[k, col])
        yield int(t), data


def export_window(src: str, names: list, start: int, end: int, dest: str):
    """Writes dest: datasets `names` of archive src over the seconds [start, end)."""
    with tempfile.TemporaryDirectory(prefix="strata-window-") as tmp:
        scratch = os.path.join(tmp, "window.db")
        with Archive.open(src) as source, Archive.open(scratch, readonly=False) as out:
            ingest = out.ingestor()
            for name in names:
                info = out.create(name, now=start, allow_absent_device=True)
                qr = source.query(name, start, end, 1)
                with ingest.transaction():
                    for t, data in _records(qr):
                        ingest.add(info.id, t, qr.kind, data)
            extract.extract(out, names, dest, overwrite=True)
