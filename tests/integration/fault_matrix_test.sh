#!/usr/bin/env bash
# The fault matrix (preflight never hangs and never crashes; bad input gets a clear error): every
# fault the project can produce, run against the built binary, one row each. Per row: the check id
# and its status, the exit code, the wall-clock time against a bound, and that preflight itself did
# not crash (exit code 0-5, no "internal error", no signal, no sanitizer report). The table of all
# rows is printed at the end in Markdown.
#
# Faults come from the existing hooks: the fake NVIDIA libraries' scenarios (tests/fakes), the job
# run's PREFLIGHT_TEST_STOP / _KILL / _BAD_PAYLOAD, --sysroot trees, a private mount namespace for
# /dev/shm (root only; those rows are SKIP otherwise), garbage environments (tests/faults/garbage_env.py).
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}
S=${PREFLIGHT_FAKE_GPU_SCENARIOS_DIR:-}
L=${PREFLIGHT_FAKE_GPU_LIB_DIR:-}
faults_dir="$PREFLIGHT_SOURCE_DIR/tests/faults"
table="$work/table.tsv"
: >"$table"

# Sanitizer builds start slower (and their children too): a little more time per row.
slack=0
if sanitized_build; then slack=3; fi

# In sanitizer builds, CI (.ci/run) runs the representative rows below, one of each kind of fault
# (a GPU library that crashes, hangs or fails; a rank stopped or lying; a probe that hangs; a broken
# /dev/shm, tree, environment, config, matrix or result file); PREFLIGHT_FAULT_MATRIX=all runs
# every row (.ci/extended does, under both sanitizers' build). Uninstrumented builds run them all.
matrix=${PREFLIGHT_FAULT_MATRIX:-}
[ -z "$matrix" ] && { [ "$slack" -gt 0 ] && matrix=representative || matrix=all; }
representative=("driver absent" "cuInit crashes (SIGSEGV)" "NCCL all_reduce hangs" "P2P copy corrupted"
  "a probe hangs (PREFLIGHT_TEST_HANG_PROBE=identity)" "rank 2 of 3 stopped (SIGSTOP) in barrier"
  "rank 1 of 3 sends a truncated payload" "/dev/shm full" "sysfs/procfs files that are directories"
  "environment: random values, text report" "malformed config file" "merge: binary garbage")
in_matrix() {  # in_matrix ROW-NAME: whether this run runs that row
  [ "$matrix" = all ] && return 0
  local r
  for r in "${representative[@]}"; do [ "$r" = "$1" ] && return 0; done
  return 1
}

# Open MPI as root, oversubscribed (as mpi_test.sh).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpiexec --oversubscribe --bind-to none)
quiet=(--color never --shm-dataloader-bytes 0)
have_mpi=0; command -v mpiexec >/dev/null && have_mpi=1
have_gpu_fakes=0; [ -n "$L" ] && [ -d "$L" ] && [ -n "$S" ] && have_gpu_fakes=1
is_root=0; [ "$(id -u)" -eq 0 ] && is_root=1
can_unshare=0; [ "$is_root" -eq 1 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null && can_unshare=1

# statuses_of FILE CHECK: the check's statuses in the JSON report (several ranks: sorted, joined by
# '/'), "absent" when the check is not in it, "nojson" when stdout is not one JSON document.
statuses_of() {
  "$py" - "$1" "$2" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))
except Exception:
    print("nojson"); sys.exit(0)
s = sorted(set(c["status"] for c in d.get("checks", []) if c.get("id") == sys.argv[2]))
print("/".join(s) if s else "absent")
PY
}

# row NAME CHECK WANT_STATUS WANT_EXIT BOUND -- COMMAND...
#   CHECK "-": no report is expected (a refused run); WANT_STATUS and WANT_EXIT are extended regular
#   expressions matched whole ("FAIL|UNKNOWN", "1|3"); WANT_EXIT "!0" means any non-zero exit (a
#   rank killed by a signal: mpiexec's own code, not preflight's). BOUND in seconds.
row() {
  local name=$1 check=$2 want_st=$3 want_rc=$4 bound=$5
  shift 6
  if ! in_matrix "$name"; then skip_row "$name" "not a representative row (PREFLIGHT_FAULT_MATRIX=all)"; return 0; fi
  local out="$work/row.out" err="$work/row.err" rc=0 t0 t1 secs got_st=- ok=yes why=""
  t0=$(date +%s.%N)
  # a hard stop far past the bound (the row then fails on time, not by hanging the suite); through
  # bash so that the exported helper functions below (with_gpu, in_shm) can be the command
  timeout -k 5 $((bound * 3 + 30)) bash -c '"$@"' row "$@" >"$out" 2>"$err" </dev/null || rc=$?
  t1=$(date +%s.%N)
  secs=$("$py" -c "print('%.1f' % ($t1 - $t0))")
  if [ "$check" != "-" ]; then
    got_st=$(statuses_of "$out" "$check")
    [[ "$got_st" =~ ^($want_st)$ ]] || { ok=no; why+=" status $got_st"; }
  fi
  if [ "$want_rc" = "!0" ]; then
    [ "$rc" -ne 0 ] || { ok=no; why+=" exit 0"; }
  else
    [[ "$rc" =~ ^($want_rc)$ ]] || { ok=no; why+=" exit $rc"; }
    # preflight's own codes are 0-5: anything else is a signal, a sanitizer report (86) or timeout(1)
    [ "$rc" -le 5 ] || { ok=no; why+=" crashed (exit $rc)"; }
  fi
  if grep -qE 'internal error|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|Segmentation fault|core dumped' "$err" "$out" 2>/dev/null; then
    ok=no; why+=" crash text: $(grep -hE 'internal error|Sanitizer|runtime error:|Segmentation fault|core dumped' "$err" "$out" | head -1 | cut -c1-120)"
  fi
  # BOUND holds preflight to its deadlines: rank 0's own duration (the report's duration_ms) where
  # there is a report, else the wall clock. The launcher's start and end, which a loaded machine
  # stretches by seconds, are preflight's to survive but not to keep short: the wall clock of a
  # launched row gets launch_slack more.
  local own
  own=$("$py" -c "import json,sys; print('%.1f' % (json.load(open(sys.argv[1]))['duration_ms'] / 1000))" "$out" 2>/dev/null) || own=
  if [ -n "$own" ]; then
    "$py" -c "import sys; sys.exit(0 if $own <= $bound + $slack else 1)" || { ok=no; why+=" reported after ${own}s > ${bound}s"; }
  fi
  "$py" -c "import sys; sys.exit(0 if $secs <= $bound + $slack + ${launch_slack:-0} else 1)" ||
    { ok=no; why+=" took ${secs}s > ${bound}s + ${launch_slack:-0}s"; }
  printf '%s\t%s %s exit %s\t%s exit %s\t%s\t%s\t%s\n' "$name" "$check" "$want_st" "$want_rc" "$got_st" "$rc" \
    "$secs" "$((bound + slack))" "$ok" >>"$table"
  if [ "$ok" = yes ]; then pass "$name: $check $got_st, exit $rc, ${secs}s"; else
    fail "$name:$why"
    # each check's verdict and summary (the JSON's tail is its facts, which say little), then stderr
    "$py" -c "import json,sys
for c in json.load(open(sys.argv[1])).get('checks', []): print('  | %s %s: %s' % (c['id'], c['status'], c['summary']))" \
      "$out" >&2 2>/dev/null || sed 's/^/  | /' "$out" | tail -25 >&2
    sed 's/^/  | /' "$err" | tail -10 >&2
  fi
}
skip_row() {  # skip_row NAME REASON
  printf '%s\t-\t-\t-\t-\tSKIP: %s\n' "$1" "$2" >>"$table"
  echo "skip: $1 ($2)"
}

with_gpu() {  # with_gpu SCENARIO-FILE PREFLIGHT-ARGS...: the fake 8-GPU node (a 1 MiB all_reduce: the
  local scenario=$1  # node's all_reduce probe runs whatever --only selects, and 1 MiB keeps these rows short)
  shift
  env LD_LIBRARY_PATH="$L" PREFLIGHT_FAKE_GPU="$scenario" "$PREFLIGHT" --allreduce-bytes 1M "$@"
}
export -f with_gpu
export L

# --- the GPU stack: driver absent, init errors, crashes, hangs, wrong data ------------------------
row "driver absent" driver.loaded FAIL 1 10 -- env LD_LIBRARY_PATH=/nonexistent "$PREFLIGHT" --timeout 8 --format json "${quiet[@]}"
# Sanitizer builds: every GPU row at twice its --timeout and bound. Each helper gets a share of the
# timeout (the smoke test 15%: 1.2 s at 8 s); an instrumented helper on a loaded 2-core machine once
# used all of it before the fault the row is about, which made the row UNKNOWN (helper killed).
gpu_scale=1
[ "$slack" -gt 0 ] && gpu_scale=2
gs() { echo $(( $1 * gpu_scale )); }
if [ "$have_gpu_fakes" -eq 1 ]; then
  row "NVML init error (driver not loaded)" driver.loaded FAIL 1 "$(gs 10)" -- with_gpu "$S/nvml-driver-not-loaded.json" \
    --only 'driver.loaded,gpu.*' --timeout "$(gs 8)" --format json
  row "cuInit returns 100" cuda.smoke FAIL 1 "$(gs 10)" -- with_gpu "$S/cuinit-error100.json" --only 'driver.loaded,cuda.smoke' --timeout "$(gs 8)" --format json
  row "cuInit crashes (SIGSEGV)" cuda.smoke FAIL 1 "$(gs 10)" -- with_gpu "$S/cuinit-segv.json" --only 'driver.loaded,cuda.smoke' --timeout "$(gs 8)" --format json
  row "cuInit hangs" cuda.smoke FAIL 1 "$(gs 8)" -- with_gpu "$S/cuinit-hang.json" --only 'driver.loaded,cuda.smoke' --timeout "$(gs 6)" --format json
  row "NVML hangs" driver.loaded FAIL 1 "$(gs 8)" -- with_gpu "$S/nvml-hang.json" --only 'driver.loaded,gpu.*' --timeout "$(gs 6)" --format json
  row "device copy hangs" cuda.smoke FAIL 1 "$(gs 8)" -- with_gpu "$S/copy-hang.json" --only cuda.smoke --timeout "$(gs 6)" --format json
  row "device copy corrupted" cuda.smoke FAIL 1 "$(gs 10)" -- with_gpu "$S/copy-corrupt.json" --only cuda.smoke --timeout "$(gs 8)" --format json
  # --timeout 10: the peer-copy helper gets 15% (1.5 s); at 6 s its 0.9 s did not cover the helper's
  # start on a loaded machine, and a helper killed before its first copy is UNKNOWN, not this row.
  row "P2P copy hangs" topo.p2p FAIL 1 "$(gs 10)" -- with_gpu "$S/p2p-hang.json" --only topo.p2p --timeout "$(gs 10)" --format json
  row "P2P copy corrupted" topo.p2p FAIL 1 "$(gs 10)" -- with_gpu "$S/p2p-corrupt.json" --only topo.p2p --timeout "$(gs 8)" --format json
  row "NCCL init hangs" comm.allreduce FAIL 1 "$(gs 8)" -- with_gpu "$S/allreduce-hang-init.json" --only comm.allreduce \
    --timeout "$(gs 6)" --format json
  row "NCCL all_reduce hangs" comm.allreduce FAIL 1 "$(gs 8)" -- with_gpu "$S/allreduce-hang.json" --only comm.allreduce \
    --timeout "$(gs 6)" --format json
  printf '{"gpus": 8, "faults": {"cuInit": "ok"' >"$work/broken-scenario.json"  # truncated JSON
  row "fake driver's scenario unreadable" cuda.smoke FAIL 1 "$(gs 10)" -- with_gpu "$work/broken-scenario.json" \
    --only 'driver.loaded,cuda.smoke' --timeout "$(gs 8)" --format json
else
  skip_row "GPU fault rows" "no fake GPU libraries (PREFLIGHT_FAKE_GPU_LIB_DIR)"
fi
row "a probe hangs (PREFLIGHT_TEST_HANG_PROBE=identity)" host.memory UNKNOWN 4 4 -- env PREFLIGHT_TEST_HANG_PROBE=identity \
  "$PREFLIGHT_FAULTS" --timeout 2 --format json

# --- a distributed run: a rank stopped in each phase, killed, or sending a malformed payload -----
if [ "$have_mpi" -eq 1 ]; then
  # --timeout 10: init ends at 3 s, probe at 5 s, reach at 5.5 s, gather at 6.5 s, barrier at 7.5 s,
  # all_reduce at 9 s; rank 0 reports who is missing at that deadline (bound: that deadline + 3 s for the launcher's
  # start and the report, on a loaded machine; the whole run is held to --timeout + 2 s anyway).
  # Sanitizer builds: --timeout 15 and the bounds with it. MPI initialisation gets 30% of the
  # timeout; three instrumented ranks starting on a loaded 2-core machine once took more than 3 s,
  # and a row that ends at the initialisation deadline is not the fault it is about.
  mpi_timeout=10
  [ "$slack" -gt 0 ] && mpi_timeout=15
  at() { echo $(( ($1 * mpi_timeout + 9) / 10 )); }  # a bound made for --timeout 10, scaled
  mpi_checks='launch.ranks,comm.*'
  launch_slack=5
  for spec in probe:comm.barrier:8 reach:comm.barrier:9 gather:comm.barrier:10 barrier:comm.barrier:11 \
    allreduce:comm.allreduce:12; do
    IFS=: read -r phase check bound <<<"$spec"
    row "rank 2 of 3 stopped (SIGSTOP) in $phase" "$check" FAIL 4 "$(at "$bound")" -- "${mpi[@]}" -np 3 \
      -x PREFLIGHT_TEST_STOP="2:$phase" "$PREFLIGHT_FAULTS" --format json --only "$mpi_checks" \
      --timeout "$mpi_timeout" "${quiet[@]}"
  done
  row "rank 2 of 3 killed (SIGKILL) in barrier" - - '!0' "$(at 12)" -- "${mpi[@]}" -np 3 -x PREFLIGHT_TEST_KILL=2:barrier \
    "$PREFLIGHT_FAULTS" --format json --only "$mpi_checks" --timeout "$mpi_timeout" "${quiet[@]}"
  for kind in garbage truncated wrong-rank oversized; do
    row "rank 1 of 3 sends a $kind payload" launch.ranks FAIL 1 "$(at 12)" -- "${mpi[@]}" -np 3 \
      -x PREFLIGHT_TEST_BAD_PAYLOAD="1:$kind" "$PREFLIGHT_FAULTS" --format json --only launch.ranks \
      --timeout "$mpi_timeout" "${quiet[@]}"
  done
  launch_slack=0
else
  skip_row "MPI rows" "mpiexec (openmpi-bin) is not installed"
fi

# --- /dev/shm missing, read-only, full (a private mount namespace; root only) --------------------
export -f in_shm  # lib.sh
if [ "$can_unshare" -eq 1 ]; then
  row "/dev/shm missing" shm.capacity FAIL 1 10 -- in_shm none --only shm.capacity --timeout 8 --format json
  row "/dev/shm read-only" shm.capacity FAIL 1 10 -- in_shm ro --only shm.capacity --timeout 8 --format json
  row "/dev/shm full" shm.capacity FAIL 1 10 -- in_shm full --only shm.capacity --timeout 8 --format json
else
  skip_row "/dev/shm missing, read-only, full" "needs root and unshare -m"
fi

# --- unreadable or odd sysfs/procfs files (--sysroot trees) -------------------------------------
tree() {  # tree DIR: the two-socket GPU server's sysfs plus /proc files copied from this machine
  "$py" "$PREFLIGHT_FIXTURES_DIR/sysfs/make_two_socket.py" "$1" --redirect >/dev/null || return 1
  mkdir -p "$1/proc/self" "$1/proc/sys/kernel" "$1/dev/shm" "$1/etc"
  for f in meminfo self/limits self/status self/cgroup self/mountinfo sys/kernel/hostname sys/kernel/osrelease; do
    cat "/proc/$f" >"$1/proc/$f" 2>/dev/null || true
  done
}
chmod 755 "$work"
if tree "$work/shapes"; then
  # every file a probe reads, replaced by a directory (root cannot be kept from reading a file by
  # its mode; a directory in its place fails every read the same way)
  find "$work/shapes" -type f ! -path '*/dev/shm/*' | while read -r f; do rm -f "$f"; mkdir "$f"; done
  row "sysfs/procfs files that are directories" topo.pcie_acs UNKNOWN '1|3' 10 -- "$PREFLIGHT" --sysroot "$work/shapes" \
    --only 'host.*,topo.pcie_acs,net.*,shm.capacity' --timeout 8 --format json
else
  fail "generating the sysfs tree"
fi
if [ "$is_root" -eq 1 ] && command -v setpriv >/dev/null && setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$PREFLIGHT" 2>/dev/null; then
  if tree "$work/unreadable"; then
    find "$work/unreadable" -type f -exec chmod 000 {} +
    chmod 000 "$work/unreadable/sys/kernel/iommu_groups"
    row "sysfs/procfs files mode 000 (as nobody)" topo.pcie_acs UNKNOWN '1|3' 10 -- setpriv --reuid=nobody --regid=nogroup \
      --clear-groups env HOME=/nonexistent "$PREFLIGHT" --sysroot "$work/unreadable" --only 'host.*,topo.pcie_acs,net.*' \
      --timeout 8 --format json
  fi
else
  skip_row "sysfs/procfs files mode 000 (as nobody)" "needs root, setpriv and a binary nobody can run"
fi

# --- garbage in every environment variable preflight reads --------------------------------------
for kind in random huge negative utf8 empty; do
  row "environment: $kind values" launch.env 'FAIL|UNKNOWN|WARN' '1|3|4' 12 -- "$py" "$faults_dir/garbage_env.py" "$kind" \
    "$PREFLIGHT" --format json --timeout 10
done
row "environment: random values, text report" - - '1|3|4' 12 -- "$py" "$faults_dir/garbage_env.py" random \
  "$PREFLIGHT" --timeout 10 -v

# --- malformed configuration, matrix and merge input: exit 2, nothing checked --------------------
printf 'timeout = 30\n\377\376 this line is not an option\n' >"$work/bad.ini"
row "malformed config file" - - 2 5 -- "$PREFLIGHT" --config "$work/bad.ini"
head -c 3000 /dev/urandom >"$work/binary.ini"
row "binary config file" - - 2 5 -- "$PREFLIGHT" --config "$work/binary.ini"
printf 'timeout = -7\n' >"$work/negative.ini"
row "config file with a negative timeout" - - 2 5 -- "$PREFLIGHT" --config "$work/negative.ini"
mkdir -p "$work/matrix-bad"
sed 's/^12\.4\.0\tGA\t550\.54\.14\t/12.4.0\tGA\t550.54.1x\t/' "$PREFLIGHT_SOURCE_DIR/matrix/cuda_toolkit_driver.tsv" \
  >"$work/matrix-bad/cuda_toolkit_driver.tsv"
row "malformed matrix file" - - 2 5 -- "$PREFLIGHT" --matrix "$work/matrix-bad"
mkdir -p "$work/matrix-binary"
head -c 5000 /dev/urandom >"$work/matrix-binary/nccl_known_issues.tsv"
row "binary matrix file" - - 2 5 -- "$PREFLIGHT" --matrix "$work/matrix-binary"
"$PREFLIGHT" --format json --json-per-rank "$work/good" --only 'host.*' >/dev/null 2>&1 || true
good=$(ls "$work"/good/*.json 2>/dev/null | head -1)
if [ -n "$good" ]; then
  head -c 2000 "$good" >"$work/merge-truncated.json"
  row "merge: truncated result file" - - 2 5 -- "$PREFLIGHT" merge "$good" "$work/merge-truncated.json"
  head -c 4000 /dev/urandom >"$work/merge-binary.json"
  row "merge: binary garbage" - - 2 5 -- "$PREFLIGHT" merge "$good" "$work/merge-binary.json"
  "$py" -c "
import json,sys; d=json.load(open('$good')); d['checks']=[{'id': 7, 'status': None}]; d['ranks']='x'
json.dump(d, open('$work/merge-wrong-types.json','w'))"
  row "merge: fields of the wrong type" - - 2 5 -- "$PREFLIGHT" merge "$good" "$work/merge-wrong-types.json"
else
  fail "no per-rank result file to merge"
fi

# --- the table ---------------------------------------------------------------------------------
echo
echo "| row | want (check status exit) | got (status exit) | seconds | bound | ok |"
echo "|---|---|---|---|---|---|"
while IFS=$'\t' read -r name want got secs bound ok; do
  echo "| $name | ${want//|/\\|} | ${got//|/\\|} | $secs | $bound | $ok |"  # a | in a cell is escaped
done <"$table"
echo
finish
