"""The `strata` command: a click group whose subcommands load on first use.

Each subcommand lives in its own module; COMMANDS maps its name to
"module:attribute" so that `strata --help` stays fast and one command's
imports (plotly, numpy) never slow another down.
"""
import importlib
import signal
import sys

import click

from strata.cli.examples import epilog
from strata.heatmaps import clock

COMMANDS = {
    "doctor": ("strata.cli.doctor:doctor", "Check what this kernel and machine offer for collection."),
    "datasets": ("strata.cli.datasets_cmd:datasets", "List, create, suspend, resume, destroy, prune, archive and import datasets."),
    "collect": ("strata.cli.collect_cmd:collect", "Collect the active datasets every second into the archive (root)."),
    "statistics": ("strata.cli.statistics_cmd:statistics", "List the statistics this host can collect, with units and breakdowns."),
    "demo": ("strata.cli.demo_cmd:demo", "Cache demo: engine, 10 clients, heat maps at the NFS and disk layers (root)."),
    "show": ("strata.cli.show_cmd:show", "Any dataset by its kind: heat map (latency, size, offset) or graph over time (counters, gauges)."),
    "heatmap": ("strata.cli.heatmap_cmd:heatmap", "Latency (size, offset) heat map of a dataset: terminal, HTML, PNG, SVG, JSON."),
    "breakdown": ("strata.cli.breakdown_cmd:breakdown", "Per-client/op/tier/device/file series and top-N table; --range drills into a latency band."),
    "check": ("strata.cli.check_cmd:check", "Compare two archives' latency distributions: better, same or worse (CI)."),
    "stream": ("strata.cli.stream_cmd:stream", "One line per second per dataset and key (ops/s, p50, p99, p99.9), as iostat 1."),
    "top": ("strata.cli.top_cmd:top", "Live view: scrolling latency heat map and the busiest clients (q quits)."),
    "web": ("strata.cli.web_cmd:web", "Live worksheet in the browser: heat maps, graphs, drag to drill down."),
}

SLOW_TO_IMPORT = ("check", "web")   # scipy, aiohttp: asked for an option only when no other command has it


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it runs."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        target, _ = COMMANDS[name]
        module, attr = target.split(":")
        return _finish(getattr(importlib.import_module(module), attr), name)

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _utc(ctx, param, value):
    if value:
        clock.use_utc()
        ctx.meta["utc"] = True


def _finish(command, path):
    """Every command and subcommand gets --utc and its examples (cli/examples.py) once."""
    if getattr(command, "_strata_finished", False):
        return command
    command._strata_finished = True
    if not any(p.name == "utc" for p in command.params):
        command.params.append(click.Option(["--utc"], is_flag=True, expose_value=False, is_eager=True,
                                           callback=_utc, help="Print times in UTC instead of the local zone."))
    command.epilog = command.epilog or epilog(path)
    for name, sub in getattr(command, "commands", {}).items():
        _finish(sub, f"{path} {name}")
    return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="strata")
def cli():
    """strata: latency heat maps for the Linux storage stack.

    eBPF probes aggregate every I/O's latency at the NFS, cache and disk
    layers into log-linear histograms; datasets keep them second by second;
    heat maps, breakdowns and checks read them back.
    """


def _elsewhere(e: click.NoSuchOption) -> str:
    """For an option a command lacks but other commands have: the line naming them (the
    commands are imported only on this error path)."""
    if not e.ctx or not e.ctx.parent:
        return ""       # strata's own options: no command's to point to
    here = " ".join(["strata"] + (e.ctx.command_path.split(" ")[1:] if e.ctx else []))
    group = LazyGroup()

    def having(names):
        return [f"`strata {name}`" for name in names if f"strata {name}" != here and
                any(e.option_name in p.opts + p.secondary_opts for p in group.get_command(None, name).params)]
    have = having([n for n in COMMANDS if n not in SLOW_TO_IMPORT]) or having(SLOW_TO_IMPORT)
    if not have:
        return ""
    shown = have[:3] + ([f"{len(have) - 3} more"] if len(have) > 3 else [])
    named = ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]
    return (f"`{here}` has no option {e.option_name}; {named} "
            f"{'has' if len(have) == 1 else 'have'} it (see {have[0].strip('`')} --help)")


def main():
    """Console entry point: click errors become one line and exit 2."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.NoSuchOption as e:
        click.echo(f"strata: {_elsewhere(e) or e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        click.echo(f"strata: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):   # a second Ctrl-C while click unwinds the first
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        click.echo("strata: aborted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except SystemExit as e:   # click answers a closed stdout (EPIPE) with exit 1: a closed pipe is 0
        if e.code == 1 and isinstance(e.__context__, BrokenPipeError):
            sys.exit(0)
        raise
