# shellcheck shell=bash
# A private single-node Slurm cluster in a temporary directory (sourced by slurm_test.sh).
#
#   slurm_cluster_start DIR   munged + slurmctld + slurmd, every file below DIR; returns 0 when the
#                             node is idle in `sinfo`, else prints the reason to stderr and returns 1
#   slurm_cluster_stop        stops every daemon it started (by pid, bounded), leaves DIR alone
# Its pieces (munged, a slurm.conf of several nodes, the idle wait) also serve the Slurm cluster of
# emulated hosts (tests/cluster/lib.sh: cluster_slurm_up).
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

# slurm_munge_start DIR: munged with a fresh key and its own socket (DIR/munge/munge.socket).
slurm_munge_start() {
  local dir=$1
  mkdir -p "$dir/munge" "$dir/log" || return 1
  chmod 0700 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/munge.key" && chmod 0400 "$dir/munge/munge.key" || return 1
  local munge_args=(--key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket"
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
    --num-threads=2)
  # munged refuses to start as root without --force.
  [ "$(id -u)" -eq 0 ] && munge_args+=(--force)
  # In the foreground under `timeout`, so that even a test killed outright leaves no daemon for long.
  timeout "${CLUSTER_DAEMON_LIFETIME:-1800}" munged --foreground "${munge_args[@]}" >"$dir/log/munged.out" 2>&1 &
  slurm_cluster_pids+=("$!")
  if ! slurm_wait_for 10 bash -c "munge -S '$dir/munge/munge.socket' -n | unmunge -S '$dir/munge/munge.socket'"; then
    echo "munged does not answer on $dir/munge/munge.socket: $(tail -n 3 "$dir/log/munged.out" "$dir/log/munged.log" 2>/dev/null | tr '\n' ' ')" >&2
    return 1
  fi
}

# slurm_write_conf DIR CTLD_NAME CTLD_ADDR CTLD_PORT SLURMD_PORT LOCAL_DIR NODE:ADDR...: DIR/slurm.conf
# (and an empty cgroup.conf) for a cluster of the given nodes, one partition `debug` holding them
# all; slurmd's spool, pid and log files go to LOCAL_DIR (a directory of each host's own where
# several hosts share one file system). Exports SLURM_CONF.
slurm_write_conf() {
  local dir=$1 ctld_name=$2 ctld_addr=$3 ctld_port=$4 slurmd_port=$5 local_dir=$6 user cpus mem_mb node names=()
  shift 6
  user=$(id -un)
  cpus=$(nproc)
  # Half the machine's memory, shared by the nodes (each slurmd sees all of it).
  mem_mb=$(awk -v n="$#" '/^MemTotal:/ { printf "%d", $2 / 1024 / 2 / n }' /proc/meminfo)
  [ -n "$mem_mb" ] && [ "$mem_mb" -gt 0 ] || mem_mb=1024
  mkdir -p "$dir/state" "$dir/log" "$dir/run" "$local_dir" || return 1
  local conf=$dir/slurm.conf
  cat >"$conf" <<EOF
ClusterName=preflighttest
SlurmctldHost=$ctld_name($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$local_dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$local_dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$local_dir/slurmd.log
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
TmpFS=$local_dir
EOF
  for node in "$@"; do
    echo "NodeName=${node%%:*} NodeAddr=${node#*:} CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN" >>"$conf"
    names+=("${node%%:*}")
  done
  local IFS=,
  echo "PartitionName=debug Nodes=${names[*]} Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4" >>"$conf"
  # An empty cgroup.conf keeps slurmd from looking for the system's.
  : >"$dir/cgroup.conf"
  export SLURM_CONF=$conf
}

# slurm_nodes_idle NODE...: every node is idle in sinfo.
slurm_nodes_idle() {
  local node state
  for node in "$@"; do
    state=$(timeout 5 sinfo -h -n "$node" -o '%t' 2>/dev/null) || return 1
    case "$state" in idle*) ;; *) return 1 ;; esac
  done
}

# slurm_explain_not_idle DIR NODE...: why the nodes did not become idle (to stderr).
slurm_explain_not_idle() {
  local dir=$1
  shift
  echo "nodes $* never became idle in sinfo ($(timeout 5 sinfo -h -N -o '%N %t %E' 2>&1 | head -n 4 | tr '\n' ' '))" >&2
  tail -n 5 "$dir/log/slurmctld.out" "$dir/log/slurmctld.log" "$dir"/log/slurmd*.out 2>/dev/null | sed 's/^/  | /' >&2
}

slurm_cluster_start() {
  local dir=$1 ctld_port slurmd_port
  slurm_node=$(hostname -s)
  slurm_munge_start "$dir" || return 1
  read -r ctld_port slurmd_port <<<"$(slurm_free_ports 2)" || return 1
  slurm_write_conf "$dir" "$slurm_node" 127.0.0.1 "$ctld_port" "$slurmd_port" "$dir/run" "$slurm_node:127.0.0.1" || return 1
  timeout 600 slurmctld -D -f "$SLURM_CONF" -i >"$dir/log/slurmctld.out" 2>&1 &
  slurm_cluster_pids+=("$!")
  timeout 600 slurmd -D -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
  slurm_cluster_pids+=("$!")
  if ! slurm_wait_for 40 slurm_nodes_idle "$slurm_node"; then
    slurm_explain_not_idle "$dir" "$slurm_node"
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
