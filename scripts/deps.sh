#!/usr/bin/env bash
# Installs what strata needs on a fresh Debian 12 machine, idempotently:
# Debian packages by name (apt-get update only when something is missing),
# and tracefs at /sys/kernel/tracing. The venv is scripts/venv.sh (make venv).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential pkg-config make
  clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev   # BPF build: CO-RE, skeletons

  libbpf-tools                                          # peer tools (biolatency) for cross-checks
  systemtap-sdt-dev                                     # USDT probe macros (sys/sdt.h)
  libnfs-dev libnfs-utils                               # real NFS client library and tools
  liblz4-dev libzstd-dev zstd libsqlite3-dev sqlite3    # engine compression, traces, archive
  libjson-c-dev                                         # the collector's JSON (engine stats socket)
  libclang-rt-14-dev                                    # libFuzzer + sanitizer runtimes
  fio util-linux iproute2 tmux procps                   # workloads, loop devices, netns, terminal tests
  nfs-ganesha nfs-ganesha-vfs rpcbind                   # a real NFS server to compare with
  chromium                                              # headless browser tests, plotly static export
  chromium-driver                                       # selenium drives chromium in the strata web tests
  prometheus                                            # a real scraper of strata collect --metrics
  qemu-system-x86 busybox-static cpio kmod             # the kernel matrix: Debian kernels in a TCG guest
  nfs-kernel-server                                     # kernel nfsd, served inside that guest
  python3-venv
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: need root to install Debian packages: sudo make deps" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # The packages' services stay stopped: a policy-rc.d answering 101 ("not allowed", honoured
  # by invoke-rc.d and deb-systemd-invoke) while this script runs, unless the host has its own.
  # Otherwise a systemd host would start nfs-server, rpcbind, nfs-ganesha and prometheus on
  # install; strata's tests and guests start the servers they need themselves.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# tracefs: the tracepoint format files and classic tracepoint attach live there.
if [ ! -e /sys/kernel/tracing/events ] && [ "$(id -u)" -eq 0 ]; then
  mount -t tracefs nodev /sys/kernel/tracing || echo "deps: could not mount tracefs (strata doctor will say more)" >&2
fi
