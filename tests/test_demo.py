"""`strata demo` end to end: a short real run (engine on a loop device, strata-load
with network namespaces, `strata collect`, the renderers), checked from the
archive it leaves: the DRAM band at the NFS layer only, the disk band on the
pool's loop device, one nfs.ops key per client, exact op counts against
strata-load's own report, the pictures (the tier bands named, where the time of the
disk's requests went); and Ctrl-C leaves nothing behind."""
import re
import time

import pytest

from demo_util import finished_demo, histogram, interrupted_demo, leftovers, median, png_size, share_below, time_went
from strata.heatmaps.units import parse_value
from strata.lab import engine as lab_engine
from strata.views.times import parse_time

DURATION, WORKING_SET = 30, "128M"   # half the demo's set: written in half the time, still twice the ARC


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    with finished_demo(tmp_path_factory.mktemp("demo") / "out", "--duration", str(DURATION),
                       "--working-set", WORKING_SET) as run:
        yield run


def reads_window(summary):
    """The random-read phase, whole seconds only (setup excluded)."""
    return summary["run_start"] + 1, summary["load_end"] - 1


def test_pictures_written(demo):
    out, stdout, summary, *_ = demo
    for stem in ("nfs-latency", "vdev-latency", "disk-latency", "nfs-ops-by-client", "cache-sizes", "time-disk"):
        html = (out / f"{stem}.html").read_text()
        assert 'src="plotly.min.js"' in html and (out / "plotly.min.js").stat().st_size > 1_000_000, stem
        width, height = png_size(out / f"{stem}.png")
        assert 1000 <= width <= 4000 and 600 <= height <= 3000, (stem, width, height)
        assert (out / f"{stem}.png").stat().st_size > 20_000, stem
    assert "nfs.latency[tier]" in stdout and "disk.latency[device=" in stdout    # terminal heat maps
    assert f"--archive {out / 'archive.db'}" in stdout                           # how to explore
    assert "strata show time:disk --since" in stdout
    since, until = re.search(r"--since (\S+) --until (\S+)", stdout).groups()
    tomorrow = int(time.time()) + 86400  # the commands still name the reads' seconds a day later
    assert [parse_time(t, tomorrow) for t in (since, until)] == [summary["run_start"], summary["load_end"] + 1]


def test_tier_bands_named(demo):
    """nfs.latency[tier]'s bands named where each sits: in the terminal's header (arc's median
    under pool's, as the ARC's DRAM is faster than the pool's modelled disk) and at the
    figure's right edge, in the HTML and so in the PNG drawn from the same figure."""
    out, stdout, *_ = demo
    line = next(l for l in stdout.splitlines() if l.startswith("tier bands: "))
    at = dict(re.findall(r"(\w+) at (\S+) \(", line))
    assert {"arc", "pool"} <= set(at), line
    assert parse_value(at["arc"], "ns") < parse_value(at["pool"], "ns"), line
    html = (out / "nfs-latency.html").read_text()
    assert '"name":"tier band names"' in html and '"arc  "' in html and '"pool  "' in html


def test_time_went_at_the_disk(demo):
    """time:disk over the reads: the pool's device reads each queued and served, both non-zero."""
    _, _, summary, _, archive = demo
    t = time_went(archive.path, "disk", *reads_window(summary))
    print("time:disk means per request (ns):", t["mean"], "requests:", t["events"])
    assert t["events"] > 0 and t["missing"] == [], t
    assert t["mean"]["queue"] > 0 and t["mean"]["device"] > 0, t["mean"]


def test_dram_band_at_nfs_layer_only(demo):
    """The ARC's hits are a band at the bottom of the NFS layer's map, and the disk layer
    never sees them: the pool's devices count the misses only. (Told by count, not by a
    latency mark: a direct read of the VM's disk takes under 50 us on days its host has the
    blocks cached, 150 us on others.)"""
    _, _, summary, _, archive = demo
    start, end = reads_window(summary)
    nb, nc = histogram(archive, "nfs.latency[tier]", start, end)
    ab, ac = histogram(archive, "nfs.latency[tier]", start, end, ["arc"])
    dc = histogram(archive, "disk.latency[device]", start, end, summary["pool_devices"])[1]
    # ~1/2 of reads hit the 64 MiB ARC over a 128 MiB working set; most hits take < 50 us
    assert ac.sum() >= 0.2 * nc.sum(), f"only {ac.sum():.0f} of {nc.sum():.0f} NFS reads hit the ARC"
    assert share_below(nb, nc, 50_000) >= 0.05, "no DRAM band: under 5 % of NFS reads under 50 us"
    assert median(ab, ac) < 100_000, "ARC hits are not a band at the bottom of the NFS map"
    misses = nc.sum() - ac.sum()
    assert dc.sum() <= 1.03 * misses + 50, f"the disk layer counts the ARC's hits too: {dc.sum():.0f} for {misses:.0f} misses"


def test_disk_band_is_the_pool_device(demo):
    _, _, summary, _, archive = demo
    start, end = reads_window(summary)
    pb, pc = histogram(archive, "nfs.latency[tier]", start, end, ["pool"])
    db, dc = histogram(archive, "disk.latency[device]", start, end, summary["pool_devices"])
    # one 8 KiB record read per ARC miss: the loop device sees the pool-tier NFS reads
    assert abs(dc.sum() - pc.sum()) <= 0.03 * pc.sum() + 50, (dc.sum(), pc.sum())
    # the NFS read of a miss contains the device read: the disk band sits at or below it
    assert 10_000 <= median(db, dc) <= median(pb, pc), (median(db, dc), median(pb, pc))
    if summary["vdev_model"] == "hdd":
        assert 1_000_000 <= median(pb, pc) <= 20_000_000, "HDD model: pool reads not in the 2-10 ms band"


def test_vdev_layer_has_the_modelled_disk_band_the_block_layer_lacks(demo):
    out, _, summary, _, archive = demo
    assert summary["vdev_model"] == "hdd", "this engine has device latency models"
    start, end = reads_window(summary)
    pb, pc = histogram(archive, "nfs.latency[tier]", start, end, ["pool"])
    vb, vc = histogram(archive, "vdev.latency[vdev]", start, end)
    db, dc = histogram(archive, "disk.latency[device]", start, end, summary["pool_devices"])
    # one record read per pool-tier NFS read, each an HDD service time; the loop devices'
    # own time for the same reads is far below that band
    assert pc.sum() > 0 and abs(vc.sum() - pc.sum()) <= 0.03 * pc.sum() + 50, (vc.sum(), pc.sum())
    assert 1_000_000 <= median(vb, vc) <= median(pb, pc), (median(vb, vc), median(pb, pc))
    assert median(db, dc) <= median(vb, vc) / 4, (median(db, dc), median(vb, vc))
    assert (out / "vdev-latency.png").exists()


def test_one_ops_key_per_client(demo):
    _, _, summary, load, archive = demo
    qr = archive.query("nfs.ops[client]", summary["load_start"] - 5, summary["load_end"] + 5)
    if summary["netns"]:
        assert sorted(qr.keys) == sorted(c["addr"] for c in load["clients"])
        assert len(qr.keys) == 10
    else:
        assert qr.keys == ["127.0.0.1"]


def test_op_counts_match_strata_load_exactly(demo):
    """Setup and run share one strata-load process, and collection covers both, so the
    archive's per-op totals are the report's run ops + setup ops + MOUNT ops."""
    _, _, summary, load, archive = demo
    qr = archive.query("nfs.ops[op]", summary["load_start"] - 30, summary["load_end"] + 30)
    engine = dict(zip(qr.keys, (int(v) for v in qr.values.sum(axis=1))))
    client = {}
    for part in (load["ops"], load["setup"]["ops"], load["setup"]["mount_ops"]):
        for op, n in part.items():
            client[op] = client.get(op, 0) + n
    assert engine == {op: n for op, n in client.items() if n}
    assert load["errors"] == 0


def test_l2arc_claim_matches_the_engine(demo):
    _, _, summary, _, archive = demo
    feats = lab_engine.features()
    assert summary["l2arc"] == (feats.cache and feats.ctl)
    if not summary["l2arc"]:
        assert summary["l2arc_on_at"] is None
        return
    on = summary["l2arc_on_at"]
    start, end = reads_window(summary)
    before = histogram(archive, "nfs.latency[tier]", start, on)
    after = histogram(archive, "nfs.latency[tier]", on + (end - on) // 2, end)
    slow_before, slow_after = 1 - share_below(*before, 1_000_000), 1 - share_below(*after, 1_000_000)
    assert slow_after < slow_before, ("disk band did not fade", slow_before, slow_after)
    l2 = histogram(archive, "nfs.latency[tier]", on + (end - on) // 2, end, ["l2arc"])
    assert l2[1].sum() > 0, "no reads served by the L2ARC after it was switched on"


def test_ctrl_c_cleans_up(tmp_path):
    """Interrupted while its clients write the working set: loop devices, engine,
    collector and strata-load (with its network namespaces) are all running then."""
    rc, stderr, said = interrupted_demo(tmp_path / "out", "--duration", "60", started="streams: writing a",
                                        said=("scratch files in",))
    assert rc == 130, stderr
    assert leftovers(said["scratch files in"]) == []
