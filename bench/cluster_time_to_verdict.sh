#!/usr/bin/env bash
# Time to verdict across emulated hosts: HOSTS hosts × PER_HOST ranks (default 4 × 4) in the
# namespaces of tests/cluster/lib.sh, under a real mpirun through its rsh agent; preflight vs the
# irreducible work (bench/irreducible: MPI init, hwloc topology load with I/O devices, one
# all_reduce, one barrier) on the same hosts. Prints one markdown row: best-of-REPEAT wall time of
# each, the ratio (target <= 1.5x) and mpirun's exit code (0 with orte_abort_on_non_zero_status 0 whatever the ranks' codes). Needs root (namespaces).
#
#   bench/cluster_time_to_verdict.sh
#   HOSTS=2 PER_HOST=8 REPEAT=5 bench/cluster_time_to_verdict.sh
# Environment: BENCH_SUMMARY (a file for the targets' lines, bench/targets.sh), BUILD_DIR (default build), HOSTS, PER_HOST, REPEAT, PREFLIGHT_ARGS (default:
# --profile job --format json --timeout 120).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}
export PREFLIGHT=${PREFLIGHT:-$build_dir/preflight}
irreducible=${IRREDUCIBLE:-$build_dir/bench/irreducible}
hosts=${HOSTS:-4}
per_host=${PER_HOST:-4}
repeat=${REPEAT:-3}
read -r -a pf_args <<<"${PREFLIGHT_ARGS:---profile job --format json --timeout 120}"

die() { echo "cluster_time_to_verdict: $*" >&2; exit 2; }
[ -x "$PREFLIGHT" ] || die "no preflight at $PREFLIGHT (build it: ninja -C $build_dir preflight)"
[ -x "$irreducible" ] || die "no irreducible at $irreducible (build it: ninja -C $build_dir irreducible)"
[[ "$hosts" =~ ^[1-9][0-9]?$ && "$per_host" =~ ^[1-9][0-9]?$ && "$repeat" =~ ^[1-9]$ ]] ||
  die "HOSTS and PER_HOST must be 1..99, REPEAT 1..9"

# lib.sh's helpers (skip_all for a machine that cannot do this) and its cleanup.
skip_all() { die "$*"; }
source "$here/tests/cluster/lib.sh"
cluster_require
trap cluster_down EXIT
spec=""
for ((i = 1; i <= hosts; i++)); do
  cluster_host "node$i"
  spec+="${spec:+,}node$i:$per_host"
done
cluster_up || die "the emulated hosts did not come up"
np=$((hosts * per_host))

now() { date +%s.%N; }
rc_file=$(mktemp)
trap 'cluster_down; rm -f "$rc_file"' EXIT
# best_of COMMAND...: the shortest wall time of $repeat runs; the last exit code in $rc_file.
best_of() {
  local best="" t0 t1 i rc
  for ((i = 0; i < repeat; i++)); do
    t0=$(now)
    rc=0
    # As bench/time_to_verdict.sh: no 2 s abort of the job when a rank exits non-zero (no GPU here).
    CLUSTER_TIMEOUT=600 cluster_mpirun --mca orte_abort_on_non_zero_status 0 --host "$spec" -np "$np" "$@" \
      >/dev/null 2>&1 || rc=$?
    t1=$(now)
    echo "$rc" >"$rc_file"
    best=$(awk -v a="$best" -v b="$(awk -v x="$t0" -v y="$t1" 'BEGIN { printf "%.3f", y - x }')" \
      'BEGIN { if (a == "" || b + 0 < a + 0) print b; else print a }')
  done
  echo "$best"
}

irr=$(best_of "$irreducible")
irr_rc=$(cat "$rc_file")
pf=$(best_of "$PREFLIGHT" "${pf_args[@]}")
pf_rc=$(cat "$rc_file")
[ "$irr_rc" -eq 0 ] || echo "cluster_time_to_verdict: the irreducible run exited $irr_rc" >&2
echo "| hosts × ranks | irreducible | preflight | ratio (≤ 1.5×) | mpirun's exit |"
echo "|---|---:|---:|---:|---:|"
printf '| %d × %d (emulated hosts, `mpirun` through the rsh agent) | %.3f s | %.3f s | %.2f× | %d |\n' \
  "$hosts" "$per_host" "$irr" "$pf" "$(awk -v a="$pf" -v b="$irr" 'BEGIN { print a / b }')" "$pf_rc"
if [ -n "${BENCH_SUMMARY:-}" ]; then
  ratio=$(awk -v a="$pf" -v b="$irr" 'BEGIN { printf "%.2f", a / b }')
  echo "time to verdict, $hosts emulated hosts × $per_host ranks|${ratio}x ($pf s vs $irr s)|<= 1.5x|$(awk -v r="$ratio" 'BEGIN { print (r + 0 <= 1.5) ? "met" : "MISSED" }')" >>"$BENCH_SUMMARY"
fi
