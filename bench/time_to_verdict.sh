#!/usr/bin/env bash
# Time to verdict (README.md#performance): preflight under mpirun vs the irreducible work of a distributed run
# (bench/irreducible: MPI init, hwloc topology load with I/O devices, one all_reduce, one barrier),
# at N ranks on this one host (oversubscribed). Prints a markdown table: best-of-R wall time of each,
# the ratio (target <= 1.5x), preflight's exit code, its peak RSS per rank and its CPU seconds per
# rank (user + system, its helpers included).
#
#   bench/time_to_verdict.sh                 # N = 1 16 64, best of 3, binaries from build/
#   RANKS="1 4" REPEAT=5 bench/time_to_verdict.sh
# Environment: BUILD_DIR (default build), PREFLIGHT, IRREDUCIBLE (the binaries), RANKS, REPEAT,
# PREFLIGHT_ARGS (default: --profile job --format json --timeout 120), MPIRUN (default mpirun),
# BENCH_SUMMARY (a file: one "figure|measured|target|verdict" line per target is appended to it).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}
preflight=${PREFLIGHT:-$build_dir/preflight}
irreducible=${IRREDUCIBLE:-$build_dir/bench/irreducible}
ranks_list=${RANKS:-1 16 64}
repeat=${REPEAT:-3}
mpirun=${MPIRUN:-mpirun}
read -r -a pf_args <<<"${PREFLIGHT_ARGS:---profile job --format json --timeout 120}"

die() { echo "time_to_verdict: $*" >&2; exit 2; }
[ -x "$preflight" ] || die "no preflight at $preflight (build it: ninja -C $build_dir preflight)"
[ -x "$irreducible" ] || die "no irreducible at $irreducible (build it: ninja -C $build_dir irreducible)"
command -v "$mpirun" >/dev/null || die "$mpirun not found (apt-get install openmpi-bin)"
[[ "$repeat" =~ ^[1-9][0-9]?$ ]] || die "REPEAT must be 1..99"
for n in $ranks_list; do [[ "$n" =~ ^[1-9][0-9]{0,3}$ ]] || die "RANKS: '$n' is not a rank count 1..9999"; done
# Open MPI refuses to run as root without these.
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Measure the launcher we start, not one this script may itself run under.
while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(\(SLURM\|PMIX\|PMI\)[A-Za-z0-9_]*\)=.*/\1/p')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }

# best_of COMMAND...: the shortest wall time of $repeat runs (seconds); the last exit code in $tmp/rc.
best_of() {
  local best="" t0 t1 rc i
  for ((i = 0; i < repeat; i++)); do
    t0=$(now)
    rc=0
    timeout 600 "$@" >/dev/null 2>"$tmp/err" || rc=$?
    t1=$(now)
    echo "$rc" >"$tmp/rc"
    best=$(awk -v a="$best" -v b="$(awk -v x="$t0" -v y="$t1" 'BEGIN { printf "%.3f", y - x }')" \
      'BEGIN { if (a == "" || b + 0 < a + 0) print b; else print a }')
  done
  echo "$best"
}

# A wrapper that records "peak-RSS-KiB exit-code user-s system-s" of one rank (the peak of preflight
# and of any child it waited for; the CPU seconds of both) in $tmp/rss/<rank>: GNU time where
# installed, else Python's getrusage(RUSAGE_CHILDREN).
mkdir -p "$tmp/rss"
cat >"$tmp/rss_wrap.sh" <<EOF
#!/usr/bin/env bash
r=\${OMPI_COMM_WORLD_RANK:-\${PMIX_RANK:-\${SLURM_PROCID:-0}}}
out="$tmp/rss/\$r"
if [ -x /usr/bin/time ]; then
  exec /usr/bin/time -f '%M %x %U %S' -o "\$out" "\$@"
fi
exec python3 -c 'import os, resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%d %d %.2f %.2f\n" % (u.ru_maxrss, rc, u.ru_utime, u.ru_stime))
sys.exit(rc)' "\$out" "\$@"
EOF
chmod +x "$tmp/rss_wrap.sh"
rss_tool="GNU time %M"
[ -x /usr/bin/time ] || rss_tool="getrusage(RUSAGE_CHILDREN).ru_maxrss"

# peak_rss COMMAND...: runs COMMAND once with the wrapper around each rank. Prints the ranks' exit
# codes (distinct values) to $tmp/rc, "mean CPU s (mean system s)" per rank to $tmp/cpu and
# "max MiB / mean MiB (N ranks)" to stdout.
peak_rss() {
  rm -f "$tmp/rss/"*
  timeout 600 "$@" >/dev/null 2>&1
  local f
  for f in "$tmp/rss/"*; do [ -f "$f" ] && tail -n 1 "$f"; done >"$tmp/rss.all"
  awk '{ print $2 }' "$tmp/rss.all" | sort -un | paste -sd, >"$tmp/rc"
  [ -s "$tmp/rc" ] || echo "n/a" >"$tmp/rc"
  awk '{ c += $3 + $4; s += $4; n++ } END { if (n) printf "%.2f (%.2f system)", c / n, s / n; else print "n/a" }' "$tmp/rss.all" >"$tmp/cpu"
  awk '{ v = $1 / 1024; s += v; n++; if (v > m) m = v } END { if (n) printf "%.1f / %.1f (%d rank%s)", m, s / n, n, n == 1 ? "" : "s"; else print "n/a" }' \
    "$tmp/rss.all"
}

# Local rank 0 allocates what NCCL needs in /dev/shm for real (about 40 MiB a rank at most); should
# that ever exceed what this machine can spare, shrink the need and say so.
mem_avail_mib=$(awk '/^MemAvailable:/ { printf "%d", $2 / 1024 }' /proc/meminfo)
shm_args_for() {
  local n=$1
  if [ -n "$mem_avail_mib" ] && [ $((n * 40)) -gt $((mem_avail_mib / 2)) ]; then
    echo "--shm-dataloader-bytes 0"
  fi
}

echo "## time to verdict — $(hostname -s), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "preflight: $preflight ($("$preflight" --version 2>/dev/null | head -n 1)); args: ${pf_args[*]}; best of $repeat; peak RSS: $rss_tool"
echo
echo "| ranks | launch | irreducible s | preflight s | ratio | target | preflight exit (per rank) | preflight peak RSS MiB max / mean | CPU s per rank | note |"
echo "|---:|---|---:|---:|---:|---|---:|---|---|---|"

row() {  # row N LAUNCH IRR_SECONDS PF_SECONDS RC RSS CPU NOTE
  local ratio verdict
  ratio=$(awk -v a="$3" -v b="$4" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }')
  verdict=$(awk -v r="$ratio" 'BEGIN { if (r == "n/a") print "n/a"; else if (r + 0 <= 1.5) print "≤ 1.5x ok"; else print "> 1.5x MISSED" }')
  echo "| $1 | $2 | $3 | $4 | ${ratio}x | $verdict | $5 | $6 | $7 | $8 |"
  if [ -n "${BENCH_SUMMARY:-}" ]; then
    local rss_max=${6%% *}
    echo "time to verdict, $1 rank(s), $2|${ratio}x ($4 s vs $3 s)|<= 1.5x|$([[ $verdict == *ok ]] && echo met || echo MISSED)" >>"$BENCH_SUMMARY"
    echo "peak RSS per rank, $1 rank(s), $2|$rss_max MiB (max)|< 64 MiB|$(awk -v m="$rss_max" 'BEGIN { print (m + 0 < 64 && m != "n/a") ? "met" : "MISSED" }')" >>"$BENCH_SUMMARY"
    echo "CPU per rank, $1 rank(s), $2|$7 s|reported|met" >>"$BENCH_SUMMARY"
  fi
}

total_t0=$(now)
for n in $ranks_list; do
  read -r -a shm_args <<<"$(shm_args_for "$n")"
  note=""
  ((${#shm_args[@]})) && note="${shm_args[*]} (need > half of MemAvailable ${mem_avail_mib} MiB)"
  # orte_abort_on_non_zero_status 0: otherwise mpirun spends ~2 s aborting the job when a rank exits
  # non-zero (every rank does here, without a GPU): launcher time that is not preflight's.
  mpi=("$mpirun" --oversubscribe --mca orte_abort_on_non_zero_status 0 -np "$n")
  t_irr=$(best_of "${mpi[@]}" "$irreducible")
  irr_rc=$(cat "$tmp/rc")
  [ "$irr_rc" -eq 0 ] || note="${note:+$note; }irreducible exited $irr_rc: $(head -c 200 "$tmp/err" | tr '\n' ' ')"
  n_t0=$(now)
  t_pf=$(best_of "${mpi[@]}" "$preflight" "${pf_args[@]}" "${shm_args[@]}")
  rss=$(peak_rss "${mpi[@]}" "$tmp/rss_wrap.sh" "$preflight" "${pf_args[@]}" "${shm_args[@]}")
  pf_rc=$(cat "$tmp/rc")
  n_secs=$(awk -v a="$n_t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
  row "$n" "mpirun -np $n" "$t_irr" "$t_pf" "$pf_rc" "$rss" "$(cat "$tmp/cpu")" "$((repeat + 1)) preflight runs took ${n_secs} s${note:+; $note}"
  if [ "$n" -eq 1 ]; then
    # Alone, without a launcher: preflight's own default (node profile) vs a singleton MPI program.
    t_irr1=$(best_of "$irreducible")
    t_pf1=$(best_of "$preflight" --format json --timeout 120)
    rss1=$(peak_rss "$tmp/rss_wrap.sh" "$preflight" --format json --timeout 120)
    pf1_rc=$(cat "$tmp/rc")
    row 1 "alone (no mpirun)" "$t_irr1" "$t_pf1" "$pf1_rc" "$rss1" "$(cat "$tmp/cpu")" "irreducible as an MPI singleton; preflight node profile"
  fi
done
echo
echo "Total $(awk -v a="$total_t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') s. Exit codes: 0 ok, 1 FAIL (expected without a GPU), 3 UNKNOWN, 4 deadline."
