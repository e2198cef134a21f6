"""Re-binning on golden QueryResults: counts preserved exactly, rows made of whole
buckets, linear and log axes, outlier crop counts, percentiles, time columns."""
import numpy as np
import pytest

from heatmaps_util import T0, heatmap_result
from strata.datasets import llhist
from strata.heatmaps.rebin import build_grid, percentile_of
from strata.heatmaps.timebins import choose_bins, sum_columns
from strata.heatmaps.units import format_value, parse_value
from strata.views.times import parse_duration

EDGES = set(float(llhist.lower(b)) for b in range(llhist.NBUCKETS)) | {float(llhist.upper(llhist.NBUCKETS - 1))}


def random_result(seed=1, n=600, keys=3):
    rng = np.random.default_rng(seed)
    data = {}
    for k in range(keys):
        cols = rng.integers(0, n, 400)
        vals = np.exp(rng.uniform(np.log(5), np.log(5e9), 400)).astype(np.int64)
        data[f"k{k}"] = [(int(c), int(v), int(rng.integers(1, 1000))) for c, v in zip(cols, vals)]
    return heatmap_result(data, n), sum(c for rows in data.values() for _, _, c in rows)


@pytest.mark.parametrize("axis,ymin,ymax,ncells", [
    ("linear", None, None, 40), ("linear", None, 10_000_000, 57), ("linear", 150_000, 2_000_000, 33),
    ("log", None, None, 80), ("log", 1_000, 10_000_000, 24), ("log", 20, 3e9, 200)])
def test_counts_preserved_and_rows_are_whole_buckets(axis, ymin, ymax, ncells):
    qr, total = random_result()
    g = build_grid(qr, T0, T0 + 600, max_cols=97, ncells=ncells, axis=axis, ymin=ymin, ymax=ymax)
    assert g.total == total
    assert int(g.counts.sum()) + g.above + g.below == total
    assert np.array_equal(g.column_totals.sum(), np.uint64(total))
    assert all(float(e) in EDGES for e in g.edges), "row edges must be bucket edges"
    assert np.all(np.diff(g.edges) > 0)
    for b in qr.buckets:                          # every bucket lies in exactly one row or outside
        lo, hi = llhist.lower(int(b)), llhist.upper(int(b))
        r = np.searchsorted(g.edges, lo, side="right") - 1
        assert hi <= g.edges[0] or lo >= g.edges[-1] or (g.edges[r] <= lo and hi <= g.edges[r + 1])
    # every row is shown in at least one cell, cells in order
    assert set(g.cell_row.tolist()) == set(range(len(g.edges) - 1))
    assert np.all(np.diff(g.cell_row) >= 0)


def test_golden_linear_rows():
    qr = heatmap_result({"": [(0, 5_000, 7), (0, 150_000, 5), (1, 2_500_000, 3), (2, 20_000_000, 2),
                              (2, 999_999, 11)]}, 3)
    g = build_grid(qr, T0, T0 + 3, max_cols=3, ncells=10, ymax=10_000_000)
    assert list(g.edges) == [i * 1_000_000.0 for i in range(11)]
    assert g.counts[0].tolist() == [12, 0, 11]        # 5 us, 150 us and 999,999 ns: row [0, 1 ms)
    assert g.counts[2].tolist() == [0, 3, 0]          # 2.5 ms: row [2, 3 ms)
    assert (g.above, g.below, g.total) == (2, 0, 28)


def test_tall_bucket_spans_cells_and_density_is_per_cell():
    # 10 us cells: below 1 ms buckets are 10 us wide (one per row); 1.0-1.1 ms is one 100 us bucket
    qr = heatmap_result({"": [(0, 995_000, 4), (0, 1_050_000, 30)]}, 1)
    g = build_grid(qr, T0, T0 + 1, max_cols=1, ncells=120, ymax=1_200_000)
    row = np.searchsorted(g.edges, 1_000_000, side="right") - 1
    assert (g.edges[row], g.edges[row + 1]) == (1_000_000, 1_100_000)
    assert int(np.sum(g.cell_row == row)) == 10
    assert g.counts[row, 0] == 30 and g.density[row, 0] == pytest.approx(3.0)
    small = np.searchsorted(g.edges, 990_000, side="right") - 1
    assert g.edges[small + 1] - g.edges[small] == 10_000 and g.density[small, 0] == pytest.approx(4.0)


def test_auto_linear_cells_align_with_buckets():
    qr = heatmap_result({"": [(0, 4_150_000, 1), (0, 120_000, 1)]}, 1)
    g = build_grid(qr, T0, T0 + 1, max_cols=1, ncells=40)
    h = g.cells[1] - g.cells[0]
    assert g.cells[-1] >= 4_200_000 and g.cells[-1] < 2 * 4_200_000   # nice top, not wasteful
    assert h % 100_000 == 0 and len(g.edges) == 41                    # every cell is a row
    assert np.allclose(g.edges, g.cells)


def test_log_axis_decades_are_row_edges():
    qr = heatmap_result({"": [(0, 3_000, 1), (0, 7_000_000, 1)]}, 1)
    g = build_grid(qr, T0, T0 + 1, max_cols=1, ncells=40, axis="log")
    assert g.edges[0] == 2_000 and g.edges[-1] == 10_000_000     # 1-2-5 rounding of the data range
    g = build_grid(qr, T0, T0 + 1, max_cols=1, ncells=40, axis="log", ymin=1_000, ymax=10_000_000)
    for decade in (1_000, 10_000, 100_000, 1_000_000, 10_000_000):
        assert decade in g.edges
    heights = np.diff(np.log10(g.edges))
    assert heights.max() < 3 * heights.min()                     # about equal in log space


def test_outlier_crop_counts():
    qr = heatmap_result({"a": [(c, 100_000 + c, 100) for c in range(10)], "b": [(3, 50_000_000, 10)]}, 10)
    g = build_grid(qr, T0, T0 + 10, max_cols=10, ncells=20, outliers=99)
    assert g.above == 10 and g.total == 1010
    assert g.crop["mode"] == "outliers" and 100_000 <= g.crop["value"] < 110_000
    assert 110_000 <= g.edges[-1] < 50_000_000
    assert int(g.counts.sum()) == 1000
    g = build_grid(qr, T0, T0 + 10, max_cols=10, ncells=20, outliers=99.95)   # rank 1010*0.9995 -> the 50 ms bucket
    assert g.above == 0 and g.edges[-1] >= 51_000_000


def test_key_selection_and_drilldown_counts():
    qr = heatmap_result({"10.0.0.1": [(0, 5_000, 3)], "10.0.0.3": [(0, 5_000, 4), (1, 300_000, 6)]}, 2)
    g = build_grid(qr, T0, T0 + 2, max_cols=2, ncells=10, keys=["10.0.0.3"])
    assert g.total == 10
    with pytest.raises(KeyError):
        build_grid(qr, T0, T0 + 2, max_cols=2, ncells=10, keys=["10.0.0.9"])


def test_percentiles_interpolate_inside_buckets():
    qr = heatmap_result({"": [(0, 100_000, 100), (1, 100_000, 50), (1, 2_000_000, 50)]}, 3)
    g = build_grid(qr, T0, T0 + 3, max_cols=3, ncells=10, percentiles=(50, 99))
    assert g.percentiles[50.0][0] == pytest.approx(105_000)            # middle of [100, 110) us
    assert g.percentiles[50.0][1] == pytest.approx(110_000)            # top of the first bucket
    assert 2_000_000 <= g.percentiles[99.0][1] <= 2_100_000
    assert np.isnan(g.percentiles[50.0][2])                            # empty column
    assert np.isnan(percentile_of(np.array([], np.int64), np.zeros((4, 0)), 50)).all()


def test_time_columns_sum_and_fit():
    bins = choose_bins(T0 + 7, T0 + 86_400 + 7, 1, 180)
    assert bins.ncols <= 180 and bins.width % 60 == 0 and bins.start <= T0 + 7
    bins = choose_bins(T0, T0 + 600, 1, 100)
    assert (bins.width, bins.ncols) == (6, 100)
    data = np.arange(600 * 2).reshape(600, 2)
    out = sum_columns(data, T0 + np.arange(600), bins, axis=0)
    assert out.shape == (100, 2) and out.sum() == data.sum() and out[0, 0] == sum(range(0, 12, 2))
    assert choose_bins(T0, T0 + 1, 1, 80).ncols == 1                    # a single second


def test_units():
    assert parse_value("10ms", "ns") == 10_000_000
    assert parse_value("500us", "ns") == parse_value("500µs", "ns") == 500_000
    assert parse_value("64KiB", "bytes") == 65_536 and parse_value("4k", "bytes") == 4096
    for bad, unit in (("abc", "ns"), ("10xs", "ns"), ("4KiB", "ns"), ("-1ms", "ns")):
        with pytest.raises(ValueError):
            parse_value(bad, unit)
    assert parse_duration("1h30m") == 5400 and parse_duration("90") == 90
    assert [format_value(v, "ns") for v in (850, 12_500, 1_500_000, 2e9)] == ["850ns", "12.5µs", "1.5ms", "2s"]
    assert format_value(131072, "bytes") == "128KiB"
