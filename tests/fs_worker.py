"""A process whose file I/O the fs-layer tests control: one command per stdin line, one
"ok" line when it is done. It does no other I/O on regular files while it waits.

  open NAME PATH              open PATH read-only as NAME
  pread NAME COUNT SIZE SPAN  COUNT preads of SIZE bytes at SIZE-aligned random offsets below SPAN
  sweep NAME SIZE SPAN        one pread of SIZE bytes at each SIZE-aligned offset below SPAN, shuffled
  random NAME                 posix_fadvise RANDOM (no readahead)
  close NAME
  comm TEXT                   rename this process (/proc/self/comm)
"""
import os
import random
import sys


def main():
    fds, rng = {}, random.Random(7)
    print("ready", os.getpid(), flush=True)
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "open":
            fds[args[0]] = os.open(args[1], os.O_RDONLY)
        elif cmd == "pread":
            fd, count, size, span = fds[args[0]], int(args[1]), int(args[2]), int(args[3])
            for _ in range(count):
                os.pread(fd, size, rng.randrange(span // size) * size)
        elif cmd == "sweep":
            fd, size, span = fds[args[0]], int(args[1]), int(args[2])
            offsets = list(range(0, span, size))
            rng.shuffle(offsets)
            for offset in offsets:
                os.pread(fd, size, offset)
        elif cmd == "random":
            os.posix_fadvise(fds[args[0]], 0, 0, os.POSIX_FADV_RANDOM)
        elif cmd == "close":
            os.close(fds.pop(args[0]))
        elif cmd == "comm":
            with open("/proc/self/comm", "w") as f:
                f.write(args[0])
        print("ok", flush=True)


if __name__ == "__main__":
    main()
