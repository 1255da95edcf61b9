#!/usr/bin/env bash
# The example Dockerfile's other way to get preflight: compiled from this repository inside the
# build (PREFLIGHT_FROM=source, the repository as the context, .dockerignore keeping the build
# folders out), once: the gate then passes the CUDA 12.4 training image as with the .deb, and the
# preflight in the image is this version. Minutes (a compile on the machine's cores), so built once
# per build folder's store and reused while the sources are unchanged (buildah's layer cache).
source "$(dirname "$0")/lib.sh"
container_base || { fail "the base image could not be made"; finish; }
container_train cu124 || { fail "the training image cu124 could not be built"; finish; }
img=localhost/preflight-test-gated-from-source:cu124
start=$(date +%s)
if container_build "$work/build.log" --build-arg PREFLIGHT_FROM=source \
  --build-arg TRAIN_IMAGE=localhost/preflight-test-train:cu124 -t "$img" "$PREFLIGHT_SOURCE_DIR"; then
  pass "PREFLIGHT_FROM=source: the image builds and passes the gate ($(($(date +%s) - start)) s)"
else
  fail "PREFLIGHT_FROM=source: the build failed"; tail -n 30 "$work/build.log" | sed 's/^/  | /' >&2; finish
fi
grep -q 'STEP .*: COPY \. /src' "$work/build.log" && pass "the build compiled the repository" || fail "the log shows no COPY . /src"
expect_rc 0 "preflight --version in the image" -- container_run "$img" preflight --version
expect_eq "$(cat "$work/out")" "$("$PREFLIGHT" --version)" "the image's preflight --version"
container_file "$img" /etc/preflight-image.json >"$work/out" 2>/dev/null || : >"$work/out"
validate_report "$work/out" "/etc/preflight-image.json (preflight built in the image)"
expect_eq "$(check_status cuda.runtime)" WARN "cuda.runtime in the report"
# The compile's layers are a gigabyte the other tests never reuse: drop them with the image.
podman image rm -f "$img" >/dev/null 2>&1
podman image prune -f >/dev/null 2>&1
finish
