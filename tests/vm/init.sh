#!/bin/busybox sh
# The guest's /init, in a busybox initramfs: loads the virtio, 9p and overlay modules
# listed in /modules (in dependency order), mounts the host's root read-only over 9p
# under a tmpfs overlay, mounts the run's writable share at its host path, and
# switch_roots into stage2.sh (so the kernel's usermode helpers, modprobe among them,
# see the host's userland as a real host's would).
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r ko; do insmod "/ko/$ko" || echo "vm-init: insmod $ko failed"; done < /modules
share=$(sed -n "s/.*vmshare=\([^ ]*\).*/\1/p" /proc/cmdline)
mkdir -p /host /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /host || exec sh
mount -t tmpfs -o size=75% tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot || exec sh
mkdir -p "/newroot$share"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmshare "/newroot$share" || exec sh
mount --move /dev /newroot/dev
umount /proc /sys
exec switch_root /newroot /bin/sh "$share/.vm/stage2.sh" "$share"
