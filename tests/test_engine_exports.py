"""Several exports on a fresh pool all work at once (each dataset keeps its
own root; no export's handles go stale when another is created), through
real libnfs clients, and again after a restart."""
import subprocess

import pytest

from engine_util import Engine, mkpool


def nfs(*args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def ls(eng, export):
    return sorted(line.split()[-1] for line in nfs("nfs-ls", eng.url("", export=export)).splitlines()
                  if line.strip())


@pytest.mark.parametrize("n", [2, 3])
def test_every_export_of_a_fresh_pool_is_listable_and_readable(tmp_path, n):
    names = [f"exp{i}" for i in range(n)]
    eng = Engine(tmp_path, mkpool(tmp_path, nvdevs=1, size="64M"),
                 exports=[f"{name}:mode=1777" for name in names]).start()
    try:
        for round_ in ("fresh", "restarted"):
            for name in names:
                src = tmp_path / f"{name}-{round_}"
                src.write_bytes(f"{name} {round_}\n".encode() * 1000)
                nfs("nfs-cp", str(src), eng.url(f"{round_}.txt", export=name))
            for name in names:
                assert ls(eng, name) == ["fresh.txt"] + (["restarted.txt"] if round_ == "restarted" else [])
                for written in ("fresh", round_):
                    got = tmp_path / "got"
                    nfs("nfs-cp", eng.url(f"{written}.txt", export=name), str(got))
                    assert got.read_bytes() == (tmp_path / f"{name}-{written}").read_bytes()
                    got.unlink()
            if round_ == "fresh":
                assert eng.stop() == 0
                eng.start()
    finally:
        if eng.proc:
            assert eng.stop() == 0
