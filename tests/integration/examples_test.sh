#!/usr/bin/env bash
# The integrations in examples/, each run for real where this machine allows:
#   slurm/healthcheck.sh        healthy -> exit 0 and "preflight: ok ..."; a FAIL -> exit 1 and one
#                               "preflight: FAIL <id>: <summary>" line; a usage error -> exit 2 with
#                               the reason; preflight gets --profile node and --timeout 45 (< 60 s);
#                               PREFLIGHT_JSON keeps the report
#   docker/Dockerfile           the gate stage's `RUN preflight ...` line with its ARG defaults, run
#                               outside Docker: exit 0, the GPU checks SKIP in the image profile; the
#                               stages chain so that every shipped target contains the gate (the real
#                               image builds are tests/containers)
#   kubernetes/preflight-init.yaml  parsed with python3-yaml: the init container runs preflight with
#                               --json into a volume the trainer mounts, /dev/shm is a memory-backed
#                               emptyDir in both containers, equal GPU limits; its command runs here
#   mpirun.sh                   under Open MPI with 2 ranks: the training command runs on both ranks
#                               after a passing preflight, and not at all after a FAIL
#   srun.sbatch                 submitted with `sbatch --wait` to the private single-node Slurm of
#                               tests/slurm/cluster.sh (2 tasks, PMIx): the training step runs after
#                               preflight passes with the allocation's expectations; without Slurm,
#                               with a stub srun on PATH instead
#   the launcher's bound        mpirun.sh (real mpirun) and srun.sbatch (stub srun), each with a
#                               launcher that hangs after preflight has reported and ignores
#                               SIGTERM (a host whose daemon it cannot reach): the example returns
#                               within preflight's --timeout T + 30 s + 10 s of timeout -k, exit 137,
#                               the report already written, the training not started
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
source "$here/../slurm/cluster.sh"
trap 'slurm_cluster_stop; rm -rf "$work"' EXIT
examples=$PREFLIGHT_SOURCE_DIR/examples
py=${PYTHON3:-python3}

# Whatever launcher this test itself runs under must not leak into the examples' jobs.
while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\|PMI\|MPI_LOCAL\)[A-Za-z0-9_]*\)=.*/\1/p')
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

for f in slurm/healthcheck.sh mpirun.sh srun.sbatch; do
  if bash -n "$examples/$f" 2>"$work/err"; then pass "bash -n examples/$f"; else fail "examples/$f: $(cat "$work/err")"; fi
  [ -x "$examples/$f" ] || fail "examples/$f is not executable"
done

# ---- the launcher's bound ----------------------------------------------------------------------
# A launcher that runs the real command, then hangs ignoring SIGTERM, as mpirun does when it waits
# for the daemon of a host whose network dropped. Both examples run at once (about 45 s each),
# beside the rest of this test, and are judged at its end: T 5, so timeout(1)'s SIGTERM comes at
# 35 s and its SIGKILL at 45 s.
hang_launcher() {  # NAME REAL: writes $work/hang-NAME/NAME
  mkdir -p "$work/hang-$1"
  cat >"$work/hang-$1/$1" <<EOF
#!/usr/bin/env bash
# A launcher that hangs after its job ended: runs $2, records when it returned, then waits on.
rc=0
"$2" "\$@" || rc=\$?
date +%s.%N >"\$HANG_RETURNED"
trap '' TERM INT HUP
for ((i = 0; i < 300; i++)); do sleep 1; done
exit \$rc
EOF
  chmod +x "$work/hang-$1/$1"
}
# --timeout 10: two ranks of the sanitized build start, probe and report within it on a busy machine
# (at 5 s the probe phase, 2.5 s, ran out under ASan beside another test suite).
t_hang=10
bound_hang=$((t_hang + 30 + 10))
hang_pids=()
if command -v mpirun >/dev/null 2>&1; then
  hang_launcher mpirun "$(command -v mpirun)"
  mkdir -p "$work/hang-mpi"
  (
    t0=$(date +%s.%N)
    rc=0
    PATH=$work/hang-mpirun:$PATH HANG_RETURNED=$work/hang-mpi/returned NP=2 MPIRUN_ARGS="--oversubscribe" \
      PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--only launch.env,launch.ranks,comm.*,host.memory --timeout $t_hang" \
      PREFLIGHT_JSON=$work/hang-mpi/report.json timeout 120 "$examples/mpirun.sh" \
      bash -c "echo trained > $work/hang-mpi/trained" >"$work/hang-mpi/out" 2>"$work/hang-mpi/err" || rc=$?
    echo "$rc $t0 $(date +%s.%N)" >"$work/hang-mpi/result"
  ) &
  hang_pids+=($!)
fi
mkdir -p "$work/hang-srun/stub" "$work/hang-srunjob"
printf '#!/usr/bin/env bash\nwhile [[ ${1:-} == -* ]]; do shift; done\nSLURM_PROCID=0 SLURM_STEP_ID=0 exec "$@"\n' >"$work/hang-srun/stub/srun"
chmod +x "$work/hang-srun/stub/srun"
hang_launcher srun "$work/hang-srun/stub/srun"
(
  t0=$(date +%s.%N)
  rc=0
  (
    unset SLURM_JOB_ID SLURM_NTASKS SLURM_JOB_NUM_NODES
    cd "$work/hang-srunjob" && PATH=$work/hang-srun:$PATH HANG_RETURNED=$work/hang-srunjob/returned \
      PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--only launch.env,host.memory --mpi off --timeout $t_hang" \
      PREFLIGHT_JSON=$work/hang-srunjob/report.json timeout 120 "$examples/srun.sbatch" \
      bash -c "echo trained > $work/hang-srunjob/trained"
  ) >"$work/hang-srunjob/out" 2>"$work/hang-srunjob/err" || rc=$?
  echo "$rc $t0 $(date +%s.%N)" >"$work/hang-srunjob/result"
) &
hang_pids+=($!)

# ---- slurm/healthcheck.sh ----------------------------------------------------------------------
hc=$examples/slurm/healthcheck.sh
PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--only host.*,env.nccl" PREFLIGHT_JSON=$work/hc.json \
  expect_rc 0 "healthcheck.sh on healthy checks" -- "$hc"
expect_eq "$(wc -l <"$work/out")" 1 "healthcheck.sh lines of output (healthy)"
expect_contains "$(cat "$work/out")" "preflight: ok (" "healthcheck.sh healthy line"
if "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['schema']=='preflight/v1'" "$work/hc.json" 2>/dev/null; then
  pass "healthcheck.sh kept the JSON report at PREFLIGHT_JSON"; else fail "healthcheck.sh: no JSON report at PREFLIGHT_JSON"; fi

PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--only driver.loaded,host.*" expect_rc 1 "healthcheck.sh with a FAIL (no driver here)" -- "$hc"
expect_eq "$(wc -l <"$work/out")" 1 "healthcheck.sh lines of output (FAIL)"
line=$(cat "$work/out")
case $line in "preflight: FAIL driver.loaded: "?*) pass "healthcheck.sh reason: $line" ;; *) fail "healthcheck.sh reason line: '$line'" ;; esac

PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--zero-stage 9" expect_rc 2 "healthcheck.sh with a usage error" -- "$hc"
expect_contains "$(cat "$work/out")" "preflight: exit 2: " "healthcheck.sh usage line"
expect_contains "$(cat "$work/out")" "zero-stage" "healthcheck.sh usage line"

# The arguments it gives preflight, seen by a stand-in.
cat >"$work/stub-preflight" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$@" >"$STUB_ARGS"
echo '{"schema":"preflight/v1","summary":{"counts":{"PASS":1}},"checks":[{"id":"x.y","status":"PASS","summary":"fine"}]}'
EOF
chmod +x "$work/stub-preflight"
STUB_ARGS=$work/stub-args PREFLIGHT=$work/stub-preflight PREFLIGHT_SKIP=comm.allreduce,topo.p2p \
  expect_rc 0 "healthcheck.sh with a stand-in preflight" -- "$hc"
args=$(tr '\n' ' ' <"$work/stub-args")
expect_contains "$args" "--profile node" "healthcheck.sh's preflight arguments"
expect_contains "$args" "--timeout 45 " "healthcheck.sh's preflight arguments"
expect_contains "$args" "--skip comm.allreduce,topo.p2p" "healthcheck.sh's preflight arguments"
grep -q 'scontrol update nodename=.*state=drain reason=' "$hc" && pass "healthcheck.sh shows how to drain" ||
  fail "healthcheck.sh has no drain example"
grep -Eq '^#[[:space:]]+(HealthCheckProgram|Prolog)=' "$hc" && pass "healthcheck.sh shows the slurm.conf lines" ||
  fail "healthcheck.sh has no slurm.conf example"

# ---- docker/Dockerfile -------------------------------------------------------------------------
dockerfile=$examples/docker/Dockerfile
run_line=$(grep -m1 -E '^RUN preflight ' "$dockerfile")
expect_eq "$run_line" 'RUN preflight --profile image --target-driver "$TARGET_DRIVER" --target-gpu "$TARGET_GPU" --json /etc/preflight-image.json' \
  "the Dockerfile's gate line"
TARGET_DRIVER=$(sed -n 's/^ARG TARGET_DRIVER=//p' "$dockerfile")
TARGET_GPU=$(sed -n 's/^ARG TARGET_GPU=//p' "$dockerfile")
expect_eq "$TARGET_DRIVER $TARGET_GPU" "535.104.05 9.0" "the gate's ARG defaults"
argv=("$PREFLIGHT" --profile image --target-driver "$TARGET_DRIVER" --target-gpu "$TARGET_GPU")
# What the gate finds depends on the CUDA runtimes and NCCL installed here (this "image"): exit 0
# when none is too new for driver 535.104.05, else 1 with only the image checks failing, each naming
# the target. Never a usage error, an UNKNOWN or a crash.
rc=0
"${argv[@]}" >"$work/gate.txt" 2>"$work/err" || rc=$?
case $rc in 0 | 1) pass "the gate command outside Docker (exit $rc)" ;;
  *) fail "the gate command outside Docker: exit $rc"; sed 's/^/  | /' "$work/gate.txt" "$work/err" | head -30 >&2 ;; esac
"${argv[@]}" --format json >"$work/out" 2>"$work/err"
expect_eq "$(json_get "d['summary']['exit_code']")" "$rc" "the gate's JSON summary.exit_code"
expect_eq "$(json_get "d['profile']")" image "profile"
for id in driver.loaded cuda.smoke gpu.count gpu.busy topo.p2p comm.allreduce; do
  expect_eq "$(check_status "$id")" SKIP "$id in the image profile"
done
expect_eq "$(json_get "[c['id'] for c in d['checks'] if c['status'] in ('FAIL','UNKNOWN') and c['id'] not in ('cuda.runtime','cuda.arch','nccl.library')]")" \
  "[]" "FAIL/UNKNOWN outside the image checks"
expect_eq "$(json_get "[c['id'] for c in d['checks'] if c['status']=='FAIL' and '535.104.05' not in c['summary'] and '9.0' not in c['summary']]")" \
  "[]" "image FAILs that do not name the target driver or GPU"
if [ "$rc" -eq 1 ]; then
  echo "note: the gate FAILs here: $(json_get "'; '.join(c['id'] + ': ' + c['summary'][:160] for c in d['checks'] if c['status']=='FAIL')")"
fi
stages=$("$py" - "$dockerfile" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
stages, copies_from = [], {}
for l in lines:
    m = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?\s*$", l, re.I)
    if m:
        stages.append((m.group(1), m.group(2)))
        continue
    m = re.match(r"COPY\s+--from=(\S+)", l)
    if m and stages:
        copies_from.setdefault(len(stages) - 1, []).append(m.group(1))
names = [s[1] for s in stages]
final_from = stages[-1][0]
gate_from = stages[names.index("gate")][0] if "gate" in names else None
lean = names.index("train-lean") if "train-lean" in names else None
print(f"{len(stages)} stages {names}; final FROM {final_from}; gate FROM {gate_from}; "
      f"train-lean FROM {stages[lean][0] if lean is not None else None} copies from {copies_from.get(lean)}")
PY
)
expect_contains "$stages" "'gate'" "Dockerfile stages"
expect_contains "$stages" "gate FROM train;" "the gate stage (the training image itself)"
expect_contains "$stages" "final FROM gate;" "the default target (the gated image)"
expect_contains "$stages" "train-lean FROM train copies from ['gate']" "the train-lean target (so BuildKit builds the gate)"

# ---- kubernetes/preflight-init.yaml ------------------------------------------------------------
k8s=$("$py" - "$examples/kubernetes/preflight-init.yaml" <<'PY' 2>&1
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
def out(ok, what): print(("ok " if ok else "FAIL ") + what)
pod = None
for d in docs:
    if d.get("kind") == "Pod": pod = d["spec"]
    elif d.get("kind") in ("Job", "Deployment", "StatefulSet"): pod = d["spec"]["template"]["spec"]
out(pod is not None, "a Pod or Job")
if pod is None: sys.exit(0)
init = pod.get("initContainers") or []
pf = [c for c in init if "preflight" in " ".join(c.get("command", []) + c.get("args", []))]
out(len(pf) == 1, "one init container runs preflight")
main = pod.get("containers") or []
out(len(main) >= 1, "an app container")
if not pf or not main: sys.exit(0)
pf, trainer = pf[0], main[0]
cmd = pf.get("command", []) + pf.get("args", [])
out(cmd[0] == "preflight", f"init command starts with preflight: {cmd[:3]}")
vols = {v["name"]: v for v in pod.get("volumes", [])}
def mounts(c): return {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
for c in (pf, trainer):
    shm = mounts(c).get("/dev/shm")
    ed = vols.get(shm, {}).get("emptyDir") if shm else None
    out(ed is not None and ed.get("medium") == "Memory" and bool(ed.get("sizeLimit")),
        f"{c['name']}: /dev/shm is an emptyDir with medium Memory and a sizeLimit ({ed})")
json_path = cmd[cmd.index("--json") + 1] if "--json" in cmd else None
out(json_path is not None, f"--json {json_path}")
if json_path:
    pm, tm = mounts(pf), mounts(trainer)
    shared = [p for p in pm if json_path.startswith(p.rstrip("/") + "/") and p != "/dev/shm"]
    out(bool(shared) and pm[shared[0]] in tm.values() and pm[shared[0]] in vols,
        f"the report's volume is mounted by the trainer too ({shared})")
def gpus(c): return str(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", ""))
out(gpus(pf) != "" and gpus(pf) == gpus(trainer), f"nvidia.com/gpu limits: init {gpus(pf)}, trainer {gpus(trainer)}")
out(pod.get("restartPolicy") in ("Never", "OnFailure"), f"restartPolicy {pod.get('restartPolicy')}")
print("CMD " + "\x1f".join(cmd))
PY
)
while IFS= read -r l; do
  case $l in ok\ *) pass "kubernetes: ${l#ok }" ;; FAIL\ *) fail "kubernetes: ${l#FAIL }" ;;
    CMD\ *) ;; *) fail "kubernetes: $l" ;; esac
done <<<"$k8s"
# Its init command, run here (the JSON path moved into the scratch directory): a valid command line
# (no usage error) that writes the report. No GPU here, so the node profile FAILs.
cmd_line=$(sed -n 's/^CMD //p' <<<"$k8s")
if [ -n "$cmd_line" ]; then
  IFS=$'\x1f' read -r -a argv <<<"$cmd_line"
  argv[0]=$PREFLIGHT
  for i in "${!argv[@]}"; do [ "${argv[$i]}" = --json ] && argv[i + 1]=$work/k8s/${argv[i + 1]##*/}; done
  mkdir -p "$work/k8s"
  rc=0
  "${argv[@]}" >"$work/out" 2>"$work/err" || rc=$?
  case $rc in 0 | 1 | 3) pass "the init container's command runs here (exit $rc)" ;;
    *) fail "the init container's command: exit $rc"; sed 's/^/  | /' "$work/err" | head >&2 ;; esac
  "$py" -c "import json,sys; assert json.load(open(sys.argv[1]))['schema']=='preflight/v1'" "$work/k8s/report.json" 2>/dev/null &&
    pass "the init container's --json report is written" || fail "the init container wrote no JSON report"
fi

# ---- mpirun.sh ---------------------------------------------------------------------------------
only='launch.env,launch.ranks,comm.*,cluster.*,shm.*,host.memory,env.nccl,net.socket_ifname,net.reachability'
if command -v mpirun >/dev/null 2>&1; then
  mkdir -p "$work/mpi"
  train="echo trained > $work/mpi/trained.\$OMPI_COMM_WORLD_RANK"
  NP=2 MPIRUN_ARGS="--oversubscribe" PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--only $only --timeout 30" \
    PREFLIGHT_JSON=$work/mpi/report.json expect_rc 0 "mpirun.sh with 2 ranks, preflight passing" -- \
    timeout 120 "$examples/mpirun.sh" bash -c "$train"
  for r in 0 1; do [ -f "$work/mpi/trained.$r" ] && pass "training ran on rank $r" || fail "training did not run on rank $r"; done
  size=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['world']['size'])" "$work/mpi/report.json" 2>&1)
  expect_eq "$size" 2 "mpirun.sh report world.size"
  rm -f "$work/mpi"/trained.*
  NP=2 MPIRUN_ARGS="--oversubscribe" PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--only launch.ranks --expect-nodes 2 --timeout 30" \
    PREFLIGHT_JSON=$work/mpi/report2.json expect_rc 1 "mpirun.sh with preflight failing (--expect-nodes 2 on one node)" -- \
    timeout 120 "$examples/mpirun.sh" bash -c "$train"
  if compgen -G "$work/mpi/trained.*" >/dev/null; then fail "training ran after a FAIL"; else pass "no training after a FAIL"; fi
  expect_contains "$(cat "$work/err")" "not starting the training" "mpirun.sh stderr"
else
  echo "note: mpirun is not installed; mpirun.sh only checked with bash -n"
fi

# ---- srun.sbatch -------------------------------------------------------------------------------
mkdir -p "$work/srun"
train_srun="echo trained > $work/srun/trained.\$SLURM_PROCID"
slurm_ok=1
for tool in munged munge unmunge slurmctld slurmd srun sbatch sinfo; do command -v "$tool" >/dev/null 2>&1 || slurm_ok=0; done
if ((slurm_ok)) && slurm_cluster_start "$work/slurm" 2>"$work/cluster.err" &&
  timeout 10 srun --mpi=list 2>&1 | grep -q pmix; then
  # The script's own #SBATCH lines ask for 2 nodes of 8 GPUs; the command line shrinks that to
  # this one node with 2 tasks and no GPUs.
  (cd "$work/srun" && SRUN_ARGS="--mpi=pmix" PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--only $only --timeout 30" \
    PREFLIGHT_JSON=$work/srun/report.json timeout 120 sbatch --wait --nodes=1 --ntasks-per-node=2 --gpus-per-node=0 \
    --time=2 -o "$work/srun/job.out" "$examples/srun.sbatch" bash -c "$train_srun") >"$work/out" 2>"$work/err"
  rc=$?
  if [ "$rc" -eq 0 ]; then pass "sbatch --wait examples/srun.sbatch on the private Slurm (exit 0)"; else
    fail "sbatch examples/srun.sbatch: exit $rc"; sed 's/^/  | /' "$work/err" "$work/srun/job.out" 2>/dev/null | head -40 >&2; fi
  for r in 0 1; do [ -f "$work/srun/trained.$r" ] && pass "srun training step ran task $r" || fail "srun training step did not run task $r"; done
  world=$("$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['world']['size'], [c['status'] for c in d['checks'] if c['id']=='launch.ranks'])" "$work/srun/report.json" 2>&1)
  expect_eq "$world" "2 ['PASS']" "srun.sbatch report: world.size and launch.ranks (expectations from the allocation)"
else
  # No Slurm here: srun stands in, running the command once as task 0.
  echo "note: no private Slurm cluster ($(head -c 300 "$work/cluster.err" 2>/dev/null | tr '\n' ' ')); srun.sbatch runs with a stub srun"
  mkdir -p "$work/stub"
  printf '#!/usr/bin/env bash\nwhile [[ ${1:-} == -* ]]; do shift; done\nSLURM_PROCID=0 SLURM_STEP_ID=0 exec "$@"\n' >"$work/stub/srun"
  chmod +x "$work/stub/srun"
  (cd "$work/srun" && PATH=$work/stub:$PATH PREFLIGHT=$PREFLIGHT PREFLIGHT_ARGS="--only $only --mpi off" \
    PREFLIGHT_JSON=$work/srun/report.json "$examples/srun.sbatch" bash -c "$train_srun") >"$work/out" 2>"$work/err"
  rc=$?
  expect_eq "$rc" 0 "examples/srun.sbatch with a stub srun"
  [ -f "$work/srun/trained.0" ] && pass "the training step ran after preflight" || fail "the training step did not run"
fi


# ---- the launcher's bound: the results ---------------------------------------------------------
for p in "${hang_pids[@]}"; do wait "$p"; done
for d in hang-mpi:mpirun.sh hang-srunjob:srun.sbatch; do
  dir=$work/${d%%:*} name=${d#*:}
  [ -f "$dir/result" ] || continue
  read -r rc t0 t1 <"$dir/result"
  took=$("$py" -c "print(round($t1 - $t0, 1))")
  # The bound itself, and 5 s for starting and ending processes on a loaded 2-core machine.
  if "$py" -c "import sys; sys.exit(0 if $t_hang + 30 <= $took <= $bound_hang + 5 else 1)"; then
    pass "$name with a hanging launcher returned after $took s (--timeout $t_hang: bound $((t_hang + 30)) s + 10 s of -k)"
  else
    fail "$name with a hanging launcher returned after $took s, want $((t_hang + 30))..$bound_hang s"
  fi
  expect_eq "$rc" 137 "$name's exit with a launcher that ignores SIGTERM (timeout -k's SIGKILL)"
  if [ -f "$dir/returned" ]; then
    ret=$("$py" -c "print(round($(cat "$dir/returned") - $t0, 1))")
    if "$py" -c "import sys; sys.exit(0 if $ret <= $t_hang + 10 else 1)"; then
      pass "$name: preflight had reported $ret s after the start, before the bound"
    else fail "$name: preflight reported only $ret s after the start"; fi
  else
    fail "$name: the launcher's job never returned"
  fi
  verdict=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['exit_code'])" "$dir/report.json" 2>&1)
  expect_eq "$verdict" 0 "$name: the JSON report written before the launcher hung (summary.exit_code)"
  expect_contains "$(cat "$dir/out")" "PASS: " "$name: the text report printed before the launcher hung"
  err=$(tr '\n' ' ' <"$dir/err")
  expect_contains "$err" "did not return within $((t_hang + 30)) s" "$name's message"
  expect_contains "$err" "preflight's own verdict: exit 0" "$name's message"
  if [ -f "$dir/trained" ]; then fail "$name: the training started after the launcher was stopped"; else
    pass "$name: no training after the launcher was stopped"; fi
done

finish
