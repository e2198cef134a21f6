"""Which dataset of an archive (or Prometheus server) answers a name, held or derived
(datasets/derive.py), and the keys selected: the first step of every command that reads
(views/window.py the next). The name is parsed once and the reader's datasets read once;
what follows reads the Source found (its DatasetInfo), never the name again.

Every failure here is a ViewError (heatmaps/errors.py) carrying one line for the user.
"""
from strata.datasets import catalogue, derive, names
from strata.datasets.errors import ArchiveError
from strata.heatmaps.errors import ViewError, ViewUsageError
from strata.prometheus.reader import PrometheusReader


def resolve(reader, text, keys=None) -> tuple:
    """(derive.Source, keys or None) for a dataset name (text, or a DatasetName parse_name
    gave) and the keys asked for (--key).

    A name the archive does not hold is derived when it can be: nfs.latency[client=10.0.0.3]
    is key 10.0.0.3 of nfs.latency[client], nfs.ops the sum of nfs.ops[client].
    """
    try:
        infos = reader.datasets()
        if not infos:
            if isinstance(reader, PrometheusReader):
                raise ViewError(f"Prometheus at {reader.path} holds no strata series "
                                "(does it scrape `strata collect --metrics`?)")
            raise ViewError(f"the archive {reader.path} holds no datasets "
                            "(create one with `strata datasets create`)")
        found = derive.resolve(reader, parse_name(reader, text, infos), infos)
    except ArchiveError as e:
        raise ViewError(str(e)) from None
    if keys:
        keys = list(dict.fromkeys(keys))
        if found.how != "held" or not found.info.breakdown:
            raise ViewUsageError(f"--key needs a dataset with a breakdown; {found.wanted} has none"
                                 + breakdown_hint(reader, found.wanted, " (its keys: {})", infos))
        _check_closed_keys(found.info, keys)
    return found, keys or None


def _check_closed_keys(info, keys):
    """A --key of a field whose values are a closed set (op, tier, hit/miss) is checked as a
    filter value is: one outside the set is a typo, answered with the closest values."""
    cat = catalogue.load()
    stat = cat.by_name().get(info.statistic)
    kind = cat.dimensions.get(info.breakdown, "")
    if stat is None or (stat.ops if kind == "op" else kind) not in cat.keysets:
        return
    try:
        for key in keys:
            catalogue.check_value(stat, info.breakdown, key)
    except ArchiveError as e:
        raise ViewError(str(e)) from None


def parse_name(reader, text, infos: list | None = None) -> names.DatasetName:
    """The name `text` parses to, checked against the catalogue before any command reads,
    derives or suggests from it: a filter value outside its field's closed set (op, tier,
    hit/miss) is a typo, one line with the closest values (nfs.ops[op=reed]: did you mean
    read...?), never a dataset to create. A statistic the catalogue lacks is answered as
    derive answers it (did you mean a dataset held here) unless the reader holds it
    (infos: reader.datasets(), read here only when needed and not given)."""
    try:
        parsed = text if isinstance(text, names.DatasetName) else names.parse(text)
        statistics = catalogue.load().by_name()
        if parsed.statistic not in statistics:
            derive.resolve(reader, parsed, infos)
            return parsed
        _breakdown_only(parsed, statistics[parsed.statistic])
        names.validate(parsed, statistics)
        names.check_values(parsed, statistics, allow_absent_device=True)
    except ArchiveError as e:
        raise ViewError(str(e)) from None
    return parsed


def _breakdown_only(parsed, stat):
    """A filter by a field the statistic only breaks down by (arc.accesses[hit/miss=hit]):
    one line pointing to that key of the breakdown (--key)."""
    for fld, value in parsed.filters:
        if fld not in stat.filters and fld in stat.breakdowns and not parsed.breakdown:
            catalogue.check_value(stat, fld, value, allow_absent_device=True)
            whole = names.DatasetName(parsed.statistic, tuple(f for f in parsed.filters if f[0] != fld), fld)
            raise ViewError(f"{parsed.statistic} cannot be filtered by {fld}, only broken down by it; "
                            f"its key {value}: strata show '{whole}' --key {value}")


def held_fields(reader, wanted, infos: list | None = None) -> list:
    """breakdown_fields(wanted) that the archive can answer: the breakdowns of the name it
    holds (a breakdown is never derived, datasets/derive.py); infos as parse_name's."""
    infos = reader.datasets() if infos is None else infos
    return [by for by in breakdown_fields(wanted)
            if derive.candidates(infos, names.DatasetName(wanted.statistic, wanted.filters, by))]


def breakdown_hint(reader, wanted, held_text: str, infos: list | None = None) -> str:
    """held_text with the command that breaks `wanted` down by the fields the archive
    holds, or, when it holds none, the command that collects the first ('' when the
    statistic has no breakdown)."""
    fields = breakdown_fields(wanted)
    if not fields:
        return ""
    held = held_fields(reader, wanted, infos)
    if held:
        return held_text.format(f"strata breakdown '{wanted}' --by {'|'.join(held)}")
    first = names.DatasetName(wanted.statistic, wanted.filters, fields[0])
    return f"; no breakdown of it is held here (to collect one: strata datasets create '{first}')"


def breakdown_fields(wanted) -> list:
    """The fields a dataset name can still be broken down by: its statistic's breakdowns
    that it does not filter by, clients first."""
    stat = catalogue.load().by_name().get(wanted.statistic)
    filtered = dict(wanted.filters)
    fields = [f for f in (stat.breakdowns if stat else []) if f not in filtered and f != "hit/miss"]
    return sorted(fields, key=lambda f: f != "client")


def drill_target(reader, source) -> str | None:
    """The dataset that breaks the source's events down by key, within its filters: the name
    itself when it has a breakdown, else the first breakdown of it (clients first) the
    archive holds or can derive; a filtered name without one (a key of a dataset broken
    down by the field it filters) is its own target: the events of that key, whole."""
    wanted = source.wanted
    if wanted.breakdown:
        return str(wanted)
    infos = None
    for by in breakdown_fields(wanted):
        name = names.DatasetName(wanted.statistic, wanted.filters, by)
        infos = reader.datasets() if infos is None else infos
        try:
            derive.resolve(reader, name, infos)
        except ArchiveError:
            continue
        return str(name)
    return str(wanted) if wanted.filters else None
