"""`strata collect --config FILE`: the TOML file a service runs the collector from.

    archive = "/var/lib/strata/archive.db"
    flush_every = "1m"                                                # the open rollups' writes
    datasets = ["nfs.latency[client]", "disk.latency[device]"]   # ensured active at start and on reload
    [retention]   second = "7d"  minute = "90d"  hour = "104w"     # of the datasets listed
    [metrics]     listen = ":9464"  digits = 2  schema = 4  top = 20  web_config = "/etc/strata/web.yml"
    [collector]   program = ...  engine = ...  engine_pid = ...  stats_socket = ...
    [wire]        interfaces = ["eth0"]  ports = [2049]  hook = "auto"
    [fs]          pids = [...]  comms = ["ganesha.nfsd"]  cgroup = ...  hook = "auto"

FLAGS maps every other key to the `strata collect` option it sets: the file
accepts what the flag accepts (the option's own click type converts and checks
it; a list where the flag may be repeated), and a flag given on the command line
wins. A key whose option this build
of `strata collect` lacks is an unknown key. Every mistake (TOML syntax, an
unknown key, a bad value) is one ConfigError naming the key and its line.
"""
import dataclasses
import difflib
import re
import tomllib

import click

from strata.datasets import catalogue, names
from strata.datasets.errors import ArchiveError
from strata.datasets.retention import LEVELS, Retention, parse_duration

# config key -> `strata collect` parameter (the click name of its option)
FLAGS = {
    "archive": "archive_path",
    "flush_every": "flush_every",
    "metrics.listen": "metrics_address",
    "metrics.digits": "metrics_digits",
    "metrics.schema": "metrics_schema",
    "metrics.top": "metrics_top",
    "metrics.web_config": "web_config",
    "collector.program": "collector_bin",
    "collector.engine": "engine",
    "collector.engine_pid": "engine_pid",
    "collector.stats_socket": "stats_socket",
    "wire.interfaces": "wire_ifaces",
    "wire.ports": "wire_ports",
    "wire.hook": "wire_hook",
    "fs.pids": "fs_pids",
    "fs.comms": "fs_comms",
    "fs.cgroup": "fs_cgroup",
    "fs.hook": "fs_hook",
}
DATASETS = "datasets"
RETENTION = tuple(f"retention.{lv}" for lv in LEVELS)


class ConfigError(click.ClickException):
    """One line: FILE, line N: KEY: what is wrong."""


@dataclasses.dataclass(frozen=True)
class Config:
    path: str
    options: dict            # parameter name -> converted value, for the keys the file sets
    datasets: tuple          # canonical dataset names, in file order
    retention: Retention     # for the datasets listed


def _key_lines(text: str) -> dict:
    """{dotted key: line number} of each `key = ...` line, under its [table] header."""
    lines, table = {}, ""
    for n, line in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\s*(#.*)?$", line)
        if header:
            table = header.group(1).replace('"', "").replace(" ", "")
            continue
        key = re.match(r"\s*([A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*)\s*=", line)
        if key:
            dotted = re.sub(r"\s", "", key.group(1))
            lines.setdefault(f"{table}.{dotted}" if table else dotted, n)
    return lines


def _flatten(table: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _value_line(text: str, start: int, value: str) -> int:
    """The line, from `start` on, that holds the string literal `value` (an array element)."""
    for n, line in enumerate(text.splitlines()[start - 1:], start):
        if f'"{value}"' in line or f"'{value}'" in line:
            return n
    return start


def load(path: str, command: click.Command) -> Config:
    """Read and check FILE against `command`'s options; ConfigError on the first mistake."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the configuration ({e.strerror})") from None
    text = raw.decode("utf-8", errors="replace")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        where = f", line {m.group(1)}" if m else ""
        raise ConfigError(f"{path}{where}: not valid TOML: {str(e).split(' (at ')[0]}") from None
    lines = _key_lines(text)
    params = {p.name: p for p in command.params}
    flags = {key: params[name] for key, name in FLAGS.items() if name in params}
    known = [*flags, DATASETS, *RETENTION]

    def fail(key, message, line=None):
        parts = key.split(".")       # a key inside an inline table: the line of its table's key
        line = line or next((lines[k] for k in (".".join(parts[:n]) for n in range(len(parts), 0, -1))
                             if k in lines), "?")
        raise ConfigError(f"{path}, line {line}: {key}: {message}")

    options, datasets, keep = {}, [], {}
    for key, value in _flatten(data).items():
        if key in flags:
            param = flags[key]
            items = value if param.multiple and isinstance(value, list) else [value]
            if len(items) != 1 and not param.multiple or \
                    any(isinstance(v, bool) or not isinstance(v, (str, int)) for v in items):
                number = isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType))
                fail(key, f"expected a {'number' if number else 'string'}" + (" or a list of them" if param.multiple else ""))
            try:
                converted = [param.type.convert(str(v), param, None) for v in items]
            except click.BadParameter as e:
                fail(key, e.message)
            options[param.name] = tuple(converted) if param.multiple else converted[0]
        elif key == DATASETS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                fail(key, 'expected a list of dataset names, e.g. ["nfs.latency[client]"]')
            stats = catalogue.by_name()
            for name in value:
                try:
                    datasets.append(str(names.parse(name, stats)))
                except ArchiveError as e:
                    fail(key, str(e), _value_line(text, lines.get(key, 1), name))
        elif key in RETENTION:
            if not isinstance(value, str):
                fail(key, 'expected a duration such as "7d" or "all"')
            try:
                keep[key.split(".")[1]] = parse_duration(value)
            except ArchiveError as e:
                fail(key, str(e))
        else:
            close = difflib.get_close_matches(key, known, n=1)
            fail(key, "unknown key" + (f" (did you mean {close[0]}?)" if close else
                                       f"; keys: {', '.join(known)}"))
    try:
        retention = dataclasses.replace(Retention(), **keep).check()
    except ArchiveError as e:   # "the minute level must keep ...": blame that level if the file set it
        named = re.search(r"the (\w+) level must", str(e))
        level = named.group(1) if named and named.group(1) in keep else next(lv for lv in LEVELS if lv in keep)
        fail(f"retention.{level}", str(e).removeprefix("retention: "))
    return Config(path, options, tuple(dict.fromkeys(datasets)), retention)


def merged(config: Config, ctx: click.Context, given: dict) -> dict:
    """The command's parameters: a flag given on the command line wins, then the file, then
    the option's default."""
    out = dict(given)
    for name, value in config.options.items():
        if ctx.get_parameter_source(name) != click.core.ParameterSource.COMMANDLINE:
            out[name] = value
    return out
