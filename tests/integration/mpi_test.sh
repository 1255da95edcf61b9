#!/usr/bin/env bash
# The distributed run under Open MPI's mpiexec (2, 4 and 8 ranks, oversubscribed, root-safe): one
# report from rank 0, grouped; a rank stopped with SIGSTOP in a phase is named with its host, pid
# and phase within the phase's deadline (exit 4); a rank killed with SIGKILL; `-x RANK=0`; the
# fake 8-GPU node with CUDA_VISIBLE_DEVICES=0 on every rank and with the per-rank wrapper
# (CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK); GPUs without NCCL; the binding line of
# topo.numa_affinity run as mpiexec options; one rank with another driver; broken payloads; an MPI
# singleton.
source "$(dirname "$0")/lib.sh"
command -v mpiexec >/dev/null || skip_all "mpiexec (openmpi-bin) is not installed"
py=${PYTHON3:-python3}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Every rank ends with the run's exit code, and mpiexec passes it on.
mpi=(mpiexec --oversubscribe --bind-to none)
quiet=(--color never --shm-dataloader-bytes 0)
net_checks='launch.env,launch.ranks,comm.*,net.reachability,cluster.shm_namespace,shm.capacity'

# --- the happy path at 2, 4 and 8 ranks: one JSON document, world.size N, every rank grouped ----
for n in 2 4 8; do
  expect_rc 0 "mpiexec -np $n" -- "${mpi[@]}" -np "$n" "$PREFLIGHT" --format json --only "$net_checks" "${quiet[@]}"
  expect_eq "$(json_get "d['world']['size']")" "$n" "np $n world.size"
  expect_eq "$(json_get "len(d['ranks'])")" "$n" "np $n ranks gathered"
  for id in launch.env launch.ranks comm.barrier comm.allreduce net.reachability cluster.shm_namespace; do
    expect_eq "$(json_get "sorted(set(c['status'] for c in d['checks'] if c['id']=='$id'))")" "['PASS']" "np $n $id"
  done
  expect_eq "$(json_get "[c['ranks'] for c in d['checks'] if c['id']=='shm.capacity']")" "[$(seq -s ', ' 0 $((n - 1)) | sed 's/^/[/;s/$/]/')]" \
    "np $n shm.capacity (node scope) covers every rank of the host"
done

# The text report: one header from rank 0, grouped lines.
expect_rc 0 "mpiexec -np 4 text" -- "${mpi[@]}" -np 4 "$PREFLIGHT" --only "$net_checks" "${quiet[@]}"
expect_eq "$(grep -c '^preflight .* · 4 ranks on 1 node' "$work/out")" "1" "one report header for 4 ranks"
expect_eq "$(grep -c '^  PASS     shm.capacity ' "$work/out")" "1" "one shm.capacity line for the 4 ranks"

if "$py" -c 'import jsonschema' 2>/dev/null; then
  "${mpi[@]}" -np 4 "$PREFLIGHT" --format json --only "$net_checks" "${quiet[@]}" >"$work/job.json" 2>/dev/null
  if "$py" - "$PREFLIGHT_SOURCE_DIR/schema/preflight-v1.schema.json" "$work/job.json" <<'PY'
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))
PY
  then pass "the 4-rank JSON report validates against the schema"; else fail "the 4-rank JSON report does not validate"; fi
fi

# --- the CPU-only all_reduce over MPI measures the size asked for; a GPU-fabric floor is skipped ----
expect_rc 0 "MPI all_reduce of 16 B with --min-busbw 150" -- "${mpi[@]}" -np 2 "$PREFLIGHT" --format json \
  --only comm.allreduce --allreduce-bytes 16 --min-busbw 150 "${quiet[@]}"
expect_eq "$(json_get "d['job']['allreduce']['transport']")" "mpi" "CPU-only all_reduce transport"
expect_eq "$(json_get "d['job']['allreduce']['bytes']")" "16" "16 B measured, not rounded"
expect_eq "$(check_status comm.allreduce)" "PASS" "--min-busbw over MPI is no FAIL"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='comm.allreduce'][0]")" \
  "for 16 B across 2 ranks over mpi" "the size measured in the summary"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='comm.allreduce'][0]")" \
  "--min-busbw 150 GB/s: SKIP" "the floor skipped with its reason"
expect_rc 0 "MPI all_reduce of 32 MiB (no silent 1 MiB cap)" -- "${mpi[@]}" -np 2 "$PREFLIGHT" --format json \
  --only comm.allreduce --allreduce-bytes 32M "${quiet[@]}"
expect_eq "$(json_get "d['job']['allreduce']['bytes']")" "$((32 << 20))" "32 MiB measured over MPI"

# --- a rank stopped with SIGSTOP in a phase: named with host, pid and phase, exit 4, in time -------
# --timeout 10: the gather ends at 6.5 s, the barrier at 7.5 s, the all_reduce at 9.0 s.
stop_case() {
  local phase=$1 deadline=$2 shown=$3 check=$4
  local t0 t1 elapsed own
  t0=$(date +%s.%N)
  expect_rc 4 "rank 2 stopped in $phase" -- timeout 60 "${mpi[@]}" -np 4 -x PREFLIGHT_TEST_STOP="2:$phase" "$PREFLIGHT_FAULTS" \
    --format json --only 'launch.ranks,comm.*' --timeout 10 "${quiet[@]}"
  t1=$(date +%s.%N)
  elapsed=$("$py" -c "print(round($t1 - $t0, 2))")
  # The deadlines count from rank 0's start: its own duration must keep them (1 s to report).
  own=$(json_get "round(d['duration_ms'] / 1000.0, 2)")
  if "$py" -c "import sys; sys.exit(0 if $own <= $deadline + 1.0 else 1)"; then
    pass "stopped in $phase: rank 0 reported after $own s (deadline $deadline s + 1 s)"
  else
    fail "stopped in $phase: rank 0 reported after $own s, deadline $deadline s"
  fi
  # The whole mpiexec adds the launcher's start and end, which a loaded machine stretches; a run
  # that waits for the stopped rank would take the 60 s of timeout.
  if "$py" -c "import sys; sys.exit(0 if $elapsed <= $deadline + 8 else 1)"; then
    pass "stopped in $phase: mpiexec ended after $elapsed s (deadline $deadline s, + launcher start and end)"
  else
    fail "stopped in $phase: mpiexec ended after $elapsed s, deadline $deadline s"
  fi
  local incident
  incident=$(json_get "' '.join(d['incidents'])")
  expect_contains "$incident" "rank 2 (" "incident ($phase)"
  expect_contains "$incident" "last phase $shown" "incident ($phase)"
  expect_contains "$incident" "pid " "incident ($phase)"
  expect_eq "$(check_status "$check")" "FAIL" "$check with rank 2 stopped in $phase"
}
stop_case probe 6.5 probe comm.barrier
stop_case barrier 7.5 barrier comm.barrier
stop_case allreduce 9.0 allreduce comm.allreduce

# --- a rank killed with SIGKILL: Open MPI ends the job (SIGCONT, SIGTERM, SIGKILL); rank 0 reports
# what it knows before that, and mpiexec names the killed rank itself ---------------------------
rc=0
timeout 60 "${mpi[@]}" -np 4 -x PREFLIGHT_TEST_KILL=2:barrier "$PREFLIGHT_FAULTS" --only 'launch.ranks,comm.*' --timeout 10 \
  "${quiet[@]}" >"$work/out" 2>"$work/err" || rc=$?
if [ "$rc" -ne 0 ]; then pass "rank 2 killed: mpiexec exit $rc"; else fail "rank 2 killed: mpiexec exit 0"; fi
expect_contains "$(cat "$work/out")" "DEADLINE" "rank 0's report after a rank was killed"
expect_contains "$(cat "$work/err" "$work/out")" "rank 2" "mpiexec's message naming the killed rank"

# --- a rank killed while the ranks probe: the launcher ends the job before any gather. Rank 0's
# report and its --json file still hold the launcher's world of 4 and the ranks it did not hear
# from, never "MPI started as a world of 1" ---------------------------------------------------
rc=0
timeout 60 "${mpi[@]}" -np 4 -x PREFLIGHT_TEST_KILL=2:probe "$PREFLIGHT_FAULTS" --only 'launch.ranks,comm.*' --timeout 10 \
  "${quiet[@]}" --json "$work/ended.json" >"$work/ended.txt" 2>"$work/err" || rc=$?
if [ "$rc" -ne 0 ]; then pass "rank 2 killed in probe: mpiexec exit $rc"; else fail "rank 2 killed in probe: mpiexec exit 0"; fi
cp "$work/ended.json" "$work/out" 2>/dev/null || echo '{}' >"$work/out"
expect_eq "$(json_get "d['world']['size']")" 4 "the world size in rank 0's --json file after the launcher ended the job"
expect_eq "$(check_status launch.ranks)" FAIL "launch.ranks after the launcher ended the job"
# The launcher's end is the story (rank 0's liveness watch may also have seen rank 2 end first).
expect_eq "$(json_get "[c['finding']['code'] in ('launch.ranks/launcher-ended', 'launch.ranks/ranks-ended') for c in d['checks'] if c['id']=='launch.ranks'][0]")" \
  True "launch.ranks says the launcher ended the job, or which rank ended"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='launch.ranks'][0]")" " 4 " \
  "launch.ranks names the launcher's world"
case "$(cat "$work/ended.txt")" in
  *"world of 1"*) fail "a job the launcher ended reported as a world of 1" ;;
  *) pass "no world of 1 in the report of a job the launcher ended" ;;
esac

# --- a rank lost in MPI initialisation (after the join, before MPI_Init returns): rank 0 knows
# from the join who started where, and writes its report and --json file --------------------------
# Stopped: MPI_Init never returns; rank 0's report at the init deadline (3 s at --timeout 10), exit 4.
# Killed: the launcher ends the job at once; rank 0 writes its report on the launcher's SIGTERM.
for fault in STOP KILL; do
  rc=0
  rm -f "$work/init.json"
  t0=$(date +%s.%N)
  timeout 60 "${mpi[@]}" -np 3 -x "PREFLIGHT_TEST_$fault=1:mpi_init" "$PREFLIGHT_FAULTS" --only 'launch.ranks,comm.*' \
    --timeout 10 "${quiet[@]}" --json "$work/init.json" >"$work/init.txt" 2>"$work/err" || rc=$?
  elapsed=$("$py" -c "print(round($(date +%s.%N) - $t0, 2))")
  if [ "$fault" = STOP ]; then
    if [ "$rc" = 139 ] && grep -q PMIx_server_finalize "$work/err"; then
      # Open MPI 4.1's mpiexec itself may crash as it ends such a job (its PMIx server's finalize:
      # SIGSEGV, 128 + 11); rank 0's report below is what counts
      pass "rank 1 stopped before MPI_Init: mpiexec crashed in PMIx_server_finalize after the job (exit 139)"
    else
      expect_eq "$rc" 4 "rank 1 stopped before MPI_Init: mpiexec's exit"
    fi
    # the init deadline (3 s) + the launcher's start and end, which a loaded machine stretches
    "$py" -c "import sys; sys.exit(0 if $elapsed <= 3 + 8 else 1)" && pass "rank 1 stopped before MPI_Init: back in $elapsed s" \
      || fail "rank 1 stopped before MPI_Init: back in $elapsed s"
  else
    [ "$rc" -ne 0 ] && pass "rank 1 killed before MPI_Init: mpiexec exit $rc" || fail "rank 1 killed before MPI_Init: exit 0"
  fi
  cp "$work/init.json" "$work/out" 2>/dev/null || echo '{}' >"$work/out"
  expect_eq "$(json_get "d['world']['size']")" 3 "the world size in rank 0's --json file ($fault in MPI_Init)"
  expect_eq "$(check_status launch.ranks)" FAIL "launch.ranks ($fault in MPI_Init)"
  incident=$(json_get "' '.join(d['incidents'])")
  expect_contains "$incident" "MPI initialisation (MPI_Init)" "the incident ($fault in MPI_Init)"
  expect_contains "$incident" "(ranks 0, 1, 2)" "the incident's hosts of the ranks ($fault in MPI_Init)"
  expect_eq "$(json_get "d['summary']['exit_code']")" 4 "the report's exit code ($fault in MPI_Init)"
done
# The killed rank: the launcher ended the job, and rank 0 said so.
expect_eq "$(json_get "[c['finding']['code'] for c in d['checks'] if c['id']=='launch.ranks'][0]")" \
  launch.ranks/launcher-ended "launch.ranks: the launcher ended the job during MPI initialisation"

# --- every rank claims RANK=0: launch.env FAIL ------------------------------------------------
# (with what else torch's env:// rendezvous reads, so that RANK=0 is all that is wrong, and only on ranks 1-3)
expect_rc 1 "mpiexec -np 4 -x RANK=0" -- "${mpi[@]}" -np 4 -x RANK=0 -x WORLD_SIZE=4 -x MASTER_ADDR=127.0.0.1 \
  -x MASTER_PORT=29500 "$PREFLIGHT" --format json --only 'launch.env' "${quiet[@]}"
# One job-level finding, rank 0 included; what each rank said on its own is in the evidence.
expect_eq "$(json_get "[(c['scope'], c['ranks'], c['finding']['code']) for c in d['checks'] if c['id']=='launch.env' and c['status']=='FAIL']")" \
  "[('job', [0, 1, 2, 3], 'launch.env/same-rank-on-every-rank')]" "launch.env: one job finding for every rank's RANK=0"
expect_eq "$(json_get "sorted(c['evidence']['per_rank'] for c in d['checks'] if c['id']=='launch.env')[0].keys().__len__()")" \
  "3" "the per-rank findings of ranks 1-3 kept in the evidence"
# Text under mpirun: no colour unless asked (the rank's TTY is Open MPI's, not the user's).
"${mpi[@]}" -np 2 -x RANK=0 "$PREFLIGHT" --only 'launch.env' --progress never >"$work/text" 2>/dev/null || true
if grep -q $'\e\[' "$work/text"; then fail "colour codes under mpirun without --color"; else pass "no colour under mpirun"; fi
expect_contains "$(cat "$work/text")" "every rank claims RANK=0" "the text report under mpirun"
"${mpi[@]}" -np 2 "$PREFLIGHT" --only 'launch.env' --color always --progress never >"$work/text" 2>/dev/null || true
if grep -q $'\e\[' "$work/text"; then pass "--color always colours under mpirun"; else fail "--color always gave no colour"; fi

# --- the fake 8-GPU node, CUDA_VISIBLE_DEVICES=0 on every rank: launch.gpu_binding FAIL ----------
if [ -n "${PREFLIGHT_FAKE_GPU_LIB_DIR:-}" ] && [ -d "$PREFLIGHT_FAKE_GPU_LIB_DIR" ]; then
  expect_rc 1 "4 ranks on GPU 0" -- "${mpi[@]}" -np 4 -x LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" -x CUDA_VISIBLE_DEVICES=0 \
    "$PREFLIGHT" --format json --only 'launch.gpu_binding' "${quiet[@]}"
  expect_eq "$(check_status launch.gpu_binding)" "FAIL" "launch.gpu_binding"
  summary=$(json_get "[c['summary'] for c in d['checks'] if c['id']=='launch.gpu_binding'][0]")
  # Each rank uses its only GPU, and it is the same one for all: a duplicate, named by rank.
  expect_contains "$summary" "ranks 0 (CUDA_VISIBLE_DEVICES=0), 1 (CUDA_VISIBLE_DEVICES=0)" \
    "launch.gpu_binding names the ranks"
  expect_contains "$summary" "3 (CUDA_VISIBLE_DEVICES=0) on " "launch.gpu_binding names the ranks"
  expect_contains "$summary" "Duplicate GPU detected" "launch.gpu_binding says what NCCL does"
  # The node's facts once per host: local rank 0 probes them, the others (same inputs) take them.
  expect_eq "$(json_get "d['ranks'][0]['facts']['node_facts']")" "None" "the node's leader probes its node itself"
  for r in 1 2 3; do
    expect_eq "$(json_get "d['ranks'][$r]['facts']['node_facts']['leader_rank']")" "0" "rank $r takes rank 0's node facts"
    expect_eq "$(json_get "sorted(d['ranks'][$r]['facts']['node_facts']['adopted'])")" "['gpu_driver']" \
      "rank $r adopts the driver helper's facts (the probes --only needs)"
  done
  expect_contains "$(json_get "d['ranks'][2]['facts']['gpu']['driver']['helper']")" "rank 0's driver: exited with status 0" \
    "rank 2's driver facts name where they came from"
  expect_eq "$(json_get "d['ranks'][2]['facts']['gpu']['driver']['smoke']['source']")" \
    "preflight-gpu-probe smoke --ordinal 0 --bytes 64M" "rank 2 runs its own smoke test"

  # The per-rank binding preflight recommends: a wrapper gives local rank l CUDA_VISIBLE_DEVICES=l.
  # The node's GPUs are the union of the ranks' (4 of 8), every rank has a GPU of its own, the
  # NCCL all_reduce runs on each rank's only GPU, and the peer copies cover the 4 GPUs.
  cat >"$work/per-rank.sh" <<'SH'
#!/bin/sh
export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK
exec "$@"
SH
  chmod +x "$work/per-rank.sh"
  gpu_checks='gpu.count,gpu.busy,launch.gpu_binding,comm.allreduce,topo.p2p'
  fake=(-x LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR")
  expect_rc 0 "per-rank CUDA_VISIBLE_DEVICES wrapper, 4 ranks" -- "${mpi[@]}" -np 4 "${fake[@]}" "$work/per-rank.sh" \
    "$PREFLIGHT" --format json --only "$gpu_checks" --expect-gpus 4 --allreduce-bytes 1M "${quiet[@]}"
  for id in gpu.count gpu.busy launch.gpu_binding comm.allreduce topo.p2p; do
    expect_eq "$(json_get "sorted(set(c['status'] for c in d['checks'] if c['id']=='$id'))")" "['PASS']" \
      "per-rank wrapper $id"
  done
  summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
  expect_contains "$(summary_of gpu.count)" "4 GPUs visible to CUDA to the node's 4 ranks" "gpu.count counts the union"
  expect_contains "$(summary_of launch.gpu_binding)" "each with a GPU of its own" "launch.gpu_binding"
  expect_eq "$(json_get "d['job']['allreduce']['transport']")" "nccl" "per-rank wrapper all_reduce transport"
  expect_eq "$(json_get "d['job']['allreduce']['ranks']")" "4" "per-rank wrapper all_reduce ranks"
  expect_contains "$(summary_of comm.allreduce)" "over nccl" "comm.allreduce"
  expect_contains "$(summary_of topo.p2p)" "12 peer copies verified" "topo.p2p copies across the ranks' GPUs"
  # Each rank is shown other GPUs: the driver helper runs on every rank, the NCCL library is shared.
  expect_contains "$(json_get "d['ranks'][1]['facts']['node_facts']['probed_here']['gpu_driver']")" \
    "its CUDA_VISIBLE_DEVICES differs from the leader's ('1' here, '0' there)" "rank 1 probes its own GPUs"
  expect_eq "$(json_get "'nccl' in d['ranks'][3]['facts']['node_facts']['adopted']")" "True" "rank 3 takes the node's NCCL"
  # An Xid NVML raises on rank 1's GPU during the NCCL all_reduce (and only then): rank 0 judges
  # that node's gpu.xid again after the all_reduce, with every rank's window.
  expect_rc 1 "an Xid during the all_reduce, 2 ranks" -- "${mpi[@]}" -np 2 "${fake[@]}" \
    -x PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/xid-during-allreduce-gpu1.json" "$work/per-rank.sh" \
    "$PREFLIGHT" --format json --only 'gpu.xid,comm.allreduce' --allreduce-bytes 1M "${quiet[@]}"
  expect_eq "$(check_status gpu.xid)" "FAIL" "gpu.xid after the all_reduce"
  expect_contains "$(summary_of gpu.xid)" "Xid 74 raised while preflight ran" "gpu.xid names the Xid"
  expect_contains "$(summary_of gpu.xid)" "the NCCL all_reduce" "gpu.xid names the all_reduce"
  expect_eq "$(json_get "len([c for c in d['checks'] if c['id']=='gpu.xid'])")" "1" "one gpu.xid result for the host"
  # Without --expect-gpus the 4 GPUs no rank sees are a warning of gpu.count, not a failure.
  expect_rc 0 "per-rank wrapper without --expect-gpus" -- "${mpi[@]}" -np 4 "${fake[@]}" \
    "$work/per-rank.sh" "$PREFLIGHT" --format json --only 'gpu.count' "${quiet[@]}"
  expect_eq "$(check_status gpu.count)" "WARN" "gpu.count, 4 of 8 GPUs used"

  # GPUs but no loadable NCCL: comm.allreduce fails with the reason, never an MPI stand-in PASS.
  mkdir -p "$work/bad-nccl" && echo 'not a library' >"$work/bad-nccl/libnccl.so.2"
  expect_rc 1 "GPUs without a loadable NCCL" -- "${mpi[@]}" -np 2 "${fake[@]}" "$PREFLIGHT" --format json \
    --only 'comm.allreduce' --nccl-lib "$work/bad-nccl/libnccl.so.2" "${quiet[@]}"
  expect_eq "$(check_status comm.allreduce)" "FAIL" "comm.allreduce without NCCL"
  expect_contains "$(summary_of comm.allreduce)" "cannot load NCCL" "comm.allreduce names why"
  expect_eq "$(json_get "d['job']['allreduce']['transport']")" "nccl" "no MPI stand-in"
  expect_eq "$(json_get "d['job']['allreduce'].get('blocked')")" "True" "the all_reduce was blocked, not run"

  # topo.numa_affinity's binding line is valid for the Open MPI installed here: run it.
  # (its verdict depends on how this machine binds the ranks; the line is in the evidence either way)
  "${mpi[@]}" -np 2 "${fake[@]}" -x PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/numa-gpu0-cpu1.json" \
    "$PREFLIGHT" --format json --only 'topo.numa_affinity' "${quiet[@]}" \
    >"$work/out" 2>"$work/err" || true
  line=$(json_get "[c['evidence'].get('mpirun_binding','') for c in d['checks'] if c['id']=='topo.numa_affinity'][0]")
  expect_contains "$line" "Open MPI 4.x: " "topo.numa_affinity evidence (the version detected)"
  expect_contains "$line" "mpirun --map-by ppr:1:socket --bind-to socket" "topo.numa_affinity evidence"
  args=$(printf '%s' "$line" | sed -n 's/.*`mpirun \(--map-by [^ ]* --bind-to [^ ]*\) \.\.\.`.*/\1/p')
  if [ -n "$args" ]; then
    # shellcheck disable=SC2086  # the suggested options, word-split as a shell would
    expect_rc 0 "the suggested mpirun $args" -- mpiexec $args -np 1 true
  else
    fail "no mpirun options in '$line'"
  fi

  # One rank (rank 3) with another driver and NCCL: cluster.consistency names it.
  cat >"$work/odd.json" <<'JSON'
{"description": "the odd host: an older driver and NCCL", "driver_version": "535.104.05", "cuda_driver_version": 12020, "nccl_version": 21805}
JSON
  # Rank 3 loads its driver and NCCL libraries from a folder of its own (as a container's
  # compatibility libraries would be), so it does not take its host's leader's facts.
  mkdir -p "$work/odd-lib" && ln -sf "$PREFLIGHT_FAKE_GPU_LIB_DIR"/* "$work/odd-lib/"
  expect_rc 1 "rank 3 with driver 535" -- "${mpi[@]}" -x LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" -np 3 "$PREFLIGHT" \
    --format json --only 'cluster.consistency' "${quiet[@]}" : -x LD_LIBRARY_PATH="$work/odd-lib" \
    -x PREFLIGHT_FAKE_GPU="$work/odd.json" -np 1 "$PREFLIGHT" --format json --only 'cluster.consistency' "${quiet[@]}"
  expect_contains "$(json_get "d['ranks'][3]['facts']['node_facts']['probed_here']")" "LD_LIBRARY_PATH differs" \
    "rank 3 probes its own driver and NCCL"
  expect_eq "$(check_status cluster.consistency)" "FAIL" "cluster.consistency"
  summary=$(json_get "[c['summary'] for c in d['checks'] if c['id']=='cluster.consistency'][0]")
  expect_contains "$summary" "535.104.05" "cluster.consistency names the odd driver"
  expect_contains "$summary" "3" "cluster.consistency names the odd rank"

  # The job's all_reduce through the (fake) NCCL, one helper per rank.
  expect_rc 0 "NCCL all_reduce across 4 ranks" -- "${mpi[@]}" -np 4 -x LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" \
    "$PREFLIGHT" --format json --only 'comm.allreduce' --allreduce-bytes 1M "${quiet[@]}"
  expect_eq "$(json_get "d['job']['allreduce']['transport']")" "nccl" "all_reduce transport"
  expect_eq "$(json_get "d['job']['allreduce']['ranks']")" "4" "all_reduce ranks"

  # Below --min-busbw the job's all_reduce is measured again (3 rounds of 5) before it fails.
  expect_rc 1 "NCCL all_reduce at 40 GB/s, --min-busbw 100" -- "${mpi[@]}" -np 2 -x LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" \
    -x PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/allreduce-busbw-40.json" "$PREFLIGHT" --format json \
    --only 'comm.allreduce' --allreduce-bytes 1M --min-busbw 100 "${quiet[@]}"
  expect_eq "$(check_status comm.allreduce)" "FAIL" "comm.allreduce below the floor"
  expect_eq "$(json_get "d['job']['allreduce']['repeats'] >= 15")" "True" "measured again before failing"
else
  echo "note: no fake GPU libraries; GPU cases not run"
fi

# --- a rank sends a malformed payload: named, no crash ------------------------------------------
for kind in garbage truncated wrong-rank oversized; do
  expect_rc 1 "rank 1 sends a $kind payload" -- timeout 60 "${mpi[@]}" -np 3 -x PREFLIGHT_TEST_BAD_PAYLOAD="1:$kind" "$PREFLIGHT_FAULTS" \
    --format json --only 'launch.ranks' --timeout 20 "${quiet[@]}"
  expect_eq "$(check_status launch.ranks)" "FAIL" "launch.ranks with a $kind payload"
  expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='launch.ranks'][0]")" "rank 1" "launch.ranks ($kind)"
done

# --- rank 0 killed in the barrier: Open MPI ends the job; rank 1 writes the report and the --json
# file in its place, and says so. (Not in sanitized builds: their slower report does not fit the
# moment between Open MPI's SIGTERM and its SIGKILL.) ---------------------------------------------
if sanitized_build; then
  pass "rank 0 killed: not run in a sanitized build (the report must fit before the launcher's SIGKILL)"
else
  rm -f "$work/rank1.json"
  rc=0
  timeout 60 "${mpi[@]}" -np 4 -x PREFLIGHT_TEST_KILL=0:barrier "$PREFLIGHT_FAULTS" --only 'launch.ranks,comm.*' \
    --timeout 10 "${quiet[@]}" --json "$work/rank1.json" >"$work/rank1.txt" 2>"$work/err" || rc=$?
  [ "$rc" -ne 0 ] && pass "rank 0 killed: mpiexec exit $rc" || fail "rank 0 killed: mpiexec exit 0"
  if [ -s "$work/rank1.json" ]; then
    cp "$work/rank1.json" "$work/out"
    expect_eq "$(json_get "d['summary']['exit_code']")" 4 "rank 0 killed: the report's exit code"
    expect_eq "$(json_get "d['world']['size']")" 4 "rank 0 killed: the launcher's world in rank 1's report"
    expect_contains "$(json_get "' '.join(d['incidents'])")" "this report is rank 1's" "rank 0 killed: whose report it is"
    expect_contains "$(json_get "' '.join(d['incidents'])")" "in phase barrier ended" "rank 0 killed: what happened"
  else
    fail "rank 0 killed: no --json file from rank 1"
    sed 's/^/  | /' "$work/rank1.txt" "$work/err" | tail -30 >&2
  fi
fi

# --- an MPI singleton (no launcher, --mpi on) ---------------------------------------------------
expect_rc 0 "--mpi on alone" -- "$PREFLIGHT" --mpi on --format json --only 'launch.env,comm.*' "${quiet[@]}"
expect_eq "$(json_get "d['world']['size']")" "1" "singleton world.size"
expect_eq "$(json_get "d['ranks'][0]['facts']['placement']['mpi']['singleton']")" "True" "placement.mpi.singleton"

# --- an all_reduce nobody selected is not run: rank 0's plan says so to every rank ---------------
timeout 60 "${mpi[@]}" -np 2 "$PREFLIGHT" --format json --only 'launch.ranks,comm.barrier' "${quiet[@]}" \
  >"$work/out" 2>"$work/err"
expect_eq "$(json_get "d['job']['allreduce']['attempted']")" "False" "all_reduce attempted when not selected"
expect_contains "$(json_get "d['job']['allreduce']['note']")" "not selected" "all_reduce note when not selected"
expect_eq "$(check_status comm.barrier)" PASS "comm.barrier with the all_reduce not selected"

# --- one rank out of descriptors (ulimit -n 8): it cannot reach the PMIx server, runs alone and
# waits; the lowest rank that joined reports it by host, and the job ends at the join's deadline
# (30% of --timeout), not when the lone rank gives up. Not under a sanitizer: its runtime needs
# descriptors of its own (stage 1 of CI runs this case) ---------------------------------------------
if [ -n "${ASAN_OPTIONS:-}${UBSAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
  pass "one rank out of descriptors: not under a sanitizer (the normal build runs it)"
  finish
fi
printf '%s\n' '#!/bin/bash' \
  "if [ \"\$OMPI_COMM_WORLD_RANK\" = 1 ]; then ulimit -n 8; exec \"$PREFLIGHT\" \"\$@\" >\"$work/alone.json\" 2>\"$work/alone.err\"; fi" \
  "exec \"$PREFLIGHT\" \"\$@\"" >"$work/low-fd.sh"
chmod +x "$work/low-fd.sh"
started=$SECONDS
rc=0
"${mpi[@]}" -np 2 "$work/low-fd.sh" --format json --timeout 20 --only launch.env,launch.ranks,host.limits "${quiet[@]}" \
  >"$work/out" 2>"$work/err" || rc=$?
elapsed=$((SECONDS - started))
expect_eq "$rc" 4 "mpiexec's exit with one rank out of descriptors"
[ "$elapsed" -lt 15 ] && pass "the job ended after $elapsed s (join deadline 6 s, --timeout 20)" ||
  fail "the job ended after $elapsed s: the lone rank held it, or the join did not end it"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='launch.ranks'][0]")" \
  "rank 1 (never heard from; placed on" "rank 0 names the rank that never joined"
expect_contains "$(cat "$work/alone.err")" "waits until the run's deadline" "the lone rank waits rather than end the job"
lone() { "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print([c[sys.argv[2]] for c in d['checks'] if c['id']=='launch.env'][0])" "$work/alone.json" "$1"; }
if [ -s "$work/alone.json" ]; then
  expect_eq "$(lone status)" FAIL "launch.env on the lone rank"
  expect_contains "$(lone summary)" "could not reach its launcher's PMIx server and ran alone" \
    "launch.env names the unreachable launcher, not a stale one"
  expect_contains "$(lone summary)" "this process cannot open a socket: Too many open files (EMFILE)" \
    "the lone rank names its errno"
else
  fail "the lone rank printed no report"
fi

finish
