"""The RPC fuzz corpus: recorded from a real libnfs session against a real
engine (engine/fuzz/record_rpc_corpus.py), it must hold a call of every NFSv3
procedure and every MOUNT procedure the engine serves; so must the
checked-in copy the fuzz targets start from."""
import struct
import subprocess
import sys
from pathlib import Path

from strata.lab.binaries import find_binary

REPO = Path(__file__).resolve().parent.parent
RECORDER = REPO / "engine" / "fuzz" / "record_rpc_corpus.py"
SESSION = REPO / "build" / "tests" / "strata-rpc-session"
NFS, MOUNT = 100003, 100005
EVERY = {(NFS, p) for p in range(22)} | {(MOUNT, p) for p in range(6)}


def calls(bodies):
    return {struct.unpack(">II", b[12:16] + b[20:24]) for b in bodies}


def session_records(path: Path) -> list:
    data, out = path.read_bytes(), []
    while data:
        n = struct.unpack(">I", data[:4])[0]
        assert n & 0x80000000, "every recorded record is one last fragment"
        n &= 0x7FFFFFFF
        out.append(data[4:4 + n])
        data = data[4 + n:]
    return out


def test_recording_a_libnfs_session_covers_every_procedure(tmp_path):
    assert SESSION.exists(), "build/tests/strata-rpc-session is not built: run `make`"
    out = tmp_path / "rpc"
    r = subprocess.run([sys.executable, str(RECORDER), "--engine", find_binary("strata-engine"),
                        "--session", str(SESSION), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    files = sorted((out / "corpus").iterdir())
    assert calls(f.read_bytes() for f in files) == EVERY
    # one file per distinct call, named after what it calls
    for f in files:
        prog, proc = calls([f.read_bytes()]).pop()
        assert f.name.startswith(f"{'nfs' if prog == NFS else 'mount'}-{proc}-")
    records = session_records(out / "session.rec")
    assert len(records) >= len(files) and calls(records) == EVERY


def test_checked_in_corpus_covers_every_procedure():
    corpus = REPO / "engine" / "fuzz" / "rpc" / "corpus"
    recorded = [f.read_bytes() for f in corpus.iterdir() if f.name.startswith(("nfs-", "mount-"))]
    assert calls(recorded) == EVERY
    assert calls(session_records(REPO / "engine" / "fuzz" / "rpc" / "session.rec")) == EVERY
