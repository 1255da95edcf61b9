#!/usr/bin/env bash
# topo.p2p end to end: the real binary, its contained helper's NVML matrix and real peer copies
# against the fake NVIDIA libraries (a hung copy is named within the deadline, a healthy board
# passes with its matrix in the text report), and the matrix of another node's topology export.
source "$(dirname "$0")/lib.sh"
: "${PREFLIGHT_FAKE_GPU_LIB_DIR:?}" "${PREFLIGHT_FAKE_GPU_SCENARIOS_DIR:?}"
S=$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR

with_gpu() {  # with_gpu SCENARIO PREFLIGHT-ARGS...
  local scenario=$1
  shift
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$S/$scenario.json" "$PREFLIGHT" "$@"
}
summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }

# The copy GPU 0 -> GPU 1 never completes: FAIL naming the pair, within --timeout. --timeout 15
# gives the smoke test that runs first 2.25 s: a sanitized helper on a loaded machine has taken
# over 0.8 s (--timeout 5) to start, and the check then reports UNKNOWN, not the hung pair.
start=$(date +%s%N)
expect_rc 1 "a peer copy that hangs" -- with_gpu p2p-hang --timeout 15 --only topo.p2p --format json
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$elapsed_ms" -lt 15000 ] && pass "ended after ${elapsed_ms} ms" || fail "took ${elapsed_ms} ms"
expect_eq "$(check_status topo.p2p)" FAIL "topo.p2p"
expect_contains "$(summary_of topo.p2p)" "GPU0 (00000000:18:00.0) -> GPU1 (00000000:2A:00.0) failed at deadline" "summary"
expect_eq "$(json_get "[c['evidence']['table'][1][2] for c in d['checks'] if c['id']=='topo.p2p'][0]")" "NV18!" \
  "the hung pair's cell"

# Wrong data on 1 -> 2.
expect_rc 1 "a peer copy that corrupts data" -- with_gpu p2p-corrupt --only topo.p2p --format json
expect_contains "$(summary_of topo.p2p)" "GPU1 (00000000:2A:00.0) -> GPU2 (00000000:3A:00.0) failed at verify: word 17" \
  "summary"

# PCIe across sockets: WARN with the NCCL_P2P_LEVEL advice.
expect_rc 0 "GPUs across sockets on PCIe" -- with_gpu p2p-sys-pcie --only topo.p2p --format json
expect_eq "$(check_status topo.p2p)" WARN "topo.p2p"
expect_contains "$(summary_of topo.p2p)" "GPU0-GPU2 SYS" "summary"

# A healthy HGX board: PASS, and the matrix under the check in the text report.
expect_rc 0 "a healthy NVSwitch board" -- with_gpu nvlink-h100x8 --only topo.p2p
expect_contains "$(cat "$work/out")" "8 GPUs, all pairs NV18; 56 peer copies verified" "text report"
expect_contains "$(cat "$work/out")" "GPU0  X     NV18  NV18  NV18  NV18  NV18  NV18  NV18  0-55,112-167    0" "matrix row"
expect_contains "$(cat "$work/out")" "NV# = # bonded NVLinks" "legend"

# Another node's topology export, no driver: the 16 GPUs of a DGX-2 from hwloc alone.
xml="${PREFLIGHT_SOURCE_DIR}/../shared/fixtures/hwloc/nvidiaDGX2.xml"
if [ -f "$xml" ]; then
  expect_rc 0 "DGX-2 topology export" -- "$PREFLIGHT" --topology-xml "$xml" --only topo.p2p --format json
  expect_eq "$(json_get "[len(c['evidence']['table']) for c in d['checks'] if c['id']=='topo.p2p'][0]")" 17 \
    "matrix rows (header + 16 GPUs)"
  expect_eq "$(json_get "[c['evidence']['table'][0][16] for c in d['checks'] if c['id']=='topo.p2p'][0]")" GPU15 \
    "last GPU column"
  expect_rc 0 "DGX-2 topology export, text" -- "$PREFLIGHT" --topology-xml "$xml" --only topo.p2p
  expect_contains "$(cat "$work/out")" "GPU15" "text matrix"
else
  echo "skip: $xml is absent"
fi

finish
