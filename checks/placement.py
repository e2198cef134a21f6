"""Where a duet's processes run (checks/duet.py): both servers share one CPU and the
loads run on another, and the two CPUs swap roles every block in an ABBA order
(block k: the first placement for k mod 4 in {0, 3}, the swapped one for 1 and 2),
so no process keeps a CPU for the whole check: a CPU that others load more than
the other falls on every role for half of the blocks, with a steady drift
cancelling over each four. Both servers always share their CPU, so neither side
ever has a better place than the other."""
import os
import random
from pathlib import Path


def pin(pid: int, cpu: int) -> int:
    """Every thread of process pid (and of its children, for a server run through sh) on one CPU;
    returns how many threads it pinned."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            pids += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass                                  # a kernel without the children file: the process alone
    pinned = 0
    for p in pids:
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                os.sched_setaffinity(int(task.name), {cpu})
                pinned += 1
            except (ProcessLookupError, PermissionError, OSError):
                pass                              # a thread that has just ended
    return pinned


def swapped(block: int) -> bool:
    """Whether block `block` runs on the swapped placement: ABBA, so over any four
    consecutive blocks each placement holds two, one early and one late."""
    return block % 4 in (1, 2)


class Rotation:
    """The two CPUs of a duet (drawn at random from the ones this process may use) and
    the processes placed on them; place(block) re-pins them when the block's
    placement differs from the current one. On one CPU it does nothing."""

    def __init__(self):
        cpus = sorted(os.sched_getaffinity(0))
        self.cpus = random.sample(cpus, 2) if len(cpus) >= 2 else None
        self.servers, self.loads = [], []
        self.pinned = {}                          # server pid -> threads pinned at the last swap
        self.current = None
        self.swaps = 0

    def placement(self, block: int) -> tuple:
        """(servers' CPU, loads' CPU) of a block."""
        a, b = self.cpus
        return (b, a) if swapped(block) else (a, b)

    def place(self, block: int):
        if self.cpus is None:
            return
        want = self.placement(block)
        if want == self.current:
            return
        server_cpu, load_cpu = want
        for pid in self.servers:
            self.pinned[pid] = pin(pid, server_cpu)
        for pid in self.loads:
            pin(pid, load_cpu)
        self.swaps += self.current is not None
        self.current = want

    def describe(self) -> dict:
        return {"servers": self.cpus[0], "load": self.cpus[1], "rotation": "ABBA per block"} if self.cpus \
            else {"servers": None, "load": None, "rotation": None}
