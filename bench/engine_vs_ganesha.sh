#!/usr/bin/env bash
# bench/engine_vs_ganesha.sh — 8 KiB random reads over loopback, served from the
# ARC by strata-engine and from the page cache by nfs-ganesha (FSAL_VFS, with
# rpcbind), measured by the same client (strata-load) in the same run.
# BASE_ENGINE=other/strata-engine adds a second engine (e.g. an older commit's
# build): every round runs each server once, in an order that alternates between
# rounds, and the summary gives the medians and the per-round ratios of the
# engine to the base engine and of each engine to ganesha.
# Prints ops/s, p50/p99 and the server's CPU time per operation (the files are
# created before the measured load) per server and round, the ratios, and each
# engine's RSS against --arc-max.  ROUNDS: 3 with a base engine, else 1.
# Usage: [ENGINE=bin] [BASE_ENGINE=bin] [ROUNDS=N] [CLIENTS=4] [THREADS=8] \
#        bench/engine_vs_ganesha.sh [DURATION_S]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
if [ "${BENCH_SMOKE:-}" = 1 ]; then DURATION=1; fi # smoke mode (bench/run.sh)
ARC_MAX=${ARC_MAX:-256M}
ENGINE=${ENGINE:-build/bin/strata-engine}
BASE_ENGINE=${BASE_ENGINE:-}
ROUNDS=${ROUNDS:-$([[ -n $BASE_ENGINE ]] && echo 3 || echo 1)}
CLIENTS=${CLIENTS:-4} THREADS=${THREADS:-8}
LOAD=build/bin/strata-load
PY=.venv/bin/python
for b in "$ENGINE" "$LOAD" ${BASE_ENGINE:+"$BASE_ENGINE"}; do
	[[ -x $b ]] || { echo "engine_vs_ganesha: $b is not built (run make)" >&2; exit 1; }
done
command -v ganesha.nfsd >/dev/null || { echo "engine_vs_ganesha: ganesha.nfsd missing (apt-get install nfs-ganesha nfs-ganesha-vfs)" >&2; exit 1; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $CLIENTS =~ ^[1-9][0-9]*$ && $THREADS =~ ^[1-9][0-9]*$ ]] ||
	{ echo "engine_vs_ganesha: ROUNDS, CLIENTS and THREADS must be positive integers" >&2; exit 1; }

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
LOADARGS=(--profile randread --io-size 8k --files 4 --file-size 16m --clients "$CLIENTS" --threads "$THREADS"
	--duration "$DURATION" --json -)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system, all its threads, gone ones too

# Creates the files (not measured), then measures the load on server process $1: $2.json, $2.cpu.
measure() {
	local pid=$1 out=$2
	shift 2
	"$LOAD" "$@" "${LOADARGS[@]}" --setup-only >/dev/null
	local t0
	t0=$(cpu_ticks "$pid")
	"$LOAD" "$@" "${LOADARGS[@]}" >"$out.json"
	echo $(($(cpu_ticks "$pid") - t0)) >"$out.cpu"
}

# --- strata-engine: one run of binary $1 labelled $2 in round $3 ------------------
run_engine() {
	local bin=$1 label=$2 round=$3 dir=$WORK/$2 spec=bench:no_root_squash
	# Roots are 0755 since export modes exist; strata-load's clients create files as uids 10000+.
	"$bin" serve --help 2>&1 | grep -q 'mode=OCTAL' && spec+=,mode=1777
	mkdir -p "$dir"
	[[ -e $dir/vdev0 ]] || "$bin" mkpool "$dir/vdev0,$dir/vdev1" --size 1G >/dev/null
	rm -f "$dir/engine.port"
	"$bin" serve --pool "$dir/vdev0,$dir/vdev1" --export "$spec" --listen 127.0.0.1:0 \
		--arc-max "$ARC_MAX" --port-file "$dir/engine.port" --stats-socket "$dir/engine.sock" \
		--no-rpcbind >/dev/null 2>"$dir/engine.err" &
	ENGINE_PID=$!
	for _ in $(seq 100); do [[ -s $dir/engine.port ]] && break; sleep 0.1; done
	[[ -s $dir/engine.port ]] || { echo "engine_vs_ganesha: $bin did not start: $(cat "$dir/engine.err")" >&2; exit 1; }
	local port
	port=$(sed -E 's/.*nfs=[^ ]*:([0-9]+) .*/\1/' "$dir/engine.port")
	measure "$ENGINE_PID" "$WORK/$label.$round" --server 127.0.0.1 --nfsport "$port" --mountport "$port" --export /bench
	awk '/VmRSS/ {print $2}' "/proc/$ENGINE_PID/status" >"$WORK/$label.$round.rss"
	"$bin" stats --socket "$dir/engine.sock" >"$WORK/$label.$round.stats"
	kill "$ENGINE_PID"; wait "$ENGINE_PID" || true; ENGINE_PID=
}

# --- nfs-ganesha (FSAL_VFS), started once, measured in every round -----------------
start_ganesha() {
	if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
		rpcbind -f -w & RPCBIND_STARTED=$!
		sleep 0.5
	fi
	mkdir -p "$WORK/export"
	chmod 0777 "$WORK/export" # strata-load clients use uids 10000+
	GPORT=$(free_port) GMPORT=$(free_port)
	cat >"$WORK/ganesha.conf" <<-CONF
	NFS_CORE_PARAM { NFS_Port = $GPORT; MNT_Port = $GMPORT; Bind_Addr = 127.0.0.1; Protocols = 3; Enable_NLM = false;
		Enable_RQUOTA = false; Enable_UDP = false; }
	NFSV4 { Graceless = true; }
	EXPORT { Export_Id = 77; Path = $WORK/export; Pseudo = /bench; Protocols = 3; Transports = TCP;
		Access_Type = RW; Squash = No_Root_Squash; SecType = sys; FSAL { Name = VFS; } }
	LOG { Default_Log_Level = WARN; }
	CONF
	ganesha.nfsd -F -f "$WORK/ganesha.conf" -L "$WORK/ganesha.log" -p "$WORK/ganesha.pid" &
	GANESHA_PID=$!
	for _ in $(seq 100); do # both its NFS and its MOUNT port answer
		$PY -c "import socket; [socket.create_connection(('127.0.0.1', p), 0.2) for p in ($GPORT, $GMPORT)]" \
			2>/dev/null && return
		sleep 0.1
	done
	echo "engine_vs_ganesha: nfs-ganesha did not start: $(tail -n 1 "$WORK/ganesha.log" 2>/dev/null)" >&2
	exit 1
}
run_ganesha() {
	measure "$GANESHA_PID" "$WORK/ganesha.$1" --server 127.0.0.1 --nfsport "$GPORT" --mountport "$GMPORT" \
		--export "$WORK/export"
}

start_ganesha
servers=(engine ${BASE_ENGINE:+base} ganesha)
for ((r = 1; r <= ROUNDS; r++)); do
	order=("${servers[@]}")
	if ((r % 2 == 0)); then # alternate: every server goes first as often as last
		order=()
		for ((i = ${#servers[@]} - 1; i >= 0; i--)); do order+=("${servers[i]}"); done
	fi
	for s in "${order[@]}"; do
		case $s in
		engine) run_engine "$ENGINE" engine "$r" ;;
		base) run_engine "$BASE_ENGINE" base "$r" ;;
		ganesha) run_ganesha "$r" ;;
		esac
	done
done

$PY - "$WORK" "$ROUNDS" "$ARC_MAX" "$CLIENTS" "$THREADS" "$ENGINE" "$BASE_ENGINE" <<'PYEOF'
import json, os, statistics, sys
from pathlib import Path
work, rounds, arc_max, clients, threads, engine, base = sys.argv[1:8]
work, rounds = Path(work), int(rounds)
servers = ["engine"] + (["base"] if base else []) + ["ganesha"]
tick_us = 1e6 / os.sysconf("SC_CLK_TCK")

def figures(server, r):
    """ops/s, p50/p99 (us) of reads and the server's CPU us per operation in round r."""
    doc = json.loads((work / f"{server}.{r}.json").read_text())
    if doc.get("error") or doc.get("errors"):
        raise SystemExit(f"engine_vs_ganesha: strata-load reported errors: {doc.get('error')}")
    lat = doc["latency_ns"]["read"]
    cpu = int((work / f"{server}.{r}.cpu").read_text()) * tick_us / max(1, doc["ops_total"])
    return doc["ops_per_sec"]["read"], lat["p50"] / 1e3, lat["p99"] / 1e3, cpu

fig = {s: [figures(s, r) for r in range(1, rounds + 1)] for s in servers}
print(f"randread 8k, {clients} clients x {threads} threads, loopback, {rounds} round(s), order alternating")
print(f"  engine: {engine}" + (f"\n  base:   {base}" if base else ""))
row = "  {:<8} {:>7} {:>10.0f} ops/s  p50 {:8.1f}  p99 {:8.1f}  server CPU {:6.1f} us/op"
for s in servers:
    for r, f in enumerate(fig[s], 1):
        print(row.format(s, f"round {r}", *f))
print("medians:")
for s in servers:
    print(row.format(s, "", *(statistics.median(f[i] for f in fig[s]) for i in range(4))))

def ratios(a, b):
    """Per-round ratios a/b of ops/s, p50, p99 and CPU per op, and their medians."""
    per = [[fa[i] / fb[i] for i in range(4)] for fa, fb in zip(fig[a], fig[b])]
    m = [statistics.median(p[i] for p in per) for i in range(4)]
    by_round = " ".join(f"{p[0]:.2f}" for p in per)
    print(f"  {a}/{b}: ops/s {m[0]:.2f}  p50 {m[1]:.2f}  p99 {m[2]:.2f}  CPU/op {m[3]:.2f}"
          f"   (ops/s by round: {by_round})")

print("ratios (median of the rounds' ratios):")
if base:
    ratios("engine", "base")
ratios("engine", "ganesha")
if base:
    ratios("base", "ganesha")
for s in servers[:-1]:
    arc = json.loads((work / f"{s}.{rounds}.stats").read_text())["arc"]
    hit = arc["hits"] / max(1, arc["hits"] + arc["misses"])
    rss_kb = int((work / f"{s}.{rounds}.rss").read_text())
    print(f"  {s} RSS {rss_kb / 1024:.0f} MiB with --arc-max {arc_max} (ARC size {arc['size'] / 2**20:.0f} MiB,"
          f" hit ratio {hit:.3f})")
PYEOF
