#!/usr/bin/env bash
# launch.env as a user meets it: a lone run is PASS; Open MPI's variables left in a plain shell are
# a WARN (and no job: launch.ranks and comm.* SKIP); RANK without WORLD_SIZE FAILs as torch's env://
# rendezvous would; and under a real `mpirun -x RANK=0` the job's report has one finding for every
# rank, while rank 1's own report FAILs naming both values.
# Env: PREFLIGHT (binary), PYTHON3. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/lib.sh"

# A clean environment: CTest may itself run inside a Slurm or MPI job.
clean() { env -i PATH="$PATH" HOME="${HOME:-/nonexistent}" "${keep_env[@]}" "$@"; }

expect_rc 0 "no launcher" -- clean "$PREFLIGHT" --only launch.env --format json
expect_eq "$(check_status launch.env)" PASS "launch.env without a launcher"

# OMPI_COMM_WORLD_* left in a plain shell (no PMIX_RANK/PMIX_NAMESPACE: no mpirun started it): no
# job. launch.env warns of the variables; launch.ranks and the collectives SKIP as for one process
# alone, with their reason, never UNKNOWN (exit 3).
expect_rc 0 "OMPI_COMM_WORLD_* left in a plain shell" -- \
  clean OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=4 \
  "$PREFLIGHT" --only launch.env,launch.ranks,comm.barrier,comm.allreduce --format json --timeout 20
expect_eq "$(check_status launch.env)" WARN "launch.env with OMPI_COMM_WORLD_* left"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='launch.env'][0]")" \
  "OMPI_COMM_WORLD_SIZE=4 claims a job of 4 ranks, but no launch started this process" "launch.env's summary"
expect_eq "$(check_status launch.ranks)" SKIP "launch.ranks with OMPI_COMM_WORLD_* left"
expect_eq "$(check_status comm.barrier)" SKIP "comm.barrier with OMPI_COMM_WORLD_* left"
expect_eq "$(check_status comm.allreduce)" SKIP "comm.allreduce with OMPI_COMM_WORLD_* left"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='comm.allreduce'][0]")" \
  "no all_reduce was run" "comm.allreduce says why"
expect_eq "$(json_get "d['world']['source'], d['world']['size']")" "none 1" "no MPI world"

# RANK without WORLD_SIZE: torch.distributed's env:// rendezvous raises "WORLD_SIZE expected".
expect_rc 1 "RANK without WORLD_SIZE" -- clean RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 "$PREFLIGHT" \
  --only launch.env --format json
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" launch.env/world-size-not-set "finding code"
expect_contains "$(json_get "d['checks'][0]['summary']")" "environment variable WORLD_SIZE expected, but not set" \
  "summary"

# PMIx variables left from another job (a login shell inside an old allocation): the server they
# name does not answer. MPI_Init would abort the process with no report; preflight runs alone and
# says why (a closed port on loopback stands for the launcher that is gone).
expect_rc 0 "stale PMIX_* variables" -- clean PMIX_NAMESPACE=stale.job.1 PMIX_RANK=0 \
  'PMIX_SERVER_URI41=pmix-server.99999;tcp4://127.0.0.1:9' "$PREFLIGHT" --only 'launch.env,host.memory' --format json --timeout 10
expect_contains "$(json_get "' '.join(d['incidents'])")" "does not answer" "the incident with stale PMIx variables"
expect_eq "$(json_get "d['world']['source']")" none "no MPI world with stale PMIx variables"
expect_eq "$(check_status launch.env)" WARN "launch.env with stale PMIx variables"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='launch.env'][0]")" \
  "name a job that is gone" "launch.env's summary"

MPIRUN=$(command -v mpirun || true)
[ -n "$MPIRUN" ] || skip_all "mpirun is not installed (the single-process cases above passed)"
# Rank 0 gathers every rank's launch.env verdict into one report (and --json-per-rank keeps each
# rank's own file too).
clean "$MPIRUN" --allow-run-as-root --oversubscribe -np 2 -x RANK=0 "$PREFLIGHT" --only launch.env \
  --json "$work/job.json" --json-per-rank "$work/ranks" >"$work/mpirun.out" 2>&1 || true
if [ ! -s "$work/job.json" ]; then
  fail "no report from rank 0"
  sed 's/^/  | /' "$work/mpirun.out" >&2
else
  cp "$work/job.json" "$work/out"
  expect_eq "$(json_get "d['world']['launcher'], d['world']['size']")" "openmpi 2" "the job's world"
  # Every rank claims RANK=0: one job-level finding, rank 0 included.
  expect_eq "$(json_get "[(c['status'], c['scope'], c['ranks']) for c in d['checks'] if c['id']=='launch.env']")" \
    "[('FAIL', 'job', [0, 1])]" "mpirun -x RANK=0: one finding for the job"
  expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='launch.env'][0]")" "every rank claims RANK=0" \
    "the job's summary"
  expect_contains "$(json_get "d['checks'][0]['evidence']['per_rank']['1']")" "RANK=0 but" "rank 1's own finding in the evidence"
  # Rank 1's own file judges rank 1 alone.
  cp "$work/ranks/preflight-rank-1.json" "$work/out"
  expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['ranks']==[1]][0]")" "RANK=0 but" "rank 1's own file"
fi
for rank in 0 1; do
  file="$work/ranks/preflight-rank-$rank.json"
  if [ -s "$file" ]; then pass "--json-per-rank wrote rank $rank's file"; else fail "no $file"; fi
done
finish
