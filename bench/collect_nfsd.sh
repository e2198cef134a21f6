#!/usr/bin/env bash
# collect_nfsd.sh — BPF cost per NFS request of the nfsd layer against the wire layer, on
# the same requests: in a kernel-matrix guest (tests/vm/, KERNEL=6.1-security by default; 6.12 too)
# the kernel's nfsd serves one strata-load client (mixed NFSv3 load, SECS seconds) on
# loopback while one collector holds nfsd.latency[client] + nfsd.ops[op] and
# wire.latency[client] + wire.ops[op] (ADDS: other collector commands). From the kernel's BPF statistics
# (kernel.bpf_stats_enabled): each layer's BPF run time per request (/proc/net/rpc/nfsd's count), its
# program runs per request, and the ratio nfsd/wire. Absolute ns are TCG-emulated (slow);
# the ratio is the result. COLLECT: another strata-collect build to measure (one of two
# builds compared run by run, alternating).
# Then what nfsd.*[tier] and nfsd.queue cost per request against nfsd.latency[op] alone
# (bench/nfsdtiercost.py: TIER_ROUNDS rounds of TIER_SECS s windows, ratios per round;
# TIER_BEFORE: another strata-collect build run beside this one in every round, alternating,
# with the ratios this/before per set of datasets; TIER_ONLY=1: this part alone).
# Then nfsd's throughput loss at its peak in the guest (the goal: within 1.4 % with
# nfsd.latency[client] alone, 3 % with four nfsd datasets): one randread load (4 clients x 8
# threads of 8 KiB reads from the page cache) while the datasets are switched in windows of
# WINDOW_SECS seconds, CYCLES times each (bench/collectlib.sh toggled_load, bench/losses.py).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${BENCH_SMOKE:-}" = 1 ]; then SECS=1 WINDOW_SECS=1 CYCLES=1; fi # smoke mode (bench/run.sh)
SECS=${SECS:-15}
WINDOW_SECS=${WINDOW_SECS:-4}
CYCLES=${CYCLES:-12}
KERNEL=${KERNEL:-6.1-security}
# the datasets, as collector commands: one of each layer's statistics per breakdown given
ADDS=${ADDS:-add a nfsd.latency client\\nadd b nfsd.ops op\\nadd c wire.latency client\\nadd d wire.ops op\\n}
if [ "${1:-}" != inside ]; then
	folder=$PWD/build/vm/runs/bench-nfsd-$KERNEL
	rm -rf "$folder" && mkdir -p "$folder"
	PYTHONPATH=tests .venv/bin/python -m vm run --kernel "$KERNEL" --timeout 1800 --folder "$folder" -- \
		env SECS="$SECS" ADDS="$ADDS" COLLECT="${COLLECT:-}" WINDOW_SECS="$WINDOW_SECS" CYCLES="$CYCLES" \
		BENCH_SMOKE="${BENCH_SMOKE:-}" TIER_ROUNDS="${TIER_ROUNDS:-6}" TIER_SECS="${TIER_SECS:-4}" \
		TIER_BEFORE="${TIER_BEFORE:-}" TIER_ONLY="${TIER_ONLY:-}" bash "$PWD/bench/collect_nfsd.sh" inside
	exit
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd # the guest's /dev has none; process substitution needs it
export=/tmp/nfsd-export
modprobe nfsd && mount -t nfsd nfsd /proc/fs/nfsd && (rpcbind -w || rpcbind)
mkdir -p $export && chmod 777 $export
exportfs -o rw,no_root_squash,insecure,fsid=1 127.0.0.1:$export
rpc.nfsd -N 4 8 && rpc.mountd -N 4 -p 20048
sysctl -qw kernel.bpf_stats_enabled=1
if [ "${TIER_ONLY:-}" = 1 ]; then
	"$repo/build/bin/strata-load" --server 127.0.0.1 --export $export --profile randread --setup-only --files 4 \
		--file-size 1m > /dev/null
	exec "$repo/.venv/bin/python" "$repo/bench/nfsdtiercost.py" "$repo" $export
fi
mkfifo ctl
"${COLLECT:-$repo/build/bin/strata-collect}" < ctl > collect.out 2> collect.err &
exec 3> ctl
printf "$ADDS" >&3
until grep -q '"attached":\["wire","nfsd"\]' collect.out; do sleep 1; done
"$repo/build/bin/strata-load" --server 127.0.0.1 --export $export --profile mixed --setup-only --files 4 \
	--file-size 1m > /dev/null
bpftool prog show -j > before.json
grep '^proc3 ' /proc/net/rpc/nfsd > proc3.before
"$repo/build/bin/strata-load" --server 127.0.0.1 --export $export --profile mixed --duration "$SECS" --files 4 \
	--file-size 1m
bpftool prog show -j > after.json
grep '^proc3 ' /proc/net/rpc/nfsd > proc3.after
sleep 3
printf 'quit\n' >&3
exec 3>&-
wait
"$repo/.venv/bin/python" - <<'EOF'
import json

def progs(path):
    return {p["id"]: p for p in json.load(open(path)) if p.get("name", "").startswith(("nfsd_", "wire_"))}

before, after = progs("before.json"), progs("after.json")
ops = sum(int(x) for x in open("proc3.after").read().split()[2:]) - \
      sum(int(x) for x in open("proc3.before").read().split()[2:])
cost = {}
for pid, p in after.items():
    layer = "nfsd" if p["name"].startswith("nfsd_") else "wire"
    b = before.get(pid, {})
    ns, runs = p.get("run_time_ns", 0) - b.get("run_time_ns", 0), p.get("run_cnt", 0) - b.get("run_cnt", 0)
    t = cost.setdefault(layer, [0, 0])
    t[0] += ns
    t[1] += runs
print(f"requests (/proc/net/rpc/nfsd): {ops}")
for layer, (ns, runs) in sorted(cost.items()):
    print(f"{layer}: {ns / ops:.0f} ns of BPF per request, {runs / ops:.2f} program runs per request")
if cost.get("wire", [0])[0]:
    print(f"nfsd / wire: {cost['nfsd'][0] / cost['wire'][0]:.3f}")
EOF

"$repo/.venv/bin/python" "$repo/bench/nfsdtiercost.py" "$repo" $export

# nfsd's throughput loss: the datasets switched on and off during one load
source "$repo/bench/collectlib.sh"
nfs_port=2049 mount_port=20048 export_path=$export COLLECT_ENGINE=
COLLECT_BIN=${COLLECT:-} collect_start 'add warm nfsd.ops op\nremove warm\n' 2>> "$work/collect.err"
want=([none]='' [one]='add a nfsd.latency client\n'
	[four]='add a nfsd.latency client\nadd b nfsd.ops op\nadd c nfsd.size op\nadd d nfsd.latency op\n')
progs=([none]='' [one]='nfsd_.*' [four]='nfsd_.*')
load "$WARM_SECS" --setup > /dev/null
toggled_load "$WINDOW_SECS" "$CYCLES" none one four
collect_stop
"$repo/.venv/bin/python" "$repo/bench/losses.py" "$work/load.json" "$work/windows" \
	"kernel nfsd $(uname -r) randread 8k on lo, 4 clients x 8 threads, windows of $WINDOW_SECS s" \
	"one=nfsd.latency[client] alone" "four=four nfsd datasets"
