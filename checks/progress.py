"""Progress of a long check (`strata check ab`): blocks or rounds done, time left
and the running estimate of B/A with its interval. On a terminal a rich
progress bar on stderr; elsewhere (a CI log) one plain line per block or round.
Time left is the wall time per unit so far, set-up between units included, times
the units left (before the first unit: the units' own length).
"""
import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn


def estimate_text(estimate) -> str:
    """(metric, effect, low, high) -> 'p50 B/A +1.2% [+0.4%, +2.0%]'; '' for None."""
    if estimate is None:
        return ""
    metric, effect, low, high = estimate
    return f"{metric} B/A {effect:+.1%} [{low:+.1%}, {high:+.1%}]"


class CheckProgress:
    """with CheckProgress("blocks", 60, seconds_per=1) as p: p.update(done, estimate)."""

    def __init__(self, unit: str, total: int, seconds_per: float, prefix: str = "strata check ab"):
        self.unit, self.total, self.seconds_per, self.prefix = unit, total, seconds_per, prefix
        self.done = 0
        self.bar = None
        self.task = None
        self.tty = sys.stderr.isatty()

    def __enter__(self):
        if self.tty:
            self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn(self.unit), TextColumn("{task.fields[left]}"),
                                TextColumn("{task.fields[estimate]}"),
                                console=Console(stderr=True), transient=False)
            self.bar.__enter__()
            self.task = self.bar.add_task(self.prefix, total=self.total, estimate="", left=self._left(0))
        self.began = time.monotonic()
        return self

    def _left(self, done: int) -> str:
        per = (time.monotonic() - self.began) / done if done else self.seconds_per
        return f"{per * (self.total - done):.0f}s left"

    def update(self, done: int, estimate=None):
        """done: units finished so far; estimate: (metric, effect, low, high) or None."""
        done = min(done, self.total)
        if self.bar is not None:
            self.bar.update(self.task, completed=done, estimate=estimate_text(estimate), left=self._left(done))
        else:
            for k in range(self.done + 1, done + 1):
                tail = f", {estimate_text(estimate)}" if estimate and k == done else ""
                print(f"{self.prefix}: {self.unit[:-1] if self.unit.endswith('s') else self.unit} "
                      f"{k}/{self.total}, {self._left(k)}{tail}", file=sys.stderr, flush=True)
        self.done = max(self.done, done)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False
