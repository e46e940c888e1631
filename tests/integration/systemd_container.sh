#!/bin/bash
# Boots this host's own root file system under a real systemd, in a
# throw-away container, and runs one script there as a service:
#
#   unshare -m --propagation private systemd_container.sh DIR SCRIPT [FILE...]
#
# DIR (empty, made by the caller) gets a tmpfs holding an overlay of /
# (writes go to the tmpfs, never to the host) with SCRIPT and the FILEs
# copied into /nabla-test/. systemd-nspawn boots it with a private network
# namespace (only loopback: whatever SCRIPT does to iptables stays there)
# straight into nabla-test.target, whose one service runs
# `/nabla-test/SCRIPT /nabla-test/FILE...` and then powers the container
# off. SCRIPT's output (DIR/out/log, on the tmpfs) is printed at the end,
# since the tmpfs goes with the caller's mount namespace. Exit status: SCRIPT's, or 77
# when the container did not boot far enough to run it (DIR/out/log says
# why), or 124 when it ran out of time (90 s).
set -u
dir=$1
script=$2
shift 2
[ "$(findmnt -n -o PROPAGATION /)" = private ] || {
  echo "systemd_container.sh: run it under unshare -m --propagation private" >&2
  exit 2
}
machine="nabla-test-$$"
trap 'cat "$dir/out/log" 2>/dev/null' EXIT
mount -t tmpfs -o mode=0755 tmpfs "$dir"
mkdir "$dir/upper" "$dir/work" "$dir/root" "$dir/out"
mount -t overlay overlay -o "lowerdir=/,upperdir=$dir/upper,workdir=$dir/work" "$dir/root"
root=$dir/root
mkdir -p "$root/nabla-test" "$root/nabla-out"
cp "$script" "$root/nabla-test/"
args=("/nabla-test/$(basename "$script")")
for f in "$@"; do
  cp "$f" "$root/nabla-test/"
  args+=("/nabla-test/$(basename "$f")")
done
cat >"$root/etc/systemd/system/nabla-test.target" <<EOF
[Unit]
Description=nabla test under systemd
Wants=basic.target nabla-test.service
After=basic.target nabla-test.service
EOF
cat >"$root/etc/systemd/system/nabla-test.service" <<EOF
[Unit]
Description=nabla test script
[Service]
Type=oneshot
ExecStartPre=/bin/touch /nabla-out/started
ExecStart=/bin/bash ${args[*]}
ExecStopPost=/bin/sh -c 'echo \$EXIT_STATUS > /nabla-out/status; systemctl poweroff --no-block'
StandardOutput=append:/nabla-out/log
StandardError=append:/nabla-out/log
TimeoutStartSec=80
EOF
status=0
timeout -k 5 90 systemd-nspawn --quiet --keep-unit --register=no --machine="$machine" \
  --directory="$root" --private-network --bind="$dir/out:/nabla-out" \
  --boot -- --unit=nabla-test.target --log-target=null >"$dir/out/nspawn.log" 2>&1 || status=$?
# nspawn leaves empty directories in the host's /run/systemd/nspawn.
rmdir "/run/systemd/nspawn/propagate/$machine" /run/systemd/nspawn/propagate \
  /run/systemd/nspawn/locks /run/systemd/nspawn \
  2>/dev/null || true
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
  echo "systemd_container.sh: the container ran out of time (90 s)" >>"$dir/out/log"
  exit 124
fi
if [ ! -e "$dir/out/started" ]; then
  {
    echo "systemd_container.sh: the container did not boot far enough to run the test" \
      "(systemd-nspawn exit $status):"
    tail -n 20 "$dir/out/nspawn.log"
  } >>"$dir/out/log"
  exit 77
fi
exit "$(cat "$dir/out/status" 2>/dev/null || echo 1)"
