# fsunfollowedlib.sh — part 3 of bench/collect_fs.sh (sourced by it, its variables and
# functions in scope): what a process strata does not follow pays, beside the followed one.

# unfollowed_run HOOK (off, alone, or an --fs-hook value): "GETPPID_NS PREAD_NS", the whole
# run's time per call of an unfollowed process making $CALLS of each (with BATCHES set: the
# fastest of BATCHES batches of $CALLS, which other tenants' load disturbs least), with
# fs.latency[op] following $followed through HOOK (off: no fs dataset; alone: none, and
# $followed stopped)
unfollowed_run() {
	case $1 in
	off) ;;
	alone) kill -STOP "$followed" ;;
	*) FS_HOOK=$1 strata_on "$followed" ;;
	esac
	CALLS="$CALLS" ROUNDS="${BATCHES:-1}" SIZE=64 build/bench/strata-syscall-cost "$file"
	case $1 in
	off) ;;
	alone) kill -CONT "$followed" ;;
	*) strata_off ;;
	esac
}

# hook_works HOOK: whether the collector loads the fs layer with HOOK here
hook_works() {
	local out
	out=$(printf 'add l fs.ops op\nquit\n' | timeout 30 build/bin/strata-collect --fs-pid $$ --fs-hook "$1" 2>/dev/null)
	grep -q '"id":"l","ok":true' <<< "$out"
}

# unfollowed_stats HOOK: "RUNS NS" of HOOK's programs over one unfollowed run of $CALLS
# pread64 (and as many getppid), BPF statistics on, the followed reader stopped
unfollowed_stats() {
	local s0 s1
	FS_HOOK=$1 strata_on "$followed"
	kill -STOP "$followed"
	s0=$(bpf_runs 'fs_.*')
	CALLS="$CALLS" ROUNDS="${BATCHES:-1}" SIZE=64 build/bench/strata-syscall-cost "$file" > /dev/null
	s1=$(bpf_runs 'fs_.*')
	kill -CONT "$followed"
	strata_off
	echo "$s0 $s1" | awk '{ print $3 - $1, $4 - $2 }'
}

unfollowed_part() {
	local hooks=(off alone) h r i runs="" stats=""
	for h in fentry syscalls; do
		if hook_works "$h"; then hooks+=("$h"); else echo "part 3: this kernel does not take --fs-hook $h"; fi
	done
	followed_start
	sysctl -qw kernel.bpf_stats_enabled=0
	for ((r = 0; r < UROUNDS; r++)); do
		for ((i = 0; i < ${#hooks[@]}; i++)); do
			h=${hooks[(i + r) % ${#hooks[@]}]}
			runs+="$r $h $(unfollowed_run "$h");"
		done
	done
	sysctl -qw kernel.bpf_stats_enabled=1
	for h in "${hooks[@]:2}"; do stats+="$h $(unfollowed_stats "$h");"; done
	kill "$followed"; wait "$followed" 2>/dev/null || true
	python3 bench/fsunfollowed.py "$CALLS" "${BATCHES:-1}" "$FOLLOWED_IOPS" "$runs" "$stats"
}
