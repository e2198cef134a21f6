"""Events held in memory while the archive cannot be written (disk full, I/O errors, a
read-only file system, the archive's folder gone).

Each dataset's records are summed into one record spanning every second held, so
memory stays bounded (one record's keys and buckets per dataset) however long the
outage lasts; when writing works again that record is stored once, spanning the
outage and marked (Ingestor.add_cells, cause 'archive'). Time resolution is what
an outage costs; no event is lost.
"""
from dataclasses import dataclass, field

from strata.datasets import codec
from strata.datasets.ingest import cells_of, check_time


@dataclass
class _Span:
    kind: str
    start: int
    end: int
    keys: dict = field(default_factory=dict)    # key text -> local index
    cells: codec.Cells = field(default_factory=codec.Cells.empty)


class Held:
    def __init__(self):
        self.spans = {}   # dataset id -> _Span

    def __bool__(self):
        return bool(self.spans)

    def add(self, dataset: int, start: int, end: int, kind: str, data: dict):
        """Hold the record of [start, end) of dataset (BadRecord if it is malformed)."""
        check_time(start)
        span = self.spans.get(dataset)
        if span is None or span.kind != kind:
            span = self.spans[dataset] = _Span(kind, start, end)
        keys = span.keys

        def intern(k):
            return keys.setdefault(k, len(keys))
        new = cells_of(kind, data, intern)
        span.cells = codec.combine(codec.Cells.concat([span.cells, new]))
        span.start, span.end = min(span.start, start), max(span.end, end)

    def start(self) -> int | None:
        return min((s.start for s in self.spans.values()), default=None)

    def seconds(self) -> int:
        """Seconds from the first held to the last held."""
        return max((s.end for s in self.spans.values()), default=0) - (self.start() or 0)

    def store(self, ingest, datasets):
        """Write every held span of the datasets still collected (inside a transaction)."""
        for ds, s in self.spans.items():
            if ds in datasets:
                texts = sorted(s.keys, key=s.keys.get)
                ingest.add_cells(ds, s.start, s.kind, s.cells, s.end - s.start, "archive", keys=texts)

    def clear(self):
        self.spans.clear()
