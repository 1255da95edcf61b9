#!/usr/bin/env bash
# launch.env as a user meets it: an exported RANK that disagrees with Open MPI's rank FAILs (exit 1),
# a lone run is PASS, and under a real `mpirun -x RANK=0` rank 1's own report FAILs naming both values.
# Env: PREFLIGHT (binary), PYTHON3. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/lib.sh"

# A clean environment: CTest may itself run inside a Slurm or MPI job.
clean() { env -i PATH="$PATH" HOME="${HOME:-/nonexistent}" "$@"; }

expect_rc 1 "OMPI_COMM_WORLD_RANK=3 with RANK=0" -- \
  clean OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 RANK=0 WORLD_SIZE=4 "$PREFLIGHT" --only launch.env
expect_contains "$(cat "$work/out")" "RANK=0 but OMPI_COMM_WORLD_RANK=3" "text report"

expect_rc 0 "no launcher" -- clean "$PREFLIGHT" --only launch.env --format json
expect_eq "$(check_status launch.env)" PASS "launch.env without a launcher"

expect_rc 0 "stale Slurm variables under Open MPI are a WARN" -- \
  clean OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 SLURM_PROCID=0 SLURM_NTASKS=1 "$PREFLIGHT" --only launch.env \
  --format json
expect_eq "$(check_status launch.env)" WARN "launch.env with stale SLURM_PROCID"

MPIRUN=$(command -v mpirun || true)
[ -n "$MPIRUN" ] || skip_all "mpirun is not installed (the single-process cases above passed)"
# Each rank writes its own JSON file (mpirun's forwarding of large stdout can cut it short).
clean "$MPIRUN" --allow-run-as-root --oversubscribe -np 2 -x RANK=0 \
  bash -c 'exec "$0" --only launch.env --json "$1/rank.$OMPI_COMM_WORLD_RANK.json"' "$PREFLIGHT" "$work" \
  >"$work/mpirun.out" 2>&1 || true
for rank in 0 1; do
  file="$work/rank.$rank.json"
  if [ ! -s "$file" ]; then fail "no output from rank $rank"; sed 's/^/  | /' "$work/mpirun.out" >&2; continue; fi
  cp "$file" "$work/out"
  want=PASS; [ "$rank" -eq 1 ] && want=FAIL
  expect_eq "$(check_status launch.env)" "$want" "mpirun -x RANK=0: rank $rank"
  expect_eq "$(json_get "d['world']['launcher'], d['world']['size']")" "openmpi 2" "rank $rank world"
done
expect_contains "$(json_get "d['checks'][0]['summary']")" "RANK=0 but OMPI_COMM_WORLD_RANK=1" "rank 1 summary"
finish
