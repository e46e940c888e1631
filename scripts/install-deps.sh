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
  # nabla load's h2://, h2c:// and grpc:// targets: HTTP/2 framing (TLS is
  # libssl, above)
  libnghttp2-dev
  # kernel tools used by the daemons and integration tests
  iptables iproute2 conntrack procps
  # the Debian package and its checks: dpkg-shlibdeps (Depends:), setpriv for
  # the capability tests, systemd-analyze for the units, systemd-nspawn to
  # run the package under a real systemd, ansible-playbook for the
  # playbook's checks (deploy/ansible)
  dpkg-dev systemd systemd-container ansible-core
  # peers for benchmarks (statistics references, sqlite shell, load peers)
  python3 python3-numpy python3-scipy python3-statsmodels
  # loadgen benchmark peers: nginx (bench/loadgen starts its own instance on
  # 127.0.0.1; the packaged service is kept from starting), wrk, sockperf
  nginx-light wrk sockperf
  # real servers for the memcache:// and redis:// codecs: the integration
  # tests start their own instances on 127.0.0.1 (packaged services stay off)
  memcached redis-server
  # real servers for https://, h2://, h2c:// and grpc:// (the protocols
  # test and bench/loadgen): openssl to make the test's certificate,
  # python3-grpcio for a gRPC server without protoc; and h2load, the HTTP/2
  # peer of the loadgen bench
  openssl python3-grpcio nghttp2-client
  # callgrind: bench/loadgen/h2_client_cost.sh counts the HTTP/2 session's
  # instructions per request
  valgrind
  # taskset: the loadgen bench puts nginx and the load generators on separate cores
  util-linux
  # nabla report's browser test: headless Chromium renders a page offline,
  # a font for its text, zlib to decode its screenshot (about a minute to
  # install on a fresh machine)
  chromium fonts-liberation zlib1g-dev
  # nabla report's link graph: `dot` lays it out when the report is written
  # (docs/report.md, "The link graph and Graphviz")
  graphviz
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
# Packaged daemons (nginx, memcached, redis) must not start listening as a
# side effect of installing a peer: deny service starts while apt runs. A
# policy that is already there is used only if it denies (exit 101);
# otherwise it is set aside and put back on exit.
policy=/usr/sbin/policy-rc.d
saved_policy=""
if [ -e "$policy" ] && ! { "$policy" x start >/dev/null 2>&1; [ $? -eq 101 ]; }; then
  saved_policy=$(mktemp "$policy.nabla.XXXXXX")
  mv "$policy" "$saved_policy"
fi
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && own_policy=1
fi
restore_policy() {
  if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi
  if [ -n "$saved_policy" ]; then mv "$saved_policy" "$policy"; fi
}
trap restore_policy EXIT

# A packaged service that got started or enabled anyway (a package that
# ignores policy-rc.d) is stopped and disabled: tests and benchmarks start
# their own instances, and a packaged one would hold the default port.
quiet_service() {
  local svc=$1
  if [ -d /run/systemd/system ] && systemctl cat "$svc.service" >/dev/null 2>&1; then
    systemctl disable --now "$svc.service" >/dev/null 2>&1 || true
  elif [ -x "/etc/init.d/$svc" ]; then
    "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
    update-rc.d "$svc" disable >/dev/null 2>&1 || true
  fi
}

apt-get install -y -qq --no-install-recommends "${missing[@]}"
for svc in nginx memcached redis-server; do quiet_service "$svc"; done
echo "install-deps: done"
