#!/bin/bash
# Runs inside a booted systemd-nspawn container (tests/integration/
# systemd_container.sh starts it, package_systemd_test.cc judges it): the
# Debian package DEB under a real systemd and a real dpkg. Install, the
# units' start, stop, restart and hardening (systemd-analyze security), a
# SIGKILLed daemon's chains removed by ExecStopPost, an upgrade that
# restarts the daemons that ran and leaves a stopped one stopped, remove,
# and purge (group nabla and /run/nabla gone, a key kept as root's).
#
#   package_under_systemd.sh DEB
#
# One line per check: "ok: WHAT" or "FAIL: WHAT (what was seen)"; exits 1
# if any failed. The container has its own network namespace and file
# system overlay, so nothing here reaches the host.
# shellcheck disable=SC2034 # the pids and logs below are read in eval'd checks
set -u
deb=$1
failures=0
ok() { echo "ok: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# check WHAT COMMAND...: ok when COMMAND succeeds.
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
# wait_until TENTHS COMMAND...: polls COMMAND every 0.1 s, at most TENTHS times.
wait_until() {
  local tenths=$1
  shift
  for _ in $(seq "$tenths"); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  "$@"
}
main_pid() { systemctl show -p MainPID --value "$1"; }
substate_is() { [ "$(systemctl show -p SubState --value "$1")" = "$2" ]; }
active() { systemctl is-active --quiet "$1"; }
inactive() { ! systemctl is-active --quiet "$1"; }
# injectd's chains in TABLE (mangle, or filter where older builds had them).
injectd_chains() { iptables -w 5 -t "$1" -S | grep -Ec -- '^-N NABLA-(OUT|IN|FWD)$'; }
has_injectd_chains() { [ "$(injectd_chains mangle)" = 3 ]; }
no_injectd_chains() { [ "$(injectd_chains mangle)" = 0 ] && [ "$(injectd_chains filter)" = 0 ]; }
sniffd_chain_of() { iptables -w 5 -S | grep -q -- "^-N nabla-sniffd-$1\$"; }
no_sniffd_chain() { ! iptables -w 5 -S | grep -q -- '^-N nabla-sniffd-'; }
listening() { ss -Hltn "sport = :$1" | grep -q LISTEN; }
units="nabla-injectd nabla-sniffd nabla-loadd"

# A clean start: the host this container overlays may have the package.
if dpkg-query -W -f='${Status}' nabla 2>/dev/null | grep -q 'install ok installed'; then
  dpkg --purge nabla >/dev/null 2>&1
fi
getent passwd nabla-load >/dev/null && userdel nabla-load
getent group nabla >/dev/null && groupdel nabla
rm -rf /etc/nabla /run/nabla

echo "systemd: $(systemctl --version | head -n 1)"
check "dpkg -i installs the package" dpkg -i "$deb"
check "install makes the group nabla" getent group nabla
check "install makes the user nabla-load in group nabla" [ "$(id -gn nabla-load)" = nabla ]
for u in $units; do
  check "install leaves $u disabled and stopped (no key yet)" \
    eval '[ "$(systemctl is-enabled "$u.service")" = disabled ] && inactive "$u"'
done

nabla key new /etc/nabla/key >/dev/null
chgrp nabla /etc/nabla/key && chmod 0640 /etc/nabla/key
acct_before=$(cat /proc/sys/net/netfilter/nf_conntrack_acct 2>/dev/null || echo none)
# A chain of somebody else's, which no cleanup may touch.
iptables -w 5 -t mangle -N NABLA-SOMEONE-ELSES
iptables -w 5 -N keep-me

check "systemctl enable --now starts the three units" \
  systemctl enable --now nabla-injectd.service nabla-sniffd.service nabla-loadd.service
check "injectd serves: port 7311 and its 3 chains" wait_until 100 eval 'listening 7311 && has_injectd_chains'
check "sniffd serves: port 7312 and its conntrack chain" \
  wait_until 100 eval 'listening 7312 && sniffd_chain_of "$(main_pid nabla-sniffd)"'
check "loadd serves: port 7313, as user nabla-load" \
  wait_until 100 eval 'listening 7313 && [ "$(ps -o user= -p "$(main_pid nabla-loadd)")" = nabla-load ]'

# restart: a new process that serves again.
before=$(main_pid nabla-injectd)
check "systemctl restart nabla-injectd" systemctl restart nabla-injectd.service
check "restart runs a new injectd that serves" \
  wait_until 100 eval '[ "$(main_pid nabla-injectd)" != "$before" ] && listening 7311 && has_injectd_chains'
# stop: the daemon removes its rules.
check "systemctl stop nabla-sniffd" systemctl stop nabla-sniffd.service
check "a stopped sniffd left no chain" no_sniffd_chain
check "systemctl start nabla-sniffd" systemctl start nabla-sniffd.service
check "sniffd serves again" wait_until 100 eval 'listening 7312 && sniffd_chain_of "$(main_pid nabla-sniffd)"'

# SIGKILL: the daemon cannot clean up; ExecStopPost does, before the
# restart (SubState auto-restart: stop-post done, the next start not begun).
killed=$(main_pid nabla-injectd)
systemctl kill -s KILL --kill-who=main nabla-injectd.service
check "a SIGKILLed injectd goes to auto-restart" wait_until 50 substate_is nabla-injectd auto-restart
check "ExecStopPost removed the SIGKILLed injectd's chains" no_injectd_chains
check "and left the others' alone (sniffd's, another's in mangle, one in filter)" \
  eval 'sniffd_chain_of "$(main_pid nabla-sniffd)" && iptables -w 5 -t mangle -S NABLA-SOMEONE-ELSES >/dev/null && iptables -w 5 -S keep-me >/dev/null'
check "Restart=on-failure brings injectd back with its chains" \
  wait_until 100 eval '[ "$(main_pid nabla-injectd)" != "$killed" ] && [ "$(main_pid nabla-injectd)" != 0 ] && listening 7311 && has_injectd_chains'
check "the journal has ExecStopPost's line" \
  eval 'journalctl -q -u nabla-injectd.service | grep -Eq "nabla-injectd --cleanup: removed [0-9]+ NABLA chains"'

check "sniffd turned nf_conntrack_acct on (it was $acct_before)" \
  eval '[ "$(cat /proc/sys/net/netfilter/nf_conntrack_acct)" = 1 ] && [ "$acct_before" != 1 ]'
killed=$(main_pid nabla-sniffd)
systemctl kill -s KILL --kill-who=main nabla-sniffd.service
check "a SIGKILLed sniffd goes to auto-restart" wait_until 50 substate_is nabla-sniffd auto-restart
check "ExecStopPost removed the SIGKILLed sniffd's chain" eval '! sniffd_chain_of "$killed"'
check "and restored nf_conntrack_acct ($acct_before)" \
  [ "$(cat /proc/sys/net/netfilter/nf_conntrack_acct 2>/dev/null || echo none)" = "$acct_before" ]
check "and left injectd's chains and the others' alone" \
  eval 'has_injectd_chains && iptables -w 5 -S keep-me >/dev/null'
check "Restart=on-failure brings sniffd back" \
  wait_until 100 eval '[ "$(main_pid nabla-sniffd)" != "$killed" ] && listening 7312'

# The hardening as systemd itself reads it, from the running units.
for u in $units; do
  exposure=$(systemd-analyze security "$u.service" 2>&1 | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
  echo "exposure: $u $exposure"
  check "systemd-analyze security rates $u" [ -n "$exposure" ]
done

# Upgrade (the same package again: prerm upgrade, postinst configure OLD).
# The daemons that ran run again on the new files; a stopped one stays.
systemctl stop nabla-loadd.service
injectd_pid=$(main_pid nabla-injectd)
sniffd_pid=$(main_pid nabla-sniffd)
check "dpkg -i again (an upgrade)" dpkg -i "$deb"
check "the upgrade restarted injectd: a new process that serves" \
  wait_until 100 eval '[ "$(main_pid nabla-injectd)" != "$injectd_pid" ] && [ "$(main_pid nabla-injectd)" != 0 ] && listening 7311 && has_injectd_chains'
check "the upgrade restarted sniffd: a new process that serves" \
  wait_until 100 eval '[ "$(main_pid nabla-sniffd)" != "$sniffd_pid" ] && [ "$(main_pid nabla-sniffd)" != 0 ] && listening 7312'
check "the upgrade left the stopped loadd stopped" inactive nabla-loadd
check "the upgrade kept the units enabled" \
  [ "$(systemctl is-enabled nabla-injectd.service nabla-loadd.service | sort -u)" = enabled ]
check "the upgrade kept the key, group and user" \
  eval '[ -f /etc/nabla/key ] && getent group nabla >/dev/null && getent passwd nabla-load >/dev/null'

# Remove: every daemon stopped, every chain gone; the key and group stay.
systemctl start nabla-loadd.service
check "dpkg --remove" dpkg --remove nabla
for u in $units; do check "remove stopped $u" inactive "$u"; done
check "remove left no chain of injectd's or sniffd's" eval 'no_injectd_chains && no_sniffd_chain'
check "remove kept the group, the user and the key" \
  eval 'getent group nabla >/dev/null && getent passwd nabla-load >/dev/null && [ -f /etc/nabla/key ]'

# Purge: the group, the user and /run/nabla go; the key stays, root's.
purge_log=$(dpkg --purge nabla 2>&1)
check "dpkg --purge" [ $? = 0 ]
check "purge removed the group nabla" eval '! getent group nabla >/dev/null'
check "purge removed the user nabla-load" eval '! getent passwd nabla-load >/dev/null'
check "purge removed /run/nabla" [ ! -e /run/nabla ]
check "purge removed the units' enablement links" \
  eval '! ls /etc/systemd/system/multi-user.target.wants/nabla-* >/dev/null 2>&1'
check "purge kept /etc/nabla/key as root:root 0640" \
  [ "$(stat -c '%U:%G %a' /etc/nabla/key 2>&1)" = "root:root 640" ]
check "purge said so" eval 'grep -q "purge keeps what is left in /etc/nabla, now of group root" <<<"$purge_log"'

# Purge without a key of the admin's leaves no /etc/nabla.
rm -f /etc/nabla/key
dpkg -i "$deb" >/dev/null 2>&1
mkdir -p /run/nabla && touch /run/nabla/testbed-state  # what the CLI keeps there
dpkg --purge nabla >/dev/null 2>&1
check "install then purge without a key leaves no /etc/nabla, no /run/nabla, no group" \
  eval '[ ! -e /etc/nabla ] && [ ! -e /run/nabla ] && ! getent group nabla >/dev/null'

iptables -w 5 -t mangle -X NABLA-SOMEONE-ELSES
iptables -w 5 -X keep-me
echo "checks failed: $failures"
[ "$failures" = 0 ]
