#!/usr/bin/env bash
# Installs every Debian package nabla needs to build, test, benchmark and run
# its demo. Idempotent: packages already present are skipped, and apt is only
# consulted when something is missing. Must run as root on Debian 12.
set -euo pipefail

packages=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config git clang clang-format
  libclang-rt-14-dev
  # libraries
  libnetfilter-queue-dev libmnl-dev libfftw3-dev libasio-dev libcli11-dev
  libsqlite3-dev sqlite3 nlohmann-json3-dev libtomlplusplus-dev libssl-dev
  libgtest-dev libgmock-dev
  # kernel tools used by the daemons and integration tests
  iptables iproute2 conntrack procps
  # peers for benchmarks (statistics references, sqlite shell, load peers)
  python3 python3-numpy python3-scipy python3-statsmodels
  # loadgen benchmark peers: nginx (bench/loadgen starts its own instance on
  # 127.0.0.1; the packaged service is kept from starting), wrk, sockperf
  nginx-light wrk sockperf
  # taskset: the loadgen bench puts nginx and the load generators on separate cores
  util-linux
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo $0)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Packaged daemons (nginx) must not start listening on 0.0.0.0 as a side
# effect of installing a benchmark peer: deny service starts while apt runs.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && own_policy=1
fi
trap 'if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
