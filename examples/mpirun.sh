#!/usr/bin/env bash
# Gate a training job on preflight under Open MPI: preflight is launched exactly as the training
# will be (same mpirun, same ranks, same placement), and the training starts only if it exits 0.
#
#   NP=16 MPIRUN_ARGS="--hostfile hosts --map-by ppr:8:node" examples/mpirun.sh python train.py
#
# Environment (all optional):
#   NP              ranks (default 2)
#   MPIRUN          the launcher (default mpirun)
#   MPIRUN_ARGS     launcher arguments for both runs, split on spaces (hostfile, --map-by, --bind-to, -x ...)
#   PREFLIGHT       the preflight binary (default: preflight on PATH)
#   PREFLIGHT_ARGS  preflight arguments, split on spaces (e.g. "--expect-nodes 2 --min-busbw 150")
#   PREFLIGHT_JSON  where rank 0 writes the JSON report (default preflight-<time>.json here)
# preflight's exit status: 0 ok, 1 FAIL, 2 usage, 3 UNKNOWN, 4 deadline, 5 internal.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 TRAINING_COMMAND [ARGS...]" >&2
  exit 2
fi
np=${NP:-2}
mpirun=${MPIRUN:-mpirun}
preflight=${PREFLIGHT:-preflight}
read -r -a launcher_args <<<"${MPIRUN_ARGS:-}"
read -r -a preflight_args <<<"${PREFLIGHT_ARGS:-}"
json=${PREFLIGHT_JSON:-preflight-$(date +%Y%m%dT%H%M%S).json}

expect=(--expect-world-size "$np")
case " ${PREFLIGHT_ARGS:-} " in *" --expect-world-size"*) expect=() ;; esac

rc=0
"$mpirun" -np "$np" "${launcher_args[@]}" "$preflight" "${expect[@]}" --json "$json" "${preflight_args[@]}" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "$0: preflight exited $rc (report: $json); not starting the training" >&2
  exit "$rc"
fi
exec "$mpirun" -np "$np" "${launcher_args[@]}" "$@"
