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
