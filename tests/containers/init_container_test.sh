#!/usr/bin/env bash
# The Kubernetes init container of examples/kubernetes/preflight-init.yaml, run for real with podman
# (runc; no GPU here): the image is the gated CUDA 12.4 training image of image_gate_test.sh (made
# here from the layer cache if that test did not run), the command, environment and results volume
# are the YAML's. What /dev/shm the pod gives decides shm.capacity:
#   the runtime's default (64 MiB, what a pod without the memory volume gets)  → FAIL
#   a memory-backed volume of the YAML's emptyDir sizeLimit at /dev/shm       → PASS
#   podman's --shm-size 8g                                                     → PASS
# Each run writes its JSON report to the results volume, as the trainer would read it.
source "$(dirname "$0")/lib.sh"
container_base || { fail "the base image could not be made"; finish; }
img=localhost/preflight-test-gated:cu124
if ! podman image exists "$img"; then
  container_deb "$work/ctx" && container_train cu124 && container_gate "$work/ctx" cu124 "$work/build.log" -t "$img" ||
    { fail "the gated image $img could not be built"; tail -n 20 "$work/build.log" >&2; finish; }
fi

# The init container as the YAML declares it: command, env, the emptyDir behind /dev/shm.
"${PYTHON3:-python3}" - "$PREFLIGHT_SOURCE_DIR/examples/kubernetes/preflight-init.yaml" >"$work/spec" <<'PY' || { fail "the YAML"; finish; }
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
pod = job["spec"]["template"]["spec"]
init = next(c for c in pod["initContainers"] if c["name"] == "preflight")
volumes = {v["name"]: v for v in pod["volumes"]}
for arg in init["command"]:
    print("CMD", arg)
for e in init.get("env", []):
    print("ENV", f"{e['name']}={e['value']}")
for m in init["volumeMounts"]:
    v = volumes[m["name"]]
    if m["mountPath"] == "/dev/shm":
        ed = v["emptyDir"]
        assert ed.get("medium") == "Memory", "the /dev/shm volume is not memory-backed"
        size = ed["sizeLimit"]
        print("SHM", size[:-2].strip() + size[-2].lower() if size.endswith("i") else size)
    else:
        print("RESULTS", m["mountPath"])
PY
mapfile -t cmd < <(sed -n 's/^CMD //p' "$work/spec")
envs=()
while read -r kv; do envs+=(--env "$kv"); done < <(sed -n 's/^ENV //p' "$work/spec")
shm_limit=$(sed -n 's/^SHM //p' "$work/spec")
results=$(sed -n 's/^RESULTS //p' "$work/spec")
expect_eq "${cmd[0]}" preflight "the init container's command"
report=
for ((i = 1; i < ${#cmd[@]}; i++)); do [ "${cmd[i - 1]}" = --json ] && report=${cmd[i]}; done
case $report in "$results"/*) pass "the report goes to the results volume ($report)" ;;
  *) fail "the init container's --json ($report) is not on the results volume ($results)" ;; esac

init_run() {  # init_run NAME [PODMAN-RUN-ARGS...]: the init container; its report in $work/out
  local name=$1 rc=0
  shift
  mkdir -p "$work/results-$name"
  container_run "${envs[@]}" -v "$work/results-$name:$results" "$@" "$img" "${cmd[@]}" \
    >"$work/log-$name" 2>"$work/err-$name" || rc=$?
  cp "$work/results-$name/${report#"$results"/}" "$work/out" 2>/dev/null || : >"$work/out"
  if [ -s "$work/out" ]; then
    pass "$name: the init container wrote its report (exit $rc)"
    expect_eq "$(json_get "d['summary']['exit_code']")" "$rc" "$name: the report's exit code"
  else
    fail "$name: no report in the results volume (exit $rc)"; sed 's/^/  | /' "$work/log-$name" "$work/err-$name" | tail -n 20 >&2
  fi
}

init_run default-shm
expect_eq "$(check_status shm.capacity)" FAIL "shm.capacity with the runtime's default /dev/shm"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='shm.capacity'][0]")" "8 local ranks need ≥" "shm.capacity's summary"
expect_contains "$(grep -m1 ' shm.capacity ' "$work/log-default-shm")" "FAIL" "the container's text report (kubectl logs)"

init_run memory-volume --mount "type=tmpfs,destination=/dev/shm,tmpfs-size=$shm_limit"
expect_eq "$(check_status shm.capacity)" PASS "shm.capacity with the YAML's memory emptyDir ($shm_limit) at /dev/shm"

init_run shm-size-8g --shm-size 8g
expect_eq "$(check_status shm.capacity)" PASS "shm.capacity with --shm-size 8g"

# ---- The pod itself: podman kube play of the Job's pod template ---------------------------------
# podman 4.3 plays Pods, not Jobs: the template becomes a Pod with the gated image, and the trainer
# (torchrun is not in the test image) says it started and prints the report the init container left
# on the shared volume (podman removes init containers that succeeded, logs included). The init
# container's command gets
# --only shm.capacity, so that its verdict is the pod's /dev/shm alone (there is no GPU here).
# podman runs init containers first, starts the trainer only when every one exits 0, and fails the
# play otherwise, as Kubernetes fails the pod.
pod_play() {  # pod_play NAME KEEP-DSHM(0|1): plays the pod; its status in $work/play-NAME
  local name=$1 keep=$2 rc=0
  "${PYTHON3:-python3}" - "$PREFLIGHT_SOURCE_DIR/examples/kubernetes/preflight-init.yaml" "$img" "$name" "$keep" \
    >"$work/pod-$name.yaml" <<'PY'
import sys, yaml
path, image, name, keep = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
spec = yaml.safe_load(open(path))["spec"]["template"]["spec"]
for c in spec["initContainers"] + spec["containers"]:
    c["image"] = image
    c.pop("resources", None)  # nvidia.com/gpu: no device plugin here
    if not keep:
        c["volumeMounts"] = [m for m in c["volumeMounts"] if m["mountPath"] != "/dev/shm"]
spec["initContainers"][0]["command"] += ["--only", "shm.capacity"]
spec["containers"][0]["command"] = ["sh", "-c", "echo trainer started; cat /preflight/report.json"]
print(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}))
PY
  timeout 120 podman kube play --network none "$work/pod-$name.yaml" >"$work/play-$name" 2>&1 || rc=$?
  timeout 60 podman wait "$name-trainer" >/dev/null 2>&1
  podman logs "$name-preflight" >"$work/log-$name" 2>&1
  podman ps -a --filter "name=^$name-trainer\$" --format '{{.Status}}' >"$work/trainer-$name"
  podman logs "$name-trainer" >>"$work/trainer-$name" 2>&1
  podman inspect "$name-trainer" --format '{{range .Mounts}}{{if eq .Destination "/dev/shm"}}{{.Type}}{{end}}{{end}}' \
    >"$work/shm-$name" 2>/dev/null
  podman pod rm -f "$name" >/dev/null 2>&1
  podman volume rm -f dshm preflight-results >/dev/null 2>&1
  return "$rc"
}
shm_line() { grep -m1 -E '^  [A-Z]+ +shm.capacity ' "$work/log-$1"; }

# Without the /dev/shm volume: 64 MiB, the init container FAILs, the trainer never starts.
if pod_play pf-noshm 0; then fail "pod without the /dev/shm volume: the play succeeded"
else pass "pod without the /dev/shm volume: the play fails"; fi
expect_contains "$(cat "$work/play-pf-noshm")" "init container" "podman's error"
expect_contains "$(shm_line pf-noshm)" "FAIL" "the init container's log (kubectl logs -c preflight)"
grep -q 'trainer started' "$work/trainer-pf-noshm" && fail "the trainer ran after the init container failed" ||
  pass "the trainer did not run ($(head -n1 "$work/trainer-pf-noshm"))"

# As the example declares it: /dev/shm is the emptyDir. Kubernetes backs `medium: Memory` with a
# tmpfs; podman 4.3 backs every emptyDir with a disk volume, and preflight says so (WARN: segments
# hit disk) without failing the pod. Either way the trainer starts.
if pod_play pf-dshm 1; then pass "pod as the example declares it: the play succeeds"
else fail "pod as the example declares it: the play failed"; sed 's/^/  | /' "$work/play-pf-dshm" "$work/log-pf-dshm" | tail -n 20 >&2; fi
sed -n '/^{/,$p' "$work/trainer-pf-dshm" >"$work/out"
if [ -s "$work/out" ]; then
  pass "the trainer read the init container's report from the results volume"
  summary=$(json_get "[c['summary'] for c in d['checks'] if c['id']=='shm.capacity'][0]")
  case $(cat "$work/shm-pf-dshm") in
    tmpfs) expect_eq "$(check_status shm.capacity)" PASS "shm.capacity on the emptyDir (tmpfs)" ;;
    *) expect_eq "$(check_status shm.capacity)" WARN "shm.capacity on podman's disk-backed emptyDir ($(cat "$work/shm-pf-dshm"))"
       expect_contains "$summary" "is not tmpfs" "shm.capacity's summary" ;;
  esac
else
  fail "the trainer found no report on the results volume"
fi
grep -q 'trainer started' "$work/trainer-pf-dshm" && pass "the trainer started after the init container passed" ||
  { fail "the trainer did not start"; cat "$work/trainer-pf-dshm" >&2; }
finish
