#!/usr/bin/env bash
# collect_wire.sh — the wire layer's cost. A server answers 8 KiB random reads at full speed
# to 4 strata-load clients (8 threads each) on loopback: the engine from its ARC, then
# Debian's nfs-ganesha (FSAL_VFS) from the page cache. One load runs per server while the
# datasets are switched in windows of SECS seconds (bench/collectlib.sh toggled_load): none,
# wire.latency[client] + wire.ops[op] (TC program on lo), and on the engine the same two
# statistics from its USDT probe (nfs.latency[client] + nfs.ops[op]) as the peer.
# SETS=1 replaces the wire configuration by two: wire.latency[client] alone, and four wire
# datasets (the goal: within 1.4 % and 3 % of nfs-ganesha's peak throughput); QUIET=1 adds
# both again with the kernel's BPF statistics off in their windows (a host's default: the
# loss a user pays, without the two clock reads per program run that time it).
# BASE_COLLECT_BIN=other/strata-collect adds a second collector whose wire programs are
# switched on in windows of their own ("wire, base"): a before/after comparison in one run;
# BASE_COLLECT_ARGS adds options to it (BASE_COLLECT_ARGS="--wire-hook tc" with this build's
# collector compares the two hooks; BASE_COLLECT_ARGS="--wire-programs bounded" the two program
# trios, bpf_loop and bounded, on the same traffic).
# Reported per server (bench/losses.py): median throughput loss of the windows against
# their neighbours without datasets, with its 95 % interval, and from the kernel's BPF
# statistics the BPF run time per NFS operation, per program run, runs per operation, and
# that time as a share of the machine's CPU.
# SERVERS="engine ganesha" (default) picks the servers; CYCLES windows of each configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=2 CYCLES=1 SERVERS=ganesha; fi # smoke mode (bench/run.sh): the wire layer on ganesha
SECS=${SECS:-4}
CYCLES=${CYCLES:-12}
SERVERS=${SERVERS:-engine ganesha}
source bench/collectlib.sh
bpf_stats_on
base_pid=""
trap '[ -n "$base_pid" ] && kill "$base_pid" 2>/dev/null; collect_cleanup' EXIT

want=([none]='' [wire]='add a wire.latency client\nadd b wire.ops op\n' [usdt]='add a nfs.latency client\nadd b nfs.ops op\n')
progs=([none]='' [wire]='wire_.*' [usdt]='nfs_(ops|keys)')
configs=(wire)
if [ -n "${SETS:-}" ]; then
	want[one]='add a wire.latency client\n' progs[one]='wire_.*'
	want[four]='add a wire.latency client\nadd b wire.ops op\nadd c wire.size op\nadd d wire.latency op\n'
	progs[four]='wire_.*'
	configs=(one four)
	if [ -n "${QUIET:-}" ]; then
		want[one_quiet]=${want[one]} progs[one_quiet]=${progs[one]} stats[one_quiet]=0
		want[four_quiet]=${want[four]} progs[four_quiet]=${progs[four]} stats[four_quiet]=0
		configs+=(one_quiet four_quiet)
	fi
fi
if [ -n "${BASE_COLLECT_BIN:-}" ]; then # the same datasets on the second collector
	want[base]=${want[wire]} progs[base]=${progs[wire]} chan[base]=4
	configs+=(base)
fi

# server_windows SERVER CONFIG...: the server started, warmed up and measured
server_windows() {
	local server=$1
	shift
	if [ "$server" = engine ]; then engine_start; COLLECT_ENGINE=1; else ganesha_start; COLLECT_ENGINE=; fi
	load "$WARM_SECS" --setup > /dev/null # files written, server cache warm
	COLLECT_ARGS="--wire-iface lo --wire-port $nfs_port --wire-port $mount_port"
	collect_start 'add warm wire.ops op\nremove warm\n' # the wire program verified once, up front
	if [ -n "${BASE_COLLECT_BIN:-}" ]; then
		rm -f "$work/ctl2"; mkfifo "$work/ctl2"
		"$BASE_COLLECT_BIN" $COLLECT_ARGS ${BASE_COLLECT_ARGS:-} < "$work/ctl2" > "$work/base.out" 3>&- &
		base_pid=$!
		owner[base]=$base_pid
		exec 4> "$work/ctl2"
		printf 'add warm wire.ops op\nremove warm\n' >&4
	fi
	sleep "$((WARM_SECS + 1))" # verification takes seconds on a busy machine
	toggled_load "$SECS" "$CYCLES" none "$@"
	collect_stop
	if [ -n "$base_pid" ]; then exec 4>&-; wait "$base_pid"; base_pid=""; fi
	kill "$engine_pid"; wait "$engine_pid" 2> /dev/null || true
	engine_pid=""
}

for server in $SERVERS; do
	if [ "$server" = ganesha ] && ! command -v ganesha.nfsd > /dev/null; then
		echo "ganesha: skipped, ganesha.nfsd is not installed (apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind)"
		continue
	fi
	if [ "$server" = engine ]; then server_windows engine "${configs[@]}" usdt; else server_windows ganesha "${configs[@]}"; fi
	labels=("wire=wire.latency[client] + wire.ops[op] (TC)")
	if [ -n "${SETS:-}" ]; then labels=("one=wire.latency[client] alone (TC)" "four=four wire datasets (TC)"); fi
	if [ -n "${SETS:-}" ] && [ -n "${QUIET:-}" ]; then
		labels+=("one_quiet=wire.latency[client] alone, BPF statistics off" "four_quiet=four wire datasets, BPF statistics off")
	fi
	if [ -n "${BASE_COLLECT_BIN:-}" ]; then labels+=("base=the same, $BASE_COLLECT_BIN ${BASE_COLLECT_ARGS:-}"); fi
	if [ "$server" = engine ]; then labels+=("usdt=nfs.latency[client] + nfs.ops[op] (USDT peer)"); fi
	.venv/bin/python bench/losses.py "$work/load.json" "$work/windows" \
		"$server randread 8k on lo, 4 clients x 8 threads, windows of $SECS s" "${labels[@]}"
done
