#!/usr/bin/env bash
# --matrix DIR: the compatibility matrix is validated before anything runs. A malformed file exits 2
# naming file and line; a good directory (or one holding only some files) runs; a missing one exits 2.
source "$(dirname "$0")/lib.sh"
src="$PREFLIGHT_SOURCE_DIR/matrix"

# A copy of the shipped files runs normally (any exit but the usage error).
mkdir -p "$work/good" && cp "$src"/*.tsv "$work/good/"
rc=0
"$PREFLIGHT" --matrix "$work/good" --format json >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" -ne 2 ] && pass "good --matrix dir runs (exit $rc)" || { fail "good --matrix dir: exit 2"; cat "$work/err" >&2; }

# An empty directory: every file falls back to the built-in copy.
mkdir -p "$work/empty"
rc=0
"$PREFLIGHT" --matrix "$work/empty" --format json >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" -ne 2 ] && pass "empty --matrix dir runs (exit $rc)" || fail "empty --matrix dir: exit 2"

# A bad driver version on the 12.4 GA row.
mkdir -p "$work/bad"
sed 's/^12\.4\.0\tGA\t550\.54\.14\t/12.4.0\tGA\t550.54.1x\t/' "$src/cuda_toolkit_driver.tsv" >"$work/bad/cuda_toolkit_driver.tsv"
line=$(grep -n '550\.54\.1x' "$work/bad/cuda_toolkit_driver.tsv" | cut -d: -f1)
[ -n "$line" ] || fail "could not plant the bad row"
expect_rc 2 "malformed matrix file" -- "$PREFLIGHT" --matrix "$work/bad"
expect_contains "$(cat "$work/err")" "$work/bad/cuda_toolkit_driver.tsv:$line: column 3 (min_driver) is not a driver version" "stderr"

# A row without its source URL.
mkdir -p "$work/nourl"
printf 'major\tmin_driver\tnote\tsource\n12\t525.60.13\t-\t-\n' >"$work/nourl/cuda_minor_compat.tsv"
expect_rc 2 "matrix row without a source URL" -- "$PREFLIGHT" --matrix "$work/nourl"
expect_contains "$(cat "$work/err")" "cuda_minor_compat.tsv:2: no source URL" "stderr"

# An empty file.
mkdir -p "$work/emptyfile" && : >"$work/emptyfile/nccl_known_issues.tsv"
expect_rc 2 "empty matrix file" -- "$PREFLIGHT" --matrix "$work/emptyfile"
expect_contains "$(cat "$work/err")" "nccl_known_issues.tsv:1: expected the header" "stderr"

expect_rc 2 "missing --matrix dir" -- "$PREFLIGHT" --matrix "$work/does-not-exist"
expect_contains "$(cat "$work/err")" "not a directory" "stderr"
# The checks judge against --matrix DIR's data, not only the built-in copy.
mkdir -p "$work/newer"
sed 's/^13\.0\.0\tGA\t580\.65\.06\t/13.0.0\tGA\t580.65.07\t/' "$PREFLIGHT_SOURCE_DIR/matrix/cuda_toolkit_driver.tsv" \
  >"$work/newer/cuda_toolkit_driver.tsv"
grep -q '580.65.07' "$work/newer/cuda_toolkit_driver.tsv" || fail "could not edit the 13.0 row"
expect_rc 1 "an image judged with an edited matrix" -- env HOME=/home/user "$PREFLIGHT" --profile image \
  --target-driver 535.104.05 --target-gpu 9.0 --sysroot "$PREFLIGHT_FIXTURES_DIR/cuda_runtime/cu130" \
  --matrix "$work/newer" --only cuda.runtime --format json
expect_contains "$(json_get "d['checks'][0]['remedy']")" "580.65.07" "remedy from --matrix"
finish
