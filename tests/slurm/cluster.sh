# shellcheck shell=bash
# A private single-node Slurm cluster in a temporary directory (sourced by slurm_test.sh).
#
#   slurm_cluster_start DIR   munged + slurmctld + slurmd, every file below DIR; returns 0 when the
#                             node is idle in `sinfo`, else prints the reason to stderr and returns 1
#   slurm_cluster_stop        stops every daemon it started (by pid, bounded), leaves DIR alone
#
# After a successful start SLURM_CONF points at DIR/slurm.conf and srun/sinfo talk to this cluster
# only. Nothing outside DIR is written: the munge key, socket, pid, seed and log files, Slurm's state,
# spool, pid and log files all live there. Ports are picked free on loopback. No cgroups are used
# (proctrack/linuxproc, task/none), so it runs in a container.

slurm_cluster_pids=()
slurm_node=""  # the node name in slurm.conf (this host's short name), set by slurm_cluster_start

# slurm_free_ports N: N distinct TCP ports that are free on this machine now.
slurm_free_ports() {
  "${PYTHON3:-python3}" - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# slurm_wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds or time runs out.
slurm_wait_for() {
  local deadline=$((SECONDS + $1)) i=0
  shift
  while [ "$SECONDS" -lt "$deadline" ] && [ "$i" -lt 1000 ]; do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
    i=$((i + 1))
  done
  return 1
}

slurm_node_idle() {
  local state
  state=$(timeout 5 sinfo -h -n "$slurm_node" -o '%t' 2>/dev/null) || return 1
  case "$state" in idle*) return 0 ;; *) return 1 ;; esac
}

slurm_cluster_start() {
  local dir=$1 user cpus mem_mb ctld_port slurmd_port
  user=$(id -un)
  slurm_node=$(hostname -s)
  cpus=$(nproc)
  mem_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 / 2 }' /proc/meminfo)
  [ -n "$mem_mb" ] && [ "$mem_mb" -gt 0 ] || mem_mb=1024
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$dir/run" || return 1
  chmod 0700 "$dir/munge"

  # munge: a fresh key, its own socket; refuses to start as root without --force.
  head -c 1024 /dev/urandom >"$dir/munge/munge.key" && chmod 0400 "$dir/munge/munge.key" || return 1
  local munge_args=(--key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket"
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
    --num-threads=2)
  [ "$(id -u)" -eq 0 ] && munge_args+=(--force)
  # In the foreground under `timeout`, so that even a test killed outright leaves no daemon for long.
  timeout 600 munged --foreground "${munge_args[@]}" >"$dir/log/munged.out" 2>&1 &
  slurm_cluster_pids+=("$!")
  if ! slurm_wait_for 10 bash -c "munge -S '$dir/munge/munge.socket' -n | unmunge -S '$dir/munge/munge.socket'"; then
    echo "munged does not answer on $dir/munge/munge.socket: $(tail -n 3 "$dir/log/munged.out" "$dir/log/munged.log" 2>/dev/null | tr '\n' ' ')" >&2
    return 1
  fi

  read -r ctld_port slurmd_port <<<"$(slurm_free_ports 2)" || return 1
  local conf=$dir/slurm.conf
  cat >"$conf" <<EOF
ClusterName=preflighttest
SlurmctldHost=$slurm_node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=10
TmpFS=$dir/run
NodeName=$slurm_node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$slurm_node Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF
  # An empty cgroup.conf keeps slurmd from looking for the system's.
  : >"$dir/cgroup.conf"
  export SLURM_CONF=$conf

  timeout 600 slurmctld -D -f "$conf" -i >"$dir/log/slurmctld.out" 2>&1 &
  slurm_cluster_pids+=("$!")
  timeout 600 slurmd -D -f "$conf" >"$dir/log/slurmd.out" 2>&1 &
  slurm_cluster_pids+=("$!")

  if ! slurm_wait_for 40 slurm_node_idle; then
    echo "node $slurm_node never became idle in sinfo ($(timeout 5 sinfo -h -N -o '%N %t %E' 2>&1 | head -n 2 | tr '\n' ' '))" >&2
    tail -n 5 "$dir/log/slurmctld.out" "$dir/log/slurmctld.log" "$dir/log/slurmd.out" "$dir/log/slurmd.log" 2>/dev/null |
      sed 's/^/  | /' >&2
    return 1
  fi
  return 0
}

slurm_cluster_stop() {
  local pid i
  for pid in "${slurm_cluster_pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${slurm_cluster_pids[@]}"; do
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  slurm_cluster_pids=()
}
