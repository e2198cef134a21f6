"""Estimated probe cost of datasets: events per second × about 0.6 µs per probe hit.

DESIGN.md: a uprobe or tracepoint hit with a BPF program costs roughly
0.5–0.7 µs here. Datasets on the same probe share its hits, so the total
counts each probe once, at the highest event rate any of its active datasets
saw (a filtered dataset sees fewer events than its probe fires: the
unfiltered ones give the truer figure). Suspended datasets cost nothing.
"""
US_PER_HIT = 0.6


def cpu_percent(events_per_s) -> float:
    """Percent of one CPU spent in probes firing events_per_s times a second."""
    return (events_per_s or 0.0) * US_PER_HIT * 1e-6 * 100


def estimate(rows) -> tuple:
    """rows: (info, rate) pairs -> ({name: percent}, total percent, probes in use)."""
    each, probes = {}, {}
    for info, rate in rows:
        active = info.state == "active" and info.probe
        each[info.name] = cpu_percent(rate) if active else 0.0
        if active:
            probes[info.probe] = max(probes.get(info.probe, 0.0), rate or 0.0)
    return each, sum(cpu_percent(r) for r in probes.values()), sorted(probes)
