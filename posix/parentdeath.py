"""Children strata starts die with it: PR_SET_PDEATHSIG, so even a kill -9 of strata
leaves no collector daemon or Chromium renderer behind."""
import ctypes
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM):
    """In a child: receive sig when the thread that started it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
