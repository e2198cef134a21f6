#!/usr/bin/env bash
# collect_clients.sh — the collector's CPU at fleet scale: the engine served by CLIENTS
# (default 1000) strata-load clients, each in a network namespace of its own with its own
# address (strata-load --netns, PER_PROCESS a process, started one after another), 8 KiB random
# reads at RATE ops/s in all, while the collector keeps five datasets keyed by client
# (nfs.ops, nfs.latency, nfs.size and arc.accesses by client, nfs.latency by tier). The
# datasets are switched on and off in windows of SECS seconds, ROUNDS times, and the
# collector's CPU (schedstat, all its threads) is reported per window as a share of one
# CPU, with and without the datasets, with the keys its records held.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=2 ROUNDS=1 CLIENTS=20; fi # smoke mode (bench/run.sh)
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-1000}
RATE=${RATE:-5000}
source bench/collectlib.sh
# two neighbour entries a client (its veth's two ends): the default table (gc_thresh3 1024)
# holds 500 clients; raised for the run (never lowered), restored on exit
neigh=net.ipv4.neigh.default
neigh_was=$(sysctl -n $neigh.gc_thresh1 $neigh.gc_thresh2 $neigh.gc_thresh3 | tr '\n' ' ')
neigh_restore() { read -r a b c <<< "$neigh_was"; sysctl -qw $neigh.gc_thresh1="$a" $neigh.gc_thresh2="$b" $neigh.gc_thresh3="$c"; }
loads=()
stop_loads() {
	for l in "${loads[@]}"; do kill -INT "$l" 2> /dev/null || true; done
	for l in "${loads[@]}"; do wait "$l" 2> /dev/null || true; done
	loads=()
}
trap 'stop_loads; collect_cleanup; neigh_restore' EXIT
read -r a b c <<< "$neigh_was"
sysctl -qw $neigh.gc_thresh1=$((a > 4 * CLIENTS ? a : 4 * CLIENTS)) $neigh.gc_thresh2=$((b > 6 * CLIENTS ? b : 6 * CLIENTS)) \
	$neigh.gc_thresh3=$((c > 8 * CLIENTS ? c : 8 * CLIENTS))
ENGINE_EXPORT='/export:mode=1777,allow=127.0.0.0/8,allow=10.213.0.0/16' engine_start
load "$WARM_SECS" --setup > /dev/null # files written, ARC warm
collect_start ''

per=${PER_PROCESS:-100} # clients a strata-load makes at once (each runs ip(8) for its namespace)
procs=$(((CLIENTS + per - 1) / per))
# connected: the engine's established connections from 10.213.0.0/16
connected() { ss -Htn state established "( sport = :$nfs_port )" | grep -c ' 10\.213\.' || true; }
# one process at a time, each started once the clients before it are connected
for ((p = 0; p < procs; p++)); do
	n=$((CLIENTS - p * per < per ? CLIENTS - p * per : per))
	build/bin/strata-load --server 127.0.0.1 --nfsport "$nfs_port" --mountport "$mount_port" --export /export \
		--profile randread --io-size 8k --clients "$n" --threads 1 --netns \
		--rate "$((RATE * n / CLIENTS + 1))" --duration $((SECS * ROUNDS * 2 + 900)) > /dev/null 2> "$work/load$p.err" &
	loads+=($!)
	for _ in $(seq 240); do
		up=$(connected)
		[ "$up" -ge $((p * per + n)) ] && break
		kill -0 "$!" 2> /dev/null || break
		sleep 0.5
	done
	if ! kill -0 "$!" 2> /dev/null; then # the machine holds no more: measured with those connected
		echo "strata-load $((p + 1)) of $procs failed: $(tail -n 1 "$work/load$p.err")"
		unset 'loads[-1]'
		break
	fi
done
up=$(connected)
[ "$up" -gt 0 ] || { echo "no client connected" >&2; exit 1; }
echo "clients connected: $up of $CLIENTS (strata-load processes of $per clients started: ${#loads[@]})"

datasets='add a nfs.ops client\nadd b nfs.latency client\nadd c nfs.size client\nadd d arc.accesses client\nadd e nfs.latency tier\n'
: > "$work/windows"
for ((r = 0; r < ROUNDS; r++)); do
	for on in 0 1; do
		[ "$on" = 1 ] && printf "$datasets" >&3
		sleep 2 # attached, first interval passed
		c0=$(engine_cpu_ns "$collect_pid") e0=$(engine_cpu_ns)
		sleep "$SECS"
		c1=$(engine_cpu_ns "$collect_pid") e1=$(engine_cpu_ns)
		echo "$on $((c1 - c0)) $((e1 - e0))" >> "$work/windows"
		[ "$on" = 1 ] && printf 'remove a\nremove b\nremove c\nremove d\nremove e\n' >&3
	done
done
stop_loads
collect_stop
python3 - "$SECS" "$work/windows" "$work/collect.out" "$up" <<'PY'
import json, statistics, sys
secs, up = int(sys.argv[1]), int(sys.argv[4])
rows = [l.split() for l in open(sys.argv[2])]
keys = {}
for line in open(sys.argv[3]):
    rec = json.loads(line)
    if rec.get("type") == "data":
        keys[rec["id"]] = max(keys.get(rec["id"], 0), len(rec["data"]))
for on, label in (("0", "no datasets"), ("1", "5 datasets")):
    w = [r for r in rows if r[0] == on]
    coll = [100 * int(r[1]) / (secs * 1e9) for r in w]
    eng = [100 * int(r[2]) / (secs * 1e9) for r in w]
    print(f"{label:12s} collector {statistics.median(coll):.2f} % of a CPU (windows {', '.join(f'{c:.2f}' for c in coll)}); "
          f"engine {statistics.median(eng):.1f} %")
print(f"{up} clients connected; keys per dataset at most: {keys}")
PY
