#!/usr/bin/env bash
# On a machine with a real NVIDIA driver: the real NVML/libcuda through the contained helper, the
# smoke test on GPU 0, and a node report. Skips (77) where no driver can be loaded.
source "$(dirname "$0")/../integration/lib.sh"
helper="$(dirname "$PREFLIGHT")/preflight-gpu-probe"
"$helper" driver >"$work/driver.json" 2>"$work/err" || skip_all "preflight-gpu-probe driver failed: $(cat "$work/err")"
"${PYTHON3:-python3}" -c "import json,sys; d=json.load(open('$work/driver.json')); sys.exit(0 if 'value' in d['nvml_driver_version'] else 77)" \
  || skip_all "no NVIDIA driver here ($(head -c 300 "$work/driver.json"))"

"$PREFLIGHT" --only 'driver.*,cuda.*,gpu.*,nccl.*' --format json -v >"$work/out" 2>"$work/err" || true
expect_eq "$(check_status driver.loaded)" PASS "driver.loaded on a real driver"
expect_eq "$(check_status cuda.smoke)" PASS "cuda.smoke on a real GPU"
st=$(check_status gpu.count)
[ "$st" = PASS ] || [ "$st" = WARN ] && pass "gpu.count $st" || fail "gpu.count $st"
json_get "d['ranks'][0]['facts']['gpu']['driver']['loaded_libraries']" | grep -q libcuda \
  && pass "the loaded libcuda is named" || fail "no libcuda named among the loaded libraries"
finish
