#!/usr/bin/env bash
# collect_fs.sh — what the file-system layer costs, the process chosen and the rest.
#
# 1. fio (psync, 4 KiB random reads of a file in the page cache, one job thread) in
#    paired rounds: without strata, with fs.latency[op] following fio's pid ("chosen"),
#    and following another process ("not chosen": what every other process pays).
#    Throughput per mode (median) and the loss against the paired rounds without strata;
#    the BPF programs' own time from the kernel's BPF statistics (bpf_stats_enabled):
#    per fio read when chosen, per program run when not. The raw syscall tracepoints run
#    the programs for every syscall on the machine, so the chosen figure subtracts the
#    other processes' runs at the not-chosen rate.
# 2. build/bench/strata-syscall-cost: the whole cost per syscall (tracepoint entry, BPF,
#    return) of getppid (ignored) and pread64 (followed), fastest of many batches, for:
#    no hooks; the two hook flavours with trivial programs (bench/syscall_hooks.bpf.c:
#    raw_syscalls tp_btf vs per-syscall syscalls:sys_enter_pread64 events); strata
#    chosen and not chosen. BPF statistics are off for this part (they time every run).
set -euo pipefail
cd "$(dirname "$0")/.."
FILE_SIZE=256M COST_ROUNDS=400 # the file fio and strata-syscall-cost read; strata-syscall-cost's batches
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=1 ROUNDS=1 FILE_SIZE=16M COST_ROUNDS=20; fi # smoke mode (bench/run.sh)
SECS=${SECS:-3}
ROUNDS=${ROUNDS:-4}
source bench/collectlib.sh
bpf_stats_on
COLLECT_ENGINE= # no engine: the collector follows one process

file="$work/data"
head -c "$FILE_SIZE" /dev/urandom > "$file"
cat "$file" > /dev/null  # in the page cache

# fs_stats: "RUN_TIME_NS RUN_CNT" summed over the collector's fs programs
fs_stats() {
	local n t
	read -r n t < <(bpf_runs 'fs_enter|fs_exit')
	echo "$t $n"
}

# strata_on PID: strata-collect following PID with fs.latency[op], attached on return
strata_on() {
	COLLECT_ARGS="--fs-pid $1" collect_start 'add l fs.latency op\n'
}

strata_off() {
	collect_stop
}

# fio_round MODE (off | chosen | other): prints "IOPS READS BPF_NS BPF_RUNS READS_PER_CPU_SECOND"
fio_round() {
	local mode=$1 fio_pid sleeper="" out="$work/fio.json" s0="0 0" s1="0 0"
	fio --name=bench --filename="$file" --rw=randread --bs=4k --ioengine=psync --thread --invalidate=0 \
		--startdelay=2 --runtime="$SECS" --time_based --size="$FILE_SIZE" --output-format=json > "$out" &
	fio_pid=$!
	if [ "$mode" = other ]; then sleep 600 & sleeper=$!; fi
	if [ "$mode" != off ]; then
		strata_on "${sleeper:-$fio_pid}"
		s0=$(fs_stats)
	fi
	wait "$fio_pid"
	if [ "$mode" != off ]; then
		s1=$(fs_stats)
		strata_off
		if [ "$mode" = chosen ] && ! grep -q '"pread64"' "$work/collect.out"; then
			echo "collect_fs: fio's reads were not seen" >&2
			exit 1
		fi
	fi
	[ -n "$sleeper" ] && { kill "$sleeper"; wait "$sleeper" 2>/dev/null || true; }
	python3 -c '
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
read, cpu = job["read"], (job["usr_cpu"] + job["sys_cpu"]) / 100
ns0, n0, ns1, n1 = map(int, sys.argv[2:6])
print(round(read["iops"]), read["total_ios"], ns1 - ns0, n1 - n0, round(read["iops"] / cpu))' "$out" $s0 $s1
}

# cost_round MODE (off | raw | per | chosen | other): prints "GETPPID_NS PREAD_NS"
cost_round() {
	local mode=$1 bench_pid sleeper="" hooks_pid=""
	rm -f "$work/go"; mkfifo "$work/go"
	WAIT=1 ROUNDS="$COST_ROUNDS" build/bench/strata-syscall-cost "$file" < "$work/go" > "$work/cost" &
	bench_pid=$!
	exec 4> "$work/go"
	case $mode in
	raw | per)
		rm -f "$work/hooks"; mkfifo "$work/hooks"
		build/bench/strata-syscall-hooks "$mode" < "$work/hooks" > "$work/hooks.out" &
		hooks_pid=$!
		exec 5> "$work/hooks"
		sleep 1 ;;
	chosen) strata_on "$bench_pid" ;;
	other) sleep 600 & sleeper=$!; strata_on "$sleeper" ;;
	esac
	echo >&4
	exec 4>&-
	wait "$bench_pid"
	case $mode in
	raw | per) exec 5>&-; wait "$hooks_pid" ;;
	chosen | other) strata_off ;;
	esac
	[ -n "$sleeper" ] && { kill "$sleeper"; wait "$sleeper" 2>/dev/null || true; }
	cat "$work/cost"
}

declare -A fio cost
for _ in $(seq "$ROUNDS"); do
	for mode in off chosen other; do fio[$mode]+="$(fio_round "$mode");"; done
done
sysctl -qw kernel.bpf_stats_enabled=0
for _ in $(seq "$ROUNDS"); do
	for mode in off raw per chosen other; do cost[$mode]+="$(cost_round "$mode");"; done
done

python3 - "$ROUNDS" "$SECS" "${fio[off]}" "${fio[chosen]}" "${fio[other]}" \
	"${cost[off]}" "${cost[raw]}" "${cost[per]}" "${cost[chosen]}" "${cost[other]}" <<'PY'
import statistics, sys

rounds, secs = sys.argv[1], float(sys.argv[2])
rows = lambda arg: [[int(x) for x in r.split()] for r in arg.split(";") if r.strip()]
off, chosen, other = (rows(a) for a in sys.argv[3:6])
cost = dict(zip(("off", "raw", "per", "chosen", "other"), (rows(a) for a in sys.argv[6:11])))
med = statistics.median

def loss(on, i=0):
    return med([1 - b[i] / a[i] for a, b in zip(off, on)]) * 100

early = med([r[2] / r[3] for r in other])      # ns per run of a process not chosen
per_read = med([(ns - (runs - 2 * reads) * early) / reads for _, reads, ns, runs, _ in chosen])
print(f"fio psync randread 4k from the page cache, {rounds} paired rounds of {secs:.0f}s, fs.latency[op]:")
print("  (loss per second of fio's own CPU time as well: other tenants' load moves the wall-clock one)")
print(f"  without strata:        {med([r[0] for r in off]):>8.0f} reads/s  {med([r[4] for r in off]):>8.0f} per CPU-s")
print(f"  fio chosen (--fs-pid): {med([r[0] for r in chosen]):>8.0f} reads/s  {med([r[4] for r in chosen]):>8.0f} "
      f"per CPU-s  loss {loss(chosen):5.1f}% / {loss(chosen, 4):5.1f}%  BPF {per_read:.0f} ns per read (entry + exit)")
print(f"  fio not chosen:        {med([r[0] for r in other]):>8.0f} reads/s  {med([r[4] for r in other]):>8.0f} "
      f"per CPU-s  loss {loss(other):5.1f}% / {loss(other, 4):5.1f}%  "
      f"BPF {early:.0f} ns per program run "
      f"({med([r[3] for r in other]) / secs / 2:.0f} syscalls/s on the machine)")
print(f"whole cost per syscall, strata-syscall-cost (fastest batch; median of {rounds} rounds):")
base = [med([r[i] for r in cost["off"]]) for i in (0, 1)]
labels = {"off": "no hooks", "raw": "raw_syscalls hooks, trivial programs",
          "per": "syscalls:*_pread64 hooks, trivial programs", "chosen": "strata, process chosen",
          "other": "strata, process not chosen"}
for mode, label in labels.items():
    g, p = (med([r[i] for r in cost[mode]]) for i in (0, 1))
    extra = "" if mode == "off" else f"   (+{g - base[0]:.0f}, +{p - base[1]:.0f})"
    print(f"  {label:<44} getppid {g:>5.0f} ns  pread64 4k {p:>5.0f} ns{extra}")
PY
