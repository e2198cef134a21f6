"""The engine as real libnfs clients use it: byte-exact copies in and out,
concurrent clients, and data surviving a clean restart."""
import os
import subprocess
import threading

import pytest

from engine_util import Engine, engine, nfs_get, nfs_put  # noqa: F401  (fixture)

SIZES = [0, 1, 4095, 128 * 1024 + 1, 64 * 1024 * 1024]


@pytest.mark.parametrize("size", SIZES, ids=[f"{s}B" for s in SIZES])
def test_copy_in_and_out_is_byte_exact(engine, tmp_path, size):
    src = tmp_path / "src"
    src.write_bytes(os.urandom(size))
    nfs_put(engine, src, f"file{size}")
    back = tmp_path / "back"
    nfs_get(engine, f"file{size}", back)
    assert back.read_bytes() == src.read_bytes()
    cat = subprocess.run(["nfs-cat", engine.url(f"file{size}")], capture_output=True, timeout=120, check=True)
    assert cat.stdout == src.read_bytes()
    listing = subprocess.run(["nfs-ls", engine.url("")], capture_output=True, timeout=30, check=True).stdout.decode()
    line = next(l for l in listing.splitlines() if l.endswith(f" file{size}"))
    assert f" {size} " in line


def test_eight_concurrent_clients_mixed_reads_and_writes(engine, tmp_path):
    errors = []

    def client(n):
        try:
            for rnd in range(3):
                data = os.urandom(100_000 + 37_000 * n + rnd * 4096)
                src = tmp_path / f"c{n}-src"
                src.write_bytes(data)
                # libnfs' creat() is a GUARDED CREATE: every round writes a new name.
                nfs_put(engine, src, f"client{n}-{rnd}")
                got = subprocess.run(["nfs-cat", engine.url(f"client{n}-{rnd}")],
                                     capture_output=True, check=True, timeout=60).stdout
                if got != data:
                    errors.append(f"client {n} round {rnd}: mismatch")
                other = (n + 1) % 8
                subprocess.run(["nfs-cat", engine.url(f"client{other}-0")], capture_output=True, timeout=60)
            (tmp_path / f"c{n}-final").write_bytes(data)
        except Exception as exc:  # collected and asserted below
            errors.append(f"client {n}: {exc!r}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for n in range(8):
        got = subprocess.run(["nfs-cat", engine.url(f"client{n}-2")], capture_output=True, check=True, timeout=60).stdout
        assert got == (tmp_path / f"c{n}-final").read_bytes()


def test_data_survives_a_clean_restart(engine, tmp_path):
    files = {f"keep{i}": os.urandom(s) for i, s in enumerate([0, 1, 5000, 300_000, 3 * 1024 * 1024])}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        nfs_put(engine, tmp_path / name, name)
    assert engine.stop() == 0
    engine.start()
    for name, data in files.items():
        got = subprocess.run(["nfs-cat", engine.url(name)], capture_output=True, check=True, timeout=60).stdout
        assert got == data, name
    listing = subprocess.run(["nfs-ls", engine.url("")], capture_output=True, check=True, timeout=30).stdout.decode()
    for name in files:
        assert name in listing
