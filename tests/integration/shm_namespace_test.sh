#!/usr/bin/env bash
# shm.capacity against a real tmpfs of a chosen size on /dev/shm, in a private mount namespace.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root for unshare -m and mount (run the suite as root)"
command -v unshare >/dev/null || skip_all "unshare (util-linux) is not installed"
unshare -m true 2>/dev/null || skip_all "this container does not allow unshare -m"

expect_rc 1 "64 MiB /dev/shm, 8 ranks per node" -- in_shm 64m --only shm.capacity --ranks-per-node 8 --format json
expect_eq "$(check_status shm.capacity)" FAIL "shm.capacity status"
summary=$(json_get "d['checks'][0]['summary']")
expect_contains "$summary" "64 MiB" "summary"
expect_contains "$summary" "8 local ranks need" "summary"
expect_eq "$(json_get "d['checks'][0]['evidence']['total_bytes']")" 67108864 "evidence total_bytes"
expect_contains "$(json_get "d['checks'][0]['remedy']")" "--shm-size=" "remedy"

expect_rc 0 "8 GiB /dev/shm, 8 ranks per node" -- in_shm 8g --only shm.capacity --ranks-per-node 8 --format json
expect_eq "$(check_status shm.capacity)" PASS "shm.capacity status"
expect_eq "$(json_get "d['checks'][0]['evidence']['allocation_test_ok']")" True "allocation test ran and succeeded"

expect_rc 0 "768 MiB /dev/shm, 1 rank: enough but under 1 GiB" -- in_shm 768m --only shm.capacity --format json
expect_eq "$(check_status shm.capacity)" WARN "shm.capacity status"
expect_rc 1 "same with --strict" -- in_shm 768m --only shm.capacity --strict --format json

expect_rc 1 "read-only /dev/shm" -- in_shm ro --only shm.capacity --format json
expect_eq "$(check_status shm.capacity)" FAIL "shm.capacity status"
expect_contains "$(json_get "d['checks'][0]['summary']")" "read-only" "summary"

expect_rc 1 "no /dev/shm at all" -- in_shm none --only shm.capacity --format json
expect_contains "$(json_get "d['checks'][0]['summary']")" "does not exist" "summary"

# Nothing is left behind in /dev/shm by the allocation test.
before=$(ls -A /dev/shm | grep -c '^preflight-' || true)
"$PREFLIGHT" --only shm.capacity --ranks-per-node 2 >/dev/null 2>&1 || true
after=$(ls -A /dev/shm | grep -c '^preflight-' || true)
expect_eq "$after" "$before" "preflight-* files in /dev/shm after a run"
finish
