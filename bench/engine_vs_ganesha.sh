#!/usr/bin/env bash
# bench/engine_vs_ganesha.sh — 8 KiB random reads over loopback, served from the
# ARC by strata-engine and from the page cache by nfs-ganesha (FSAL_VFS, with
# rpcbind), measured by the same client (strata-load) in the same run.
# Prints ops/s and p50/p99 per server, the engine/ganesha ratios, and the
# engine's RSS against --arc-max.  Usage: bench/engine_vs_ganesha.sh [DURATION_S]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
ARC_MAX=${ARC_MAX:-256M}
ENGINE=build/bin/strata-engine
LOAD=build/bin/strata-load
PY=.venv/bin/python
for b in "$ENGINE" "$LOAD"; do
	[[ -x $b ]] || { echo "engine_vs_ganesha: $b is not built (run make)" >&2; exit 1; }
done
command -v ganesha.nfsd >/dev/null || { echo "engine_vs_ganesha: ganesha.nfsd missing (apt-get install nfs-ganesha nfs-ganesha-vfs)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/strata-bench-engine.XXXXXX)
ENGINE_PID= GANESHA_PID= RPCBIND_STARTED=
cleanup() {
	[[ -n $ENGINE_PID ]] && kill "$ENGINE_PID" 2>/dev/null && wait "$ENGINE_PID" 2>/dev/null || true
	[[ -n $GANESHA_PID ]] && kill "$GANESHA_PID" 2>/dev/null && wait "$GANESHA_PID" 2>/dev/null || true
	[[ -n $RPCBIND_STARTED ]] && kill "$RPCBIND_STARTED" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
LOADARGS=(--profile randread --io-size 8k --files 4 --file-size 16m --clients 4 --threads 8
	--duration "$DURATION" --setup --json -)

# --- strata-engine -------------------------------------------------------------
"$ENGINE" mkpool "$WORK/vdev0,$WORK/vdev1" --size 1G >/dev/null
"$ENGINE" serve --pool "$WORK/vdev0,$WORK/vdev1" --export bench:no_root_squash,mode=1777 --listen 127.0.0.1:0 \
	--arc-max "$ARC_MAX" --port-file "$WORK/engine.port" --stats-socket "$WORK/engine.sock" \
	--no-rpcbind >/dev/null 2>"$WORK/engine.err" &
ENGINE_PID=$!
for _ in $(seq 100); do [[ -s $WORK/engine.port ]] && break; sleep 0.1; done
EPORT=$(sed -E 's/.*nfs=[^ ]*:([0-9]+) .*/\1/' "$WORK/engine.port")
"$LOAD" --server 127.0.0.1 --nfsport "$EPORT" --mountport "$EPORT" --export /bench "${LOADARGS[@]}" \
	>"$WORK/engine.json"
RSS_KB=$(awk '/VmRSS/ {print $2}' "/proc/$ENGINE_PID/status")
"$ENGINE" stats --socket "$WORK/engine.sock" >"$WORK/engine-stats.json"
kill "$ENGINE_PID"; wait "$ENGINE_PID" || true; ENGINE_PID=

# --- nfs-ganesha (FSAL_VFS) ---------------------------------------------------------
if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	rpcbind -f -w & RPCBIND_STARTED=$!
	sleep 0.5
fi
mkdir -p "$WORK/export"
chmod 0777 "$WORK/export" # strata-load clients use uids 10000+
GPORT=$(free_port) GMPORT=$(free_port)
cat >"$WORK/ganesha.conf" <<CONF
NFS_CORE_PARAM { NFS_Port = $GPORT; MNT_Port = $GMPORT; Protocols = 3; Enable_NLM = false; Enable_RQUOTA = false; }
NFSV4 { Graceless = true; }
EXPORT { Export_Id = 77; Path = $WORK/export; Pseudo = /bench; Protocols = 3; Transports = TCP;
	Access_Type = RW; Squash = No_Root_Squash; SecType = sys; FSAL { Name = VFS; } }
LOG { Default_Log_Level = WARN; }
CONF
ganesha.nfsd -F -f "$WORK/ganesha.conf" -L "$WORK/ganesha.log" -p "$WORK/ganesha.pid" &
GANESHA_PID=$!
for _ in $(seq 100); do
	$PY -c "import socket; socket.create_connection(('127.0.0.1', $GPORT), 0.2)" 2>/dev/null && break
	sleep 0.1
done
"$LOAD" --server 127.0.0.1 --nfsport "$GPORT" --mountport "$GMPORT" --export "$WORK/export" "${LOADARGS[@]}" \
	>"$WORK/ganesha.json"

$PY - "$WORK/engine.json" "$WORK/ganesha.json" "$WORK/engine-stats.json" "$RSS_KB" "$ARC_MAX" <<'PYEOF'
import json, sys
eng, gan, st = (json.load(open(p)) for p in sys.argv[1:4])
rss_kb, arc_max = int(sys.argv[4]), sys.argv[5]

def read_figures(doc):
    """ops/s and p50/p99 (us) of reads from strata-load's JSON."""
    if doc.get("error") or doc.get("errors"):
        raise SystemExit(f"engine_vs_ganesha: strata-load reported errors: {doc.get('error')}")
    lat = doc["latency_ns"]["read"]
    return doc["ops_per_sec"]["read"], lat["p50"] / 1e3, lat["p99"] / 1e3

eo, e50, e99 = read_figures(eng)
go, g50, g99 = read_figures(gan)
arc = st["arc"]
hit = arc["hits"] / max(1, arc["hits"] + arc["misses"])
print(f"randread 8k, 4 clients x 8 threads, loopback")
print(f"  strata-engine: {eo:10.0f} ops/s  p50 {e50:8.1f}  p99 {e99:8.1f}  (ARC hit ratio {hit:.3f})")
print(f"  nfs-ganesha:   {go:10.0f} ops/s  p50 {g50:8.1f}  p99 {g99:8.1f}")
print(f"  ratio engine/ganesha: ops/s {eo / go:.2f}  p50 {e50 / g50:.2f}  p99 {e99 / g99:.2f}")
print(f"  engine RSS {rss_kb / 1024:.0f} MiB with --arc-max {arc_max} (ARC size {arc['size'] / 2**20:.0f} MiB)")
PYEOF
