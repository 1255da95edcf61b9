# shellcheck shell=bash
# An emulated cluster on this one machine (sourced by tests/cluster/*_test.sh; needs root).
#
# Each host is a network namespace (its own eth0 on a bridge, its own loopback), a UTS namespace
# (its own hostname) and a mount namespace (its own /dev/shm tmpfs, a sysfs that shows its own
# interfaces, the machine's cgroup tree bound back in), held open by one `sleep` process. The
# launcher side (mpirun, or slurmctld and srun) lives in a network namespace of its own that holds
# the bridge, so the machine's own network is never touched and two runs cannot collide. Addresses
# are in 198.51.100.0/24 (documentation range): the launcher .1, host i .(10+i).
#
#   cluster_host NAME [shm=SIZE] [VAR=VALUE...]   declares a host (before cluster_up): the size of
#                                                  its /dev/shm (default 1g) and the environment
#                                                  every process started on it gets (a fake driver
#                                                  of its own, another NCCL…)
#   cluster_up                                     creates the bridge and every declared host
#   on_host NAME COMMAND...                        runs COMMAND inside host NAME (its environment set)
#   on_launcher COMMAND...                         runs COMMAND in the launcher's network namespace
#   cluster_mpirun MPIRUN-ARGS...                  mpirun from the launcher, ranks started on the hosts
#                                                  through tests/cluster/rsh_agent.sh, ended after
#                                                  CLUSTER_TIMEOUT seconds (default 120)
#   cluster_slurm_up                               a Slurm cluster of every host (its daemons ended by
#                                                  cluster_down, or after CLUSTER_DAEMON_LIFETIME s,
#                                                  default 1800): munged, slurmctld on
#                                                  the launcher's bridge address, one slurmd per host
#                                                  (its NodeName the host's name, its spool, pid and
#                                                  log files its own); srun/sinfo then talk to it
#                                                  (SLURM_CONF) when run with cluster_srun
#   cluster_srun SRUN-ARGS...                      srun from the launcher, ended after CLUSTER_TIMEOUT
#   host_pids NAME                                 the pids of every process on host NAME
#   preflight_on NAME, stopped_rank NAME           its preflight processes; the one stopped (SIGSTOP)
#   host_reset NAME                                kills what a scenario left on host NAME
#   cluster_down                                   kills every process of every host (by pid), removes
#                                                  the namespaces and the bridge; run from the EXIT trap
#
# Every wait is bounded; cluster_down runs on exit, on failure too.

cluster_dir=$(mktemp -d /tmp/preflight-cluster.XXXXXX)
cluster_id="pfc$(printf '%x' $(( ($$ + RANDOM) % 65536 )))"  # short: interface names hold 15 bytes
cluster_launcher="$cluster_id-l"
cluster_net=198.51.100
cluster_hosts=()
here_cluster=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The emulated hosts are Debian nodes: Debian's PATH, not what a developer's shell adds in front of it
# (a pyenv shim as python3, which each rank's probe phase runs as the job's interpreter, costs a
# second a rank on two loaded cores, and these scenarios time their phases to the second).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

cluster_host() {
  local name=$1 shm=1g
  shift
  : >"$cluster_dir/$name.env"
  for a in "$@"; do
    case "$a" in
      shm=*) shm=${a#shm=} ;;
      *=*) printf 'export %q\n' "$a" >>"$cluster_dir/$name.env" ;;
    esac
  done
  echo "$shm" >"$cluster_dir/$name.shm"
  cluster_hosts+=("$name")
}

# cluster_wait SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds (bounded).
cluster_wait() {
  local deadline=$((SECONDS + $1)) i=0
  shift
  while [ "$SECONDS" -le "$deadline" ] && [ "$i" -lt 600 ]; do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

cluster_up() {
  ip netns add "$cluster_launcher" || return 1
  ip -n "$cluster_launcher" link set lo up
  ip -n "$cluster_launcher" link add br0 type bridge || return 1
  ip -n "$cluster_launcher" addr add "$cluster_net.1/24" dev br0
  ip -n "$cluster_launcher" link set br0 up
  local i=0 name
  for name in "${cluster_hosts[@]}"; do
    i=$((i + 1))
    ip netns add "$cluster_id-$name" || return 1
    ip -n "$cluster_launcher" link add "v$i" type veth peer name eth0 netns "$cluster_id-$name" || return 1
    ip -n "$cluster_launcher" link set "v$i" master br0 up
    ip -n "$cluster_id-$name" addr add "$cluster_net.$((10 + i))/24" dev eth0
    ip -n "$cluster_id-$name" link set eth0 up
    ip -n "$cluster_id-$name" link set lo up
    echo "$cluster_net.$((10 + i))" >"$cluster_dir/$name.addr"
    # The holder: a private mount and UTS namespace entered into the host's network namespace.
    unshare --uts --mount --propagation private -- nsenter --net="/run/netns/$cluster_id-$name" -- bash -c '
      set -e
      hostname "$1"
      mkdir -p "$2/cgroup-$1"
      mount --rbind /sys/fs/cgroup "$2/cgroup-$1" 2>/dev/null || true
      mount -t sysfs sysfs /sys
      if mountpoint -q "$2/cgroup-$1"; then mount --rbind "$2/cgroup-$1" /sys/fs/cgroup && umount -R "$2/cgroup-$1"; fi
      mount -t tmpfs -o size="$3" tmpfs /dev/shm
      echo $$ >"$2/$1.pid.tmp" && mv "$2/$1.pid.tmp" "$2/$1.pid"
      exec sleep 100000' holder "$name" "$cluster_dir" "$(cat "$cluster_dir/$name.shm")" \
      </dev/null >"$cluster_dir/$name.holder.log" 2>&1 &
    disown
    if ! cluster_wait 10 test -s "$cluster_dir/$name.pid"; then
      echo "cluster: host $name did not come up:" >&2
      cat "$cluster_dir/$name.holder.log" >&2
      return 1
    fi
  done
  # Every host answers on the bridge (bounded).
  for name in "${cluster_hosts[@]}"; do
    cluster_wait 10 on_launcher bash -c "exec 3<>/dev/tcp/$(cat "$cluster_dir/$name.addr")/1" 2>/dev/null
  done
  return 0
}

host_pid() { cat "$cluster_dir/$1.pid"; }

on_host() {
  local name=$1
  shift
  nsenter -t "$(host_pid "$name")" -u -m -n -- bash -c '. "$0"; exec "$@"' "$cluster_dir/$name.env" "$@"
}

on_launcher() { ip netns exec "$cluster_launcher" "$@"; }

# The rsh agent Open MPI calls as `AGENT [options] HOST COMMAND…`.
cluster_mpirun() {
  CLUSTER_DIR="$cluster_dir" on_launcher timeout -k 5 "${CLUSTER_TIMEOUT:-120}" mpirun --allow-run-as-root --oversubscribe \
    --mca plm_rsh_agent "$here_cluster/rsh_agent.sh" \
    --mca oob_tcp_if_include "$cluster_net.0/24" --mca btl_tcp_if_include "$cluster_net.0/24" \
    --mca btl self,vader,tcp --mca pml ob1 "$@"
}

# The Slurm cluster: the same daemons and slurm.conf as the single-node one of integration.slurm
# (tests/slurm/cluster.sh), spread over the hosts. Each host bind-mounts a directory of its own over
# $cluster_dir/slurm/local in its mount namespace, so one slurm.conf serves every slurmd.
source "$here_cluster/../slurm/cluster.sh"
cluster_slurm_up() {
  local dir=$cluster_dir/slurm name c nodes=()
  for c in munged munge slurmctld slurmd srun sinfo; do
    command -v "$c" >/dev/null || { echo "cluster: no '$c' command (apt-get install slurm-wlm munge)" >&2; return 77; }
  done
  slurm_munge_start "$dir" || return 1
  for name in "${cluster_hosts[@]}"; do nodes+=("$name:$(cat "$cluster_dir/$name.addr")"); done
  # slurmctld runs on this machine (its hostname) in the launcher's namespace; every daemon has a
  # network namespace of its own, so the standard ports.
  slurm_write_conf "$dir" "$(hostname -s)" "$cluster_net.1" 6817 6818 "$dir/local" "${nodes[@]}" || return 1
  on_launcher timeout "${CLUSTER_DAEMON_LIFETIME:-1800}" slurmctld -D -f "$SLURM_CONF" -i >"$dir/log/slurmctld.out" 2>&1 &
  slurm_cluster_pids+=("$!")
  for name in "${cluster_hosts[@]}"; do
    mkdir -p "$dir/hosts/$name"
    on_host "$name" mount --bind "$dir/hosts/$name" "$dir/local" || return 1
    on_host "$name" timeout "${CLUSTER_DAEMON_LIFETIME:-1800}" slurmd -D -f "$SLURM_CONF" >"$dir/log/slurmd-$name.out" 2>&1 &
    slurm_cluster_pids+=("$!")
  done
  if ! slurm_wait_for 40 on_launcher env SLURM_CONF="$SLURM_CONF" bash -c "source '$here_cluster/../slurm/cluster.sh'; slurm_nodes_idle ${cluster_hosts[*]}"; then
    slurm_explain_not_idle "$dir" "${cluster_hosts[@]}"
    tail -n 5 "$dir"/hosts/*/slurmd.log 2>/dev/null | sed 's/^/  | /' >&2
    return 1
  fi
}

cluster_srun() {
  on_launcher timeout -k 5 "${CLUSTER_TIMEOUT:-120}" srun "$@"
}

host_pids() { ip netns pids "$cluster_id-$1" 2>/dev/null; }

# preflight_on HOST: the pids of the preflight processes on HOST (its helpers included), zombies
# not: a zombie has ended, only its parent (the launcher's daemon, perhaps cut off) has not reaped it.
preflight_on() {
  local p
  for p in $(host_pids "$1"); do
    [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ] && continue
    case "$(cat "/proc/$p/comm" 2>/dev/null)" in preflight*) echo "$p" ;; esac
  done
}
# stopped_rank HOST: the pid of a preflight process on HOST in state T (stopped), if any.
stopped_rank() {
  local p
  for p in $(preflight_on "$1"); do
    [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = T ] && { echo "$p"; return 0; }
  done
  return 1
}

# Reading rank 0's report in $work/out (json_get of tests/integration/lib.sh), and timing a fault.
status_on() { json_get "[c['status'] for c in d['checks'] if c['id']=='$1' and '$2' in c['hosts']][0]"; }  # ID HOST
field() { json_get "[c['$2'] for c in d['checks'] if c['id']=='$1'][0]"; }                                # ID FIELD
now() { date +%s.%N; }
secs() { "${PYTHON3:-python3}" -c "print(round($2 - $1, 2))"; }                # START END: seconds between
within() { "${PYTHON3:-python3}" -c "import sys; sys.exit(0 if $1 <= $2 else 1)"; }  # SECONDS BOUND

# host_reset NAME: kills whatever a scenario left running on host NAME (its holder stays).
host_reset() {
  local p pids=()
  for p in $(host_pids "$1"); do [ "$p" = "$(host_pid "$1")" ] || pids+=("$p"); done
  ((${#pids[@]})) && kill -CONT "${pids[@]}" 2>/dev/null && kill -9 "${pids[@]}" 2>/dev/null
  return 0
}

cluster_down() {
  local name pids
  for name in "${cluster_hosts[@]}"; do
    pids=$(host_pids "$name")
    [ -n "$pids" ] && kill -CONT $pids 2>/dev/null
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  done
  pids=$(ip netns pids "$cluster_launcher" 2>/dev/null)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  slurm_cluster_stop  # munged (the daemons in the namespaces are gone by now)
  for name in "${cluster_hosts[@]}"; do ip netns del "$cluster_id-$name" 2>/dev/null; done
  ip netns del "$cluster_launcher" 2>/dev/null
  rm -rf "$cluster_dir"
}

# cluster_require: skips (77) unless this can run: root, ip, nsenter, unshare, mpirun.
cluster_require() {
  [ "$(id -u)" -eq 0 ] || skip_all "needs root (network, UTS and mount namespaces)"
  local c
  for c in ip nsenter unshare mpirun; do command -v "$c" >/dev/null || skip_all "no '$c' command"; done
  ip netns add "$cluster_id-probe" 2>/dev/null || skip_all "ip netns add failed (no network namespaces here)"
  ip netns del "$cluster_id-probe"
}
