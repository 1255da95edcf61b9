#!/usr/bin/env bash
# --only runs only the probes its checks read (CheckSpec::reads, core/fact_sources.hpp): for every
# check, `--only ID` must judge exactly as a full run does. A check that reads facts it does not
# declare gets them default-constructed under --only, and its verdict changes here.
source "$(dirname "$0")/lib.sh"
: "${PREFLIGHT_FAKE_GPU_LIB_DIR:?}" "${PREFLIGHT_FAKE_GPU_SCENARIOS_DIR:?}"

ids=$("$PREFLIGHT" list | awk '{print $1}')
[ "$(wc -w <<<"$ids")" -ge 30 ] || fail "preflight list names $(wc -w <<<"$ids") checks"

# verdicts FILE: "id<TAB>status<TAB>summary" per check, durations and digits folded (timings differ
# run to run, and a duration may be said in ms in one run and in s in the other).
verdicts() {
  "${PYTHON3:-python3}" - "$1" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
for c in d["checks"]:
    summary = re.sub(r"\b[0-9]+(\.[0-9]+)? ?(ms|s|us|µs)\b", "<duration>", c.get("summary", ""))
    print(c["id"], c["status"], re.sub(r"[0-9]+(\.[0-9]+)?", "#", summary), sep="\t")
EOF
}

compare_setting() {  # compare_setting NAME COMMAND...: a full run, then --only each check
  local name=$1
  shift
  "$@" --format json --timeout 60 >"$work/full.json" 2>/dev/null
  verdicts "$work/full.json" >"$work/full.tsv" || { fail "$name: the full run wrote no report"; return; }
  local id ran=0 probes_full probes_one
  probes_full=$(json_probes "$work/full.json")
  for id in $ids; do
    "$@" --format json --timeout 60 --only "$id" >"$work/one.json" 2>/dev/null
    local one full
    one=$(verdicts "$work/one.json" | awk -F'\t' -v id="$id" '$1 == id')
    full=$(awk -F'\t' -v id="$id" '$1 == id' "$work/full.tsv")
    if [ -z "$one" ] || [ "$one" != "$full" ]; then
      fail "$name: --only $id judges differently: '$one' vs the full run's '$full'"
    else
      ran=$((ran + 1))
    fi
    probes_one=$(json_probes "$work/one.json")
    [ "$(wc -w <<<"$probes_one")" -le "$(wc -w <<<"$probes_full")" ] ||
      fail "$name: --only $id ran more probes ($probes_one) than the full run"
  done
  pass "$name: $ran checks judge alone as in the full run"
}

# The probes a run's rank 0 ran (facts.probe_seconds of the JSON report).
json_probes() {
  "${PYTHON3:-python3}" -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join(sorted(d['ranks'][0]['facts'].get('probe_seconds', {}))))" "$1" 2>/dev/null
}

# A healthy fake 8-GPU node (the GPU helper, NVML, NCCL and the all_reduce all run).
compare_setting "fake 8-GPU node" env LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" \
  PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/h100x8-healthy.json" "$PREFLIGHT"
# One with faults in every health reading, and XIDs.
compare_setting "fake node with health faults" env LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" \
  PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/health-faults.json" "$PREFLIGHT"
# This machine as it is (no NVIDIA driver).
compare_setting "this machine" "$PREFLIGHT"

# What --only saves: host.limits runs three probes, not the GPU helper.
"$PREFLIGHT" --only host.limits --format json >"$work/out" 2>/dev/null
expect_eq "$(json_probes "$work/out")" "identity limits placement" "the probes --only host.limits ran"

finish
