#!/usr/bin/env bash
# Installs what strata needs on a fresh Debian 12 machine, idempotently:
# Debian packages by name (apt-get update only when something is missing),
# and tracefs at /sys/kernel/tracing. The venv is scripts/venv.sh (make venv).
set -euo pipefail
cd "$(dirname "$0")/.."

# `scripts/deps.sh`: what building and running strata (and `make demo`) need.
BASE=(
  build-essential pkg-config make
  clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev   # BPF build: CO-RE, skeletons
  systemtap-sdt-dev                                     # USDT probe macros (sys/sdt.h)
  libnfs-dev libnfs-utils                               # real NFS client library and tools
  liblz4-dev libzstd-dev zstd libsqlite3-dev sqlite3    # engine compression, traces, archive
  libjson-c-dev                                         # the collector's JSON (engine stats socket)
  util-linux iproute2 procps                            # loop devices, netns
  chromium                                              # the demo's pictures (plotly static export)
  python3-venv
)
# `scripts/deps.sh --tests` (make test, bench, test-kernels): what only the tests, the
# benchmarks and the ganesha and nfsd demos need as well.
TESTS=(
  libbpf-tools                                          # peer tools (biolatency) for cross-checks
  libclang-rt-14-dev                                    # libFuzzer + sanitizer runtimes
  fio tmux                                              # workloads, terminal tests
  nfs-ganesha nfs-ganesha-vfs rpcbind                   # a real NFS server to compare with
  chromium-driver                                       # selenium drives chromium in the strata web tests
  prometheus                                            # a real scraper of strata collect --metrics
  qemu-system-x86 busybox-static cpio kmod             # the kernel matrix: Debian kernels in a TCG guest
  nfs-kernel-server                                     # kernel nfsd, served inside that guest
)
PACKAGES=("${BASE[@]}")
case "${1:-}" in
  --tests) PACKAGES+=("${TESTS[@]}") ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--tests]" >&2; exit 2 ;;
esac

# The services of packages installed here (given: package names) are masked: never
# started, at install or at boot, on a machine that asked for strata; the tests and
# guests start the servers they need themselves. Packages already there are left alone.
mask_services() {
  local units=() p f
  for p in "$@"; do
    while read -r f; do
      case "$f" in
        /lib/systemd/system/*.service|/lib/systemd/system/*.socket|/lib/systemd/system/*.timer|\
        /usr/lib/systemd/system/*.service|/usr/lib/systemd/system/*.socket|/usr/lib/systemd/system/*.timer)
          units+=("$(basename "$f")") ;;
        /etc/init.d/*) update-rc.d -f "$(basename "$f")" disable >/dev/null 2>&1 || true ;;
      esac
    done < <(dpkg -L "$p" 2>/dev/null)
  done
  [ ${#units[@]} -gt 0 ] || return 0
  if [ -d /run/systemd/system ]; then
    systemctl stop "${units[@]}" >/dev/null 2>&1 || true
    systemctl mask -q "${units[@]}"
  else   # what `systemctl mask` does, without a running systemd
    mkdir -p /etc/systemd/system
    for f in "${units[@]}"; do ln -sfn /dev/null "/etc/systemd/system/$f"; done
  fi
  echo "deps: masked ${units[*]} (installed for the tests; \`systemctl unmask NAME\` to use one)"
}

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm (web/web.mk packs plotly.js's cartesian bundle at build time): Debian's, unless the
# machine has an npm of its own (a Node.js installed apart from Debian's is left as it is).
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: need root to install Debian packages: sudo make deps" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # The packages' services stay stopped while installing: a policy-rc.d answering 101 ("not
  # allowed", honoured by invoke-rc.d and deb-systemd-invoke), unless the host has its own;
  # mask_services keeps them from starting at the next boot.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  before=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" {print $2}' | sort)
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  after=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" {print $2}' | sort)
  mapfile -t new < <(comm -13 <(echo "$before") <(echo "$after"))
  mask_services "${new[@]}"
fi

# tracefs: the tracepoint format files and classic tracepoint attach live there.
if [ ! -e /sys/kernel/tracing/events ] && [ "$(id -u)" -eq 0 ]; then
  mount -t tracefs nodev /sys/kernel/tracing || echo "deps: could not mount tracefs (strata doctor will say more)" >&2
fi
