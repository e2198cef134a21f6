#!/usr/bin/env bash
# collect_fs.sh — what the file-system layer costs, the process chosen and the rest.
#
# 1. fio (psync, 4 KiB random reads of a file in the page cache, one job thread) in
#    paired rounds: without strata, with fs.latency[op] following fio's pid ("chosen"),
#    and following another process, a reader of the same file at 5000 reads/s ("not
#    chosen": what every other process pays beside the followed one). Throughput per mode
#    (median) and the loss against the paired rounds without strata; the BPF programs'
#    own time from the kernel's BPF statistics (bpf_stats_enabled): per fio read when
#    chosen, per program run when not. The programs also run for the other processes'
#    followed syscalls: the chosen figure subtracts those runs at the not-chosen rate.
# 2. build/bench/strata-syscall-cost: the whole cost per syscall (hook, BPF, return) of
#    getppid (not followed) and pread64 (followed), fastest of 400 batches of 2000 each
#    (1.6 M syscalls), for: no hooks; the two tracepoint flavours with trivial programs
#    (bench/syscall_hooks.bpf.c: raw_syscalls tp_btf vs per-syscall
#    syscalls:sys_enter_pread64 events); strata chosen, and not chosen beside the followed
#    reader (which runs in every mode); as ratios to no hooks. BPF statistics are off for this part (they time every run).
# 3. A process strata does not follow, beside the followed reader (running throughout, so
#    both sides share its load): 1 M getppid then 1 M pread64 of 64 bytes
#    (strata-syscall-cost CALLS=1000000 ROUNDS=1: whole runs), with no fs dataset and with
#    fs.latency[op] following the reader through each hook this kernel takes (--fs-hook
#    fentry, syscalls), and with no dataset and the reader stopped (what its load costs the
#    other process), in an order rotated each round; the mean time per call
#    and its ratio to no dataset in the same round, with 95 % intervals. Then, with BPF
#    statistics on and the reader stopped, what each hook's programs cost per run and how
#    many runs one unfollowed pread64 makes. BATCHES=N: the fastest of N batches of CALLS
#    instead of whole runs (for a guest, where other tenants move whole runs by tens of %).
# PARTS picks the parts (default "fio unfollowed": parts 1 and 2, part 3). The fs layer hooks each followed
# syscall's function (fentry / fexit) where the kernel allows it, else the per-syscall
# tracepoints (bpf/fs.bpf.c, collectors/fs_hook.c): KERNEL=6.1 (or 5.10, 6.12) runs this
# bench in that kernel-matrix guest (tests/vm/; TCG-emulated, so only the ratios mean
# anything), for a kernel that takes fentry where this host does not.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${KERNEL:-}" ] && [ "${1:-}" != inside ]; then
	folder=$PWD/build/vm/runs/bench-fs-$KERNEL
	rm -rf "$folder" && mkdir -p "$folder"
	PYTHONPATH=tests .venv/bin/python -m vm run --kernel "$KERNEL" --timeout 3000 --folder "$folder" -- \
		env SECS="${SECS:-3}" ROUNDS="${ROUNDS:-4}" STARTDELAY=15 PARTS="${PARTS:-fio unfollowed}" \
		UROUNDS="${UROUNDS:-8}" CALLS="${CALLS:-1000000}" FOLLOWED_IOPS="${FOLLOWED_IOPS:-5000}" BATCHES="${BATCHES:-1}" \
		bash "$PWD/bench/collect_fs.sh" inside
	exit
fi
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd # a guest's /dev has no fd link (process substitution)
FILE_SIZE=256M COST_ROUNDS=400 # the file fio and strata-syscall-cost read; strata-syscall-cost's batches
if [ "${BENCH_SMOKE:-}" = 1 ]; then # smoke mode (bench/run.sh)
	SECS=1 ROUNDS=1 FILE_SIZE=16M COST_ROUNDS=20 UROUNDS=1 CALLS=20000
fi
SECS=${SECS:-3}
ROUNDS=${ROUNDS:-4}
UROUNDS=${UROUNDS:-8}             # part 3's rounds
CALLS=${CALLS:-1000000}           # part 3's syscalls of each kind per run
FOLLOWED_IOPS=${FOLLOWED_IOPS:-5000}
PARTS=${PARTS:-fio unfollowed}
source bench/collectlib.sh
bpf_stats_on
COLLECT_ENGINE= # no engine: the collector follows one process

file="$work/data"
head -c "$FILE_SIZE" /dev/urandom > "$file"
cat "$file" > /dev/null  # in the page cache

# fs_stats: "RUN_TIME_NS RUN_CNT" summed over the collector's fs programs
fs_stats() {
	local n t
	read -r n t < <(bpf_runs 'fs_.*')
	echo "$t $n"
}

# strata_on PID: strata-collect following PID with fs.latency[op], attached on return
# (the hook it loaded appended to $work/hooks_used)
strata_on() {
	COLLECT_ARGS="--fs-pid $1 ${FS_HOOK:+--fs-hook $FS_HOOK}" collect_start 'add l fs.latency op\n'
	for _ in $(seq 300); do grep -q '"attached":\["fs"\]' "$work/collect.out" && break; sleep 0.1; done
	grep -o '"hook":"[a-z_]*"' "$work/collect.out" | tail -n 1 >> "$work/hooks_used" || true
}

strata_off() {
	collect_stop
}

# followed_start: the process strata follows in mode "other", a reader of $file at
# $FOLLOWED_IOPS 4 KiB reads per second; its pid in $followed
followed_start() {
	fio --name=followed --filename="$file" --rw=randread --bs=4k --ioengine=psync --thread --invalidate=0 \
		--rate_iops="$FOLLOWED_IOPS" --runtime=3600 --time_based --size="$FILE_SIZE" > /dev/null &
	followed=$!
}

# fio_round MODE (off | chosen | other): prints "IOPS READS BPF_NS BPF_RUNS READS_PER_CPU_SECOND"
fio_round() {
	local mode=$1 fio_pid followed="" out="$work/fio.json" s0="0 0" s1="0 0"
	fio --name=bench --filename="$file" --rw=randread --bs=4k --ioengine=psync --thread --invalidate=0 \
		--startdelay="${STARTDELAY:-2}" --runtime="$SECS" --time_based --size="$FILE_SIZE" --output-format=json > "$out" &
	fio_pid=$!
	if [ "$mode" = other ]; then followed_start; fi
	if [ "$mode" != off ]; then
		strata_on "${followed:-$fio_pid}"
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
	[ -n "$followed" ] && { kill "$followed"; wait "$followed" 2>/dev/null || true; }
	python3 -c '
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
read, cpu = job["read"], (job["usr_cpu"] + job["sys_cpu"]) / 100
ns0, n0, ns1, n1 = map(int, sys.argv[2:6])
print(round(read["iops"]), read["total_ios"], ns1 - ns0, n1 - n0, round(read["iops"] / cpu))' "$out" $s0 $s1
}

# cost_round MODE (off | raw | per | chosen | other): prints "GETPPID_NS PREAD_NS"
cost_round() {
	local mode=$1 bench_pid followed="" hooks_pid=""
	rm -f "$work/go"; mkfifo "$work/go"
	WAIT=1 ROUNDS="$COST_ROUNDS" build/bench/strata-syscall-cost "$file" < "$work/go" > "$work/cost" &
	bench_pid=$!
	exec 4> "$work/go"
	followed_start # in every mode: its load is no part of the difference
	case $mode in
	raw | per)
		rm -f "$work/hooks"; mkfifo "$work/hooks"
		build/bench/strata-syscall-hooks "$mode" < "$work/hooks" > "$work/hooks.out" &
		hooks_pid=$!
		exec 5> "$work/hooks"
		sleep 1 ;;
	chosen) strata_on "$bench_pid" ;;
	other) strata_on "$followed" ;;
	esac
	echo >&4
	exec 4>&-
	wait "$bench_pid"
	case $mode in
	raw | per) exec 5>&-; wait "$hooks_pid" ;;
	chosen | other) strata_off ;;
	esac
	[ -n "$followed" ] && { kill "$followed"; wait "$followed" 2>/dev/null || true; }
	cat "$work/cost"
}

# fio_part: part 1 and 2 (their figures printed together)
fio_part() {
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
rows = lambda arg: [[float(x) for x in r.split()] for r in arg.split(";") if r.strip()]
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
    extra = "" if mode == "off" else \
        f"   (+{g - base[0]:.0f}, +{p - base[1]:.0f}; x{g / base[0]:.3f}, x{p / base[1]:.3f})"
    print(f"  {label:<44} getppid {g:>5.0f} ns  pread64 4k {p:>5.0f} ns{extra}")
PY
echo "strata's fs hook: $(sort -u "$work/hooks_used" | tr '\n' ' ')"
}

source bench/fsunfollowedlib.sh
case " $PARTS " in *" fio "*) fio_part ;; esac
case " $PARTS " in *" unfollowed "*) unfollowed_part ;; esac
