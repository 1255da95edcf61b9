# Shared helpers for the integration tests (sourced). CTest provides PREFLIGHT (the binary),
# PREFLIGHT_FAULTS (the same with the PREFLIGHT_TEST_* faults read: tests/faults/main.cpp),
# PREFLIGHT_SOURCE_DIR, PREFLIGHT_FIXTURES_DIR and PYTHON3 (Debian's, with python3-jsonschema).
set -uo pipefail
: "${PREFLIGHT:?PREFLIGHT must point at the preflight binary}"
PREFLIGHT_FAULTS=${PREFLIGHT_FAULTS:-$(dirname "$PREFLIGHT")/preflight-faults}
failures=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# What `env -i` in a test must keep: the sanitizers' options and the Open MPI settings the sanitizer
# build runs with (.ci/run).
keep_env=()
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose \
  PMIX_MCA_mca_base_component_disable_dlclose; do
  [ -n "${!v:-}" ] && keep_env+=("$v=${!v}")
done

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
skip_all() { echo "SKIP: $*"; exit 77; }
# sanitized_build: whether $PREFLIGHT carries a sanitizer's runtime (gcc links it as a shared
# library, clang into the binary: its entry points are named in the binary either way).
sanitized_build() { grep -aqE '__(asan|tsan|ubsan)_(init|handle_)' "$PREFLIGHT"; }

# expect_rc WANT DESCRIPTION -- COMMAND...: runs COMMAND, output in $work/out, $work/err.
expect_rc() {
  local want=$1 what=$2
  shift 3
  local rc=0
  "$@" >"$work/out" 2>"$work/err" || rc=$?
  if [ "$rc" -eq "$want" ]; then pass "$what (exit $rc)"; else
    fail "$what: exit $rc, want $want"; sed 's/^/  | /' "$work/out" "$work/err" | head -40 >&2
  fi
}

# json_get EXPR: evaluates a Python expression over the JSON document in $work/out (as `d`).
json_get() { "${PYTHON3:-python3}" -c "import json,sys; d=json.load(open('$work/out')); print($1)"; }

# check_status ID: the status of check ID in $work/out.
check_status() { json_get "[c['status'] for c in d['checks'] if c['id']=='$1'][0]"; }

expect_eq() {
  if [ "$1" = "$2" ]; then pass "$3 = $2"; else fail "$3: got '$1', want '$2'"; fi
}

expect_contains() {
  case "$1" in *"$2"*) pass "$3 mentions '$2'" ;; *) fail "$3: '$1' does not mention '$2'" ;; esac
}

# in_shm SIZE|none|ro|full PREFLIGHT-ARGS...: runs preflight in a private mount namespace (root)
# with /dev/shm replaced: a tmpfs of SIZE, none at all, read-only, or 1 GiB with all of it taken.
in_shm() {
  local how=$1
  shift
  unshare -m bash -c '
    set -e
    mount --make-rprivate / 2>/dev/null || true
    case "$0" in
      none) mount -t tmpfs -o size=1m tmpfs /dev ;;
      ro) mount -t tmpfs -o size=8g,ro tmpfs /dev/shm ;;
      full) mount -t tmpfs -o size=1g tmpfs /dev/shm  # 1 GiB of RAM while it runs
            fallocate -l 1g /dev/shm/filler 2>/dev/null || head -c 1G /dev/zero >/dev/shm/filler 2>/dev/null || true ;;
      *) mount -t tmpfs -o size="$0" tmpfs /dev/shm ;;
    esac
    exec "$PREFLIGHT" "$@"' "$how" "$@"
}

finish() {
  if [ "$failures" -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
  exit 0
}

# as_capture TREE SCENARIO NCCL [VAR=VALUE...]: makes the fixture TREE the capture of a node with
# the fake GPU SCENARIO, as `preflight capture` on that node would record it: the GPU helper's
# report (facts/gpu.json, from a capture taken with the fake libraries), the NCCL helper's report
# of the file NCCL inside TREE ("" for none: the capture then holds no NCCL report) and the
# environment VAR=VALUE...; everything else (Python trees, libraries, /etc) stays TREE's files.
# --sysroot never runs a helper here: the captured node's facts are what it judges.
as_capture() {
  local tree=$1 scenario=$2 nccl=$3
  shift 3
  local cap="$work/capture-of-$scenario"
  if [ ! -f "$cap/facts/gpu.json" ]; then
    rm -rf "$cap"
    LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/$scenario.json" \
      "$PREFLIGHT" capture "$cap" >/dev/null 2>&1
  fi
  mkdir -p "$tree/facts"
  cp "$cap/facts/gpu.json" "$tree/facts/gpu.json"
  PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/$scenario.json" "${PYTHON3:-python3}" - "$tree" "$nccl" \
    "$(dirname "$PREFLIGHT")/preflight-gpu-probe" "$@" <<'PY'
import json, subprocess, sys
tree, nccl, helper, env = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
facts = {"gpu": {"file": "facts/gpu.json"}, "env": {"file": "facts/env.json"}}
with open(tree + "/facts/env.json", "w") as f:
    json.dump({"vars": dict(v.split("=", 1) for v in env), "dropped_values": []}, f)
if nccl:
    out = subprocess.run([helper, "nccl", "--lib", tree + nccl], capture_output=True, text=True, timeout=60).stdout
    doc = json.loads(out)
    if "value" in doc:  # the node's own path, as the helper there would name it
        doc["value"]["path"] = doc["value"]["path"].replace(tree, "", 1)
        doc["value"]["source"] = "loader"
    with open(tree + "/facts/nccl.json", "w") as f:
        json.dump({"nccl": doc}, f)
    facts["nccl"] = {"file": "facts/nccl.json"}
with open(tree + "/preflight-capture.json", "w") as f:
    json.dump({"format": "preflight-capture", "version": 1, "facts": facts}, f)
PY
}
