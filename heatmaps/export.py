"""Writing plotly figures: HTML (plotly.js once per folder, or inline on request), or
PNG/SVG through kaleido and Chromium.

Images are rendered by a forked child in its own session that keeps one kaleido
session (one Chromium) for the images of the process, so a process writing several
pays the browser's start once; it ends itself when idle. A Chromium that hangs (it
does, rarely, on a loaded host) is killed with the child's whole process tree at a
deadline and the export is tried once more with a new child, instead of blocking the
command.

Interrupts: the child's session is out of reach of the terminal's Ctrl-C, so the
parent ends it. The first SIGINT while an image is rendered raises KeyboardInterrupt and
ignores the next ones until the renderer's tree is killed (no grace period: a browser
asked to close can take seconds). Every temporary file of the renderer (kaleido's
folder, Chromium's profile) is under one folder of its own, TMPDIR for the child, which
the parent removes whenever it stops the renderer."""
import asyncio
import atexit
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from strata.posix.parentdeath import die_with_parent

CHROMIUM = "/usr/bin/chromium"
IMAGE_SIZE = (1400, 800)
EXPORT_DEADLINE_S = 60   # an image takes ~3 s here with the browser's start, ~0.3 s after
EXPORT_ATTEMPTS = 2
RENDERER_IDLE_S = 20     # an idle renderer (and its Chromium) ends itself after this


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


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _next_job(jobs):
    """The next (fig, path, fmt, size) from the parent; None to stop, or after RENDERER_IDLE_S."""
    try:
        return jobs.recv() if jobs.poll(RENDERER_IDLE_S) else None
    except (EOFError, OSError):
        return None


async def _serve_async(jobs):
    from kaleido import Kaleido   # logistro, imported with it, parses sys.argv: _serve cleared it
    async with Kaleido() as k:
        while (job := await asyncio.to_thread(_next_job, jobs)) is not None:
            fig, path, fmt, size = job
            try:
                await k.write_fig(fig, path=path, opts={"format": fmt, "width": size[0], "height": size[1],
                                                        "scale": 1 if fmt == "svg" else 2})
                jobs.send((None, True))
            except Exception as e:   # a figure kaleido cannot draw: said, and the session goes on
                jobs.send((_first_line(e), True))


def _serve(jobs, tmp):
    """Child: one kaleido session (one Chromium) rendering the parent's jobs in turn, each
    answered (None or why not, whether the session goes on); a browser that cannot start
    answers the next job and the child ends. It dies with the command (PR_SET_PDEATHSIG),
    even from outside its own session; its temporary files and its browser's go under tmp."""
    die_with_parent(signal.SIGKILL)
    os.setsid()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})   # held by the parent at fork
    os.environ["TMPDIR"] = tmp
    tempfile.tempdir = None
    sys.argv = sys.argv[:1]
    try:
        asyncio.run(_serve_async(jobs))
    except Exception as e:   # kaleido raises assorted errors when Chromium cannot start
        jobs.send((_first_line(e), False))
        os._exit(1)
    os._exit(0)


class _Renderer:
    """The forked child of _serve and its end of the pipe; the browser it runs is
    BROWSER_PATH's at its start."""

    def __init__(self):
        ctx = multiprocessing.get_context("fork")
        self.jobs, theirs = ctx.Pipe()
        self.browser = os.environ.get("BROWSER_PATH")
        self.tmp = tempfile.mkdtemp(prefix="strata-")   # short: Chromium puts a socket in it (108-byte paths)
        self.child = ctx.Process(target=_serve, args=(theirs, self.tmp))
        self.child.start()
        theirs.close()
        atexit.unregister(_stop_renderer)   # again, after multiprocessing's own exit hook, which
        atexit.register(_stop_renderer)     # would otherwise wait for the idle child first
        self.last_used = time.monotonic()
        self.stopped = False

    def usable(self) -> bool:
        """Alive, running the browser now asked for, and well inside its idle time."""
        return (not self.stopped and self.child.is_alive() and self.browser == os.environ.get("BROWSER_PATH")
                and time.monotonic() - self.last_used < RENDERER_IDLE_S / 2)

    def render(self, fig, path, fmt, size, deadline):
        """None, or why the image was not written. A renderer that did not answer in time,
        or whose browser failed, is stopped; one that died is found so by usable()."""
        try:
            self.jobs.send((fig.to_dict(), path, fmt, size))
        except OSError:   # it ended already (a browser that cannot start): why is in the pipe
            pass
        try:
            if not self.jobs.poll(deadline):
                self.stop()
                return f"no result within {deadline} s"
            why, going_on = self.jobs.recv()
            if not going_on:
                self.stop()
            return why
        except (EOFError, OSError):   # it died before saying why (killed, out of memory)
            self.child.join()
            return f"the renderer ended with status {self.child.exitcode}"
        except BaseException:         # Ctrl-C, SIGTERM: take the renderer and Chromium along
            self.stop()
            raise
        finally:
            self.last_used = time.monotonic()

    def stop(self):
        """Kills the child's tree and removes its temporary folder, with SIGINT and SIGTERM
        held until done (a second Ctrl-C cannot leave a browser or a folder behind)."""
        if self.stopped:
            return
        with _signals_held():
            self.stopped = True
            _kill_tree(self.child.pid)
            self.child.join()
            self.jobs.close()
            shutil.rmtree(self.tmp, ignore_errors=True)


@contextmanager
def _signals_held():
    held = {signal.SIGINT, signal.SIGTERM}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextmanager
def _one_interrupt():
    """In the main thread: the first SIGINT raises KeyboardInterrupt and the next ones are
    ignored until the block has been left (its cleanup done); the handler is then restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


_renderer: _Renderer | None = None


def _render(fig, path, fmt, size, deadline):
    """One image through the process's renderer, started (again) when there is none usable."""
    global _renderer
    if _renderer is None or not _renderer.usable():
        _stop_renderer()
        with _signals_held():   # a Ctrl-C lands after the new child is known, so it is stopped
            _renderer = _Renderer()
    return _renderer.render(fig, path, fmt, size, deadline)


def _stop_renderer():
    global _renderer
    if _renderer is not None:
        _renderer.stop()
        _renderer = None


def _attempt(fig, path, fmt, size, deadline):
    """One export into a temporary file beside path, renamed over path only when
    complete (a failed export leaves an existing file untouched); returns None on
    success, else why it failed."""
    target = Path(path)
    partial = target.with_name(f".{target.stem}.{os.getpid()}.partial.{fmt}")
    try:
        why = _render(fig, str(partial), fmt, size, deadline)
        if why is None and not partial.exists():
            why = "kaleido wrote no file"
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


def write_image(fig, path: str, fmt: str, size=None, deadline=EXPORT_DEADLINE_S):
    """PNG or SVG via kaleido 1.x, driving Debian's Chromium unless BROWSER_PATH says otherwise;
    size (width, height) in pixels, by default IMAGE_SIZE's width and the figure's own height
    where it sets one (a table's rows), else IMAGE_SIZE's."""
    size = size or (IMAGE_SIZE[0], fig.layout.height or IMAGE_SIZE[1])
    if "BROWSER_PATH" not in os.environ and Path(CHROMIUM).exists():
        os.environ["BROWSER_PATH"] = CHROMIUM
    with _one_interrupt():
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
