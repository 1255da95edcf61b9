#!/usr/bin/env bash
# env.nccl as a user meets it: NCCL_P2P_DISABLE=true is not PASS (NCCL reads 0), a clean environment
# is PASS, and a value from a captured /etc/nccl.conf (--sysroot) is found and located.
# Env: PREFLIGHT (binary), PREFLIGHT_FIXTURES_DIR, PYTHON3. Exit 0 pass, 1 fail, 77 skip.
set -u

[[ -x "${PREFLIGHT:-}" ]] || { echo "PREFLIGHT is not an executable: '${PREFLIGHT:-}'"; exit 1; }
PY="${PYTHON3:-$(command -v python3 || true)}"
[[ -x "$PY" ]] || { echo "SKIP: python3 is needed to read the JSON report"; exit 77; }
CONF_FIXTURES="${PREFLIGHT_FIXTURES_DIR:?}/nccl_conf"
EMPTY_ROOT="$(mktemp -d)"
trap 'rm -rf "$EMPTY_ROOT"' EXIT
failures=0

# field FILE EXPR: prints EXPR evaluated on the env.nccl result `c` of the JSON report in FILE.
field() {
  "$PY" -c 'import json, sys
doc = json.load(open(sys.argv[1]))
c = next(x for x in doc["checks"] if x["id"] == "env.nccl")
print(eval(sys.argv[2]))' "$1" "$2"
}

expect() {  # expect NAME ACTUAL EXPECTED
  if [[ "$2" == "$3" ]]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', want '$3'"; failures=$((failures + 1)); fi
}

run() {  # run OUT ARGS... : the binary in a controlled environment, JSON to OUT; prints the exit code
  local out="$1"; shift
  env -i PATH="$PATH" HOME=/nonexistent "${keep_env[@]}" "$@" >"$out" 2>"$out.err"
  echo $?
}

out="$EMPTY_ROOT/p2p.json"
rc=$(run "$out" NCCL_P2P_DISABLE=true "$PREFLIGHT" --only env.nccl --format json --sysroot "$EMPTY_ROOT")
expect "NCCL_P2P_DISABLE=true exits 1" "$rc" 1
expect "NCCL_P2P_DISABLE=true is not PASS" "$(field "$out" 'c["status"] != "PASS"')" True
expect "summary says NCCL reads 0" "$(field "$out" '"as 0" in c["summary"] and "NCCL_P2P_DISABLE=true" in c["summary"]')" True
expect "remedy is the exact export" "$(field "$out" 'c["remedy"]')" "export NCCL_P2P_DISABLE=1"

out="$EMPTY_ROOT/clean.json"
rc=$(run "$out" "$PREFLIGHT" --only env.nccl --format json --sysroot "$EMPTY_ROOT")
expect "clean environment exits 0" "$rc" 0
expect "clean environment is PASS" "$(field "$out" 'c["status"]')" PASS
expect "clean summary" "$(field "$out" 'c["summary"]')" "no NCCL/torch/CUDA variables set"

out="$EMPTY_ROOT/sysroot.json"
rc=$(run "$out" "$PREFLIGHT" --only env.nccl --format json --sysroot "$CONF_FIXTURES/system")
expect "/etc/nccl.conf value exits 1" "$rc" 1
expect "/etc/nccl.conf value is FAIL" "$(field "$out" 'c["status"]')" FAIL
expect "summary names the file and line" "$(field "$out" '"(/etc/nccl.conf:3)" in c["summary"]')" True
expect "evidence source" "$(field "$out" 'next(v["source"] for v in c["evidence"]["variables"] if v["name"] == "NCCL_P2P_DISABLE")')" "/etc/nccl.conf:3"

out="$EMPTY_ROOT/envwins.json"
rc=$(run "$out" NCCL_P2P_DISABLE=1 "$PREFLIGHT" --only env.nccl --format json --sysroot "$CONF_FIXTURES/system")
expect "the environment beats /etc/nccl.conf" "$(field "$out" 'c["status"]')" PASS

# The names come from the libnccl.so.2 the job loads, when one is here (the CUDA 13 toolkit's).
NCCL_LIB=""
for f in /usr/local/cuda/lib/libnccl.so.2 /usr/local/cuda/lib64/libnccl.so.2; do [[ -r $f ]] && NCCL_LIB=$f && break; done
if [[ -n "$NCCL_LIB" ]]; then
  out="$EMPTY_ROOT/lib.json"
  rc=$(run "$out" NCCL_BUFFSIZE=8M NCCL_IB_SL_DEFAULT=1 NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO \
    "$PREFLIGHT" --only env.nccl --format json --nccl-lib "$NCCL_LIB")
  expect "names from the library" "$(field "$out" 'c["evidence"]["nccl_names"]["from"]')" library
  expect "a constant of its debug information is not a variable" \
    "$(field "$out" '"NCCL_IB_SL_DEFAULT=1 (environment) is not a variable NCCL" in c["summary"]')" True
  expect "8M is proposed as 8388608" "$(field "$out" '"export NCCL_BUFFSIZE=8388608" in c["remedy"]')" True
  expect "NCCL_DEBUG=INFO is a note" "$(field "$out" 'len(c["evidence"]["notes"])')" 1
  expect "NCCL_SOCKET_IFNAME is read" "$(field "$out" 'next(v["status"] for v in c["evidence"]["variables"] if v["name"] == "NCCL_SOCKET_IFNAME")')" PASS
else
  echo "skip: no libnccl.so.2 here for the names-from-the-library case"
fi

# Without a readable NCCL the catalog stands in, and the evidence says so.
out="$EMPTY_ROOT/nolib.json"
rc=$(run "$out" NCCL_SOCKET_IFNAME=lo "$PREFLIGHT" --only env.nccl --format json --sysroot "$EMPTY_ROOT")
expect "names from the catalog" "$(field "$out" 'c["evidence"]["nccl_names"]["from"]')" catalog

# PyTorch's allocator settings: torch raises on these at the first allocation.
out="$EMPTY_ROOT/alloc.json"
rc=$(run "$out" PYTORCH_CUDA_ALLOC_CONF=expandable_segments:Ture "$PREFLIGHT" --only env.nccl --format json --sysroot "$EMPTY_ROOT")
expect "PYTORCH_CUDA_ALLOC_CONF typo exits 1" "$rc" 1
expect "remedy writes True" "$(field "$out" 'c["remedy"]')" "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"

[[ $failures -eq 0 ]] || exit 1
