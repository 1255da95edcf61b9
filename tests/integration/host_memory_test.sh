#!/usr/bin/env bash
# host.memory end to end: the real binary over the fixture sysroots in tests/fixtures/memory.
# Env: PREFLIGHT (binary), PREFLIGHT_FIXTURES_DIR, PYTHON3. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/lib.sh"
: "${PREFLIGHT_FIXTURES_DIR:?}"
"${PYTHON3:-python3}" -c '' 2>/dev/null || skip_all "python3 is needed to read the JSON report"
fixtures="$PREFLIGHT_FIXTURES_DIR/memory"

# memory ARGS...: preflight --only host.memory --format json ARGS
memory() { "$PREFLIGHT" --only host.memory --format json "$@"; }
evidence() { json_get "d['checks'][0]['evidence']['$1']"; }

expect_rc 1 "70B ZeRO-0 on 8 ranks in a 32 GiB cgroup" -- \
  memory --sysroot "$fixtures/cgroup2-limited" --model-params 70B --zero-stage 0 --ranks-per-node 8
expect_eq "$(check_status host.memory)" FAIL "status"
expect_eq "$(evidence need_bytes)" 1014359738368 "need_bytes"    # 8 × 4 GiB + rank 0 (data-parallel rank 0) × 70e9 × 14 B
expect_eq "$(evidence budget_bytes)" 33285996544 "budget_bytes"  # 32 GiB limit - (2 GiB - 1 GiB cache)
expect_eq "$(evidence cgroup_path)" /job.slice "limiting group"
expect_contains "$(json_get "d['checks'][0]['summary']")" "need ≈ 944.7 GiB (1 of them data-parallel rank 0" "summary"

expect_rc 0 "the per-rank baseline fits the cgroup" -- memory --sysroot "$fixtures/cgroup2-limited"
expect_eq "$(check_status host.memory)" PASS "status"

expect_rc 1 "a v1 container's limit binds" -- \
  memory --sysroot "$fixtures/cgroup1-container" --model-params 7B --ranks-per-node 2
expect_eq "$(evidence cgroup_limit)" 17179869184 "cgroup_limit"
expect_contains "$(json_get "d['checks'][0]['remedy']")" "Raise the memory limit of cgroup /docker/0123abcd" "remedy"

expect_rc 0 "no memory controller: MemAvailable alone" -- memory --sysroot "$fixtures/no-cgroup"
expect_eq "$(evidence cgroup_version)" 0 "cgroup_version"

expect_rc 3 "garbage files are UNKNOWN" -- memory --sysroot "$fixtures/garbage"
expect_eq "$(check_status host.memory)" UNKNOWN "status"

expect_rc 0 "the image profile skips" -- \
  memory --sysroot "$fixtures/cgroup2-limited" --profile image --model-params 70B
expect_eq "$(check_status host.memory)" SKIP "status"

finish
