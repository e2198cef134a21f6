"""Guest runs that start with the test session and run beside it: a test module whose
tests need a guest defines start_guest(item), called for each of its selected tests when
the session is collected (tests/conftest.py), which submits the run here; the test then
waits for its result(). KERNEL_JOBS guests at once (default one: a guest is one emulated
CPU, so the rest of the suite keeps the other)."""
import os
from concurrent.futures import Future, ThreadPoolExecutor

_pool: ThreadPoolExecutor | None = None
_jobs: dict[str, Future] = {}


def submit(name: str, fn, *args) -> None:
    global _pool
    if name in _jobs:
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=int(os.environ.get("KERNEL_JOBS", "1")), thread_name_prefix="guest")
    _jobs[name] = _pool.submit(fn, *args)


def result(name: str, fn, *args):
    """The job's result (submitted now if it was not)."""
    submit(name, fn, *args)
    return _jobs[name].result()
