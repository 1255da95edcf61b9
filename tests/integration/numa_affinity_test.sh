#!/usr/bin/env bash
# topo.numa_affinity end to end: the fake NVML says GPU 0 is local to CPU 1 (NUMA 0); local rank 0
# pinned to CPU 0 FAILs and prints the binding to use (CPU 1), pinned to CPU 1 it PASSes.
source "$(dirname "$0")/lib.sh"
: "${PREFLIGHT_FAKE_GPU_LIB_DIR:?}" "${PREFLIGHT_FAKE_GPU_SCENARIOS_DIR:?}"
scenario=$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/numa-gpu0-cpu1.json
command -v taskset >/dev/null || skip_all "taskset is not installed"
cpus=$(taskset -pc $$ | sed 's/.*: //')
taskset -c 0 true 2>/dev/null && taskset -c 1 true 2>/dev/null || skip_all "CPUs 0 and 1 are not both usable here ($cpus)"
summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
remedy_of() { json_get "[c['remedy'] for c in d['checks'] if c['id']=='$1'][0]"; }
evidence_of() { json_get "[c['evidence'] for c in d['checks'] if c['id']=='$1'][0]['$2']"; }

on_cpu() {  # on_cpu CPU PREFLIGHT-ARGS...
  local cpu=$1
  shift
  env LOCAL_RANK=0 LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$scenario" \
    taskset -c "$cpu" "$PREFLIGHT" "$@"
}

expect_rc 1 "local rank 0 on CPU 0, its GPU on CPU 1" -- on_cpu 0 --only topo.numa_affinity --format json
expect_eq "$(check_status topo.numa_affinity)" FAIL "topo.numa_affinity on CPU 0"
expect_contains "$(summary_of topo.numa_affinity)" "runs only on CPU 0, away from its GPU 0 (local to CPU 1 (NUMA 0))" "summary"
expect_contains "$(remedy_of topo.numa_affinity)" "taskset -c 1 <cmd>" "remedy"
expect_contains "$(remedy_of topo.numa_affinity)" "numactl --cpunodebind=0 --membind=0 <cmd>" "remedy"
expect_eq "$(evidence_of topo.numa_affinity cpus)" 0 "evidence cpus"
expect_eq "$(evidence_of topo.numa_affinity gpu_local_cpus)" 1 "evidence gpu_local_cpus"
expect_eq "$(evidence_of topo.numa_affinity locality_source)" "NVML (nvmlDeviceGetCpuAffinity)" "evidence source"

expect_rc 0 "local rank 0 on CPU 1" -- on_cpu 1 --only topo.numa_affinity --format json
expect_eq "$(check_status topo.numa_affinity)" PASS "topo.numa_affinity on CPU 1"

# Under torchrun, local rank 1 takes GPU 1 (local to CPU 0): the same pinning now fails the other
# way round, and the binding is given for torchrun (which does not bind).
rc=0
env TORCHELASTIC_RUN_ID=numa-test RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 \
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$scenario" \
  taskset -c 1 "$PREFLIGHT" --only topo.numa_affinity --format json >"$work/out" 2>"$work/err" || rc=$?
expect_eq "$(check_status topo.numa_affinity)" FAIL "torchrun local rank 1 on CPU 1"
expect_contains "$(summary_of topo.numa_affinity)" "rank 1 runs only on CPU 1, away from its GPU 1" "summary (local rank 1)"
expect_contains "$(remedy_of topo.numa_affinity)" "torchrun does not bind" "remedy (local rank 1)"
expect_contains "$(remedy_of topo.numa_affinity)" "taskset -c 0 <cmd>" "remedy (local rank 1)"

# Without a driver and with --sysroot the rank's binding cannot be judged: never PASS.
rc=0
LD_LIBRARY_PATH=/nonexistent "$PREFLIGHT" --only topo.numa_affinity --format json >"$work/out" 2>"$work/err" || rc=$?
st=$(check_status topo.numa_affinity)
[ "$st" = SKIP ] || [ "$st" = UNKNOWN ] && pass "no driver: $st" || fail "no driver: $st"
finish
