"""The metrics export in Prometheus' protobuf exposition: heat maps as native histograms.

A scraper whose Accept header prefers
`application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited`
(Prometheus with native histograms on: metrics_server.preferred) gets this; others
get OpenMetrics text (openmetrics.py). Families and labels are the text's, with one series per dataset
x shown key instead of one per bucket:

  heat map  -> native histogram  strata_<statistic>_<unit>   (buckets: native_buckets.py; schema chosen)
  counter   -> counter           strata_<statistic>_total
  gauge     -> gauge             strata_<statistic>_<unit>

Counters and histograms carry the text's sample timestamp (the end of the last
second they hold) as timestamp_ms.

The messages are metrics.proto's (prometheus/client_model), each preceded by its
length as a varint. A histogram's zero bucket holds llhist's bin 0 (value 0) and
has client_golang's default threshold (2^-128) so every Prometheus reads it as
native; its sum is an estimate (each bin's count times its centre: llhist keeps no
exact sum), within the mapping error.
"""
import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from strata.prometheus import metrics_pb2 as pb
from strata.datasets import varint
from strata.prometheus import native_buckets

ZERO_THRESHOLD = 2.0 ** -128


def _timestamp(seconds: float) -> Timestamp:
    return Timestamp(seconds=int(seconds), nanos=int(seconds % 1 * 1e9))


def _histogram(counts: np.ndarray, schema: int, per: float, centres: np.ndarray, created: float):
    zero, spans, deltas = native_buckets.sparse(counts, schema, per)
    h = pb.Histogram(sample_count=int(counts.sum()), schema=schema, zero_threshold=ZERO_THRESHOLD,
                     zero_count=zero, positive_delta=deltas, created_timestamp=_timestamp(created),
                     sample_sum=float(counts.astype(np.float64) @ centres) / per)
    h.positive_span.extend(pb.BucketSpan(offset=o, length=n) for o, n in spans)
    return h


def encode(families, schema: int) -> bytes:
    """families: [((family name, kind), [openmetrics._Dataset])] -> the delimited messages."""
    out, centres = [], native_buckets.centres()
    for (family, kind), members in families:
        info = members[0].info
        mf = pb.MetricFamily(help=f"strata statistic {info.statistic} ({info.unit}, {kind})")
        if kind == "counter":
            mf.name, mf.type = family + "_total", pb.COUNTER
        else:
            mf.name, mf.type = family, pb.HISTOGRAM if kind == "heatmap" else pb.GAUGE
        for ds in members:
            for key, value in sorted(ds.keys.items()):
                m = mf.metric.add()
                m.label.extend(pb.LabelPair(name=n, value=str(v)) for n, v in ds.label_pairs(key))
                if kind != "gauge":
                    m.timestamp_ms = ds.closed * 1000
                if kind == "heatmap":
                    m.histogram.CopyFrom(_histogram(value, schema, ds.per, centres, ds.created[key]))
                elif kind == "counter":
                    m.counter.CopyFrom(pb.Counter(value=value, created_timestamp=_timestamp(ds.created[key])))
                else:
                    m.gauge.value = value / ds.per
        body = mf.SerializeToString()
        out += [varint.encode(np.array([len(body)], np.uint64)), body]
    return b"".join(out)
