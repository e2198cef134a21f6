"""Undo everything a lab run set up, whatever ends it.

    with Teardown() as undo:
        dev = loopdev.attach(path); undo.callback(loopdev.detach, dev)
        ...

SIGTERM and SIGHUP become KeyboardInterrupt (as SIGINT already is) so the
callbacks run on Ctrl-C, a closed terminal or `kill`; while they run, further
signals are ignored so a second Ctrl-C cannot leave half a cleanup behind.
Each callback's failure is reported on stderr and the others still run.
"""
import contextlib
import signal
import sys

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


class Teardown:
    def __init__(self):
        self._stack = contextlib.ExitStack()
        self._saved = {}

    def __enter__(self):
        for sig in SIGNALS:
            self._saved[sig] = signal.signal(sig, _interrupt)
        return self

    def callback(self, fn, *args, **kwargs):
        """Run fn(*args, **kwargs) at teardown (last registered runs first)."""
        def guarded():
            try:
                fn(*args, **kwargs)
            except Exception as e:   # one failed step must not stop the others
                print(f"strata: cleanup step {getattr(fn, '__name__', fn)} failed: {e}", file=sys.stderr)
        self._stack.callback(guarded)

    def close(self):
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        try:
            self._stack.close()
        finally:
            for sig, handler in self._saved.items():
                signal.signal(sig, handler)

    def __exit__(self, *exc):
        self.close()
        return False
