#!/usr/bin/env bash
# net.socket_ifname on real interfaces in a private network namespace: a veth pair with one end
# moved in as eth0 (IPv4 and IPv6 addresses), then eth0 down, then eth1 and eth10 both up (the
# prefix trap), then an IPv4-only interface with NCCL_SOCKET_FAMILY=AF_INET6. The peer ends live in
# a second private namespace; both are removed on exit, also on failure. Needs root and `ip netns`.
# Env: PREFLIGHT (binary), PYTHON3. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (ip netns add)"
command -v ip >/dev/null || skip_all "no 'ip' command"

ns="preflight-net-$$-$RANDOM"
peer="$ns-peer"
cleanup() {
  ip netns del "$ns" 2>/dev/null
  ip netns del "$peer" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$ns" 2>/dev/null || skip_all "ip netns add failed (network namespaces are not available here)"
ip netns add "$peer" 2>/dev/null || skip_all "ip netns add failed for the peer namespace"

unset NCCL_SOCKET_IFNAME NCCL_SOCKET_FAMILY NCCL_COMM_ID GLOO_SOCKET_IFNAME MASTER_ADDR MASTER_PORT
export NCCL_CONF_FILE=/dev/null
in_ns() { timeout 30 ip netns exec "$ns" "$@"; }
in_peer() { timeout 30 ip netns exec "$peer" "$@"; }
summary() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
run() { in_ns "$PREFLIGHT" --format json --only net.socket_ifname "$@"; }

# veth NAME ADDR4 [ADDR6]: NAME inside the namespace, its peer up in the peer namespace.
veth() {
  local name=$1 peer_name="p$1"
  ip link add "$name" netns "$ns" type veth peer name "$peer_name" netns "$peer" || return 1
  [ -n "${3:-}" ] || in_ns sysctl -qw "net.ipv6.conf.$name.disable_ipv6=1" || return 1
  in_ns ip addr add "$2" dev "$name" || return 1
  [ -z "${3:-}" ] || in_ns ip -6 addr add "$3" dev "$name" nodad || return 1
  in_peer ip link set "$peer_name" up && in_ns ip link set "$name" up
}
# wait_running NAME: until the kernel reports the link up (carrier on both ends), at most 5 s.
wait_running() {
  local _
  for _ in $(seq 50); do
    [ "$(in_ns cat "/sys/class/net/$1/operstate" 2>/dev/null)" = up ] && return 0
    sleep 0.1
  done
  return 1
}

in_ns ip link set lo up
veth eth0 198.51.100.2/24 fd10::2/64 || skip_all "cannot create a veth pair in a namespace here"
wait_running eth0 || fail "eth0 did not come up"

NCCL_SOCKET_IFNAME=eth expect_rc 0 "NCCL_SOCKET_IFNAME=eth, eth0 up" -- run
expect_eq "$(check_status net.socket_ifname)" PASS "eth0 up"
expect_contains "$(summary net.socket_ifname)" "NCCL's bootstrap will use eth0 198.51.100.2/24" "eth0 up summary"

in_ns ip link set eth0 down
NCCL_SOCKET_IFNAME=eth expect_rc 1 "NCCL_SOCKET_IFNAME=eth, eth0 down" -- run
expect_eq "$(check_status net.socket_ifname)" FAIL "eth0 down"
expect_contains "$(summary net.socket_ifname)" "matches no usable interface: eth0 is not running" "eth0 down summary"
in_ns ip link set eth0 up
wait_running eth0 || fail "eth0 did not come back up"

veth eth1 198.51.101.2/24 || fail "could not create eth1"
veth eth10 198.51.101.3/24 || fail "could not create eth10"
wait_running eth1 && wait_running eth10 || fail "eth1/eth10 did not come up"
NCCL_SOCKET_IFNAME=eth1 expect_rc 0 "NCCL_SOCKET_IFNAME=eth1 with eth1 and eth10 up" -- run
expect_eq "$(check_status net.socket_ifname)" WARN "prefix trap"
expect_contains "$(summary net.socket_ifname)" "eth1 also matches eth10" "prefix trap summary"
expect_eq "$(json_get "d['checks'][0]['evidence']['bootstrap']['interface']")" eth1 "prefix trap bootstrap"
NCCL_SOCKET_IFNAME==eth1 expect_rc 0 "NCCL_SOCKET_IFNAME==eth1" -- run
expect_eq "$(check_status net.socket_ifname)" PASS "exact eth1"

NCCL_SOCKET_IFNAME==eth1 NCCL_SOCKET_FAMILY=AF_INET6 expect_rc 1 "AF_INET6 with only an IPv4 address" -- run
expect_eq "$(check_status net.socket_ifname)" FAIL "AF_INET6"
expect_contains "$(summary net.socket_ifname)" "eth1 has no IPv6 address" "AF_INET6 summary"
finish
