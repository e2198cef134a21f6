# collectlib.sh — sourced by bench/collect_*.sh (no underscore: run.sh does not run it):
# a private engine (or nfs-ganesha) on ephemeral ports, the load generator, strata-collect
# through a fifo, the kernel's BPF statistics of the collector's own programs, and paired
# rounds of loads with datasets switched on and off.
# ENGINE_BIN and COLLECT_BIN pick other engine and collector binaries (before/after runs).
work=$(mktemp -d)
# seconds of the load that writes the files and warms the cache (1 in smoke mode, bench/run.sh)
WARM_SECS=$([ "${BENCH_SMOKE:-}" = 1 ] && echo 1 || echo 3)
# collect_start's pause for the collector to start (smoke mode: 0.2 s, its callers wait for
# what they need after it)
START_PAUSE=$([ "${BENCH_SMOKE:-}" = 1 ] && echo 0.2 || echo 1.5)
engine_pid=""   # the server whose CPU time is counted (the engine, or ganesha)
collect_pid=""
ganesha_pid=""
rpcbind_pid=""
export_path=/export
stats_was=""
collect_cleanup() {
	[ -n "$collect_pid" ] && kill "$collect_pid" 2>/dev/null || true
	[ -n "$engine_pid" ] && kill "$engine_pid" 2>/dev/null && wait "$engine_pid" 2>/dev/null || true
	for s in "${saved_servers[@]}"; do kill "${s%% *}" 2>/dev/null || true; done
	[ -n "$rpcbind_pid" ] && kill "$rpcbind_pid" 2>/dev/null || true
	[ -n "$stats_was" ] && sysctl -qw kernel.bpf_stats_enabled="$stats_was"
	rm -rf "$work"
}
trap collect_cleanup EXIT

# bpf_stats_on: the kernel times every BPF program run (restored on exit)
bpf_stats_on() {
	stats_was=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
}

# engine_start [NAME]: a private engine (ENGINE_BIN, default this tree's) on ephemeral
# ports; NAME keeps a second one's files apart (server_save and server[C] switch between them)
engine_start() {
	local n=${1:-}
	cp "${ENGINE_BIN:-build/bin/strata-engine}" "$work/strata-engine$n" # private inode: nobody else's probes land in ours
	"$work/strata-engine$n" mkpool "$work/pool$n" --size 512m > /dev/null
	"$work/strata-engine$n" serve --pool "$work/pool$n" --export "${ENGINE_EXPORT:-/export:mode=1777}" --listen 127.0.0.1:0 \
		--port-file "$work/ports$n" > "$work/engine$n.log" 2>&1 &
	engine_pid=$!
	for _ in $(seq 100); do [ -s "$work/ports$n" ] && break; sleep 0.1; done
	mount_port=$(sed -E 's/.*mount=[0-9.]+:([0-9]+).*/\1/' "$work/ports$n")
	nfs_port=$(sed -E 's/.*nfs=[0-9.]+:([0-9]+).*/\1/' "$work/ports$n")
}

# server_save NAME / server_use NAME: the current server (pid, ports) kept under NAME, and
# made current again (its pid is killed on exit)
declare -A saved_servers=()
server_save() { saved_servers[$1]="$engine_pid $nfs_port $mount_port"; }
server_use() { read -r engine_pid nfs_port mount_port <<< "${saved_servers[$1]}"; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ganesha_start: Debian's nfs-ganesha (FSAL_VFS, NFSv3/TCP) exporting a fresh directory,
# with an rpcbind of its own when none runs (ganesha exits when it cannot register);
# the same configuration as lab/ganesha.py
ganesha_start() {
	command -v ganesha.nfsd > /dev/null || { echo "ganesha.nfsd missing (apt-get install nfs-ganesha nfs-ganesha-vfs)" >&2; exit 1; }
	if ! rpcinfo -p 127.0.0.1 > /dev/null 2>&1; then
		rpcbind -f -w & rpcbind_pid=$!
		sleep 0.5
	fi
	export_path="$work/export"
	mkdir -p "$export_path"
	chmod 0777 "$export_path" # strata-load clients use uids 10000+
	nfs_port=$(free_port) mount_port=$(free_port)
	cat > "$work/ganesha.conf" <<-CONF
	NFS_CORE_PARAM { NFS_Port = $nfs_port; MNT_Port = $mount_port; Bind_Addr = 127.0.0.1; Protocols = 3;
		Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false; }
	NFSV4 { Graceless = true; }
	EXPORT { Export_Id = 1; Path = $export_path; Pseudo = /strata; Protocols = 3; Transports = TCP;
		Access_Type = RW; Squash = No_Root_Squash; SecType = sys; FSAL { Name = VFS; } }
	LOG { Default_Log_Level = WARN; }
	CONF
	ganesha.nfsd -F -f "$work/ganesha.conf" -L "$work/ganesha.log" -p "$work/ganesha.pid" &
	engine_pid=$!
	for _ in $(seq 200); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $nfs_port), 0.2)" 2> /dev/null && return
		sleep 0.1
	done
	echo "nfs-ganesha did not start: $(tail -n 1 "$work/ganesha.log" 2> /dev/null)" >&2
	exit 1
}

# randread SECONDS OPTION...: the benchmarks' load, 8 KiB random reads from 4 clients of
# 8 threads each, with more strata-load options (and $LOAD_ARGS's)
randread() {
	build/bin/strata-load --server 127.0.0.1 --nfsport "$nfs_port" --mountport "$mount_port" --export "$export_path" \
		--profile randread --io-size 8k --clients 4 --threads 8 ${LOAD_ARGS:-} --duration "$@"
}

# load SECONDS [--setup]: prints total ops/s
load() {
	randread "$1" ${2:-} --json - |
		python3 -c 'import json,sys; print(round(json.load(sys.stdin)["ops_per_sec"]["total"]))'
}

# engine_cpu_ns [PID]: CPU time of all the threads of the server (or PID) so far (schedstat,
# ns), the BPF programs its probes run included
engine_cpu_ns() {
	cat /proc/"${1:-$engine_pid}"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# load_cost SECONDS: prints "OPS_PER_SEC ENGINE_NS_PER_OP" for one load run
load_cost() {
	local c0 c1 ops
	c0=$(engine_cpu_ns)
	ops=$(load "$1")
	c1=$(engine_cpu_ns)
	echo "$ops $(( (c1 - c0) / (ops * $1) ))"
}

# collect_start COMMANDS: strata-collect (attached to the engine when there is one, plus
# $COLLECT_ARGS), COMMANDS written to its stdin
collect_start() {
	rm -f "$work/ctl"; mkfifo "$work/ctl"
	"${COLLECT_BIN:-build/bin/strata-collect}" ${COLLECT_ENGINE:+--engine-pid "$engine_pid"} ${COLLECT_ARGS:-} 4>&- \
		< "$work/ctl" > "$work/collect.out" &
	collect_pid=$!
	exec 3> "$work/ctl"
	printf "$1" >&3
	sleep "$START_PAUSE"
}
COLLECT_ENGINE=1 # collect_start passes --engine-pid (unset it for servers without probes)

collect_stop() {
	exec 3>&-
	wait "$collect_pid"
	collect_pid=""
	if grep -q '"type":"error"' "$work/collect.out"; then
		echo "strata-collect failed: $(grep -m1 '"type":"error"' "$work/collect.out")" >&2
		exit 1
	fi
}

# bpf_runs PATTERN [PID]: "RUN_COUNT RUN_TIME_NS" summed over the BPF programs of the
# collector PID (default: this collector) whose name matches PATTERN (0 0 when none is
# loaded). Other collectors on the machine load programs of the same names (and unload
# them while bpftool lists them: a failed listing is tried again).
bpf_runs() {
	local _
	for _ in 1 2 3; do bpf_runs_once "$1" "${2:-$collect_pid}" && return; sleep 0.1; done
	return 1
}
bpf_runs_once() {
	bpftool prog show -j | python3 -c '
import json, re, sys, pathlib
ours = set()
for f in pathlib.Path(f"/proc/{sys.argv[2]}/fdinfo").iterdir():
    try:
        ours.update(int(m) for m in re.findall(r"^prog_id:\s*(\d+)", f.read_text(), re.M))
    except OSError:
        pass
ps = [p for p in json.load(sys.stdin) if re.fullmatch(sys.argv[1], p.get("name", "")) and p.get("id") in ours]
print(sum(p.get("run_cnt", 0) for p in ps), sum(p.get("run_time_ns", 0) for p in ps))' "$1" "$2"
}

# Configurations of paired_rounds and toggled_load: want[C] the add commands that switch C's datasets on,
# progs[C] the name pattern of the BPF programs C costs; chan[C] the file descriptor of the
# collector that takes C's commands (default 3, collect_start's) and owner[C] its pid;
# server[C] the server_save name of the server C loads (paired_rounds; default the current).
declare -A want=() progs=() chan=() owner=() server=()
# stats[C]=0: toggled_load runs C's windows with the kernel's BPF statistics off, as a host
# runs by default (they time every program run, which costs each run two clock reads)
declare -A stats=()

# switch_off CONFIG: CONFIG's datasets removed (a remove for each of its adds)
switch_off() {
	printf "${want[$1]}" | sed -n 's/^add \([a-z]*\) .*/remove \1/p' >&"${chan[$1]:-3}"
}

# paired_rounds ROUNDS SECS CONFIG...: with the collector(s) running, each round loads SECS
# seconds per configuration, in an order rotated each round (this VM's speed drifts by tens
# of percent over a minute; each configuration is compared with the first one, no
# datasets, of its own round). Appends "ROUND CONFIG OPS_PER_SEC ENGINE_NS_PER_OP BPF_RUNS
# BPF_NS COLLECTOR_NS" lines to $work/results (COLLECTOR_NS: the CPU time of C's collector
# during the load, from schedstat).
paired_rounds() {
	local rounds=$1 secs=$2 r i cfg prev n0 t0 n1 t1 ops nsop pid k0 k1
	shift 2
	local configs=("$@")
	prev=${configs[0]}
	for ((r = 0; r < rounds; r++)); do
		for ((i = 0; i < ${#configs[@]}; i++)); do
			cfg=${configs[(i + r) % ${#configs[@]}]}
			switch_off "$prev"
			printf "${want[$cfg]}" >&"${chan[$cfg]:-3}"
			prev=$cfg
			[ -n "${server[$cfg]:-}" ] && server_use "${server[$cfg]}"
			pid=${owner[$cfg]:-$collect_pid}
			sleep 0.5
			read -r n0 t0 < <(bpf_runs "${progs[$cfg]}" "$pid")
			k0=$(engine_cpu_ns "$pid")
			read -r ops nsop < <(load_cost "$secs")
			k1=$(engine_cpu_ns "$pid")
			read -r n1 t1 < <(bpf_runs "${progs[$cfg]}" "$pid")
			echo "$r $cfg $ops $nsop $((n1 - n0)) $((t1 - t0)) $((k1 - k0))" >> "$work/results"
		done
	done
	switch_off "$prev"
}

# cpu_ticks: "BUSY STEAL" clock ticks of all CPUs so far (/proc/stat: user + nice + system +
# irq + softirq; steal: time the hypervisor gave to others)
cpu_ticks() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9; exit }' /proc/stat
}

# toggled_load SECS CYCLES CONFIG...: one load runs throughout while the configurations are
# switched in windows of SECS seconds, CYCLES times each, in an order rotated every cycle
# (starts and warm-ups are paid once, and a window is compared with its neighbours seconds
# away, not minutes: this VM's speed drifts by tens of percent over a minute). The load's
# report goes to $work/load.json (the load, long enough for any pace of windows, is stopped
# with SIGINT after the last) and a line per window, "CONFIG T_ON T_OFF BPF_RUNS BPF_NS
# BPF_SECS BUSY_TICKS STEAL_TICKS" (wall-clock seconds; BPF_SECS between the midpoints of
# the two readings of the BPF statistics; the CPU ticks of the window), to $work/windows;
# bench/losses.py reads both.
toggled_load() {
	local secs=$1 cycles=$2 r i cfg prev="" n0 t0 m0 on b0 s0 lp
	shift 2
	local configs=("$@")
	: > "$work/windows"
	randread $((4 * secs * cycles * ${#configs[@]} + 60)) --json "$work/load.json" > /dev/null &
	lp=$!
	sleep 2 # mounted and running
	for ((r = 0; r < cycles; r++)); do
		for ((i = 0; i < ${#configs[@]}; i++)); do
			cfg=${configs[(i + r) % ${#configs[@]}]}
			[ -n "$prev" ] && window_end "$prev"
			[ -n "$stats_was" ] && sysctl -qw kernel.bpf_stats_enabled="${stats[$cfg]:-1}"
			printf "${want[$cfg]}" >&"${chan[$cfg]:-3}"
			prev=$cfg
			read -r n0 t0 m0 < <(bpf_runs_at "${progs[$cfg]}" "${owner[$cfg]:-$collect_pid}")
			read -r b0 s0 < <(cpu_ticks)
			on=$(date +%s.%N)
			sleep "$secs"
		done
	done
	window_end "$prev"
	# the run ends here; the load writes its report. SIGINT goes to strata-load itself: $lp is
	# the subshell that runs it (which ignores SIGINT, being in the background) or, where bash
	# execs a subshell's last command, strata-load
	pkill -INT -P "$lp" strata-load || kill -INT "$lp" 2> /dev/null || true
	wait "$lp"
}

# bpf_runs_at PATTERN PID: bpf_runs, and the wall-clock time halfway through the reading
bpf_runs_at() {
	local a b n t
	a=$(date +%s.%N)
	read -r n t < <(bpf_runs "$1" "$2")
	b=$(date +%s.%N)
	echo "$n $t $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", (a + b) / 2 }')"
}

# window_end CONFIG: the window of CONFIG that toggled_load (whose locals it reads) opened,
# recorded; CONFIG switched off
window_end() {
	local b1 s1 off n1 t1 m1
	read -r b1 s1 < <(cpu_ticks)
	off=$(date +%s.%N)
	read -r n1 t1 m1 < <(bpf_runs_at "${progs[$1]}" "${owner[$1]:-$collect_pid}")
	echo "$1 $on $off $((n1 - n0)) $((t1 - t0)) $(awk -v a="$m0" -v b="$m1" 'BEGIN { printf "%.4f", b - a }') $((b1 - b0)) $((s1 - s0))" >> "$work/windows"
	switch_off "$1"
}
