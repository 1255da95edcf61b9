#!/usr/bin/env bash
# Merge throughput (README.md#performance): `preflight merge` of 4096 per-rank result files in under 1 s, and of
# 8192 in under 2.2x that (linear, not quadratic). The files are synthetic but real-sized: one real
# `preflight --json` report of this machine, copied per rank with the rank, host (8 ranks a host),
# pid and boot id varied; node-scope results only on the first rank of each host, as a job writes
# them with --json-per-rank, on one line each as it writes them (LAYOUT=indented: as --json writes a
# report, two-space indented). Prints a markdown table (best of REPEAT) and the ratio; removes its files.
#
#   bench/merge_bench.sh                     # N = 4096 8192, best of 3, binary from build/
#   COUNTS="1024 4096" REPEAT=5 bench/merge_bench.sh
# Environment: BENCH_SUMMARY (a file for the targets' lines, bench/targets.sh), BUILD_DIR (default build), PREFLIGHT (the binary), COUNTS, REPEAT, LAYOUT (compact | indented), RANKS_PER_HOST
# (default 8), MERGE_ARGS (default: none: the text report to /dev/null), TMPDIR (where the files go).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}
preflight=${PREFLIGHT:-$build_dir/preflight}
counts=${COUNTS:-4096 8192}
repeat=${REPEAT:-3}
per_host=${RANKS_PER_HOST:-8}
layout=${LAYOUT:-compact}
read -r -a merge_args <<<"${MERGE_ARGS:-}"
py=${PYTHON3:-python3}

die() { echo "merge_bench: $*" >&2; exit 2; }
[ -x "$preflight" ] || die "no preflight at $preflight (build it: ninja -C $build_dir preflight)"
command -v "$py" >/dev/null || die "python3 not found"
[[ "$repeat" =~ ^[1-9][0-9]?$ ]] || die "REPEAT must be 1..99"
[[ "$layout" =~ ^(compact|indented)$ ]] || die "LAYOUT must be compact or indented"
[[ "$per_host" =~ ^[1-9][0-9]{0,2}$ ]] || die "RANKS_PER_HOST must be 1..999"
for n in $counts; do [[ "$n" =~ ^[1-9][0-9]{0,5}$ ]] && [ "$n" -le 65536 ] || die "COUNTS: '$n' is not a file count 1..65536"; done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }

# One real report of this machine: the template of every rank's file.
"$preflight" --json "$tmp/sample.json" --timeout 120 >/dev/null 2>&1
[ -s "$tmp/sample.json" ] || die "preflight --json wrote no report"

# generate N DIR: N per-rank files preflight-rank-R.json in DIR.
generate() {
  "$py" - "$tmp/sample.json" "$1" "$2" "$per_host" "$layout" <<'PY'
import copy, json, os, sys
sample, n, out, per_host = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
layout = dict(indent=2) if sys.argv[5] == "indented" else dict(separators=(",", ":"))
os.makedirs(out, exist_ok=True)
rank0 = sample["ranks"][0]
for r in range(n):
    host, local = "bench-%05d" % (r // per_host), r % per_host
    facts = copy.deepcopy(rank0["facts"])
    facts["identity"].update(hostname=host, boot_id="boot-%05d" % (r // per_host), pid=10000 + r)
    facts["placement"].update(rank=r, world_size=n, local_rank=local, local_ranks=per_host, launcher="openmpi")
    checks = []
    for c in sample["checks"]:
        if c["scope"] == "node" and local != 0:
            continue  # node-scope checks run on the first rank of a host
        c = dict(c, hosts=[host], ranks=[r])
        checks.append(c)
    doc = dict(sample, world=dict(sample["world"], size=n, nodes=(n + per_host - 1) // per_host, launcher="openmpi"),
               checks=checks, ranks=[dict(rank0, rank=r, host=host, local_rank=local, pid=10000 + r, facts=facts)])
    with open(os.path.join(out, "preflight-rank-%d.json" % r), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, **layout)
PY
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs (merge reads files on up to 8 threads); $layout files"
echo
echo "| files | MiB of JSON | best of $repeat (s) | all runs: wall / CPU (s) | exit | target |"
echo "|---:|---:|---:|---|---:|---|"
declare -A best_of
for n in $counts; do
  dir="$tmp/n$n"
  generate "$n" "$dir" || die "could not generate $n files"
  mib=$(du -sm "$dir" | cut -f1)
  best="" runs="" rc=0
  for ((i = 0; i < repeat; i++)); do
    rc=0
    # wall, user and system seconds of the merge (bash's `time`, into $tmp/time)
    { TIMEFORMAT='%R %U %S'; time "$preflight" merge "${merge_args[@]}" "$dir"/*.json >/dev/null 2>"$tmp/err" || rc=$?; } 2>"$tmp/time"
    [ "$rc" -eq 2 ] || [ "$rc" -eq 5 ] && { cat "$tmp/err" >&2; die "merge of $n files failed (exit $rc)"; }
    read -r t user sys <"$tmp/time"
    runs+="$(printf '%.3f / %.3f, ' "$t" "$(echo "$user + $sys" | bc -l)")"
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
  done
  best_of[$n]=$best
  target=""
  [ "$n" -eq 4096 ] && target=$([ "$(echo "$best < 1" | bc -l)" = 1 ] && echo "< 1 s: met" || echo "< 1 s: MISSED")
  printf '| %d | %d | %.3f | %s | %d | %s |\n' "$n" "$mib" "$best" "${runs%, }" "$rc" "$target"
  if [ -n "$target" ] && [ -n "${BENCH_SUMMARY:-}" ]; then
    echo "merge of 4096 result files|$best s|< 1 s|${target##*: }" >>"$BENCH_SUMMARY"
  fi
  rm -rf "$dir"
done
if [ -n "${best_of[4096]:-}" ] && [ -n "${best_of[8192]:-}" ]; then
  ratio=$(echo "${best_of[8192]} / ${best_of[4096]}" | bc -l)
  verdict=$([ "$(echo "$ratio < 2.2" | bc -l)" = 1 ] && echo "met" || echo "MISSED")
  printf '\n8192 / 4096 = %.2fx (target < 2.2x: %s)\n' "$ratio" "$verdict"
  if [ -n "${BENCH_SUMMARY:-}" ]; then
    printf 'merge of 8192 result files|%s s (%.2fx the 4096)|< 2.2x the 4096|%s\n' "${best_of[8192]}" "$ratio" "$verdict" >>"$BENCH_SUMMARY"
  fi
fi
