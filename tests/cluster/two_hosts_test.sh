#!/usr/bin/env bash
# Jobs across emulated hosts (tests/cluster/lib.sh) under a real mpirun: a healthy 2 × 2 job,
# loopback as NCCL's interface, uneven ranks and a missing node, one host with a 64 MiB /dev/shm,
# one host with another driver and another NCCL, and `preflight merge` of per-host runs.
# node1-3 have no GPU (this machine's, quick to probe); node4 and node5 have the fake 8-GPU node's
# libraries (tests/fakes), node4 with another driver and NCCL. Needs root. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/lib.sh"
cluster_require
trap 'cluster_down; rm -rf "$work"' EXIT
: "${PREFLIGHT_FAKE_GPU_LIB_DIR:?}" "${PREFLIGHT_FAKE_GPU_SCENARIOS_DIR:?}"
nccl_2289=$(dirname "$PREFLIGHT_FAKE_GPU_LIB_DIR")/nccl-2.28.9-cuda13.0

cluster_host node1
cluster_host node2
cluster_host node3 shm=64m
cluster_host node4 "LD_LIBRARY_PATH=$nccl_2289:$PREFLIGHT_FAKE_GPU_LIB_DIR" \
  "PREFLIGHT_FAKE_GPU=$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/driver535-cuda122.json"
cluster_host node5 "LD_LIBRARY_PATH=$PREFLIGHT_FAKE_GPU_LIB_DIR"
cluster_host node6
cluster_up || { echo "FAIL: the emulated cluster did not come up"; exit 1; }

# The checks a job across hosts decides (this machine has no GPU, and the fake node's GPU stack
# against its CUDA 13 toolkit is not what these scenarios are about).
job_checks='launch.env,launch.ranks,net.socket_ifname,net.reachability,shm.capacity,cluster.*,comm.barrier'

# 1. Healthy: 2 hosts × 2 ranks; every rank exits with rank 0's code (mpirun's is 0 only then).
expect_rc 0 "2 hosts × 2 ranks" -- cluster_mpirun --host node1:2,node2:2 -np 4 "$PREFLIGHT" --format json \
  --only "$job_checks,comm.allreduce" --allreduce-bytes 1M
expect_eq "$(json_get "d['world']['nodes']")" 2 "world.nodes"
expect_eq "$(json_get "d['world']['size']")" 4 "world.size"
expect_eq "$(check_status launch.ranks)" PASS "launch.ranks"
expect_eq "$(check_status net.reachability)" PASS "net.reachability"
expect_contains "$(field net.reachability summary)" "198.51.100.11" "net.reachability (rank 0's address on the bridge)"
expect_eq "$(check_status comm.allreduce)" PASS "comm.allreduce across the hosts (MPI in host memory: no GPU)"
expect_eq "$(json_get "sorted({r['host'] for r in d['ranks']})")" "['node1', 'node2']" "the ranks' hosts"

# 1b. Ranks placed round-robin (--map-by node: 0 and 2 on node1, 1 and 3 on node2). The node's
# ranks come from the launcher's PMIx local peers, or (the test binary, as under a launcher without
# them) from MPI_COMM_TYPE_SHARED: the same local ranks, leaders and verdicts either way.
for locality in peers split; do
  binary=$PREFLIGHT
  extra=()
  [ "$locality" = split ] && { binary=$PREFLIGHT_FAULTS; extra=(-x PREFLIGHT_TEST_SHARED_MEMORY_SPLIT=1); }
  expect_rc 0 "2 hosts × 2 ranks round-robin ($locality)" -- cluster_mpirun --host node1:2,node2:2 --map-by node -np 4 \
    "${extra[@]}" "$binary" --format json --only "$job_checks"
  expect_eq "$(json_get "[(r['rank'], r['host'], r['facts']['placement']['local_rank'], r['facts']['placement']['local_ranks']) for r in d['ranks']]")" \
    "[(0, 'node1', 0, 2), (1, 'node2', 0, 2), (2, 'node1', 1, 2), (3, 'node2', 1, 2)]" "rank, host, local rank and size ($locality)"
  expect_eq "$(json_get "[(r['facts'].get('node_facts') or {}).get('leader_rank') for r in d['ranks']]")" "[None, None, 0, 1]" \
    "the node leaders whose facts ranks 2 and 3 take ($locality)"
  expect_eq "$(check_status launch.env)" PASS "launch.env: MPI's local ranks agree with OMPI_COMM_WORLD_LOCAL_RANK ($locality)"
  expect_eq "$(json_get "d['world']['nodes']")" 2 "world.nodes round-robin ($locality)"
  want=pmix_local_peers
  [ "$locality" = split ] && want=mpi_comm_type_shared
  expect_eq "$(json_get "sorted({r['facts']['placement']['mpi']['locality'] for r in d['ranks']})")" "['$want']" \
    "where the node's ranks came from ($locality)"
done

# 2. Loopback as NCCL's socket interface in a job across hosts.
expect_rc 1 "NCCL_SOCKET_IFNAME=lo on 2 hosts" -- cluster_mpirun --host node1:2,node2:2 -np 4 -x NCCL_SOCKET_IFNAME=lo \
  "$PREFLIGHT" --format json --only "$job_checks"
expect_eq "$(check_status net.socket_ifname)" FAIL "net.socket_ifname with lo"
expect_contains "$(field net.socket_ifname summary)" "loopback" "net.socket_ifname with lo"

# 3. Uneven ranks per host (3 + 1), then a node the job expected and did not get.
cluster_mpirun --host node1:3,node2:1 -np 4 "$PREFLIGHT" --format json --only "$job_checks" >"$work/out" 2>"$work/err"
expect_eq "$(check_status launch.ranks)" WARN "launch.ranks with 3 + 1 ranks"
expect_contains "$(field launch.ranks summary)" "node1" "launch.ranks with 3 + 1 ranks"
expect_rc 1 "--expect-nodes 3 on 2 hosts" -- cluster_mpirun --host node1:2,node2:2 -np 4 "$PREFLIGHT" --format json \
  --only "$job_checks" --expect-nodes 3
expect_eq "$(check_status launch.ranks)" FAIL "launch.ranks with --expect-nodes 3"
expect_contains "$(field launch.ranks summary)" "3" "launch.ranks with --expect-nodes 3"

# 4. One host with a 64 MiB /dev/shm: FAIL there only, the other host PASS; one row per verdict.
expect_rc 1 "node3 with a 64 MiB /dev/shm" -- cluster_mpirun --host node1:2,node3:2 -np 4 "$PREFLIGHT" --format json \
  --only "$job_checks"
expect_eq "$(status_on shm.capacity node3)" FAIL "shm.capacity on node3"
expect_eq "$(status_on shm.capacity node1)" PASS "shm.capacity on node1"
expect_eq "$(json_get "[c['hosts'] for c in d['checks'] if c['id']=='shm.capacity' and c['status']=='FAIL'][0]")" \
  "['node3']" "the FAIL row's hosts"
cluster_mpirun --host node1:2,node3:2 -np 4 "$PREFLIGHT" --color never --only "$job_checks" >"$work/out" 2>"$work/err"
rows=$(grep -cE '^  (FAIL|PASS) +shm\.capacity' "$work/out")
expect_eq "$rows" 2 "text rows of shm.capacity (FAIL for node3, PASS for node1)"
expect_contains "$(grep -E '^  FAIL +shm\.capacity' "$work/out")" "node3" "the text report's FAIL row"

# 5. One host with driver 535.104.05 and NCCL 2.28.9 beside one with 550.54.15 and 2.21.5.
expect_rc 1 "node4 with another driver and NCCL" -- cluster_mpirun --host node5:1,node4:1 -np 2 "$PREFLIGHT" \
  --format json --only 'launch.ranks,cluster.consistency'
expect_eq "$(check_status cluster.consistency)" FAIL "cluster.consistency"
summary=$(field cluster.consistency summary)
for want in node4 535.104.05 550.54.15 2.28.9 2.21.5; do expect_contains "$summary" "$want" "cluster.consistency"; done

# 6. Four hosts, NCCL_ALGO set on node3 only (NVIDIA/nccl#1136: ranks that choose differently hang):
# cluster.consistency FAILs naming node3's rank and value; set everywhere alike, it passes.
odd_algo='if [ "$(hostname)" = node3 ]; then export NCCL_ALGO=Tree; fi; exec "$0" "$@"'
expect_rc 1 "NCCL_ALGO on node3 only" -- cluster_mpirun --host node1:1,node2:1,node3:1,node6:1 -np 4 \
  bash -c "$odd_algo" "$PREFLIGHT" --format json --only 'launch.ranks,cluster.consistency'
expect_eq "$(check_status cluster.consistency)" FAIL "cluster.consistency with NCCL_ALGO on node3 only"
expect_eq "$(json_get "[c['finding']['code'] for c in d['checks'] if c['id']=='cluster.consistency'][0]")" \
  cluster.consistency/setting-must-agree "the finding"
expect_contains "$(field cluster.consistency summary)" "node3 (rank 2) has NCCL_ALGO=Tree (environment)" "the odd host"
expect_contains "$(field cluster.consistency summary)" "the majority (3 of 4 ranks) unset" "the majority"
expect_rc 0 "NCCL_P2P_DISABLE=1 on every host" -- cluster_mpirun --host node1:1,node2:1,node3:1,node6:1 -np 4 \
  -x NCCL_P2P_DISABLE=1 "$PREFLIGHT" --format json --only 'launch.ranks,cluster.consistency'
expect_eq "$(check_status cluster.consistency)" PASS "cluster.consistency with one value everywhere"

# 9. Each host alone, then merge: one report with 2 nodes and the cross-node checks; node1's run
# had NCCL_PROTO=Simple, node3's none: the merged cluster.consistency names it.
on_host node1 env NCCL_PROTO=Simple "$PREFLIGHT" --format json >"$work/node1.json" 2>/dev/null
on_host node3 "$PREFLIGHT" --format json >"$work/node3.json" 2>/dev/null
expect_rc 1 "merge of node1 and node3" -- "$PREFLIGHT" merge --format json "$work/node1.json" "$work/node3.json"
expect_eq "$(json_get "d['world']['nodes']")" 2 "merged world.nodes"
expect_eq "$(status_on shm.capacity node3)" FAIL "merged shm.capacity on node3"
expect_eq "$(status_on shm.capacity node1)" PASS "merged shm.capacity on node1"
json_get "[c['status'] for c in d['checks'] if c['id']=='cluster.consistency'][0]" >/dev/null 2>&1 &&
  pass "merged report has cluster.consistency" || fail "merged report lacks cluster.consistency"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='cluster.consistency' and c['status']=='FAIL'][0]")" \
  "NCCL_PROTO differs between ranks" "merged cluster.consistency"
expect_rc 2 "the same host's file twice" -- "$PREFLIGHT" merge "$work/node1.json" "$work/node1.json"
expect_contains "$(cat "$work/err")" "node1.json" "merge error"

finish
