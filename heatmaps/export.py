"""Writing plotly figures: HTML (plotly.js once per folder, or inline on request), or
PNG/SVG through kaleido and Chromium.

An image export runs in a forked child in its own session, so a Chromium that hangs
(it does, rarely, on a loaded host) is killed with its whole process group at a
deadline and the export is tried once more, instead of blocking the command."""
import multiprocessing
import os
import signal
import sys
from pathlib import Path

from strata.datasets.parentdeath import die_with_parent

CHROMIUM = "/usr/bin/chromium"
IMAGE_SIZE = (1400, 800)
EXPORT_DEADLINE_S = 60   # a render takes ~3 s here
EXPORT_ATTEMPTS = 2


class ExportError(RuntimeError):
    """A figure could not be written; the message is one line for the user."""


PLOTLY_JS = "plotly.min.js"   # the one copy of plotly.js beside the HTML files of a folder
HTML_CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False}


def plotly_js_beside(path: str) -> Path:
    """Writes plotly.js as PLOTLY_JS in path's folder unless that copy is already this
    version's; returns its path. Every HTML file of the folder loads it relatively."""
    from plotly.offline import get_plotlyjs
    script = get_plotlyjs().encode()
    target = Path(path).parent / PLOTLY_JS
    try:
        if target.stat().st_size == len(script) and target.read_bytes() == script:
            return target
    except FileNotFoundError:
        pass
    partial = target.with_name(f".{PLOTLY_JS}.{os.getpid()}.partial")
    partial.write_bytes(script)
    os.replace(partial, target)
    return target


def write_html(fig, path: str, self_contained: bool = False):
    """An HTML file that opens offline with zoom and hover: plotly.js loaded from the
    copy beside it (PLOTLY_JS), or inline when self_contained (one file to mail)."""
    if self_contained:
        include = True
    else:
        plotly_js_beside(path)
        include = PLOTLY_JS
    fig.write_html(path, include_plotlyjs=include, full_html=True, config=HTML_CONFIG)


def _render(fig, path, fmt, size, errors):
    """Child: renders into path, or sends the first line of kaleido's error. It dies with
    the command (PR_SET_PDEATHSIG), even from outside its own session."""
    die_with_parent(signal.SIGKILL)
    os.setsid()
    sys.argv = sys.argv[:1]   # logistro (kaleido's logger) parses sys.argv on import: not strata's flags
    try:
        fig.write_image(path, format=fmt, width=size[0], height=size[1], scale=1 if fmt == "svg" else 2)
    except Exception as e:   # kaleido raises assorted errors when Chromium cannot start
        errors.send(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)
        os._exit(1)
    os._exit(0)


def _attempt(fig, path, fmt, size, deadline):
    """One export in a child into a temporary file beside path, renamed over path only
    when complete (a failed export leaves an existing file untouched); returns None on
    success, else why it failed."""
    target = Path(path)
    partial = target.with_name(f".{target.stem}.{os.getpid()}.partial.{fmt}")
    try:
        why = _run_child(fig, str(partial), fmt, size, deadline)
        if why is None:
            os.replace(partial, target)
        return why
    finally:
        partial.unlink(missing_ok=True)


def _descendants(pid):
    """pid's children, grandchildren, ... from /proc (empty once they are gone)."""
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _kill_tree(pid):
    """Kills the renderer and every process group under it: choreographer starts
    Chromium through a wrapper in a session of its own, out of reach of the child's."""
    own = os.getpgid(0)
    for p in [pid] + _descendants(pid):
        try:
            group = os.getpgid(p)
            if group != own:
                os.killpg(group, signal.SIGKILL)
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _run_child(fig, path, fmt, size, deadline):
    """Forks the renderer and waits for it up to the deadline; returns None or why not."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_render, args=(fig, path, fmt, size, send))
    child.start()
    send.close()
    try:
        child.join(deadline)
    except BaseException:            # Ctrl-C, SIGTERM: take the renderer and Chromium along
        _kill_tree(child.pid)
        child.join()
        raise
    if child.exitcode is None:
        _kill_tree(child.pid)
        child.join()
        return f"no result within {deadline} s"
    if child.exitcode == 0:
        return None if os.path.exists(path) else "kaleido wrote no file"
    try:
        return receive.recv()
    except (EOFError, OSError):      # it died before saying why (killed, out of memory)
        return f"the renderer ended with status {child.exitcode}"


def write_image(fig, path: str, fmt: str, size=IMAGE_SIZE, deadline=EXPORT_DEADLINE_S):
    """PNG or SVG via kaleido 1.x, driving Debian's Chromium unless BROWSER_PATH says otherwise."""
    if "BROWSER_PATH" not in os.environ and Path(CHROMIUM).exists():
        os.environ["BROWSER_PATH"] = CHROMIUM
    for _ in range(EXPORT_ATTEMPTS):
        why = _attempt(fig, path, fmt, size, deadline)
        if why is None:
            return
    raise ExportError(f"cannot export {fmt.upper()} (kaleido/Chromium): {why}")


def write(fig, path: str, fmt: str, self_contained: bool = False):
    if fmt == "html":
        write_html(fig, path, self_contained)
    elif fmt in ("png", "svg"):
        write_image(fig, path, fmt)
    else:
        raise ExportError(f"unknown format {fmt!r}")
