#!/bin/sh
# A rank that hangs before preflight's first instruction (a node stuck in start-up, a binary on a
# file system that does not answer): the ranks listed in PREFLIGHT_STUCK_RANKS stop themselves
# (SIGSTOP) before exec; the launcher's SIGCONT when it ends the job lets them go on and die.
#   stuck_before_start.sh COMMAND [ARG...]
rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMIX_RANK:-}}}
for r in ${PREFLIGHT_STUCK_RANKS:-}; do
  [ "$r" = "$rank" ] && kill -STOP $$
done
exec "$@"
