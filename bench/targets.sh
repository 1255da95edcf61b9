#!/usr/bin/env bash
# Every performance target of README.md#performance in one run: each benchmark's own table, then
# one table of every figure against its target (met / MISSED).
#   time to verdict at 1, 16 and 64 ranks on this host, and peak RSS per rank (time_to_verdict.sh)
#   time to verdict across 4 emulated hosts × 4 ranks (cluster_time_to_verdict.sh; root only)
#   the fake 8-GPU node: node profile, mpirun -np 8, system CPU share (fake_node.sh)
#   merge of 4096 and 8192 result files (merge_bench.sh)
#   the health checks' cost on the fake node (gpu_health.sh) and start-up (startup.sh): their tables
#
#   bench/targets.sh                       # about 10 minutes on 2 CPUs
# Environment: BUILD_DIR, REPEAT (passed on), SKIP (space-separated: ttv cluster fake merge health startup).
# Exit 0 when every target measured is met, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
export BENCH_SUMMARY=$summary
skip=" ${SKIP:-} "
part() {  # part NAME TITLE COMMAND...
  local name=$1 title=$2
  shift 2
  if [[ "$skip" == *" $name "* ]]; then echo "## $title: skipped (SKIP)"; echo; return; fi
  echo "## $title"
  echo
  "$@" || echo "($name exited $?)"
  echo
}
part ttv "time to verdict on one host" "$here/time_to_verdict.sh"
if [ "$(id -u)" -eq 0 ]; then
  part cluster "time to verdict across emulated hosts" "$here/cluster_time_to_verdict.sh"
else
  echo "## time to verdict across emulated hosts: not measured (needs root for the namespaces)"
  echo "time to verdict, 4 emulated hosts × 4 ranks|not measured (not root)|<= 1.5x|MISSED" >>"$summary"
fi
part fake "the fake 8-GPU node" "$here/fake_node.sh"
part merge "merge" "$here/merge_bench.sh"
part health "the health checks on the fake node" "$here/gpu_health.sh"
part startup "start-up" "$here/startup.sh"

echo "## every target"
echo
echo "| figure | measured | target | |"
echo "|---|---|---|---|"
awk -F'|' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$summary"
missed=$(grep -c '|MISSED$' "$summary")
echo
echo "$(wc -l <"$summary") figures, $missed missed."
[ "$missed" -eq 0 ]
