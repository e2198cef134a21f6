"""Stopping a child process of the lab: a signal, then SIGKILL when it does not exit."""
import os
import signal
import subprocess


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 10,
         group: bool = False) -> None:
    """Sends sig (to the process's whole group with group=True: a child started in a
    session of its own), then SIGKILL after `timeout` seconds; returns once it has exited."""
    if proc.poll() is not None:
        return

    def send(s: int) -> None:
        if group:
            os.killpg(proc.pid, s)
        else:
            proc.send_signal(s)

    try:
        send(sig)
        try:
            proc.wait(timeout=timeout)
            return
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
