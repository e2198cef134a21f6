#!/bin/sh
# The guest's second stage, pid 1 in the host's own userland (read-only under a tmpfs
# overlay): mounts what a booted Debian host has (proc, sysfs, tracefs, bpffs, cgroup2,
# the kernel's modules at /lib/modules, /tmp on ext4, with the host paths under the host's
# /tmp that the run needs bound back in: .vm/host_tmp), brings up lo, runs the run's command with the
# run folder as its working directory, stores its output and exit status there, and
# powers the guest off.
share="$1"
vm="$share/.vm"
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /run
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
release=$(uname -r)
mkdir -p "/lib/modules/$release"
mount --bind "$(cat "$vm/modules_path")" "/lib/modules/$release"
hostname strata-vm
modprobe loop
# /tmp: ext4 (O_DIRECT, real inodes) on a loop device over a sparse file in memory, so
# that no block I/O completes in interrupt context behind the tests' backs
keep=$(cat "$vm/host_tmp")
[ -n "$keep" ] && mkdir -p /run/hosttmp && mount --rbind /tmp /run/hosttmp
mkdir -p /run/scratch && mount -t tmpfs -o size=90% tmpfs /run/scratch
truncate -s 4G /run/scratch/tmp.img
scratch=$(losetup --find --show /run/scratch/tmp.img)
mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$scratch" && mount "$scratch" /tmp && chmod 1777 /tmp
printf '%s\n' "$keep" | while read -r p; do
	[ -n "$p" ] && mkdir -p "$p" && mount --rbind "/run/hosttmp${p#/tmp}" "$p"
done
ip link set lo up
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
echo "vm: up $(cut -d' ' -f1 /proc/uptime) s" > /dev/ttyS0
cd "$share"
sh "$vm/command.sh" > "$vm/output" 2>&1 < /dev/null
echo $? > "$vm/rc"
sync
echo "vm: done $(cut -d' ' -f1 /proc/uptime) s" > /dev/ttyS0
echo o > /proc/sysrq-trigger
sleep 10
