#!/usr/bin/env bash
# collect_disk.sh — fio 4k random reads on a private loop device: IOPS with nothing
# attached, with strata's disk datasets, and with libbpf-tools biolatency (the peer), in
# alternating rounds of the same run. Prints IOPS and the loss against the baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
COLLECT=build/bin/strata-collect
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=1 ROUNDS=1; fi # smoke mode (bench/run.sh)
SECS=${SECS:-5}
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
dev=""
cleanup() {
	[ -n "$dev" ] && losetup -d "$dev" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
truncate -s 256M "$work/disk.img"
dev=$(losetup --find --show --direct-io=on "$work/disk.img")
name=$(basename "$dev")
command -v udevadm >/dev/null && udevadm settle --timeout=5 || true

iops() {
	fio --name=bench --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=psync \
		--runtime="$SECS" --time_based --size=256M --output-format=json |
		python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

with_strata() {
	local fifo="$work/ctl"
	rm -f "$fifo"; mkfifo "$fifo"
	"$COLLECT" < "$fifo" > "$work/collect.out" &
	local pid=$!
	exec 3> "$fifo"
	printf 'add ops disk.ops device\nadd lat disk.latency device\nadd size disk.size op\n' >&3
	sleep 1.5
	iops
	exec 3>&-
	wait "$pid"
}

with_biolatency() {
	biolatency -d "$name" > /dev/null &
	local pid=$!
	sleep 1.5
	iops
	kill -INT "$pid"; wait "$pid" || true
}

declare -a base strata peer
for ((r = 0; r < ROUNDS; r++)); do
	base+=("$(iops)")
	strata+=("$(with_strata)")
	peer+=("$(with_biolatency)")
done
python3 - "${base[*]}" "${strata[*]}" "${peer[*]}" <<'PY'
import statistics, sys
b, s, p = ([int(x) for x in a.split()] for a in sys.argv[1:4])
mb, ms, mp = (statistics.median(x) for x in (b, s, p))
print(f"fio randread 4k on a loop device, median of {len(b)} rounds (IOPS): "
      f"baseline {mb:.0f}  strata {ms:.0f}  biolatency {mp:.0f}")
print(f"loss vs baseline: strata {100 * (1 - ms / mb):.1f} %  biolatency {100 * (1 - mp / mb):.1f} %  "
      f"(strata/biolatency IOPS ratio {ms / mp:.3f})")
print("rounds:", {"baseline": b, "strata": s, "biolatency": p})
PY
