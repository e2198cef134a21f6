#!/usr/bin/env python3
"""record_rpc_corpus.py — records the RPC fuzz corpus from a real libnfs session.

Starts a real strata-engine on a fresh pool (export `data:no_root_squash`, as
the harness has), puts a TCP proxy in front of its NFS and MOUNT ports, runs
the libnfs client session (strata-rpc-session: every NFSv3 and MOUNT
procedure) through it, and writes what the client sent:

  OUT/session.rec      every call record in order, each behind its record mark
                       (the harness replays it at start to build the same tree,
                       so the object ids in recorded handles exist)
  OUT/corpus/NAME      one call record body per file (no record mark), named
                       PROG-PROC-HASH, duplicates dropped

Run by hand (then minimise with `make fuzz-merge`):
  .venv/bin/python engine/fuzz/record_rpc_corpus.py --engine build/bin/strata-engine \\
      --session build/tests/strata-rpc-session --out engine/fuzz/rpc
"""
import argparse
import hashlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

NAMES = {100003: "nfs", 100005: "mount"}


class Recorder:
    """Collects whole call records (fragments joined) from client byte streams."""

    def __init__(self):
        self.lock = threading.Lock()
        self.records = []

    def stream(self):
        buf, frags = bytearray(), []
        while True:
            data = yield
            buf += data
            while len(buf) >= 4:
                mark = struct.unpack(">I", buf[:4])[0]
                n = mark & 0x7FFFFFFF
                if len(buf) < 4 + n:
                    break
                frags.append(bytes(buf[4:4 + n]))
                del buf[:4 + n]
                if mark & 0x80000000:
                    with self.lock:
                        self.records.append(b"".join(frags))
                    frags = []


def pump(src, dst, feed=None):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if feed:
                feed.send(data)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def proxy(listener, target_port, rec):
    """Accepts clients forever; each gets its own connection to the engine."""
    while True:
        try:
            c, _ = listener.accept()
        except OSError:
            return
        s = socket.create_connection(("127.0.0.1", target_port))
        feed = rec.stream()
        next(feed)
        threading.Thread(target=pump, args=(c, s, feed), daemon=True).start()
        threading.Thread(target=pump, args=(s, c), daemon=True).start()


def listen():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", required=True)
    ap.add_argument("--session", required=True, help="the strata-rpc-session binary")
    ap.add_argument("--out", required=True, type=Path)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vdev = os.path.join(tmp, "vdev0")
        # Same geometry as the harness's scratch pool (fuzz/rpc.c).
        subprocess.run([a.engine, "mkpool", vdev, "--size", "64M", "--recordsize", "16k"],
                       check=True, capture_output=True)
        eng = subprocess.Popen([a.engine, "serve", "--pool", vdev, "--listen", "127.0.0.1:0",
                                "--no-rpcbind", "--export", "data:no_root_squash"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = eng.stdout.readline()
            if not line.startswith("listening"):
                sys.exit(f"record_rpc_corpus: engine did not start: {line!r}")
            f = dict(kv.split("=", 1) for kv in line.split()[1:])
            ports = {k: int(f[k].rsplit(":", 1)[1]) for k in ("nfs", "mount")}
            rec = Recorder()
            lst = {k: listen() for k in ports}
            for k in ports:
                threading.Thread(target=proxy, args=(lst[k], ports[k], rec), daemon=True).start()
            r = subprocess.run([a.session, "127.0.0.1", str(lst["nfs"].getsockname()[1]),
                                str(lst["mount"].getsockname()[1]), "/data"], timeout=60)
            if r.returncode:
                sys.exit("record_rpc_corpus: the client session failed")
        finally:
            eng.terminate()
            eng.wait(timeout=30)
    corpus = a.out / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    with open(a.out / "session.rec", "wb") as s:
        for body in rec.records:
            s.write(struct.pack(">I", 0x80000000 | len(body)) + body)
    seen = set()
    for body in rec.records:
        prog, proc = struct.unpack(">I", body[12:16])[0], struct.unpack(">I", body[20:24])[0]
        digest = hashlib.sha1(body[4:]).hexdigest()[:12]   # the xid aside
        if digest in seen:
            continue
        seen.add(digest)
        (corpus / f"{NAMES.get(prog, prog)}-{proc}-{digest}").write_bytes(body)
    print(f"record_rpc_corpus: {len(rec.records)} records, {len(seen)} distinct, in {a.out}")


if __name__ == "__main__":
    main()
