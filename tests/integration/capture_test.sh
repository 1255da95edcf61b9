#!/usr/bin/env bash
# `preflight capture` and judging the capture with --sysroot, as a user meets them: a node whose
# /dev/shm is 64 MiB (a private mount namespace) captured there and judged outside it FAILs
# shm.capacity naming 64 MiB, from the directory and from --tar; this healthy machine captured and
# judged here gives the live run's verdicts check by check; secrets' values never reach the capture;
# a DIR or FILE that cannot be used is exit 2 before anything is probed; a tree that is no capture
# (hwloc-gather-topology's /proc and /sys) takes /dev/shm from its mountinfo and nothing from this
# machine; --topology-xml does not judge this host's PCI bus or binding as the XML's machine's.
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}
xml="${PREFLIGHT_FIXTURES_DIR:?}/topology/2s-4gpu-2nic-switch.xml"
summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
base_env=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root "${keep_env[@]}")

# --- DIR and FILE are checked before anything is probed ------------------------------------------
mkdir -p "$work/full"
echo keep >"$work/full/note"
expect_rc 2 "capture into a directory that is not empty" -- "$PREFLIGHT" capture "$work/full"
expect_contains "$(cat "$work/err")" "not empty" "stderr"
expect_eq "$(ls "$work/full")" note "the directory is left as it was"
expect_rc 2 "capture without a directory" -- "$PREFLIGHT" capture
expect_rc 2 "capture into a directory whose parent does not exist" -- "$PREFLIGHT" capture "$work/no/such/dir"
echo x >"$work/exists.tar"
expect_rc 2 "--tar onto an existing file" -- "$PREFLIGHT" capture --tar "$work/exists.tar"
expect_contains "$(cat "$work/err")" "exists" "stderr"
expect_eq "$(cat "$work/exists.tar")" x "the file is left as it was"
expect_rc 2 "--tar with a directory that does not exist" -- "$PREFLIGHT" capture --tar "$work/no/dir/c.tar"
expect_rc 2 "--tar is an option of capture only" -- "$PREFLIGHT" --tar "$work/x.tar"
expect_rc 2 "capture with --sysroot" -- "$PREFLIGHT" capture "$work/c0" --sysroot /
expect_rc 2 "capture with --json (a capture judges nothing)" -- "$PREFLIGHT" capture "$work/c0" --json "$work/c0.json"
[ ! -e "$work/c0" ] && [ ! -e "$work/c0.json" ] && pass "nothing was written" || fail "a refused capture wrote something"
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  mkdir -p "$work/ro"
  rc=0
  unshare -m bash -c 'mount --make-rprivate / 2>/dev/null; mount -t tmpfs -o ro tmpfs "$1" && exec "$2" capture "$1"' \
    _ "$work/ro" "$PREFLIGHT" >"$work/out" 2>"$work/err" || rc=$?
  expect_eq "$rc" 2 "capture into a read-only directory: exit"
  expect_contains "$(cat "$work/err")" "not writable" "stderr"
else
  echo "SKIP: the read-only directory case needs root and unshare"
fi

# --- secrets: names kept, values dropped ---------------------------------------------------------
expect_rc 0 "capture with secrets in the environment" -- "${base_env[@]}" NCCL_IB_HCA=mlx5_0 \
  NCCL_TEST_TOKEN=tok-v4lue TORCH_SECRET_X=sec-v4lue CUDA_PASSWORD=pw-v4lue PREFLIGHT_API_KEY=key-v4lue \
  HF_TOKEN=hf-v4lue "$PREFLIGHT" capture "$work/secrets"
if grep -rqF -e tok-v4lue -e sec-v4lue -e pw-v4lue -e key-v4lue -e hf-v4lue "$work/secrets"; then
  fail "a secret's value is in the capture: $(grep -rlF -e tok-v4lue -e sec-v4lue -e pw-v4lue -e key-v4lue -e hf-v4lue "$work/secrets")"
else
  pass "no secret's value is in the capture"
fi
dropped=$("$py" -c "import json; print(','.join(json.load(open('$work/secrets/preflight-capture.json'))['dropped_env_values']))")
expect_eq "$dropped" "CUDA_PASSWORD,NCCL_TEST_TOKEN,PREFLIGHT_API_KEY,TORCH_SECRET_X" "the names of the dropped values"
expect_eq "$("$py" -c "import json; print(json.load(open('$work/secrets/facts/env.json'))['vars']['NCCL_IB_HCA'])")" mlx5_0 \
  "a variable that is no secret"
m=$("$py" -c "
import json; m = json.load(open('$work/secrets/preflight-capture.json'))
print(m['format'], m['version'], ','.join(sorted(m['facts'])), '/proc/self/mountinfo' in m['files'])")
expect_eq "$m" "preflight-capture 1 cuda_runtime,disk,env,gpu,nccl,net,process,shm,topology True" "the manifest"
# The judge sees the captured environment, not its own.
expect_rc 0 "judged with the captured environment" -- env NCCL_IB_HCA=judge "$PREFLIGHT" --sysroot "$work/secrets" \
  --only env.nccl --format json
expect_eq "$(json_get "d['ranks'][0]['facts']['env'].get('NCCL_IB_HCA')")" mlx5_0 "NCCL_IB_HCA judged"

# --- the limits of the captured process, never the judge's: the live probe asks getrlimit(2), and
# a capture keeps /proc/self/limits for the judge to read ---------------------------------------
rc=0
bash -c 'ulimit -n 2048 && exec "$0" capture "$1"' "$PREFLIGHT" "$work/limits" >"$work/out" 2>"$work/err" || rc=$?
expect_eq "$rc" 0 "capture under ulimit -n 2048: exit"
[ -s "$work/limits/proc/self/limits" ] && pass "the capture holds /proc/self/limits" || fail "no proc/self/limits"
"$PREFLIGHT" --sysroot "$work/limits" --only host.limits --format json >"$work/out" 2>"$work/err" || true
expect_eq "$(json_get "d['ranks'][0]['facts']['limits']['nofile']['source']")" /proc/self/limits "judged from the file"
expect_contains "$(summary_of host.limits)" "RLIMIT_NOFILE hard limit is 2048 (soft 2048)" "the captured limit"

# --- a 64 MiB /dev/shm, captured in a private mount namespace and judged outside it --------------
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; then
  rc=0
  unshare -m bash -c 'mount --make-rprivate / 2>/dev/null; mount -t tmpfs -o size=64m tmpfs /dev/shm &&
    exec "$1" capture "$2" --tar "$3"' _ "$PREFLIGHT" "$work/small" "$work/small.tar" >"$work/out" 2>"$work/err" || rc=$?
  expect_eq "$rc" 0 "capture with a 64 MiB /dev/shm: exit"
  expect_rc 1 "the 64 MiB capture judged here" -- "$PREFLIGHT" --sysroot "$work/small" --only shm.capacity --format json
  expect_eq "$(check_status shm.capacity)" FAIL "shm.capacity"
  expect_contains "$(summary_of shm.capacity)" "64 MiB" "shm.capacity summary"
  mkdir "$work/untarred"
  tar -xf "$work/small.tar" -C "$work/untarred" && pass "tar reads the --tar archive" || fail "tar cannot read the --tar archive"
  expect_rc 1 "the 64 MiB capture from --tar judged here" -- "$PREFLIGHT" --sysroot "$work/untarred" --only shm.capacity --format json
  expect_eq "$(check_status shm.capacity)" FAIL "shm.capacity (--tar)"
  expect_contains "$(summary_of shm.capacity)" "64 MiB" "shm.capacity summary (--tar)"
  # The same node as a plain tree (no manifest, no facts: hwloc-gather-topology's kind): /dev/shm
  # from the captured mount's size=, never statfs() of the tree's own directory.
  cp -a "$work/small" "$work/plain" && rm -rf "$work/plain/preflight-capture.json" "$work/plain/facts" "$work/plain/topology.xml"
  expect_rc 1 "the 64 MiB node as a plain tree" -- "$PREFLIGHT" --sysroot "$work/plain" --only shm.capacity --format json
  expect_eq "$(check_status shm.capacity)" FAIL "shm.capacity (plain tree)"
  expect_contains "$(summary_of shm.capacity)" "64 MiB" "shm.capacity summary (plain tree)"
  # A capture with a --tar alone leaves no directory behind.
  rc=0
  unshare -m bash -c 'mount --make-rprivate / 2>/dev/null; mkdir -p "$2" && mount -t tmpfs tmpfs "$2" && "$1" capture --tar "$2/only.tar" >/dev/null &&
    ls -A "$2"' _ "$PREFLIGHT" "$work/tardir" >"$work/out" 2>"$work/err" || rc=$?
  expect_eq "$(cat "$work/out")" only.tar "--tar alone leaves only the archive"
else
  echo "SKIP: the 64 MiB /dev/shm capture needs root and unshare"
fi

# --- a capture cut short by its deadline: what was read is kept and the manifest says so ---------
rc=0
start=$(date +%s%N)
PREFLIGHT_TEST_HANG_PROBE=limits "$PREFLIGHT_FAULTS" capture "$work/cut" --timeout 2 >"$work/out" 2>"$work/err" || rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_eq "$rc" 4 "a capture whose probe hangs: exit"
[ "$elapsed_ms" -lt 6000 ] && pass "it ended after ${elapsed_ms} ms" || fail "it took ${elapsed_ms} ms"
expect_contains "$(cat "$work/err")" "incomplete" "stderr"
expect_eq "$("$py" -c "import json; print(json.load(open('$work/cut/preflight-capture.json'))['complete'])")" False "manifest complete"
rc=0
"$PREFLIGHT" --sysroot "$work/cut" --only host.limits --format json >"$work/out" 2>"$work/err" || rc=$?
expect_eq "$rc" 3 "the cut capture judged: exit"
expect_eq "$(check_status host.limits)" UNKNOWN "host.limits (its probe never ran on the node)"

# --- this healthy machine, captured and judged here: the live run's verdicts ----------------------
rc=0
"${base_env[@]}" "$PREFLIGHT" capture "$work/here" >"$work/out" 2>"$work/err" || rc=$?
expect_eq "$rc" 0 "capture of this machine: exit"
"${base_env[@]}" "$PREFLIGHT" --format json >"$work/live.json" 2>/dev/null
"${base_env[@]}" "$PREFLIGHT" --sysroot "$work/here" --format json >"$work/judged.json" 2>/dev/null
diff=$("$py" - "$work/live.json" "$work/judged.json" <<'PY'
import json, sys
live = {c['id']: c['status'] for c in json.load(open(sys.argv[1]))['checks']}
judged = {c['id']: c['status'] for c in json.load(open(sys.argv[2]))['checks']}
print('; '.join(f"{k}: live {v}, judged {judged.get(k)}" for k, v in sorted(live.items()) if judged.get(k) != v))
PY
)
expect_eq "$diff" "" "checks whose verdict differs between the live run and its capture"
n=$("$py" -c "import json; print(len(json.load(open('$work/live.json'))['checks']))")
[ "$n" -ge 20 ] && pass "$n checks compared" || fail "only $n checks compared"
expect_rc 0 "the capture judged as JSON names its topology" -- "$PREFLIGHT" --sysroot "$work/here" --only net.gpu_nic_affinity --format json
expect_contains "$(json_get "d['ranks'][0]['facts']['topology'].get('source', '')")" "$work/here/topology.xml" "topology source"

# --- the fake 8-GPU node, captured with its libraries and judged without them ---------------------
# The judge has no driver and no NCCL: every GPU verdict must come from the capture (no helper
# runs under --sysroot), and match the live run on the fake node; the all_reduce, which needs the
# node's own GPUs, is not run from a capture.
if [ -n "${PREFLIGHT_FAKE_GPU_LIB_DIR:-}" ] && [ -f "$PREFLIGHT_FAKE_GPU_LIB_DIR/libnccl.so.2" ]; then
  fake=(env LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/h100x8-healthy.json")
  rc=0
  "${base_env[@]}" "${fake[@]}" "$PREFLIGHT" capture "$work/gpunode" >"$work/out" 2>"$work/err" || rc=$?
  expect_eq "$rc" 0 "capture of the fake GPU node: exit"
  "${base_env[@]}" "${fake[@]}" "$PREFLIGHT" --format json >"$work/gpulive.json" 2>/dev/null
  "${base_env[@]}" "$PREFLIGHT" --sysroot "$work/gpunode" --format json >"$work/gpujudged.json" 2>/dev/null
  diff=$("$py" - "$work/gpulive.json" "$work/gpujudged.json" <<'PY'
import json, sys
live = {c['id']: c['status'] for c in json.load(open(sys.argv[1]))['checks']}
judged = {c['id']: c['status'] for c in json.load(open(sys.argv[2]))['checks']}
print('; '.join(f"{k}: live {v}, judged {judged.get(k)}" for k, v in sorted(live.items())
                if k != 'comm.allreduce' and judged.get(k) != v))
PY
)
  expect_eq "$diff" "" "fake GPU node: checks whose verdict differs between the live run and its capture"
  cp "$work/gpujudged.json" "$work/out"
  expect_eq "$(check_status gpu.count)" "$(cd "$work" && cp gpulive.json out && check_status gpu.count)" "gpu.count"
  cp "$work/gpujudged.json" "$work/out"
  expect_eq "$(check_status comm.allreduce)" SKIP "comm.allreduce from a capture"
  expect_contains "$(summary_of comm.allreduce)" "not run under --sysroot" "comm.allreduce summary"
  expect_contains "$(summary_of nccl.library)" "$PREFLIGHT_FAKE_GPU_LIB_DIR/libnccl.so.2" "nccl.library names the node's library"
else
  echo "SKIP: no fake GPU libraries"
fi

# A plain tree of this machine: what it cannot hold is "not in the capture", never FAIL for it.
cp -a "$work/here" "$work/hereplain" && rm -rf "$work/hereplain/preflight-capture.json" "$work/hereplain/facts" "$work/hereplain/topology.xml"
rc=0
"${base_env[@]}" "$PREFLIGHT" --sysroot "$work/hereplain" --format json >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" -lt 5 ] && pass "plain tree: exit $rc" || fail "plain tree: exit $rc"
for id in nccl.library driver.loaded gpu.count cuda.smoke topo.p2p; do
  st=$(check_status "$id")
  case "$st" in UNKNOWN | SKIP) pass "$id is $st on a plain tree" ;; *) fail "$id is $st on a plain tree (want UNKNOWN or SKIP)" ;; esac
done
expect_contains "$(summary_of driver.loaded)" "not in the capture" "driver.loaded summary"
st=$(check_status shm.capacity)
[ "$st" != FAIL ] && [ "$st" != WARN ] && pass "shm.capacity is $st on a healthy plain tree" || fail "shm.capacity is $st on a healthy plain tree"

# A manifest that is not ours: nothing is taken from it, and nothing crashes.
cp -a "$work/here" "$work/badmanifest" && echo '{"format": "preflight-capture", "version": 99}' >"$work/badmanifest/preflight-capture.json"
rc=0
"$PREFLIGHT" --sysroot "$work/badmanifest" --format json >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" -lt 5 ] && pass "a newer format version: exit $rc" || fail "a newer format version: exit $rc"
expect_contains "$(summary_of driver.loaded)" "format version 99" "driver.loaded summary"

# --- --topology-xml: the XML's machine, never this host's bus and binding ------------------------
expect_rc 0 "--topology-xml of another machine" -- "$PREFLIGHT" --topology-xml "$xml" --only 'topo.pcie_acs,topo.numa_affinity' --format json
expect_eq "$(check_status topo.pcie_acs)" SKIP "topo.pcie_acs"
expect_contains "$(summary_of topo.pcie_acs)" "--topology-xml $xml" "topo.pcie_acs summary"
expect_eq "$(check_status topo.numa_affinity)" SKIP "topo.numa_affinity"
expect_contains "$(summary_of topo.numa_affinity)" "another machine" "topo.numa_affinity summary"
finish
