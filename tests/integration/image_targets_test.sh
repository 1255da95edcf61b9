#!/usr/bin/env bash
# The image profile fails closed: a --target-driver newer than the matrix's newest branch is
# UNKNOWN (never extrapolated), a GPU architecture newer than the target driver's branch is a FAIL
# naming the first branch that supports it, and --target-driver / --target-gpu values that do not
# parse are usage errors (exit 2) naming the option and the spellings it accepts.
source "$(dirname "$0")/lib.sh"
R=$PREFLIGHT_FIXTURES_DIR/cuda_runtime
image() { "$PREFLIGHT" --profile image --sysroot "$R/cu124" --site-packages /site --format json "$@"; }
summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
remedy_of() { json_get "[c['remedy'] for c in d['checks'] if c['id']=='$1'][0]"; }
newer="newer than this matrix (newest R620): update the matrix or pass --matrix"

# A driver beyond the newest branch: every check that judges against it says so, none passes.
for driver in 700 621 621.10.01; do
  expect_rc 3 "--target-driver $driver (beyond R620)" -- image --target-driver "$driver" --target-gpu 9.0 \
    --only 'cuda.runtime,cuda.arch'
  for id in cuda.runtime cuda.arch; do
    expect_eq "$(check_status "$id")" UNKNOWN "$id with driver $driver"
    expect_contains "$(summary_of "$id")" "driver $driver is $newer" "$id summary"
    expect_contains "$(remedy_of "$id")" "--matrix" "$id remedy"
  done
done
# A driver of the newest branch itself is known.
expect_rc 0 "--target-driver 620.70.06 (the newest branch)" -- image --target-driver 620.70.06 --target-gpu 9.0 \
  --only 'cuda.runtime,cuda.arch'
expect_eq "$(check_status cuda.runtime)" PASS "cuda.runtime with driver 620.70.06"
expect_contains "$(summary_of cuda.runtime)" "CUDA 13.5" "cuda.runtime summary"
# --matrix DIR that knows the branch: judged again.
mkdir -p "$work/m"
{ cat "$PREFLIGHT_SOURCE_DIR/matrix/driver_branch_cuda.tsv"; printf '700\t14.0\t-\thttps://example.com/r700\n'; } \
  >"$work/m/driver_branch_cuda.tsv"
expect_rc 0 "--target-driver 700 with a matrix that has R700" -- image --matrix "$work/m" --target-driver 700 \
  --target-gpu 9.0 --only 'cuda.runtime,cuda.arch'
expect_contains "$(summary_of cuda.runtime)" "the target driver 700 (CUDA 14.0)" "cuda.runtime summary"

# Blackwell on a branch that predates it.
for cc in 10.0 12.0 sm_100 120; do
  expect_rc 1 "Blackwell $cc on driver 550.54.15" -- image --target-driver 550.54.15 --target-gpu "$cc" --only cuda.arch
  expect_eq "$(check_status cuda.arch)" FAIL "cuda.arch, $cc on R550"
  expect_contains "$(summary_of cuda.arch)" "needs driver branch R570 (CUDA 12.8) or newer" "cuda.arch summary"
  expect_contains "$(remedy_of cuda.arch)" "R570" "cuda.arch remedy"
done
expect_rc 1 "Blackwell 10.3 on driver 570.124.06" -- image --target-driver 570.124.06 --target-gpu 10.3 --only cuda.arch
expect_contains "$(summary_of cuda.arch)" "needs driver branch R575 (CUDA 12.9)" "cuda.arch summary (10.3)"
expect_rc 1 "Blackwell 10.0 on driver 535.104.05" -- image --target-driver 535.104.05 --target-gpu 10.0 --only cuda.arch
expect_eq "$(check_status cuda.arch)" FAIL "cuda.arch, 10.0 on R535"

# The spellings users type are accepted and normalised.
for gpu in 9.0 sm_90 90 9.0a sm_90a compute_90; do
  expect_rc 0 "--target-gpu $gpu" -- image --target-driver 550.54.15 --target-gpu "$gpu" --only cuda.arch
  expect_contains "$(summary_of cuda.arch)" "CC 9.0" "cuda.arch for $gpu"
done
expect_rc 0 "--target-driver 550 (a branch)" -- image --target-driver 550 --target-gpu 9.0 --only cuda.arch
expect_rc 0 "--target-gpu none (a CPU-only image)" -- image --target-driver 550.54.15 --target-gpu none --only cuda.arch
expect_eq "$(check_status cuda.arch)" SKIP "cuda.arch of a CPU-only image"

# Values that do not parse: exit 2 at option parsing, naming the option and the accepted spellings.
opt() {  # opt NAME VALUE: the option and its value as two words, or NAME=VALUE for a value with a leading '-'
  case $2 in -*) args=("--$1=$2") ;; *) args=("--$1" "$2") ;; esac
}
for bad in abc -535 535.104.05.1 '' r535; do
  opt target-driver "$bad"
  expect_rc 2 "--target-driver '$bad'" -- image "${args[@]}" --target-gpu 9.0
  expect_contains "$(cat "$work/err")" "--target-driver '$bad'" "stderr"
  expect_contains "$(cat "$work/err")" "535, 535.104 or 535.104.05" "stderr"
done
for bad in nine 9 sm_9.0 1000 ampere ''; do
  opt target-gpu "$bad"
  expect_rc 2 "--target-gpu '$bad'" -- image --target-driver 550.54.15 "${args[@]}"
  expect_contains "$(cat "$work/err")" "--target-gpu '$bad'" "stderr"
  expect_contains "$(cat "$work/err")" "9.0, sm_90, 90, 9.0a" "stderr"
done
expect_rc 2 "--target-gpu none,9.0" -- image --target-driver 550.54.15 --target-gpu none,9.0
expect_contains "$(cat "$work/err")" "cannot be combined" "stderr"
# The same rules in a config file.
printf 'profile = image\ntarget-driver = abc\n' >"$work/site.ini"
expect_rc 2 "target-driver = abc in --config" -- "$PREFLIGHT" --config "$work/site.ini"
# A file's value is never quoted (SECURITY.md): the line and the option are named instead.
expect_contains "$(cat "$work/err")" "line 2: the value of option 'target-driver' is not accepted" "stderr (config)"
finish
