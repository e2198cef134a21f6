"""`strata top`: a live view refreshing every second — a scrolling latency heat
map and the busiest clients. Works over ssh; q or Ctrl-C quits.

The terminal is put in cbreak mode (keys arrive unbuffered, no echo) on the
alternate screen with the cursor hidden; a finally block and SIGTERM/SIGHUP
handlers put everything back, whatever ends the loop.
"""
import os
import select
import signal
import sys
import termios
import time
import tty

import click

from strata.datasets.errors import ArchiveError
from strata.cli.archive_option import archive_option, open_archive
from strata.cli.view_errors import user_errors
from strata.heatmaps import json_out, termcaps
from strata.heatmaps.errors import ViewError
from strata.views import live

ENTER = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"
LEAVE = "\x1b[0m\x1b[?25h\x1b[?1049l"


class _Stop(Exception):
    """Raised from a signal handler to leave the loop through its finally."""


def _wait_for_key(fd: int, until: float) -> str:
    """A key pressed before `until` (monotonic), or '' on timeout."""
    timeout = max(until - time.monotonic(), 0)
    ready, _, _ = select.select([fd], [], [], timeout)
    return os.read(fd, 32).decode(errors="replace") if ready else ""


@click.command("top")
@click.argument("dataset", required=False)
@click.option("--clients", metavar="DATASET", help="Dataset for the client table (default nfs.ops[client] if it exists).")
@click.option("--interval", type=click.FloatRange(0.2, 60), default=1.0, show_default=True, help="Seconds between refreshes.")
@click.option("--color", "colour", type=click.Choice(("auto",) + termcaps.MODES), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True,
              help="Print one snapshot as JSON (the last --seconds of the heat map, the top clients) and exit.")
@click.option("--seconds", type=click.IntRange(1, 3600), default=60, show_default=True,
              help="With --json: seconds of heat map in the snapshot.")
@archive_option
def top(dataset, clients, interval, colour, as_json, seconds, archive_path):
    """Live latency heat map of DATASET (default nfs.latency) and the top clients."""
    if not as_json and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise click.ClickException("strata top needs a terminal (try `strata heatmap` for a snapshot, "
                                   "or `strata top --json`)")
    with open_archive(archive_path) as archive:
        with user_errors():
            heat, keys, client_info = live.pick_datasets(archive, dataset, clients)
            if as_json:
                click.echo(json_out.dumps(json_out.document(
                    "top", live.snapshot(archive, heat, keys, client_info, time.time(), seconds))))
                return
        mode = termcaps.colour_mode(sys.stdout, colour)
        _run(archive, heat, keys, client_info, interval, mode)


def _run(archive, heat, keys, client_info, interval, mode):
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    out = sys.stdout

    def stop(signum, frame):
        raise _Stop()
    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    resized = []
    previous[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, lambda s, f: resized.append(1))
    try:
        tty.setcbreak(fd)
        out.write(ENTER)
        out.flush()
        while True:
            width, height = termcaps.size()
            try:
                text = live.frame(archive, heat, keys, client_info, time.time(), width, height, mode)
            except (ArchiveError, ViewError) as e:
                text = f"strata top: {e}"
            lines = text.split("\n")[:height]
            out.write("\x1b[H" + "\x1b[K\r\n".join(lines) + "\x1b[K\x1b[J")
            out.flush()
            deadline = time.monotonic() + interval
            while time.monotonic() < deadline and not resized:
                key = _wait_for_key(fd, deadline)
                if key and key[0] in "qQ":
                    return
            if resized:
                resized.clear()
                out.write("\x1b[2J")
    except (KeyboardInterrupt, _Stop):
        return
    finally:
        out.write(LEAVE)
        out.flush()
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
