# collectlib.sh — sourced by bench/collect_*.sh (no underscore: run.sh does not run it):
# a private engine on an ephemeral port, the load generator, strata-collect through a fifo.
# ENGINE_BIN and COLLECT_BIN pick other engine and collector binaries (before/after runs).
work=$(mktemp -d)
engine_pid=""
collect_pid=""
collect_cleanup() {
	[ -n "$collect_pid" ] && kill "$collect_pid" 2>/dev/null || true
	[ -n "$engine_pid" ] && kill "$engine_pid" 2>/dev/null && wait "$engine_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap collect_cleanup EXIT

engine_start() {
	cp "${ENGINE_BIN:-build/bin/strata-engine}" "$work/strata-engine" # private inode: nobody else's probes land in ours
	"$work/strata-engine" mkpool "$work/pool" --size 512m > /dev/null
	"$work/strata-engine" serve --pool "$work/pool" --export /export:mode=1777 --listen 127.0.0.1:0 \
		--port-file "$work/ports" > "$work/engine.log" 2>&1 &
	engine_pid=$!
	for _ in $(seq 100); do [ -s "$work/ports" ] && break; sleep 0.1; done
	mount_port=$(sed -E 's/.*mount=[0-9.]+:([0-9]+).*/\1/' "$work/ports")
	nfs_port=$(sed -E 's/.*nfs=[0-9.]+:([0-9]+).*/\1/' "$work/ports")
}

# load SECONDS [--setup]: prints total ops/s
load() {
	build/bin/strata-load --server 127.0.0.1 --nfsport "$nfs_port" --mountport "$mount_port" --export /export \
		--profile randread --io-size 8k --clients 4 --threads 8 --duration "$1" ${2:-} --json - |
		python3 -c 'import json,sys; print(round(json.load(sys.stdin)["ops_per_sec"]["total"]))'
}

# engine_cpu_ns: CPU time of all the engine's threads so far (schedstat, ns), probes included
engine_cpu_ns() {
	cat /proc/"$engine_pid"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# load_cost SECONDS: prints "OPS_PER_SEC ENGINE_NS_PER_OP" for one load run
load_cost() {
	local c0 c1 ops
	c0=$(engine_cpu_ns)
	ops=$(load "$1")
	c1=$(engine_cpu_ns)
	echo "$ops $(( (c1 - c0) / (ops * $1) ))"
}

# collect_start COMMANDS: strata-collect attached to the engine (plus $COLLECT_ARGS), COMMANDS
# written to its stdin
collect_start() {
	rm -f "$work/ctl"; mkfifo "$work/ctl"
	"${COLLECT_BIN:-build/bin/strata-collect}" --engine-pid "$engine_pid" ${COLLECT_ARGS:-} < "$work/ctl" > "$work/collect.out" &
	collect_pid=$!
	exec 3> "$work/ctl"
	printf "$1" >&3
	sleep 1.5
}

collect_stop() {
	exec 3>&-
	wait "$collect_pid"
	collect_pid=""
	if grep -q '"type":"error"' "$work/collect.out"; then
		echo "strata-collect failed: $(grep -m1 '"type":"error"' "$work/collect.out")" >&2
		exit 1
	fi
}
