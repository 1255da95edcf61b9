#!/usr/bin/env bash
# Open MPI's rsh agent for the emulated cluster (tests/cluster/lib.sh): `rsh_agent.sh [options] HOST
# COMMAND…` runs COMMAND inside HOST's namespaces with HOST's environment, as ssh would on a real
# node. CLUSTER_DIR names the cluster (its HOST.pid and HOST.env files).
set -euo pipefail
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
: "${CLUSTER_DIR:?}"
[ -s "$CLUSTER_DIR/$host.pid" ] || { echo "rsh_agent: no emulated host '$host'" >&2; exit 255; }
exec nsenter -t "$(cat "$CLUSTER_DIR/$host.pid")" -u -m -n -- /bin/sh -c ". '$CLUSTER_DIR/$host.env'; $*"
