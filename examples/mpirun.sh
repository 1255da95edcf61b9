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
#   LAUNCHER_GRACE  seconds the launcher gets beyond preflight's --timeout to start and end the job
#                   (default 30)
#
# The gate never hangs the queue: preflight ends within its --timeout T (the --timeout in
# PREFLIGHT_ARGS, else preflight's default 60 s) and rank 0 reports, but mpirun may not return:
# it waits for the daemon of a host whose network dropped, or hangs in PMIx_Finalize after a rank
# died during MPI initialisation. So the preflight run is bounded from outside with
# `timeout -k 10 $((T + 30))`: SIGTERM to mpirun (and everything it started here) at T + 30 s,
# SIGKILL 10 s later if it is still there. mpirun's own --timeout (Open MPI 4.1) is not used: its
# timer runs inside the process that hangs.
#
# Exit status: preflight's (rank 0's, which every rank exits with): 0 ok, 1 FAIL, 2 usage,
# 3 UNKNOWN, 4 deadline, 5 internal; the JSON report holds the same (summary.exit_code). When the
# launcher, not preflight, ends the job (a lost host, a killed rank, the outer bound), this script
# still exits with preflight's verdict if rank 0's report holds a non-zero one (it prints the
# launcher's status beside it); without such a report, the status is the launcher's:
#   124  mpirun did not return within T + 30 s and ended on timeout(1)'s SIGTERM
#   137  the same, and SIGKILL was needed 10 s later; or a rank was SIGKILLed (the OOM killer)
#   143  a rank was ended by SIGTERM
#   205  mpirun lost the daemon of a host (Open MPI's ORTE_ERR_COMM_FAILURE, -51)
#   1    mpirun's own failure: it got a SIGTERM, a rank ended without MPI_Finalize, a launch failed
#        (a FAIL of preflight's comes with a report that says 1)
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

# T: preflight's --timeout (whole seconds, rounded up); the launcher's bound is T + LAUNCHER_GRACE.
t=60
for ((i = 0; i < ${#preflight_args[@]}; i++)); do
  case ${preflight_args[i]} in
    --timeout) t=${preflight_args[i + 1]:-60} ;;
    --timeout=*) t=${preflight_args[i]#--timeout=} ;;
  esac
done
[[ $t =~ ^[0-9]+(\.[0-9]+)?$ ]] || t=60  # preflight itself refuses it (exit 2)
secs=${t%.*}
[[ $t == *.* ]] && secs=$((secs + 1))
grace=${LAUNCHER_GRACE:-30}
bound=$((secs + grace))

# bounded COMMAND...: COMMAND under timeout(1) with stdin from /dev/null (timeout runs it in a
# process group of its own, which must not read the terminal); a SIGINT, SIGTERM or SIGHUP sent to
# this script is passed on to it, so a cancelled gate ends its launcher too.
bounded() {
  local pid rc=0 i
  timeout -k 10 "$bound" "$@" </dev/null &
  pid=$!
  trap 'kill -INT "$pid" 2>/dev/null' INT
  trap 'kill -TERM "$pid" 2>/dev/null' TERM HUP
  wait "$pid" || rc=$?
  # A trapped signal interrupts wait; timeout(1) then ends within its 10 s of -k.
  for ((i = 0; i < 3; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    rc=0
    wait "$pid" || rc=$?
  done
  trap - INT TERM HUP
  return "$rc"
}

rc=0
start=$SECONDS
rm -f "$json"  # a report left by an earlier run must not speak for this one
bounded "$mpirun" -np "$np" "${launcher_args[@]}" "$preflight" "${expect[@]}" --json "$json" "${preflight_args[@]}" || rc=$?
if [ "$rc" -ne 0 ]; then
  verdict=$(sed -n 's/^ *"exit_code": *\([0-9]\{1,\}\).*/\1/p' "$json" 2>/dev/null | head -n 1)
  why=""
  if [ "$rc" != "$verdict" ]; then
    why=" (the launcher's status, not preflight's"
    if { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && [ $((SECONDS - start)) -ge "$bound" ]; then
      why+=": $mpirun did not return within $bound s, preflight's --timeout $t + $grace s, and was stopped"
    fi
    why+="; preflight's own verdict: ${verdict:+exit }${verdict:-none, no report written})"
  fi
  # The gate's status: preflight's own verdict where rank 0's report holds one that stops the
  # training (its exit-code table then applies, whoever ended the job); the launcher's otherwise.
  gate=$rc
  [ -n "$verdict" ] && [ "$verdict" -ne 0 ] && gate=$verdict
  echo "$0: preflight exited $rc$why (report: $json); not starting the training (exit $gate)" >&2
  exit "$gate"
fi
exec "$mpirun" -np "$np" "${launcher_args[@]}" "$@"
