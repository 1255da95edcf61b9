#!/usr/bin/env bash
# Every command a check's remedy names (the `mpirun …`, `srun …`, `numactl …`, `taskset …`,
# `sysctl …` and `ip …` in checks/*.cpp) runs on the versions installed here: each in its harmless
# form (`true` as the program, a read-only variant, a private network namespace, the tool's own
# help for options that need hardware this machine lacks). A remedy command of a kind this test
# does not know fails the test: a new one is added here with its harmless run.
# srun runs against a private single-node Slurm cluster (tests/slurm/cluster.sh) when one starts.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
source "$here/../slurm/cluster.sh"
trap 'slurm_cluster_stop; rm -rf "$work"' EXIT
py=${PYTHON3:-python3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The kinds of command the remedies name: "tool first-option" (cut at '=' or ':'), from the sources.
"$py" - "$PREFLIGHT_SOURCE_DIR"/checks/*.cpp >"$work/kinds" <<'PY'
import re, sys
kinds = set()
for path in sys.argv[1:]:
    text = open(path, encoding="utf-8").read()
    for m in re.finditer(r"`((?:mpirun|mpiexec|srun|numactl|taskset|sysctl|ip) [^`]*)`", text):
        words = m.group(1).split()
        kinds.add(words[0] + " " + re.split(r"[=:\"]", words[1])[0])
print("\n".join(sorted(kinds)))
PY
[ -s "$work/kinds" ] || fail "no remedy commands found in checks/*.cpp"

have() { command -v "$1" >/dev/null 2>&1; }
run_ok() {  # DESCRIPTION COMMAND...: the command exits 0
  local what=$1
  shift
  if timeout 30 "$@" >"$work/cmd.out" 2>&1; then pass "$what: $*"; else
    fail "$what: \`$*\` failed"; sed 's/^/  | /' "$work/cmd.out" | head -10 >&2
  fi
}
slurm_up=
slurm() {  # starts the private cluster once; false where it cannot start here
  if [ -z "$slurm_up" ]; then
    slurm_up=no
    if have slurmctld && have slurmd && have munged; then
      while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(SLURM[A-Za-z0-9_]*\)=.*/\1/p')
      slurm_cluster_start "$work/slurm" 2>"$work/cluster.err" && slurm_up=yes
    fi
    [ "$slurm_up" = yes ] || echo "note: no private Slurm cluster here: srun commands not run ($(head -c 200 "$work/cluster.err" 2>/dev/null))"
  fi
  [ "$slurm_up" = yes ]
}
mpi=(mpiexec --oversubscribe)

while IFS= read -r -u 3 kind; do
  tool=${kind%% *}
  if ! have "$tool"; then
    echo "note: $tool is not installed here: '$kind' not run"
    continue
  fi
  case $kind in
    "mpirun --map-by")  # gpu.count, host.memory: ppr:N:node; topo.numa_affinity: ppr:N:socket|package --bind-to
      run_ok "$kind" "${mpi[@]}" --map-by ppr:2:node -np 2 true
      major=$(mpirun --version 2>/dev/null | sed -n 's/.*(Open MPI) \([0-9]*\)\..*/\1/p' | head -1)
      obj=socket
      [ "${major:-4}" -ge 5 ] && obj=package
      run_ok "$kind (Open MPI ${major:-?})" "${mpi[@]}" --map-by "ppr:1:$obj" --bind-to "$obj" -np 1 true ;;
    "mpirun -x")  # launch.env: where a shared RANK comes from
      run_ok "$kind" "${mpi[@]}" -x RANK=0 -np 1 true ;;
    "mpirun -np")  # comm.allreduce: nccl-tests under mpirun (all_reduce_perf is not installed here)
      run_ok "$kind" "${mpi[@]}" -np 2 true ;;
    "srun --ntasks-per-node")
      slurm && run_ok "$kind" srun -N 1 --ntasks-per-node=1 true ;;
    "srun --mpi")
      if slurm; then
        run_ok "srun --mpi=list" srun --mpi=list
        if srun --mpi=list 2>&1 | grep -q pmix; then run_ok "srun --mpi=pmix" srun --mpi=pmix -n 1 true; else
          echo "note: this Slurm has no PMIx plugin: srun --mpi=pmix not run"
        fi
      fi ;;
    "srun --ntasks")  # launch.ranks
      slurm && run_ok "$kind" srun --ntasks=1 true ;;
    "srun --propagate")  # launch.env: the open-files limit passed to the tasks
      slurm && run_ok "$kind=NOFILE" srun -n 1 --propagate=NOFILE true ;;
    "srun --nodes")  # launch.ranks
      slurm && run_ok "$kind" srun --nodes=1 true ;;
    "srun --cpu-bind")  # topo.numa_affinity; accepted (a warning where the cluster has no binding plugin)
      if slurm; then
        run_ok "$kind=ldoms" srun -n 1 --cpu-bind=ldoms true
        run_ok "$kind=map_ldom" srun -n 1 --cpu-bind=map_ldom:0 true
        srun --help 2>&1 | grep -q -- "--gpu-bind" && pass "srun knows --gpu-bind" || fail "srun --help has no --gpu-bind"
      fi ;;
    "srun --gpus-per-task")  # launch.gpu_binding: needs GPUs; the option exists in this version
      if slurm; then
        srun --help 2>&1 | grep -q -- "--gpus-per-task" && pass "srun knows --gpus-per-task" || fail "srun --help has no --gpus-per-task"
      fi ;;
    "numactl --cpunodebind")
      run_ok "$kind" numactl --cpunodebind=0 --membind=0 true ;;
    "taskset -c")
      run_ok "$kind" taskset -c "$(cut -d, -f1 /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null | cut -d- -f1 | grep . || echo 0)" true ;;
    "srun --export")  # launch.env: where a shared RANK comes from
      slurm && run_ok "$kind" srun -n 1 --export=ALL true ;;
    "sysctl kernel.dmesg_restrict")  # gpu.xid: who may read the kernel log; read, not written
      run_ok "$kind (read-only)" sysctl kernel.dmesg_restrict ;;
    "sysctl -w")  # net.ipv4.ip_local_reserved_ports: read, not written
      run_ok "$kind (read-only)" sysctl net.ipv4.ip_local_reserved_ports ;;
    "ip route")  # net.reachability: ip route get ADDR, read-only
      run_ok "$kind" ip route get 127.0.0.1 ;;
    "ip -br")
      run_ok "$kind" ip -br addr ;;
    "ip link")  # ip link set IF up, in a network namespace of its own
      if unshare -n true 2>/dev/null; then run_ok "$kind (private netns)" unshare -n ip link set lo up; else
        ip link help 2>&1 | grep -q "ip link set" && pass "ip link help knows 'ip link set'" || fail "ip link has no 'set'"
      fi ;;
    *)
      fail "remedy command '$kind' has no harmless run in this test: add one" ;;
  esac
done 3<"$work/kinds"
finish
