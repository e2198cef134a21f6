"""python -m vm (with tests/ on sys.path): fetch kernels, or run one command in a guest.

  python -m vm fetch 5.10 6.1-security 6.12     (kernel keys: tests/vm/kernels.py)
  python -m vm run --kernel 6.1-security [--timeout S] [--folder DIR] -- COMMAND...
  python -m vm table README.md      (the kernel table, from build/vm/matrix/)
"""
import argparse
import shlex
import sys
import tempfile
from pathlib import Path

from . import guest, kernels, table


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m vm")
    sub = p.add_subparsers(dest="verb", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("kernel", nargs="+")
    t = sub.add_parser("table")
    t.add_argument("readme", type=Path)
    r = sub.add_parser("run")
    r.add_argument("--kernel", required=True)
    r.add_argument("--timeout", type=float, default=600)
    r.add_argument("--folder", type=Path)
    r.add_argument("command", nargs="+")
    a = p.parse_args()
    try:
        if a.verb == "table":
            table.write(a.readme)
            return 0
        if a.verb == "fetch":
            for s in a.kernel:
                print(s, kernels.fetch(s), kernels.release(s))
            return 0
        kernels.VMDIR.joinpath("runs").mkdir(parents=True, exist_ok=True)
        folder = a.folder or Path(tempfile.mkdtemp(prefix="run-", dir=kernels.VMDIR / "runs"))
        folder.mkdir(parents=True, exist_ok=True)
        res = guest.run(a.kernel, shlex.join(a.command), folder, a.timeout)
    except (kernels.KernelError, guest.GuestError, OSError) as e:
        print(f"vm: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(res.output)
    print(f"vm: {res.release} rc={res.rc} boot={res.boot_seconds}s total={res.seconds:.1f}s folder={folder}",
          file=sys.stderr)
    return res.rc


if __name__ == "__main__":
    sys.exit(main())
