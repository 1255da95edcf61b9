#!/usr/bin/env bash
# The image gate in a real image build: examples/docker/Dockerfile built by buildah on a Debian 12
# base, with preflight installed from the .deb that cpack makes of this build (PREFLIGHT_FROM=deb)
# and three training images (TRAIN_IMAGE), each a framework layout where pip puts it:
#   torch for CUDA 12.4 (its NVIDIA wheels: libcudart.so.12, NCCL 2.21.5)  → the gate passes
#       against driver 535.104.05 (WARN: minor-version compatibility), the image is tagged, and its
#       /etc/preflight-image.json validates against the schema; --target train-lean ships the
#       training image without preflight but with the report
#   torch for CUDA 13.0 (libcudart.so.13, NCCL 2.28.9+cuda13.0)           → the build fails at the
#       gate step; the log shows the FAIL naming 13.0, the target driver and the fix
#   a CPU-only torch                                                       → the build fails unless
#       the image is declared CPU-only (TARGET_GPU=none)
source "$(dirname "$0")/lib.sh"
container_base || { fail "the base image could not be made"; finish; }
container_deb "$work/ctx" || { fail "cpack made no .deb of this build"; finish; }
pass "the .deb of this build: $(dpkg-deb -f "$work/ctx/preflight.deb" Package Version | tr '\n' ' ')"
for name in cu124 cu130 cpu; do
  container_train "$name" || fail "the training image $name could not be built"
done
gate() { container_gate "$work/ctx" "$@"; }
show_log() { grep -E '^(  )?(FAIL|WARN|UNKNOWN|PASS) |fix:|^Error|error' "$1" | head -n 20 | sed 's/^/  | /' >&2; }

# ---- CUDA 12.4: passes, tagged, report inside ----------------------------------------------------
img=localhost/preflight-test-gated:cu124
podman image rm -f "$img" >/dev/null 2>&1
start=$(date +%s)
if gate cu124 "$work/cu124.log" -t "$img"; then pass "CUDA 12.4 image: the build passes the gate ($(($(date +%s) - start)) s)"
else fail "CUDA 12.4 image: the build failed"; show_log "$work/cu124.log"; fi
podman image exists "$img" && pass "the gated image is tagged $img" || fail "no image $img"
grep -q '^WARN: .* 0 FAIL .* 0 UNKNOWN' "$work/cu124.log" && pass "the gate's verdict line in the build log: WARN, no FAIL or UNKNOWN" ||
  { fail "the build log has no WARN verdict line"; show_log "$work/cu124.log"; }
expect_contains "$(grep -m1 -E '^  [A-Z]+ +cuda.runtime ' "$work/cu124.log")" "CUDA 12.4.127" "the build log's cuda.runtime line"
expect_contains "$(grep -m1 -E '^  [A-Z]+ +cuda.runtime ' "$work/cu124.log")" "target driver 535.104.05 (CUDA 12.2)" "the build log's cuda.runtime line"
if container_file "$img" /etc/preflight-image.json >"$work/out" 2>"$work/err"; then
  validate_report "$work/out" "/etc/preflight-image.json of $img"
  expect_eq "$(json_get "d['profile']")" image "the report's profile"
  expect_eq "$(json_get "d['summary']['exit_code']")" 0 "the report's exit code"
  expect_eq "$(check_status cuda.runtime)" WARN "cuda.runtime in the report"
  expect_eq "$(check_status nccl.library)" WARN "nccl.library in the report"
  expect_eq "$(check_status cuda.arch)" PASS "cuda.arch in the report"
  expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='nccl.library'][0]")" \
    "NCCL 2.21.5 from /usr/local/lib/python3.11/dist-packages/nvidia/nccl/lib/libnccl.so.2" "nccl.library's summary"
else
  fail "$img has no /etc/preflight-image.json: $(cat "$work/err")"
fi
container_file "$img" /usr/bin/preflight >/dev/null 2>&1 && pass "the default target ships preflight (for the init container)" ||
  fail "$img has no /usr/bin/preflight"

# --target train-lean: the training image as it was plus the report (layers cached: seconds).
lean=localhost/preflight-test-lean:cu124
if gate cu124 "$work/lean.log" --target train-lean -t "$lean"; then
  container_file "$lean" /etc/preflight-image.json >"$work/out" 2>/dev/null &&
    expect_eq "$(json_get "d['summary']['exit_code']")" 0 "train-lean's /etc/preflight-image.json exit code" ||
    fail "train-lean has no /etc/preflight-image.json"
  container_file "$lean" /usr/bin/preflight >/dev/null 2>&1 && fail "train-lean ships /usr/bin/preflight" ||
    pass "train-lean does not ship preflight"
else
  fail "--target train-lean: the build failed"; show_log "$work/lean.log"
fi

# ---- CUDA 13.0: the gate fails the build -----------------------------------------------------------
img13=localhost/preflight-test-gated:cu130
podman image rm -f "$img13" >/dev/null 2>&1
if gate cu130 "$work/cu130.log" -t "$img13"; then fail "CUDA 13.0 image: the build passed the gate"
else pass "CUDA 13.0 image: the build fails"; fi
podman image exists "$img13" && fail "the failed build tagged $img13" || pass "no image is tagged after the failed gate"
grep -q 'STEP .*: RUN preflight --profile image' "$work/cu130.log" && pass "the build got to the gate step" ||
  fail "the build failed before the gate step"
line=$(grep -m1 -E '^  FAIL +cuda.runtime ' "$work/cu130.log")
expect_contains "$line" "CUDA 13.0" "the build log's FAIL line"
expect_contains "$line" "target driver 535.104.05" "the build log's FAIL line"
fix=$(grep -A1 -E '^  [0-9]+\. FAIL cuda.runtime' "$work/cu130.log" | grep -m1 'fix:')
expect_contains "$fix" "580" "the fix under the FAIL (the driver branch CUDA 13.0 needs)"
grep -q '^FAIL: ' "$work/cu130.log" && pass "the verdict line FAIL in the build log" || fail "no FAIL verdict line in the build log"
grep -Eq 'exit status 1|exit code: 1|exited with 1|error building at STEP "RUN preflight' "$work/cu130.log" &&
  pass "buildah reports the gate's exit status" || { fail "buildah's error does not name the gate step"; tail -n 3 "$work/cu130.log" >&2; }

# ---- CPU-only torch: fails for a GPU fleet, passes when declared CPU-only ---------------------------
imgcpu=localhost/preflight-test-gated:cpu
if gate cpu "$work/cpu.log" -t "$imgcpu"; then fail "CPU-only torch for --target-gpu 9.0: the build passed"
else pass "CPU-only torch for --target-gpu 9.0: the build fails"; fi
expect_contains "$(grep -m1 -E '^  FAIL +cuda.runtime ' "$work/cpu.log")" "CPU-only build" "the build log's FAIL line"
if gate cpu "$work/cpu-none.log" --build-arg TARGET_GPU=none -t "$imgcpu"; then
  pass "CPU-only torch with TARGET_GPU=none: the build passes"
  container_file "$imgcpu" /etc/preflight-image.json >"$work/out" 2>/dev/null
  expect_eq "$(check_status cuda.runtime)" PASS "cuda.runtime of the CPU-only image"
  expect_eq "$(check_status nccl.library)" SKIP "nccl.library of the CPU-only image"
else
  fail "CPU-only torch with TARGET_GPU=none: the build failed"; show_log "$work/cpu-none.log"
fi

podman image rm -f "$lean" "$imgcpu" >/dev/null 2>&1  # the cu124 image stays for init_container_test.sh
finish
