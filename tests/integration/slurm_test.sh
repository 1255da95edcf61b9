#!/usr/bin/env bash
# preflight under a real Slurm: a private single-node cluster (munged, slurmctld, slurmd; every file
# in a temporary directory, free ports, no cgroups; tests/slurm/cluster.sh) runs
#   1. a tiny MPI program under `srun --mpi=pmix -n 2`: proves the cluster and the PMIx wiring
#      (each rank must see a world of 2), independently of preflight;
#   2. `srun --mpi=pmix -n 2 preflight --format json`: one report for the job, a world of 2 launched
#      by Slurm/PMIx, launch.env PASS on every rank, no FAIL among the checks that do not need a GPU;
#   3. preflight run directly in the batch script of `sbatch -n 2` (no srun step): a world of one
#      (this node), launch.env WARN launch.env/outside-slurm-step naming SLURM_NTASKS=2, exit 0 — not
#      a job of 2 whose ranks could not be gathered.
# Skipped (77) when Slurm, munge or the PMIx plugin is missing or the daemons cannot start here.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
source "$here/../slurm/cluster.sh"
trap 'slurm_cluster_stop; rm -rf "$work"' EXIT

for tool in munged munge unmunge slurmctld slurmd srun sinfo; do
  command -v "$tool" >/dev/null 2>&1 || skip_all "$tool is not installed (apt-get install slurm-wlm munge)"
done

# A job started here must see this cluster only, not a launcher the test itself runs under.
while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(\(SLURM\|OMPI\|PMIX\|PMI\|MPI_LOCAL\)[A-Za-z0-9_]*\)=.*/\1/p')
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
# Open MPI refuses root without these; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cluster_err=$work/cluster.err
slurm_cluster_start "$work/slurm" 2>"$cluster_err" || skip_all "the private Slurm cluster did not start: $(head -c 600 "$cluster_err" | tr '\n' ' ')"
timeout 10 srun --mpi=list 2>&1 | grep -q pmix || skip_all "Slurm has no PMIx plugin (srun --mpi=list: no pmix; apt-get install slurm-wlm-basic-plugins)"
pass "private Slurm cluster up: node $slurm_node idle (SLURM_CONF=$SLURM_CONF)"

# 1. The harness itself: a plain MPI program, two ranks through Slurm's PMIx server.
if command -v mpicc >/dev/null 2>&1 && mpicc -O2 -o "$work/mpi_hello" "$here/../slurm/mpi_hello.c" 2>"$work/cc.err"; then
  expect_rc 0 "srun --mpi=pmix -n 2 mpi_hello" -- timeout 60 srun --mpi=pmix -n 2 --time=1 "$work/mpi_hello"
  for r in 0 1; do
    if grep -qx "rank $r size 2 sum 1" "$work/out"; then pass "mpi_hello rank $r sees a world of 2"; else
      fail "mpi_hello rank $r did not report a world of 2"; sed 's/^/  | /' "$work/out" "$work/err" | head -20 >&2
    fi
  done
else
  echo "note: mpicc missing or failed ($(head -c 200 "$work/cc.err" 2>/dev/null)): harness check by MPI program skipped"
fi

# 2. preflight under srun. Only checks that mean something on a CPU-only container: the launcher,
# the rank layout, the collectives over MPI, cross-rank consistency, /dev/shm, host memory, the
# NCCL variables and socket selection, reachability of rank 0.
only='launch.env,launch.ranks,comm.*,cluster.*,shm.*,host.memory,env.nccl,net.socket_ifname,net.reachability'
rc=0
timeout 120 srun --mpi=pmix -n 2 --time=2 "$PREFLIGHT" --format json --timeout 30 --only "$only" \
  --expect-world-size 2 --expect-nodes 1 >"$work/out" 2>"$work/err" || rc=$?

verdict=$("${PYTHON3:-python3}" - "$work/out" "$rc" 2>&1 <<'PY'
import json, sys
text = open(sys.argv[1]).read()
rc = int(sys.argv[2])
dec = json.JSONDecoder()
docs, i = [], 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    try:
        d, i = dec.raw_decode(text, i)
    except ValueError as e:
        print(f"FAIL stdout is not JSON at offset {i}: {e}")
        sys.exit(0)
    docs.append(d)
if not docs:
    print("FAIL no JSON report on stdout")
    sys.exit(0)
print(("ok" if len(docs) == 1 else "FAIL") + f" one report for the job (got {len(docs)})")
for n, d in enumerate(docs):
    tag = f"report {n}:" if len(docs) > 1 else "report:"
    w = d.get("world", {})
    print(("ok" if w.get("size") == 2 else "FAIL") + f" {tag} world.size = {w.get('size')} (want 2)")
    print(("ok" if w.get("launcher") in ("slurm", "pmix") else "FAIL") + f" {tag} world.launcher = {w.get('launcher')} (want slurm or pmix)")
    checks = d.get("checks", [])
    env = [c for c in checks if c["id"] == "launch.env"]
    if not env:
        print(f"FAIL {tag} no launch.env verdict")
    for c in env:
        print(("ok" if c["status"] == "PASS" else "FAIL") + f" {tag} launch.env {c['status']} ranks={c.get('ranks')}: {c['summary']}")
        active = [l.get("launcher") for l in c.get("evidence", {}).get("launchers", []) if l.get("role") == "active"]
        print(("ok" if any(a in ("slurm", "pmix") for a in active) else "FAIL") + f" {tag} launch.env active launcher(s) {active} include slurm or pmix")
    # Not-yet-implemented checks read UNKNOWN (exit 3); anything else must not be FAIL or UNKNOWN.
    pending = [c for c in checks if c["status"] == "UNKNOWN" and c["summary"] == "not implemented"]
    bad = [c for c in checks if c["status"] in ("FAIL", "UNKNOWN") and c not in pending]
    for c in bad:
        print(f"FAIL {tag} {c['id']} {c['status']}: {c['summary']}")
    if not bad:
        print(f"ok {tag} no FAIL or UNKNOWN among {len(checks)} checks" + (f" ({len(pending)} not implemented yet)" if pending else ""))
    want = {3} if pending else {0}
    print(("ok" if rc in want else "FAIL") + f" {tag} exit code {rc} (want {' or '.join(map(str, sorted(want)))})")
PY
) || fail "the report could not be analysed: $verdict"
[ -n "$verdict" ] || fail "the report analysis printed nothing"
while IFS= read -r line; do
  case "$line" in
    ok\ *) pass "preflight under srun: ${line#ok }" ;;
    FAIL\ *) fail "preflight under srun: ${line#FAIL }" ;;
  esac
done <<<"$verdict"
if [ "$failures" -gt 0 ]; then
  echo "--- srun stdout (head) / stderr:" >&2
  head -c 2000 "$work/out" | sed 's/^/  | /' >&2
  head -n 30 "$work/err" | sed 's/^/  | /' >&2
fi

# 3. preflight directly in a batch script: Slurm sets SLURM_PROCID=0 and SLURM_NTASKS=2 there, but
# no step started the process.
mkdir -p "$work/batch"
printf '#!/bin/bash\n"$1" --format json --timeout 30 --only launch.env,launch.ranks,comm.barrier >"$2/out" 2>"$2/err"\necho $? >"$2/rc"\n' \
  >"$work/batch/job.sh"
chmod +x "$work/batch/job.sh"
if timeout 90 sbatch --wait -n 2 --time=2 -o "$work/batch/job.out" "$work/batch/job.sh" "$PREFLIGHT" "$work/batch" \
  >"$work/batch/sbatch.out" 2>&1; then
  batch=$("${PYTHON3:-python3}" - "$work/batch/out" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
by = {c["id"]: c for c in d["checks"]}
env = by["launch.env"]
codes = [f["code"] for f in env.get("findings", [])]
print(d["world"]["size"], d["profile"], env["status"], "launch.env/outside-slurm-step" in codes,
      "SLURM_NTASKS=2" in env["summary"], by["launch.ranks"]["status"], by["comm.barrier"]["status"])
PY
)
  expect_eq "$batch" "1 node WARN True True SKIP SKIP" \
    "preflight in a batch script: a world of one, launch.env WARN outside-slurm-step, launch.ranks and comm.barrier SKIP"
  expect_eq "$(cat "$work/batch/rc" 2>/dev/null)" 0 "preflight in a batch script: exit code"
else
  fail "sbatch --wait of a batch script running preflight: $(head -c 400 "$work/batch/sbatch.out")"
fi

finish
