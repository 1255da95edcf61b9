#!/usr/bin/env bash
# Unprivileged by default: the same runs as root and as `nobody` on this machine, compared
# check by check. What needs privilege (topo.pcie_acs reads PCI extended config space, which the
# kernel cuts to 64 bytes without CAP_SYS_ADMIN) must be UNKNOWN with the reason as nobody — never
# PASS; every other check keeps its status (host.limits may differ by CAP_IPC_LOCK alone, which
# root has and nobody has not, and then only towards a finding that names it); nothing crashes.
# Also the fake 8-GPU node (its helpers run as nobody too).
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}
[ "$(id -u)" -eq 0 ] || skip_all "needs root (to run the same thing as root and as nobody)"
if command -v setpriv >/dev/null; then
  as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
elif command -v runuser >/dev/null; then
  as_nobody=(runuser -u nobody --)
else
  skip_all "neither setpriv nor runuser is installed"
fi
"${as_nobody[@]}" test -x "$PREFLIGHT" 2>/dev/null || skip_all "nobody cannot run $PREFLIGHT (a directory above it is not searchable)"
helper_dir=$(dirname "$PREFLIGHT")
"${as_nobody[@]}" test -x "$helper_dir/preflight-gpu-probe" 2>/dev/null ||
  skip_all "nobody cannot run the helper in $helper_dir"

out=$(mktemp -d)
chmod 777 "$out"
trap 'rm -rf "$work" "$out"' EXIT

# The same environment for both users (HOME included: ~/.nccl.conf is read).
base_env=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$out/home" "${keep_env[@]}")

crashed() {  # crashed RC ERRFILE: exit outside 0-5 or a crash report on stderr
  [ "$1" -gt 5 ] && return 0
  grep -qE 'internal error|Sanitizer|runtime error:|Segmentation fault' "$2"
}

# run_both NAME ENV-AND-PREFLIGHT-ARGS...: root's report in $out/NAME.root.json, nobody's in
# $out/NAME.nobody.json (nobody also writes a --json file of its own into the shared directory).
run_both() {
  local name=$1 rc_root=0 rc_nobody=0
  shift
  # From a directory both may write: host.disk judges the current directory.
  (cd "$out/home" && "${base_env[@]}" "$@" --format json) >"$out/$name.root.json" 2>"$out/$name.root.err" || rc_root=$?
  (cd "$out/home" && "${as_nobody[@]}" "${base_env[@]}" "$@" --format json --json "$out/$name.nobody-file.json") \
    >"$out/$name.nobody.json" 2>"$out/$name.nobody.err" || rc_nobody=$?
  crashed "$rc_root" "$out/$name.root.err" && fail "$name as root: exit $rc_root" || pass "$name as root: exit $rc_root"
  crashed "$rc_nobody" "$out/$name.nobody.err" && { fail "$name as nobody: exit $rc_nobody"; sed 's/^/  | /' "$out/$name.nobody.err" | head -20 >&2; } ||
    pass "$name as nobody: exit $rc_nobody"
  [ -s "$out/$name.nobody-file.json" ] && pass "$name: nobody wrote its --json file" || fail "$name: nobody's --json file is missing"
  "$py" - "$out/$name.root.json" "$out/$name.nobody.json" "$name" <<'PY' || fail "$name: root and nobody disagree"
import json, sys
root = {c["id"]: c for c in json.load(open(sys.argv[1]))["checks"]}
nobody = {c["id"]: c for c in json.load(open(sys.argv[2]))["checks"]}
name = sys.argv[3]
PRIVILEGED = {"topo.pcie_acs"}  # needs CAP_SYS_ADMIN: never PASS as nobody unless nothing to read
bad = []
if set(root) != set(nobody):
    bad.append("different checks: %s" % sorted(set(root) ^ set(nobody)))
for cid in sorted(set(root) & set(nobody)):
    r, n = root[cid], nobody[cid]
    line = "%-22s root %-7s nobody %-7s %s" % (cid, r["status"], n["status"], n["summary"][:110])
    print("  " + line)
    if cid in PRIVILEGED:
        if n["status"] == "PASS" and r["status"] != "SKIP":
            # PASS without privilege is allowed only where no config space had to be read
            if "no PCIe bridge" not in n["summary"]:
                bad.append(cid + ": PASS as nobody: " + n["summary"])
        if n["status"] != r["status"] and (n["status"] != "UNKNOWN" or not n["summary"].strip()):
            bad.append(cid + ": as nobody %s (want UNKNOWN with a reason)" % n["status"])
        continue
    if cid == "gpu.xid" and "CAP_SYSLOG" in n["summary"]:
        # the kernel log needs CAP_SYSLOG where kernel.dmesg_restrict=1: UNKNOWN naming it, or a PASS
        # that says its scope (NVML's events covered every GPU during preflight's own work)
        scoped = n["status"] == "PASS" and "NVML events" in n["summary"]
        if n["status"] != r["status"] and n["status"] != "UNKNOWN" and not scoped:
            bad.append(cid + ": root %s, nobody %s: %s" % (r["status"], n["status"], n["summary"]))
        continue
    if cid == "gpu.xid" and n["status"] != r["status"]:
        bad.append(cid + ": root %s, nobody %s (and no capability named): %s" % (r["status"], n["status"], n["summary"]))
        continue
    if cid == "host.limits" and n["status"] != r["status"]:
        # root holds CAP_IPC_LOCK (a locked-memory limit does not bind it); nobody does not
        if "CAP_IPC_LOCK" not in n["summary"] or n["status"] == "PASS":
            bad.append(cid + ": root %s, nobody %s: %s" % (r["status"], n["status"], n["summary"]))
        continue
    if n["status"] != r["status"]:
        bad.append("%s: root %s, nobody %s: %s" % (cid, r["status"], n["status"], n["summary"]))
    if n["status"] == "UNKNOWN" and not n["summary"].strip():
        bad.append(cid + ": UNKNOWN without a reason")
for b in bad:
    print("MISMATCH (%s): %s" % (name, b), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

mkdir -p "$out/home" && chmod 777 "$out/home"

# The whole node profile on this machine (no driver: the GPU checks FAIL alike for both).
run_both node "$PREFLIGHT" --timeout 30 --color never
# host.disk: a checkpoint directory only root may write is a FAIL for nobody that names it, never a PASS.
mkdir -p "$out/root-only" && chmod 755 "$out/root-only"
rc=0
(cd "$out/home" && "${as_nobody[@]}" "${base_env[@]}" "$PREFLIGHT" --only host.disk --checkpoint-dir "$out/root-only/run1" \
  --format json) >"$out/disk.nobody.json" 2>/dev/null || rc=$?
expect_eq "$rc" 1 "host.disk as nobody in a directory only root may write: exit"
disk_summary=$("$py" -c "import json; c=json.load(open('$out/disk.nobody.json'))['checks'][0]; print(c['status'], c['summary'])")
expect_contains "$disk_summary" "FAIL this user cannot create files in $out/root-only" "host.disk as nobody"
# The ACS check alone, verbose: as nobody it must not claim what it could not read.
if ls /sys/bus/pci/devices/*/config >/dev/null 2>&1; then
  cfg=$(ls /sys/bus/pci/devices/*/config | head -1)
  root_bytes=$(wc -c <"$cfg")
  # opened by nobody itself (the kernel checks the opener's capabilities, so no redirect from root)
  nobody_bytes=$("${as_nobody[@]}" cat "$cfg" 2>/dev/null | wc -c)
  echo "note: $cfg reads $root_bytes bytes as root, $nobody_bytes as nobody"
fi

# The fake 8 x H100 node: driver, NVML, the contained helpers (smoke, P2P, NCCL all_reduce) as nobody.
if [ -n "${PREFLIGHT_FAKE_GPU_LIB_DIR:-}" ] && [ -d "$PREFLIGHT_FAKE_GPU_LIB_DIR" ]; then
  if "${as_nobody[@]}" test -r "$PREFLIGHT_FAKE_GPU_LIB_DIR/libcuda.so.1"; then
    run_both fake-h100x8 env LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" \
      PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/h100x8-healthy.json" "$PREFLIGHT" --timeout 30 \
      --allreduce-bytes 1M --color never
    for id in driver.loaded cuda.smoke gpu.count topo.p2p comm.allreduce; do
      st=$("$py" -c "import json; print([c['status'] for c in json.load(open('$out/fake-h100x8.nobody.json'))['checks'] if c['id']=='$id'][0])")
      expect_eq "$st" PASS "$id as nobody on the fake 8-GPU node"
    done
  else
    echo "note: nobody cannot read $PREFLIGHT_FAKE_GPU_LIB_DIR; fake-GPU comparison not run"
  fi
fi

# The unit tests as nobody too: nothing in them may depend on root.
if [ -n "${PREFLIGHT_UNIT_TESTS:-}" ] && "${as_nobody[@]}" test -x "$PREFLIGHT_UNIT_TESTS"; then
  rc=0
  (cd "$out" && "${as_nobody[@]}" "${base_env[@]}" TMPDIR="$out" "$PREFLIGHT_UNIT_TESTS" --gtest_brief=1) \
    >"$work/unit.out" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then pass "the unit tests pass as nobody ($(grep -o '[0-9]* tests from' "$work/unit.out" | head -1 | cut -d' ' -f1) tests)"
  else
    fail "the unit tests fail as nobody (exit $rc)"
    # A test's failure, or a sanitizer's report (exit 86) with its first frames.
    grep -E 'FAILED|Failure|ERROR: |runtime error|SUMMARY: |^ +#[0-9] ' "$work/unit.out" | head -40 >&2
  fi
fi
finish
