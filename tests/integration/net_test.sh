#!/usr/bin/env bash
# net.socket_ifname, net.master and net.ib as a user meets them: this machine's real interfaces (a
# running interface with an IPv4 address besides lo, e.g. eth0), a listener this test starts on
# 127.0.0.1 (port chosen by the kernel, killed at the end), a free port, a name that cannot
# resolve, and captured sysfs trees (--sysroot) of an RDMA node and a node without RDMA.
# Env: PREFLIGHT (binary), PREFLIGHT_FIXTURES_DIR, PYTHON3. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/lib.sh"
roots="${PREFLIGHT_FIXTURES_DIR:?}/net"
py="${PYTHON3:-python3}"
listener=""
trap '[ -n "$listener" ] && kill "$listener" 2>/dev/null; rm -rf "$work"' EXIT

# Only what this test sets may steer NCCL and PyTorch.
unset NCCL_SOCKET_IFNAME NCCL_SOCKET_FAMILY NCCL_COMM_ID NCCL_IB_HCA NCCL_IB_DISABLE GLOO_SOCKET_IFNAME \
  MASTER_ADDR MASTER_PORT TORCHELASTIC_RUN_ID
export NCCL_CONF_FILE=/dev/null

summary() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
remedy() { json_get "[c['remedy'] for c in d['checks'] if c['id']=='$1'][0]"; }
run() { timeout 60 "$PREFLIGHT" --format json "$@"; }

command -v ip >/dev/null || skip_all "no 'ip' command"
# The first running interface with an IPv4 address other than loopback (eth0 on the CI machine).
iface=$(ip -o -4 addr show up 2>/dev/null | awk '$2 != "lo" {print $2; exit}')
[ -n "$iface" ] || skip_all "no interface besides lo with an IPv4 address"
addr=$(ip -o -4 addr show dev "$iface" | awk '{split($4, a, "/"); print a[1]; exit}')
prefix=$(printf '%s' "$iface" | sed 's/[0-9]*$//')

# --- net.socket_ifname ---------------------------------------------------------------------------
NCCL_SOCKET_IFNAME=doesnotexist expect_rc 1 "NCCL_SOCKET_IFNAME=doesnotexist" -- run --only net.socket_ifname
expect_eq "$(check_status net.socket_ifname)" FAIL "doesnotexist"
expect_contains "$(summary net.socket_ifname)" "NCCL_SOCKET_IFNAME=doesnotexist matches no interface; interfaces here:" "doesnotexist summary"
expect_contains "$(summary net.socket_ifname)" "$iface (running" "doesnotexist lists $iface"
expect_contains "$(summary net.socket_ifname)" "lo (running" "doesnotexist lists lo"

NCCL_SOCKET_IFNAME=$prefix expect_rc 0 "NCCL_SOCKET_IFNAME=$prefix" -- run --only net.socket_ifname
expect_eq "$(check_status net.socket_ifname)" PASS "prefix $prefix"
expect_contains "$(summary net.socket_ifname)" "NCCL's bootstrap will use $iface $addr/" "prefix summary"
expect_eq "$(json_get "d['checks'][0]['evidence']['bootstrap']['interface']")" "$iface" "bootstrap evidence"

expect_rc 0 "default selection" -- run --only net.socket_ifname
expect_contains "$(summary net.socket_ifname)" "selected by NCCL's default order" "default summary"

NCCL_SOCKET_IFNAME==lo expect_rc 1 "loopback in a two-node job" -- run --only net.socket_ifname --expect-nodes 2
expect_contains "$(summary net.socket_ifname)" "loopback interface lo" "loopback summary"

GLOO_SOCKET_IFNAME=nosuchif0 expect_rc 1 "GLOO_SOCKET_IFNAME=nosuchif0" -- run --only net.socket_ifname
expect_contains "$(summary net.socket_ifname)" "GLOO_SOCKET_IFNAME names nosuchif0, which does not exist" "gloo summary"

# --- net.master ----------------------------------------------------------------------------------
expect_rc 0 "MASTER_ADDR/MASTER_PORT unset" -- run --only net.master
expect_eq "$(check_status net.master)" SKIP "unset"

"$py" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
open(sys.argv[1], "w").write(str(s.getsockname()[1])); time.sleep(120)' "$work/port" &
listener=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
held=$(cat "$work/port" 2>/dev/null)
if [ -z "$held" ]; then fail "the test listener did not start"; else
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$held expect_rc 1 "MASTER_PORT $held held by a listener" -- run --only net.master
  expect_eq "$(check_status net.master)" FAIL "held port"
  expect_contains "$(summary net.master)" "MASTER_PORT $held is already in use on this host" "held summary"
  expect_contains "$(remedy net.master)" "ss -ltnp 'sport = :$held'" "held remedy"
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$held TORCHELASTIC_RUN_ID=job1 expect_rc 0 "held port under torchrun" -- run --only net.master
  expect_eq "$(json_get "d['checks'][0]['evidence']['torchrun']")" True "torchrun evidence"  # WARN at most: the port is ephemeral
fi
kill "$listener" 2>/dev/null; wait "$listener" 2>/dev/null; listener=""

# A free port below the ephemeral range (no WARN).
free=$("$py" -c 'import socket
for p in range(29500, 29700):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); print(p); break
    except OSError: pass
    finally: s.close()')
MASTER_ADDR=127.0.0.1 MASTER_PORT=$free expect_rc 0 "MASTER_PORT $free free" -- run --only net.master
expect_eq "$(check_status net.master)" PASS "free port"
expect_contains "$(summary net.master)" "MASTER_PORT $free is free on this host, the master" "free summary"

MASTER_ADDR=nonexistent.invalid MASTER_PORT=29500 expect_rc 1 "unresolvable MASTER_ADDR" -- run --only net.master
expect_eq "$(check_status net.master)" FAIL "nonexistent.invalid"
expect_contains "$(summary net.master)" "MASTER_ADDR=nonexistent.invalid d" "unresolvable summary"

MASTER_ADDR=127.0.0.1 MASTER_PORT=70000 expect_rc 1 "MASTER_PORT=70000" -- run --only net.master
expect_contains "$(summary net.master)" "is not a port number in 1..65535" "bad port summary"

MASTER_ADDR=localhost MASTER_PORT=$free expect_rc 1 "loopback MASTER_ADDR in a two-node job" -- run --only net.master --expect-nodes 2
expect_contains "$(summary net.master)" "resolves to the loopback address" "loopback master summary"

# --- net.ib on captured trees --------------------------------------------------------------------
expect_rc 0 "RDMA node, NCCL_IB_HCA unset" -- run --only net.ib --sysroot "$roots/rdma-node"
expect_eq "$(check_status net.ib)" WARN "rdma-node"
expect_contains "$(summary net.ib)" "mix link layers" "rdma-node summary"
expect_eq "$(json_get "d['checks'][0]['evidence']['gpudirect_rdma']")" True "gpudirect evidence"

NCCL_IB_HCA=mlx5_1 expect_rc 0 "NCCL_IB_HCA=mlx5_1 prefix trap" -- run --only net.ib --sysroot "$roots/rdma-node"
expect_contains "$(summary net.ib)" "mlx5_1 also selects mlx5_10" "trap summary"
expect_contains "$(remedy net.ib)" "export NCCL_IB_HCA==mlx5_1" "trap remedy"

NCCL_IB_HCA==mlx5_1 expect_rc 0 "NCCL_IB_HCA==mlx5_1" -- run --only net.ib --sysroot "$roots/rdma-node"
expect_eq "$(check_status net.ib)" PASS "exact mlx5_1"

NCCL_IB_HCA==mlx5_10 expect_rc 1 "NCCL_IB_HCA==mlx5_10 (down)" -- run --only net.ib --sysroot "$roots/rdma-node"
expect_contains "$(summary net.ib)" "selects no ACTIVE port" "down summary"

NCCL_IB_HCA=mlx5_9 expect_rc 1 "NCCL_IB_HCA=mlx5_9 (missing)" -- run --only net.ib --sysroot "$roots/rdma-node"
expect_contains "$(summary net.ib)" "matches no RDMA device" "missing summary"

NCCL_IB_DISABLE=1 expect_rc 0 "NCCL_IB_DISABLE=1" -- run --only net.ib --sysroot "$roots/rdma-node"
expect_contains "$(summary net.ib)" "falls back to TCP sockets" "disable summary"

expect_rc 0 "no RDMA" -- run --only net.ib --sysroot "$roots/no-rdma"
expect_eq "$(check_status net.ib)" SKIP "no-rdma"

expect_rc 3 "garbage tree" -- run --only 'net.ib,net.socket_ifname' --sysroot "$roots/garbage"
expect_eq "$(check_status net.ib)" UNKNOWN "garbage net.ib"
expect_eq "$(check_status net.socket_ifname)" UNKNOWN "garbage net.socket_ifname"

MASTER_ADDR=gpu-a MASTER_PORT=29500 expect_rc 0 "127.0.1.1 hostname trap (one node)" -- run --only net.master --sysroot "$roots/rdma-node"
expect_eq "$(check_status net.master)" WARN "127.0.1.1 trap"
finish
