#!/usr/bin/env bash
# Real JSON output of several runs validates against schema/preflight-v1.schema.json.
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}
"$py" -c 'import jsonschema' 2>/dev/null || skip_all "python3-jsonschema is not installed"
schema="$PREFLIGHT_SOURCE_DIR/schema/preflight-v1.schema.json"

validate() {  # validate DESCRIPTION: validates $work/out
  if "$py" - "$schema" "$work/out" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
doc = json.load(open(sys.argv[2]))
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
for e in errors[:5]:
    print("  |", "/".join(map(str, e.absolute_path)), e.message[:200], file=sys.stderr)
sys.exit(1 if errors else 0)
PY
  then pass "$1 validates"; else fail "$1 does not validate"; fi
}

"$PREFLIGHT" --format json -v >"$work/out" 2>/dev/null; validate "a node run"
"$PREFLIGHT" --format json --profile image >"$work/out" 2>/dev/null; validate "the image profile"
NCCL_P2P_DISABLE=true NCCL_SOCKET_IFNAM=eth0 RANK=$'\x01\xff' "$PREFLIGHT" --format json --strict >"$work/out" 2>/dev/null
validate "a run with hostile environment values"
PREFLIGHT_TEST_HANG_PROBE=shm "$PREFLIGHT_FAULTS" --format json --timeout 1 >"$work/out" 2>/dev/null; validate "a run whose deadline expired"
"$PREFLIGHT" --format json --only 'comm.barrier,cluster.*' >"$work/out" 2>/dev/null; validate "a run where every check is SKIP"

# The schema is not a rubber stamp: a document with a bad status must not validate.
"$PREFLIGHT" --format json --only host.limits >"$work/good" 2>/dev/null
sed 's/"status": "[A-Z]*"/"status": "MAYBE"/' "$work/good" >"$work/out"
if "$py" -c "import json,jsonschema; jsonschema.validate(json.load(open('$work/out')), json.load(open('$schema')))" 2>/dev/null; then
  fail "a document with status MAYBE validated"
else
  pass "a document with status MAYBE is rejected"
fi
finish
