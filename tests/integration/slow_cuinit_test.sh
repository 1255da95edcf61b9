#!/usr/bin/env bash
# A slow but healthy first cuInit (persistence mode off on a big node) is not a hang: the driver
# helper's deadline is a share of --timeout with no fixed cap (40%: 24 s at the default --timeout 60), so an
# 11 s init is PASS with the time noted (the old 10 s cap reported it as a hang), WARN where
# persistence mode is off; with a short --timeout the expired deadline is named with its length
# and --timeout, not blamed on a crashing library.
source "$(dirname "$0")/lib.sh"
: "${PREFLIGHT_FAKE_GPU_LIB_DIR:?}" "${PREFLIGHT_FAKE_GPU_SCENARIOS_DIR:?}"
S=$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR
slow() {  # slow SECONDS SCENARIO PREFLIGHT-ARGS...
  local delay=$1 scenario=$2
  shift 2
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$scenario" PREFLIGHT_FAKE_CUINIT_DELAY_S="$delay" \
    "$PREFLIGHT" --only driver.loaded,cuda.smoke --format json "$@"
}
summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
remedy_of() { json_get "[c['remedy'] for c in d['checks'] if c['id']=='$1'][0]"; }

# 11 s of cuInit, --timeout 120: PASS, the time noted; the smoke test (a new process) too.
expect_rc 0 "11 s cuInit, --timeout 120" -- slow 11 "$S/h100x8-healthy.json" --timeout 120
expect_eq "$(check_status driver.loaded)" PASS "driver.loaded"
expect_contains "$(summary_of driver.loaded)" "cuInit took 11" "driver.loaded summary"
expect_contains "$(summary_of driver.loaded)" "within the helper's deadline" "driver.loaded summary"
expect_eq "$(check_status cuda.smoke)" PASS "cuda.smoke after the slow init"
init_s=$(json_get "round([c for c in d['checks'] if c['id']=='driver.loaded'][0]['evidence']['cuda_init_seconds'])")
expect_eq "$init_s" 11 "the cuInit time in the evidence"

# Persistence mode off and a 6 s init: WARN naming both.
printf '{"gpus": [{"cc": "9.0", "persistence": false}, {"cc": "9.0", "persistence": false}]}' >"$work/pm-off.json"
expect_rc 0 "6 s cuInit, persistence off, --timeout 60" -- slow 6 "$work/pm-off.json" --timeout 60
expect_eq "$(check_status driver.loaded)" WARN "driver.loaded"
expect_contains "$(summary_of driver.loaded)" "persistence mode is off on GPU 0, 1" "driver.loaded summary"
expect_contains "$(summary_of driver.loaded)" "cuInit took 6" "driver.loaded summary"

# A short --timeout: the driver helper's deadline (40% of 8 s) expires, and the message says so.
expect_rc 1 "5 s cuInit, --timeout 8" -- slow 5 "$S/h100x8-healthy.json" --timeout 8
expect_eq "$(check_status driver.loaded)" FAIL "driver.loaded"
expect_contains "$(summary_of driver.loaded)" \
  "did not finish within its deadline of 3.2 s (40% of --timeout 8 s)" "driver.loaded summary"
expect_contains "$(summary_of driver.loaded)" "raise --timeout" "driver.loaded summary"
expect_contains "$(remedy_of driver.loaded)" "--timeout" "driver.loaded remedy"
case "$(remedy_of driver.loaded)" in
  *"crashes like this"*) fail "a deadline blamed on a crashing library" ;;
  *) pass "no crash blamed" ;;
esac

# A 12 s cuInit at the default --timeout 60 with every GPU check, where every new process pays the
# whole init again (the driver's clients not modelled: as if nothing could hold the GPUs between
# helpers): the later helpers (smoke test, peer copies, health) do not all fit in the probe phase. The one whose deadline was cut to what was left of the phase is preflight's budget, not a
# fault of the GPU: its checks say UNKNOWN (never FAIL), name the time it got and the --timeout that
# gives it its whole deadline, and the run exits 4. (cuda.runtime and nccl.library judge this
# machine's own CUDA and NCCL against the fake driver: not part of this case.)
LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$S/h100x8-healthy.json" PREFLIGHT_FAKE_CUINIT_DELAY_S=12 \
  "$PREFLIGHT" --format json --timeout 60 >"$work/out" 2>"$work/err"
rc=$?
expect_eq "$rc" 4 "exit code of a run whose budget cut a helper short"
failed=$(json_get "' '.join(c['id'] for c in d['checks'] if c['status']=='FAIL' and (c['id'].split('.')[0] in ('gpu','topo') or c['id'] in ('driver.loaded','cuda.smoke')))")
expect_eq "$failed" "" "GPU checks that FAIL on a healthy node with a 12 s cuInit"
cut=$(json_get "' '.join(sorted(c['id'] for c in d['checks'] if 'preflight\\'s own budget ran out' in c['summary']))")
[ -n "$cut" ] && pass "checks that name preflight's budget: $cut" || fail "no check names preflight's budget: $(head -c 600 "$work/out")"
for id in $cut; do
  expect_eq "$(check_status "$id")" UNKNOWN "$id, cut short by preflight's budget"
  case "$(summary_of "$id")" in
    *"--timeout "*" gives it its whole deadline"*) pass "$id names the --timeout that fits" ;;
    *) fail "$id does not name the --timeout that fits: $(summary_of "$id")" ;;
  esac
done
# Budgets that fit the node: with the driver's clients modelled as the real driver keeps them
# (PREFLIGHT_FAKE_GPU_CLIENTS), preflight's hold helper is a client while the other helpers run, so
# only the first cuInit pays. A healthy node with a 12 s and with a 20 s first cuInit judges every
# check at the default --timeout as it does with no delay at all: the same status for every check,
# the same exit code, the init time noted.
statuses() { json_get "' '.join('%s=%s' % (c['id'], c['status']) for c in d['checks'])"; }
healthy() {  # healthy DELAY: the default --timeout, the clients modelled
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$S/h100x8-healthy.json" \
    PREFLIGHT_FAKE_CUINIT_DELAY_S="$1" PREFLIGHT_FAKE_GPU_CLIENTS="$work/clients-$1" \
    "$PREFLIGHT" --format json >"$work/out" 2>"$work/err"
}
rc=0; healthy 0 || rc=$?
baseline_rc=$rc
baseline=$(statuses)
for delay in 12 20; do
  rc=0; healthy "$delay" || rc=$?
  expect_eq "$rc" "$baseline_rc" "exit code with a ${delay} s cuInit at the default --timeout"
  expect_eq "$(statuses)" "$baseline" "every check's status with a ${delay} s cuInit at the default --timeout"
  expect_contains "$(summary_of driver.loaded)" "cuInit took " "driver.loaded names the ${delay} s init"
  # The driver helper pays the init, or waits for the hold helper's, started a moment before it.
  expect_eq "$(json_get "[c for c in d['checks'] if c['id']=='driver.loaded'][0]['evidence']['cuda_init_seconds'] >= $delay - 2")" \
    True "the driver helper's cuInit took about ${delay} s"
  expect_eq "$(json_get "'; hold: holding the GPUs until the job' in d['ranks'][0]['facts']['gpu']['driver']['helper']")" True \
    "the hold helper held the GPUs through the all_reduce (${delay} s)"
done
finish
