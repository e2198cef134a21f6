# tierlib.sh — sourced by bench/tiers_*.sh (no underscore: run.sh does not run it):
# a private engine with the given serve options on a fresh pool, strata-load
# against it, the engine's stats, and cleanup.
ENGINE=build/bin/strata-engine
LOAD=build/bin/strata-load
for b in "$ENGINE" "$LOAD"; do
	[[ -x $b ]] || { echo "$(basename "$0"): $b is not built (run make)" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/strata-bench-tiers.XXXXXX)
ENGINE_PID=
tier_cleanup() {
	engine_stop
	rm -rf "$WORK"
}
trap tier_cleanup EXIT

# engine_start VDEVS VDEV_SIZE SERVE_OPTIONS...: a fresh pool of VDEVS files
engine_start() {
	local n=$1 size=$2 vdevs=()
	shift 2
	rm -rf "$WORK/run" && mkdir -p "$WORK/run"
	for ((i = 0; i < n; i++)); do vdevs+=("$WORK/run/vdev$i"); done
	local pool
	pool=$(IFS=,; echo "${vdevs[*]}")
	"$ENGINE" mkpool "$pool" --size "$size" --recordsize 128k >/dev/null
	"$ENGINE" serve --pool "$pool" --export bench:no_root_squash,mode=1777 --listen 127.0.0.1:0 \
		--port-file "$WORK/run/port" --stats-socket "$WORK/run/stats.sock" --no-rpcbind "$@" \
		>/dev/null 2>"$WORK/run/engine.err" &
	ENGINE_PID=$!
	for _ in $(seq 200); do [[ -s $WORK/run/port ]] && break; sleep 0.1; done
	[[ -s $WORK/run/port ]] || { echo "engine did not start: $(cat "$WORK/run/engine.err")" >&2; exit 1; }
	NFSPORT=$(sed -E 's/.*nfs=[^ ]*:([0-9]+) .*/\1/' "$WORK/run/port")
	MOUNTPORT=$(sed -E 's/.*mount=[^ ]*:([0-9]+).*/\1/' "$WORK/run/port")
}

engine_stop() {
	if [[ -n $ENGINE_PID ]]; then
		kill "$ENGINE_PID" 2>/dev/null && wait "$ENGINE_PID" 2>/dev/null || true
		ENGINE_PID=
	fi
}

# load ARGS...: strata-load against the running engine, its JSON report on stdout
load() {
	"$LOAD" --server 127.0.0.1 --nfsport "$NFSPORT" --mountport "$MOUNTPORT" --export /bench --json - "$@"
}

stats() { "$ENGINE" stats --socket "$WORK/run/stats.sock"; }
