#!/usr/bin/env bash
# topo.pcie_acs end to end over generated two-socket sysfs trees (--sysroot): ACS redirect on one
# switch FAILs naming the bridges and the setpci fix, 64-byte config spaces (what a non-root reader
# gets) are UNKNOWN, a clean tree PASSes; a Grace + ConnectX-8 DMA-direct node with the ACS that
# rdma-core's rdma_topo sets (redirect on) PASSes, and with one port off FAILs naming it; and the
# real machine as an unprivileged user never PASSes over a config space it could not read.
source "$(dirname "$0")/lib.sh"
gen="$PREFLIGHT_FIXTURES_DIR/sysfs/make_two_socket.py"
grace="$PREFLIGHT_FIXTURES_DIR/sysfs/make_grace_cx8.py"
py=${PYTHON3:-python3}
summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
remedy_of() { json_get "[c['remedy'] for c in d['checks'] if c['id']=='$1'][0]"; }

"$py" "$gen" "$work/rr" --redirect --group-type DMA || fail "generating the redirect tree"
"$py" "$gen" "$work/restricted" --config-bytes 64 || fail "generating the restricted tree"
"$py" "$gen" "$work/clean" || fail "generating the clean tree"
"$py" "$gen" "$work/vm" --redirect --hypervisor || fail "generating the VM tree"

expect_rc 1 "ACS redirect on the second switch" -- "$PREFLIGHT" --sysroot "$work/rr" --only topo.pcie_acs --format json
expect_eq "$(check_status topo.pcie_acs)" FAIL "topo.pcie_acs (redirect)"
expect_contains "$(summary_of topo.pcie_acs)" "0000:82:00.0 (SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+) above GPU 0000:83:00.0" "summary"
expect_contains "$(summary_of topo.pcie_acs)" "redirected to the root complex" "summary"
expect_contains "$(remedy_of topo.pcie_acs)" "setpci -s 0000:82:00.0 ECAP_ACS+0x6.w=0000" "remedy"
expect_contains "$(remedy_of topo.pcie_acs)" "iommu=pt" "remedy"
expect_eq "$(json_get "[b['ctrl'] for b in [c for c in d['checks'] if c['id']=='topo.pcie_acs'][0]['evidence']['bridges'] if b['bus_id']=='0000:82:01.0'][0]")" 0x001d "evidence ctrl of 0000:82:01.0"

expect_rc 3 "64-byte config spaces" -- "$PREFLIGHT" --sysroot "$work/restricted" --only topo.pcie_acs --format json
expect_eq "$(check_status topo.pcie_acs)" UNKNOWN "topo.pcie_acs (restricted)"
expect_contains "$(summary_of topo.pcie_acs)" "config space of 0000:00:01.0 is 64 bytes" "summary"
expect_contains "$(summary_of topo.pcie_acs)" "CAP_SYS_ADMIN" "summary"
expect_contains "$(summary_of topo.pcie_acs)" "different IOMMU groups" "summary"

expect_rc 0 "a clean tree" -- "$PREFLIGHT" --sysroot "$work/clean" --only topo.pcie_acs --format json
expect_eq "$(check_status topo.pcie_acs)" PASS "topo.pcie_acs (clean)"

expect_rc 0 "redirect in a VM" -- "$PREFLIGHT" --sysroot "$work/vm" --only topo.pcie_acs --format json
expect_eq "$(check_status topo.pcie_acs)" PASS "topo.pcie_acs (VM)"
expect_contains "$(summary_of topo.pcie_acs)" "in a VM" "summary"

"$py" "$grace" "$work/grace" || fail "generating the Grace + ConnectX-8 tree"
"$py" "$grace" "$work/grace-off" --dsp1-redirect-off || fail "generating the Grace tree with DSP1 off"
expect_rc 0 "Grace + ConnectX-8 DMA-direct as rdma_topo sets it" -- "$PREFLIGHT" --sysroot "$work/grace" --only topo.pcie_acs --format json
expect_eq "$(check_status topo.pcie_acs)" PASS "topo.pcie_acs (DMA-direct)"
expect_contains "$(summary_of topo.pcie_acs)" "on this ConnectX DMA-direct platform 6 of the 9 bridges above 1 GPU, 2 NICs and 1 ConnectX DMA function have the ACS Control that NVIDIA's rdma_topo" "summary"
expect_eq "$(json_get "[b['rdma_topo_expects'] for b in [c for c in d['checks'] if c['id']=='topo.pcie_acs'][0]['evidence']['bridges'] if b['bus_id']=='0008:02:01.0'][0]")" xx101x1 "evidence: rdma_topo's mask of DSP1"

expect_rc 1 "DMA-direct with ReqRedir off on DSP1" -- "$PREFLIGHT" --sysroot "$work/grace-off" --only topo.pcie_acs --format json
expect_eq "$(check_status topo.pcie_acs)" FAIL "topo.pcie_acs (DMA-direct, DSP1 off)"
expect_contains "$(summary_of topo.pcie_acs)" "0008:02:01.0 (the ConnectX switch port toward GPU 0008:06:00.0) has SrcValid+ ReqRedir- CmpltRedir- UpstreamFwd+, rdma_topo expects SrcValid+ ReqRedir+ CmpltRedir- UpstreamFwd+ (xx101x1)" "summary"
expect_contains "$(remedy_of topo.pcie_acs)" "setpci -s 0008:02:01.0 ECAP_ACS+0x6.w=0015" "remedy"
expect_contains "$(remedy_of topo.pcie_acs)" "rdma_topo write-grub-acs" "remedy"

# This machine, as an unprivileged user: whatever it finds, a restricted config space is never PASS.
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ] &&
  setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$PREFLIGHT" 2>/dev/null; then
  rc=0
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$PREFLIGHT" --only topo.pcie_acs --format json \
    >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" -lt 5 ] && pass "unprivileged run: exit $rc" || fail "unprivileged run: exit $rc"
  st=$(check_status topo.pcie_acs)
  restricted=$(json_get "sum(1 for b in d['ranks'][0]['facts']['pcie']['bridges'] if b['state'] in ('restricted','unreadable'))")
  if [ "$restricted" -gt 0 ]; then
    [ "$st" != PASS ] && pass "unprivileged: $restricted bridge(s) unread, status $st" || fail "PASS over $restricted unread bridge(s)"
  else
    pass "unprivileged: status $st (no bridge above a GPU/NIC was restricted here)"
  fi
else
  echo "skip: the unprivileged run needs root, setpriv and a binary user nobody can run"
fi
finish
