#!/usr/bin/env bash
# collect_wire.sh — the wire layer's cost. A server answers 8 KiB random reads at full speed
# to 4 strata-load clients (8 threads each) on loopback: the engine from its ARC, then
# Debian's nfs-ganesha (FSAL_VFS) from the page cache. Loads run with no datasets and with
# wire.latency[client] + wire.ops[op] (TC program on lo); on the engine also with the same
# two statistics from its USDT probe (nfs.latency[client] + nfs.ops[op]) as the peer.
# BASE_COLLECT_BIN=other/strata-collect adds a second collector whose wire programs are
# switched on in rounds of their own ("wire, base"): a before/after comparison in one run.
# One collector (per binary) runs throughout; datasets are switched between short loads in
# an order rotated each round (bench/collectlib.sh paired_rounds). Reported per server:
# median throughput loss of paired rounds, and from the kernel's BPF statistics the BPF run
# time per NFS operation, per program run, and program runs per operation.
# SERVERS="engine ganesha" (default) picks the servers.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-4}
ROUNDS=${ROUNDS:-6}
SERVERS=${SERVERS:-engine ganesha}
source bench/collectlib.sh
bpf_stats_on
base_pid=""
trap '[ -n "$base_pid" ] && kill "$base_pid" 2>/dev/null; collect_cleanup' EXIT

want=([none]='' [wire]='add a wire.latency client\nadd b wire.ops op\n' [usdt]='add a nfs.latency client\nadd b nfs.ops op\n')
progs=([none]='' [wire]='wire_.*' [usdt]='nfs_ops')
configs=(wire)
if [ -n "${BASE_COLLECT_BIN:-}" ]; then # the same datasets on the second collector
	want[base]=${want[wire]} progs[base]=${progs[wire]} chan[base]=4
	configs+=(base)
fi

# server_rounds SERVER CONFIG...: the server started, warmed up and measured; its results in
# $work/results.SERVER
server_rounds() {
	local server=$1
	shift
	: > "$work/results"
	if [ "$server" = engine ]; then engine_start; COLLECT_ENGINE=1; else ganesha_start; COLLECT_ENGINE=; fi
	load 3 --setup > /dev/null # files written, server cache warm
	COLLECT_ARGS="--wire-iface lo --wire-port $nfs_port --wire-port $mount_port"
	collect_start 'add warm wire.ops op\nremove warm\n' # the wire program verified once, up front
	if [ -n "${BASE_COLLECT_BIN:-}" ]; then
		rm -f "$work/ctl2"; mkfifo "$work/ctl2"
		"$BASE_COLLECT_BIN" $COLLECT_ARGS < "$work/ctl2" > "$work/base.out" 3>&- &
		base_pid=$!
		owner[base]=$base_pid
		exec 4> "$work/ctl2"
		printf 'add warm wire.ops op\nremove warm\n' >&4
	fi
	sleep 4 # verification takes seconds on a busy machine
	paired_rounds "$ROUNDS" "$SECS" none "$@"
	collect_stop
	if [ -n "$base_pid" ]; then exec 4>&-; wait "$base_pid"; base_pid=""; fi
	kill "$engine_pid"; wait "$engine_pid" 2> /dev/null || true
	engine_pid=""
	mv "$work/results" "$work/results.$server"
}

for server in $SERVERS; do
	if [ "$server" = ganesha ] && ! command -v ganesha.nfsd > /dev/null; then
		echo "ganesha: skipped, ganesha.nfsd is not installed (apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind)"
		continue
	fi
	if [ "$server" = engine ]; then server_rounds engine "${configs[@]}" usdt; else server_rounds ganesha "${configs[@]}"; fi
	python3 - "$server" "$SECS" "$work/results.$server" "${BASE_COLLECT_BIN:-}" <<'PY'
import statistics, sys
server, secs, base_bin = sys.argv[1], int(sys.argv[2]), sys.argv[4]
by = {}
for r, cfg, ops, nsop, runs, run_ns in (l.split() for l in open(sys.argv[3])):
    by.setdefault(int(r), {})[cfg] = (int(ops), int(nsop), int(runs), int(run_ns))
rounds = sorted(by)
med = statistics.median
print(f"{server} randread 8k on lo, 4 clients x 8 threads, {len(rounds)} rounds of {secs} s; no datasets: "
      f"median {med(by[r]['none'][0] for r in rounds):.0f} ops/s, server CPU "
      f"{med(by[r]['none'][1] for r in rounds):.0f} ns/op")
labels = {"wire": "wire.latency[client] + wire.ops[op] (TC)",
          "base": f"the same, {base_bin}",
          "usdt": "nfs.latency[client] + nfs.ops[op] (USDT peer)"}
for cfg, label in labels.items():
    if cfg not in by[rounds[0]]:
        continue
    loss = med(100 * (1 - by[r][cfg][0] / by[r]["none"][0]) for r in rounds)
    cpu = med(by[r][cfg][1] - by[r]["none"][1] for r in rounds)
    total = sum(by[r][cfg][0] * secs for r in rounds)
    runs = sum(by[r][cfg][2] for r in rounds)
    run_ns = sum(by[r][cfg][3] for r in rounds)
    print(f"  {label:48s} throughput loss {loss:+5.1f} % (median of paired rounds); server CPU {cpu:+5.0f} ns/op; "
          f"BPF {run_ns / total:4.0f} ns/op, {run_ns / max(runs, 1):4.0f} ns/run, {runs / total:.2f} runs/op")
print("  rounds (ops/s):", {r: {c: v[0] for c, v in by[r].items()} for r in rounds})
PY
done
