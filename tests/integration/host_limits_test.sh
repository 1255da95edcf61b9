#!/usr/bin/env bash
# host.limits as a user meets it: captured /proc trees (--sysroot) of a default Docker container on an
# RDMA node (FAIL), a tuned node (PASS) and a garbage limits file (UNKNOWN, exit 3), and the live
# process under a real `ulimit -n 1024` (FAIL naming 1024), and out of descriptors under
# `ulimit -n 12` and `ulimit -n 8` (still FAIL naming them: getrlimit needs no descriptor).
# Env: PREFLIGHT (binary), PREFLIGHT_FIXTURES_DIR, PYTHON3. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/lib.sh"
roots="${PREFLIGHT_FIXTURES_DIR:?}/limits"

summary() { json_get "[c['summary'] for c in d['checks'] if c['id']=='host.limits'][0]"; }

expect_rc 1 "docker container on an RDMA node" -- "$PREFLIGHT" --only host.limits --format json --sysroot "$roots/docker-rdma"
expect_eq "$(check_status host.limits)" FAIL "docker-rdma"
expect_contains "$(summary)" "RLIMIT_MEMLOCK is 64 KiB (hard 64 KiB) without CAP_IPC_LOCK" "docker-rdma summary"
expect_eq "$(json_get "d['checks'][0]['evidence']['rdma_devices']")" "['mlx5_0', 'mlx5_1']" "docker-rdma evidence"

expect_rc 0 "tuned node" -- "$PREFLIGHT" --only host.limits --format json --sysroot "$roots/tuned"
expect_eq "$(check_status host.limits)" PASS "tuned"

expect_rc 3 "garbage /proc/self/limits" -- "$PREFLIGHT" --only host.limits --format json --sysroot "$roots/garbage"
expect_eq "$(check_status host.limits)" UNKNOWN "garbage"

expect_rc 1 "live process with ulimit -n 1024" -- bash -c 'ulimit -n 1024 && exec "$0" --only host.limits --format json' "$PREFLIGHT"
expect_contains "$(summary)" "RLIMIT_NOFILE hard limit is 1024 (soft 1024), below 4096" "live summary"

# A rank out of file descriptors is judged too: getrlimit(2) needs none, where /proc/self/limits
# could not be opened (EMFILE) and the verdict was UNKNOWN.
for n in 12 8; do
  expect_rc 1 "live process with ulimit -n $n" -- bash -c "ulimit -n $n && exec \"\$0\" --only host.limits --format json" \
    "$PREFLIGHT"
  expect_eq "$(check_status host.limits)" FAIL "ulimit -n $n: a verdict, not UNKNOWN"
  expect_contains "$(summary)" "RLIMIT_NOFILE hard limit is $n (soft $n), below 4096" "ulimit -n $n summary"
  expect_eq "$(json_get "[(c['evidence']['nofile']['soft'], c['evidence']['nofile']['hard']) for c in d['checks'] if c['id']=='host.limits'][0]")" \
    "($n, $n)" "ulimit -n $n evidence"
  expect_eq "$(json_get "d['ranks'][0]['facts']['limits']['nofile']['source']")" "getrlimit(RLIMIT_NOFILE)" \
    "ulimit -n $n: read with getrlimit"
done

expect_rc 0 "image profile" -- "$PREFLIGHT" --only host.limits --profile image --sysroot "$roots/docker-rdma"
finish
