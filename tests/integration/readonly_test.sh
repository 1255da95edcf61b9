#!/usr/bin/env bash
# Read-only: a run changes nothing on the machine. Three runs — the node profile, the fake
# 8-GPU node with its contained helpers (smoke, P2P copies, the NCCL all_reduce), and a 2-rank
# mpiexec job — each in a session of its own, watched from outside (tests/faults is not needed: the
# watcher is below). Per run:
#   - every process of the run (every descendant seen while it ran, and its session) has exited;
#   - no listening socket a process of the run held is still listening;
#   - its TMPDIR (a fresh directory) is empty again, and no /dev/shm entry that a process of the run
#     had open or mapped (or whose name carries one of their pids) is still there (other tests
#     create files there in parallel under ctest -j: those are named, not counted);
#   - sentinel processes started before, named like what preflight runs (`preflight-gpu-probe`,
#     `preflight`, `orted`), are still alive after.
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}
command -v setsid >/dev/null || skip_all "setsid (util-linux) is not installed"

sentinels=()
mkdir "$work/bin"
for name in preflight-gpu-probe preflight orted; do
  ln -s "$(command -v sleep)" "$work/bin/$name"  # its comm and argv[0] are the name
  "$work/bin/$name" 300 &
  sentinels+=("$!")
done
trap 'kill "${sentinels[@]}" 2>/dev/null; rm -rf "$work"' EXIT
sleep 0.2

cat >"$work/watch.py" <<'PY'
# watch.py TMPDIR COMMAND...: runs COMMAND in a new session and proves it left nothing behind.
import os, re, subprocess, sys, time

def stat_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    rest = s[s.rindex(")") + 2:].split()
    return {"state": rest[0], "ppid": int(rest[1]), "sid": int(rest[3]), "start": rest[19], "comm": comm}

def sockets_of(pid):
    out = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            except OSError:
                continue
            if m:
                out.add(m.group(1))
    except OSError:
        pass
    return out

def shm_files_of(pid):  # names under /dev/shm this process has open or mapped
    out = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if t.startswith("/dev/shm/"):
                out.add(t[len("/dev/shm/"):].split(" (deleted)")[0])
        with open("/proc/%d/maps" % pid) as f:
            for line in f:
                i = line.find("/dev/shm/")
                if i >= 0:
                    out.add(line[i + len("/dev/shm/"):].strip().split(" (deleted)")[0])
    except OSError:
        pass
    return out

def listening():  # inode -> "proto local-address" of every listening TCP socket and bound UDP socket
    out = {}
    for proto, state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        try:
            lines = open("/proc/net/" + proto).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == state:
                out[f[9]] = proto + " " + f[1]
    return out

SHM = re.compile(r"^(preflight|nccl|ompi|open_mpi|vader|sm_segment|psm|pmix|sem\.|cuda|fake)", re.I)
def shm():
    try:
        return {n: os.lstat("/dev/shm/" + n).st_ctime for n in os.listdir("/dev/shm")}
    except OSError:
        return {}

tmpdir, cmd = sys.argv[1], sys.argv[2:]
env = dict(os.environ, TMPDIR=tmpdir)
shm_before = shm()
t0 = time.time()
p = subprocess.Popen(cmd, env=env, start_new_session=True, stdin=subprocess.DEVNULL)
sid = p.pid
seen = {p.pid: stat_of(p.pid)}
socks = {}
shm_used = set()
while p.poll() is None:
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = stat_of(int(d))
            if st:
                procs[int(d)] = st
    # the run: its session, and every descendant of a process already seen (even if it left the session)
    changed = True
    while changed:
        changed = False
        for pid, st in procs.items():
            if pid not in seen and (st["sid"] == sid or st["ppid"] in seen):
                seen[pid] = st
                changed = True
    for pid in list(seen):
        if seen[pid] and pid in procs and procs[pid]["start"] == seen[pid]["start"]:
            for s in sockets_of(pid):
                socks[s] = seen[pid]["comm"]
            shm_used.update(shm_files_of(pid))
    time.sleep(0.02)
t1 = time.time()
rc = p.returncode

def alive(pid, st):  # the same process (pid and start time), not a zombie: it has not exited
    now = stat_of(pid)
    return bool(st and now and now["start"] == st["start"] and now["state"] not in ("Z", "X"))

# A rank still tearing down when its launcher exits is reparented and ends a moment later (and a
# zombie, exited but not yet reaped by this container's init, is not running): wait up to 5 s.
deadline = time.time() + 5
while time.time() < deadline and any(alive(pid, st) for pid, st in seen.items()):
    time.sleep(0.1)

def cmdline(pid):
    try:
        return open("/proc/%d/cmdline" % pid, "rb").read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return "?"

problems = []
for pid, st in seen.items():
    now = stat_of(pid)
    if alive(pid, st):
        problems.append("process left behind: pid %d (%s, parent %d): %s" % (pid, st["comm"], now["ppid"], cmdline(pid)))
for d in os.listdir("/proc"):
    if d.isdigit():
        st = stat_of(int(d))
        if st and st["sid"] == sid and st["state"] not in ("Z", "X"):
            problems.append("process left in the run's session: pid %s (%s)" % (d, st["comm"]))
lis = listening()
for inode, comm in socks.items():
    if inode in lis:
        problems.append("socket still listening: %s (was %s's)" % (lis[inode], comm))
left = os.listdir(tmpdir)
if left:
    problems.append("TMPDIR not empty: %s" % sorted(left)[:10])
# /dev/shm: what the run's processes had open or mapped, or whose name carries one of their pids,
# must be gone. Other new entries of that kind are other tests' (ctest -j runs MPI jobs in parallel):
# named, not counted.
pids = set(str(pid) for pid in seen)
after = shm()
for name, ctime in after.items():
    if name in shm_before or not os.path.exists("/dev/shm/" + name):
        continue
    ours = name in shm_used or bool(pids & set(re.split(r"[^0-9]+", name)))
    if ours:
        problems.append("/dev/shm/%s (the run's) is still there" % name)
    elif SHM.match(name) and t0 - 1 <= ctime <= t1 + 1:
        print("note: /dev/shm/%s appeared during the run, not opened by it (another test's)" % name)
print("the run had %d /dev/shm entries open or mapped: %s" % (len(shm_used), ", ".join(sorted(shm_used))[:300]))
names = sorted(set(st["comm"] for st in seen.values() if st))
print("run: exit %d in %.1f s; %d processes (%s); %d sockets" % (rc, t1 - t0, len(seen), ", ".join(names), len(socks)))
for pr in problems:
    print("PROBLEM: " + pr)
sys.exit(10 if problems else (rc if rc <= 5 else 9))
PY

# watched NAME WANT-EXIT-REGEX COMMAND...: one run under the watcher, then the sentinels.
watched() {
  local name=$1 want=$2 rc=0
  shift 2
  mkdir -m 777 "$work/tmp-$name"
  "$py" "$work/watch.py" "$work/tmp-$name" "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  grep -E '^(run|PROBLEM|note|the run)' "$work/$name.out" | sed "s/^/  $name: /"
  if [ "$rc" -eq 10 ]; then
    fail "$name left something behind"
  elif [[ "$rc" =~ ^($want)$ ]]; then
    pass "$name: exit $rc, nothing left behind"
  else
    fail "$name: exit $rc, want $want"; sed 's/^/  | /' "$work/$name.err" | tail -20 >&2
  fi
  local s
  for s in "${sentinels[@]}"; do
    if kill -0 "$s" 2>/dev/null && [ "$(readlink "/proc/$s/exe")" = "$(readlink -f "$(command -v sleep)")" ]; then :; else
      fail "$name: sentinel process $s was killed"
    fi
  done
}

# The node profile, every check (the /dev/shm allocation test, the MASTER_PORT bind test).
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
watched node '0|1|3' env MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" "$PREFLIGHT" --format json --timeout 30 --ranks-per-node 2
# The fake 8-GPU node: the contained helpers, 56 peer copies, 8 NCCL ranks rendezvousing in TMPDIR.
if [ -n "${PREFLIGHT_FAKE_GPU_LIB_DIR:-}" ] && [ -d "$PREFLIGHT_FAKE_GPU_LIB_DIR" ]; then
  watched fake-gpu '0|1|3' env LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" \
    PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/h100x8-healthy.json" "$PREFLIGHT" --format json --timeout 30 \
    --allreduce-bytes 1M
  # ... and one whose helper hangs (killed at its deadline: that kill must reach only its own child)
  watched fake-gpu-hang '1|4' env LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" \
    PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/cuinit-hang.json" "$PREFLIGHT" --format json --timeout 5 \
    --only 'driver.loaded,cuda.smoke'
else
  echo "note: no fake GPU libraries; fake-GPU runs not watched"
fi
# A 2-rank job: the reach listener on rank 0, the MPI all_reduce, Open MPI's own files.
if command -v mpiexec >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  watched mpiexec-2 '0|1|3' mpiexec --oversubscribe --bind-to none -np 2 "$PREFLIGHT" --format json --timeout 30 \
    --only 'launch.*,comm.*,net.*,cluster.*,shm.capacity' --color never
else
  echo "note: mpiexec is not installed; the job run is not watched"
fi
finish
