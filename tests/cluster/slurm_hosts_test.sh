#!/usr/bin/env bash
# Jobs across emulated hosts (tests/cluster/lib.sh) under a real Slurm: slurmctld on the launcher's
# bridge address, one slurmd per host (cluster_slurm_up), `srun --mpi=pmix` across them — Slurm's
# own PMIx server on each host, not Open MPI's. The scenarios of cluster.two_hosts and
# cluster.host_faults where Slurm's path differs: a healthy 2 × 2 job, loopback as NCCL's interface,
# uneven ranks (an arbitrary distribution) and a node the job expected and did not get, one host with
# a 64 MiB /dev/shm, and ranks that never start (the join before MPI_Init under Slurm's PMIx, the step
# ended through PMIx_Abort). Needs root and Slurm with its PMIx plugin. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/lib.sh"
cluster_require
trap 'cluster_down; rm -rf "$work"' EXIT

cluster_host node1
cluster_host node2
cluster_host node3 shm=64m
cluster_up || { echo "FAIL: the emulated cluster did not come up"; exit 1; }
rc=0
cluster_slurm_up 2>"$work/slurm.err" || rc=$?
[ "$rc" -eq 77 ] && skip_all "$(cat "$work/slurm.err")"
[ "$rc" -eq 0 ] || { echo "FAIL: the Slurm cluster did not come up:"; head -c 3000 "$work/slurm.err"; exit 1; }
cluster_srun --mpi=list 2>&1 | grep -q pmix || skip_all "Slurm has no PMIx plugin (srun --mpi=list)"
pass "Slurm cluster of node1-3 up (slurmctld on $cluster_net.1, one slurmd per host)"

# Nothing of a launcher this test itself runs under reaches the jobs (srun passes its environment on).
conf=$SLURM_CONF
while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\|PMI\|MPI_LOCAL\)[A-Za-z0-9_]*\)=.*/\1/p')
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
export SLURM_CONF=$conf OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

job_checks='launch.env,launch.ranks,net.socket_ifname,net.reachability,shm.capacity,cluster.*,comm.barrier'
srun_job() { cluster_srun --mpi=pmix --time=2 "$@"; }

# 1. Healthy: 2 hosts × 2 ranks, each rank's variables from Slurm, MPI through Slurm's PMIx.
expect_rc 0 "srun -N 2 -n 4" -- srun_job -N 2 -n 4 -w node1,node2 "$PREFLIGHT" --format json \
  --only "$job_checks,comm.allreduce" --allreduce-bytes 1M --timeout 30
expect_eq "$(json_get "d['world']['nodes']")" 2 "world.nodes under srun"
expect_eq "$(json_get "d['world']['size']")" 4 "world.size under srun"
expect_eq "$(json_get "d['world']['launcher']")" slurm "world.launcher under srun"
expect_eq "$(check_status launch.env)" PASS "launch.env under srun (SLURM_PROCID, SLURM_NODEID agree with MPI)"
expect_contains "$(field launch.env summary)" "node 0 of 2" "launch.env under srun"
expect_eq "$(check_status launch.ranks)" PASS "launch.ranks under srun"
expect_eq "$(check_status net.reachability)" PASS "net.reachability under srun"
expect_contains "$(field net.reachability summary)" "198.51.100.11" "net.reachability under srun (rank 0 on node1's bridge address)"
expect_eq "$(check_status comm.allreduce)" PASS "comm.allreduce under srun"
expect_eq "$(json_get "sorted({r['host'] for r in d['ranks']})")" "['node1', 'node2']" "the ranks' hosts under srun"

# 2. Loopback as NCCL's socket interface, exported by srun to every rank.
expect_rc 1 "NCCL_SOCKET_IFNAME=lo under srun" -- srun_job -N 2 -n 4 -w node1,node2 --export=ALL,NCCL_SOCKET_IFNAME=lo \
  "$PREFLIGHT" --format json --only "$job_checks" --timeout 30
expect_eq "$(check_status net.socket_ifname)" FAIL "net.socket_ifname with lo under srun"
expect_contains "$(field net.socket_ifname summary)" "loopback" "net.socket_ifname with lo under srun"

# 3. Uneven ranks (3 on node1, 1 on node2: an arbitrary distribution from a host file, node1 holding
# more tasks than its CPUs), then a node
# the job expected and did not get.
printf 'node1\nnode1\nnode1\nnode2\n' >"$work/hostfile"
export SLURM_HOSTFILE=$work/hostfile
expect_rc 0 "srun with 3 + 1 ranks" -- srun_job -n 4 --distribution=arbitrary --overcommit "$PREFLIGHT" --format json \
  --only "$job_checks" --timeout 30
unset SLURM_HOSTFILE
expect_eq "$(check_status launch.ranks)" WARN "launch.ranks with 3 + 1 ranks under srun"
expect_contains "$(field launch.ranks summary)" "node1" "launch.ranks with 3 + 1 ranks under srun"
expect_eq "$(json_get "[r['host'] for r in d['ranks'] if r['rank']==3][0]")" node2 "rank 3's host (alone on node2)"
expect_rc 1 "--expect-nodes 3 on 2 hosts under srun" -- srun_job -N 2 -n 4 -w node1,node2 "$PREFLIGHT" --format json \
  --only "$job_checks" --expect-nodes 3 --timeout 30
expect_eq "$(check_status launch.ranks)" FAIL "launch.ranks with --expect-nodes 3 under srun"

# 4. One host with a 64 MiB /dev/shm: FAIL there only, the other host PASS.
expect_rc 1 "node3 with a 64 MiB /dev/shm under srun" -- srun_job -N 2 -n 4 -w node1,node3 "$PREFLIGHT" --format json \
  --only "$job_checks" --timeout 30
expect_eq "$(status_on shm.capacity node3)" FAIL "shm.capacity on node3 under srun"
expect_eq "$(status_on shm.capacity node1)" PASS "shm.capacity on node1 under srun"

# 7. Ranks that never start (stopped before exec: a node stuck in start-up). Slurm's PMIx server
# holds the join's fence; its deadline (30% of --timeout 10: 3 s) passes, rank 0 reports the ranks
# and the host Slurm placed them on, and PMIx_Abort ends the step (srun does not end a step on one
# task's exit by itself).
t0=$(now)
rc=0
CLUSTER_TIMEOUT=40 srun_job -N 2 -n 4 -w node1,node2 --export=ALL,PREFLIGHT_STUCK_RANKS="2 3" "$here_cluster/stuck_before_start.sh" \
  "$PREFLIGHT" --format json --color never --only 'launch.ranks,shm.capacity,comm.*' --timeout 10 >"$work/out" 2>"$work/err" || rc=$?
t1=$(now)
host_reset node2
elapsed=$(secs "$t0" "$t1")
if within "$elapsed" "3.0 + 5"; then
  pass "ranks 2, 3 never started under srun: the step ended after $elapsed s (join deadline 3.0 s)"
else
  fail "ranks 2, 3 never started under srun: the step ended after $elapsed s, join deadline 3.0 s"
fi
[ "$rc" -ne 0 ] && pass "srun's exit with ranks that never started ($rc)" || fail "srun exited 0 with ranks that never started"
expect_eq "$(json_get "d['summary']['exit_code']")" 4 "the report's exit code with ranks that never started under srun"
expect_eq "$(check_status launch.ranks)" FAIL "launch.ranks with ranks that never started under srun"
expect_eq "$(json_get "d['world']['nodes']")" 2 "world.nodes with node2's ranks never started (where Slurm placed them)"
text="$(json_get "' '.join(d['incidents'])") $(field launch.ranks summary)"
for want in "2 of 4 ranks never started" "ranks 2, 3 on node2" "placed on node2"; do
  expect_contains "$text" "$want" "the report with ranks that never started under srun"
done
[ $failures -gt 0 ] && sed 's/^/  | /' "$work/out" "$work/err" | head -40 >&2

finish
