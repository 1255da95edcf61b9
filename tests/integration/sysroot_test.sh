#!/usr/bin/env bash
# --sysroot over captured trees: a healthy-looking node, a small container, and a tree full of
# garbage (binary bytes, NULs, negative and non-numeric values). Garbage gives UNKNOWN or a clear
# finding — never a crash, never PASS for what could not be read.
source "$(dirname "$0")/lib.sh"
fx="$PREFLIGHT_FIXTURES_DIR/sysroot"

crashed() { [ "$1" -ge 5 ]; }  # 5 = internal error; >= 128 = killed by a signal

rc=0
env -i PATH="$PATH" HOME=/root "${keep_env[@]}" "$PREFLIGHT" --sysroot "$fx/garbage" --format json >"$work/out" 2>"$work/err" || rc=$?
crashed "$rc" && fail "garbage sysroot: exit $rc (crash or internal error)" || pass "garbage sysroot: exit $rc"
expect_eq "$(check_status host.memory)" UNKNOWN "host.memory over a garbage /proc/meminfo"
expect_eq "$(check_status host.limits)" UNKNOWN "host.limits over a garbage /proc/self/limits"
for id in shm.capacity env.nccl launch.env; do
  st=$(check_status "$id")
  [ "$st" != "" ] && pass "$id reported ($st)" || fail "$id missing from the report"
done
[ "$rc" -eq 3 ] || [ "$rc" -eq 1 ] || fail "garbage sysroot: exit $rc, want 3 (UNKNOWN) or 1 (FAIL)"

for opt in "--format text -v" "--format junit" "--format prometheus"; do
  rc=0
  # shellcheck disable=SC2086
  "$PREFLIGHT" --sysroot "$fx/garbage" $opt >"$work/out" 2>"$work/err" || rc=$?
  crashed "$rc" && fail "garbage sysroot with $opt: exit $rc" || pass "garbage sysroot with $opt: exit $rc"
done
finish
