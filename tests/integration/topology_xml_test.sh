#!/usr/bin/env bash
# --topology-xml and net.gpu_nic_affinity as a user meets them: our own hand-written exports (a
# balanced 2-socket node: PASS; GPUs crowding one HCA: WARN; a GPU across the socket from the only
# HCA: WARN), hwloc's own test topologies of real GPU servers, kept outside the repository in the
# directory $hwloc names and skipped when absent (GPU -> NUMA map in the JSON
# report's facts, the duplicate-bus-id HCA), a missing and a garbage file (UNKNOWN naming it, exit 3),
# and the live machine.
# Env: PREFLIGHT (binary), PREFLIGHT_SOURCE_DIR, PREFLIGHT_FIXTURES_DIR, PYTHON3. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/lib.sh"
own="${PREFLIGHT_FIXTURES_DIR:?}/topology"
hwloc="${PREFLIGHT_SOURCE_DIR:?}/../shared/fixtures/hwloc"
id=net.gpu_nic_affinity

summary() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$id'][0]"; }
remedy() { json_get "[c['remedy'] for c in d['checks'] if c['id']=='$id'][0]"; }
# gpu_numa: "bus:numa;bus:numa;..." from ranks[0].facts.topology.
gpu_numa() {
  json_get "';'.join(g['bus_id'] + ':' + ','.join(map(str, g['numa_nodes'])) for g in d['ranks'][0]['facts']['topology']['value']['gpus'])"
}

# --- our own fixtures ----------------------------------------------------------------------------
expect_rc 0 "balanced node" -- "$PREFLIGHT" --topology-xml "$own/2s-4gpu-2nic-switch.xml" --only $id --format json
expect_eq "$(check_status $id)" PASS "balanced"
expect_eq "$(gpu_numa)" "0000:03:00.0:0;0000:04:00.0:0;0000:83:00.0:1;0000:84:00.0:1" "balanced GPU -> NUMA"
expect_eq "$(json_get "d['ranks'][0]['facts']['topology']['value']['this_system']")" False "balanced this_system"
expect_contains "$(json_get "d['ranks'][0]['facts']['topology']['source']")" "--topology-xml $own/2s-4gpu-2nic-switch.xml" "source"
expect_contains "$(summary)" "GPU 0000:83:00.0 (NUMA 1) → mlx5_1 PIX" "balanced summary"

expect_rc 0 "balanced node, text" -- "$PREFLIGHT" --topology-xml "$own/2s-4gpu-2nic-switch.xml" --only $id
expect_contains "$(cat "$work/out")" "PASS     $id" "text report"

expect_rc 0 "balanced node with NCCL_IB_HCA==mlx5_0" -- env NCCL_IB_HCA==mlx5_0 "$PREFLIGHT" --topology-xml "$own/2s-4gpu-2nic-switch.xml" --only $id --format json
expect_eq "$(check_status $id)" WARN "one HCA selected"
expect_contains "$(remedy)" "export NCCL_IB_HCA==mlx5_0,mlx5_1" "one HCA remedy"

expect_rc 1 "balanced node with NCCL_IB_HCA==mlx5_0 --strict" -- env NCCL_IB_HCA==mlx5_0 "$PREFLIGHT" --topology-xml "$own/2s-4gpu-2nic-switch.xml" --only $id --strict

expect_rc 0 "crowded HCA" -- "$PREFLIGHT" --topology-xml "$own/2s-2gpu-crowded-nic.xml" --only $id --format json
expect_eq "$(check_status $id)" WARN "crowded"
expect_contains "$(summary)" "mlx5_0 is the nearest NIC of GPUs 0000:03:00.0, 0000:04:00.0, while mlx5_1 is nearest to no GPU" "crowded summary"

expect_rc 0 "GPU far from the only HCA" -- "$PREFLIGHT" --topology-xml "$own/2s-gpu-far-from-nic.xml" --only $id --format json
expect_eq "$(check_status $id)" WARN "far"
expect_contains "$(summary)" "GPU 0001:41:00.0 (NUMA 1) → mlx5_0 (NUMA 0) SYS" "far summary"
expect_eq "$(gpu_numa)" "0001:41:00.0:1" "far GPU -> NUMA (the CPU-less GPU-memory node 2 left out)"

# --- files that are not topologies ---------------------------------------------------------------
expect_rc 3 "missing file" -- "$PREFLIGHT" --topology-xml "$work/no-such-node.xml" --only $id --format json
expect_eq "$(check_status $id)" UNKNOWN "missing"
expect_contains "$(summary)" "$work/no-such-node.xml" "missing summary"
expect_contains "$(summary)" "No such file or directory" "missing summary"
expect_eq "$(json_get "d['ranks'][0]['facts']['topology']['error']")" not_found "missing fact"

printf 'not <xml\n' >"$work/garbage.xml"
expect_rc 3 "garbage file, text" -- "$PREFLIGHT" --topology-xml "$work/garbage.xml" --only $id
expect_contains "$(cat "$work/out")" "UNKNOWN  $id" "garbage text"
expect_contains "$(cat "$work/out")" "$work/garbage.xml" "garbage text"
expect_eq "$(cat "$work/err")" "" "garbage stderr"

# --- hwloc's real GPU servers --------------------------------------------------------------------
if [ -f "$hwloc/nvidiaDGX2.xml" ]; then
  expect_rc 0 "HP SL390s" -- "$PREFLIGHT" --topology-xml "$hwloc/24em64t-2n6c2t-pci.xml" --only $id --format json
  expect_eq "$(check_status $id)" WARN "24em64t"
  expect_eq "$(gpu_numa)" "0000:06:00.0:0;0000:11:00.0:1;0000:14:00.0:1" "24em64t GPU -> NUMA"
  expect_eq "$(json_get "[g['nearest'][0]['nic'] + ' ' + g['nearest'][0]['path'] for g in d['checks'][0]['evidence']['per_gpu']]")" \
    "['mlx4_0 PHB', 'mlx4_0 SYS', 'mlx4_0 SYS']" "24em64t nearest NICs"

  for f in 32em64t-2n8c2t-pci-wholeio.xml 32em64t-2n8c2t-pci-normalio.xml; do
    expect_rc 0 "$f" -- "$PREFLIGHT" --topology-xml "$hwloc/$f" --only $id --format json
    expect_eq "$(check_status $id)" WARN "$f"
    expect_eq "$(gpu_numa)" "0000:03:00.0:0;0000:83:00.0:1;0000:84:00.0:1" "$f GPU -> NUMA"
    expect_eq "$(json_get "[n['numa_nodes'] for n in d['ranks'][0]['facts']['topology']['value']['nics'] if 'mlx5_0' in n['os_devices']]")" \
      "[[1]]" "$f: the duplicate-bus-id HCA is on NUMA 1"
  done

  expect_rc 0 "SGI UV2000 (disallowed sockets)" -- "$PREFLIGHT" --topology-xml "$hwloc/64intel64-3g2n+2n-irregulargroups+pci.xml" --only $id --format json
  expect_eq "$(gpu_numa)" "0002:01:00.0:4;0004:01:00.0:7" "64intel64 GPU -> NUMA"

  expect_rc 0 "DGX-2" -- "$PREFLIGHT" --topology-xml "$hwloc/nvidiaDGX2.xml" --only $id --format json
  expect_eq "$(check_status $id)" SKIP "DGX-2 (no NIC in the export)"
  expect_eq "$(json_get "sorted(set(','.join(map(str, g['numa_nodes'])) for g in d['ranks'][0]['facts']['topology']['value']['gpus']))")" \
    "['0', '1']" "DGX-2 GPU NUMA nodes"
  expect_eq "$(json_get "len(d['ranks'][0]['facts']['topology']['value']['gpus'])")" 16 "DGX-2 GPUs"

  expect_rc 0 "POWER8" -- "$PREFLIGHT" --topology-xml "$hwloc/power8gpudistances.xml" --only $id --format json
  expect_eq "$(gpu_numa)" "0002:01:00.0:0;0003:01:00.0:0;000a:01:00.0:1;000b:01:00.0:1" "power8 GPU -> NUMA"

  expect_rc 0 "no-I/O export" -- "$PREFLIGHT" --topology-xml "$hwloc/32em64t-2n8c2t-pci-noio.xml" --only $id
  expect_contains "$(cat "$work/out")" "no NVIDIA GPU in the topology" "noio text"
else
  echo "skipping the hwloc fixtures: $hwloc is absent"
fi

# --- the live machine ----------------------------------------------------------------------------
rc=0
"$PREFLIGHT" --only $id --format json >"$work/out" 2>"$work/err" || rc=$?
src=$(json_get "d['ranks'][0]['facts']['topology'].get('source', '')")
expect_contains "$src" "this machine (hwloc " "live source"
status=$(check_status $id)
case "$status" in PASS | WARN | SKIP) pass "live status $status (exit $rc)" ;; *) fail "live status $status" ;; esac

expect_rc 3 "--sysroot without --topology-xml" -- "$PREFLIGHT" --sysroot "$PREFLIGHT_FIXTURES_DIR/sysroot" --only $id --format json
expect_contains "$(summary)" "pass --topology-xml FILE" "sysroot summary"

expect_rc 0 "image profile" -- "$PREFLIGHT" --profile image --topology-xml "$own/2s-gpu-far-from-nic.xml" --only $id --format json
expect_eq "$(check_status $id)" SKIP "image profile"
finish
