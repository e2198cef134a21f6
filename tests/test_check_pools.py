"""The pool copies every process pair of a `strata check ab` duet starts on
(checks/pools.py): a copy holds the same bytes and keeps the pool's holes."""
import os

from strata.checks.pools import copy_sparse


def test_a_copy_has_the_same_bytes_and_keeps_the_holes(tmp_path):
    src, dst = tmp_path / "vdev0", tmp_path / "copy"
    size, chunk = 16 << 20, os.urandom(1 << 20)
    with open(src, "wb") as f:
        f.truncate(size)
        for offset in (0, 3 << 20, 9 << 20, size - (1 << 20)):   # data at both ends and between holes
            f.seek(offset)
            f.write(chunk)
    copy_sparse(str(src), str(dst))
    assert dst.stat().st_size == size
    assert dst.read_bytes() == src.read_bytes()
    assert dst.stat().st_blocks * 512 <= src.stat().st_blocks * 512 + (1 << 20)   # holes not filled in


def test_a_file_without_data_copies_to_a_hole_of_its_size(tmp_path):
    src, dst = tmp_path / "empty", tmp_path / "copy"
    with open(src, "wb") as f:
        f.truncate(8 << 20)
    copy_sparse(str(src), str(dst))
    assert dst.stat().st_size == 8 << 20 and dst.stat().st_blocks == 0
