#!/usr/bin/env bash
# The node and the job on the fake 8-GPU node (tests/fakes: fake libcuda, NVML and NCCL, scenario
# h100x8-healthy): `preflight --profile node` alone, the all_reduce across the node's 8 GPU helpers
# included, and `mpirun -np 8 preflight --profile job`, best of REPEAT wall-clock runs each, with
# the CPU time of the whole process tree (preflight, its helpers, mpirun and its ranks: the
# children's rusage) split into user and system. Prints a markdown table against the targets:
# the node profile within 2 s, the job within 2x the node profile, system time under 10% of CPU.
#   bench/fake_node.sh                 # REPEAT=3
# Environment: BUILD_DIR, PREFLIGHT (the binary), PREFLIGHT_FAKE_GPU_LIB_DIR, REPEAT, MPIRUN,
# BENCH_SUMMARY (a file: one "figure|measured|target|verdict" line per target is appended to it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}
preflight=${PREFLIGHT:-$build_dir/preflight}
lib=${PREFLIGHT_FAKE_GPU_LIB_DIR:-$build_dir/tests/fakes/lib}
scenario=$here/tests/fakes/scenarios/h100x8-healthy.json
[ -x "$preflight" ] || { echo "fake_node: no binary at $preflight (build it first)" >&2; exit 2; }
[ -e "$lib/libnccl.so.2" ] || { echo "fake_node: no fake GPU libraries in $lib (ninja -C $build_dir preflight_fake_cuda preflight_fake_nvml preflight_fake_nccl)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(\(SLURM\|PMIX\|PMI\|OMPI_COMM\)[A-Za-z0-9_]*\)=.*/\1/p')

python3 - "$preflight" "$(cd "$lib" && pwd)" "$scenario" "${REPEAT:-3}" "${MPIRUN:-mpirun}" "${BENCH_SUMMARY:-}" <<'PY'
import json, os, resource, shutil, subprocess, sys, threading, time
exe, lib, scenario, repeat, mpirun, summary = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
env = dict(os.environ, LD_LIBRARY_PATH=lib, PREFLIGHT_FAKE_GPU=scenario)

def own_times(proc):
    """The process's own user and system CPU seconds (its helpers' not included), read from
    /proc/PID/stat once it is a zombie, before it is reaped."""
    tick = os.sysconf("SC_CLK_TCK")
    last = None
    while True:
        try:
            with open(f"/proc/{proc.pid}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return last
        last = (int(rest[11]) / tick, int(rest[12]) / tick)
        if rest[0] in ("Z", "X"):
            return last
        time.sleep(0.002)

def run(argv):
    """Best wall time of `repeat` runs, with the user and system CPU seconds of that run's tree
    and of the started process alone."""
    best = None
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        chunks = []
        reader = threading.Thread(target=lambda: chunks.append(p.stdout.read()))
        reader.start()
        own = own_times(p)
        p.wait()
        wall = time.perf_counter() - t0
        reader.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        user, sys_ = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
        if best is None or wall < best[0]:
            best = (wall, user, sys_, p.returncode, b"".join(chunks), own)
    return best

def allreduce(out):
    try:
        d = json.loads(out)
        c = [c for c in d["checks"] if c["id"] == "comm.allreduce"]
        return f"comm.allreduce {c[0]['status']}" if c else "no comm.allreduce"
    except Exception:
        return "no JSON report"

lines = []
def target(figure, measured, goal, met):
    lines.append(f"{figure}|{measured}|{goal}|{'met' if met else 'MISSED'}")

print(f"fake 8-GPU node ({os.path.basename(scenario)}), best of {repeat}, load average before: "
      + " ".join(open('/proc/loadavg').read().split()[:3]) + f", {os.cpu_count()} CPUs")
print()
print("| run | wall | user CPU | system CPU | system share | exit | all_reduce |")
print("|---|---:|---:|---:|---:|---:|---|")
node = run([exe, "--profile", "node", "--format", "json"])
rows = [("`preflight --profile node`", node)]
job = None
if shutil.which(mpirun):
    job = run([mpirun, "--oversubscribe", "--mca", "orte_abort_on_non_zero_status", "0", "-np", "8", exe,
               "--profile", "job", "--format", "json", "--timeout", "120"])
    rows.append(("`mpirun -np 8 preflight --profile job`", job))
for label, (wall, user, sys_, rc, out, _own) in rows:
    share = sys_ / (user + sys_) if user + sys_ > 0 else 0.0
    print(f"| {label} | {wall:.2f} s | {user:.2f} s | {sys_:.2f} s | {100 * share:.0f}% | {rc} | {allreduce(out)} |")
wall, user, sys_ = node[0], node[1], node[2]
if node[5] is not None:
    own_user, own_sys = node[5]
    print()
    print(f"of which `preflight` itself (its helpers, which hold the fake GPUs, not included): user {own_user:.2f} s, "
          f"system {own_sys:.2f} s ({100 * own_sys / max(own_user + own_sys, 1e-9):.0f}% of its own CPU, "
          f"{100 * (own_user + own_sys) / max(user + sys_, 1e-9):.0f}% of the run's CPU)")
target("fake 8-GPU node: node profile", f"{wall:.2f} s", "<= 2 s", wall <= 2.0)
target("fake 8-GPU node: system CPU share (node profile)", f"{100 * sys_ / max(user + sys_, 1e-9):.0f}% ({sys_:.2f} of {user + sys_:.2f} s)",
       "< 10%", sys_ < 0.1 * (user + sys_))
if job is not None:
    target("fake 8-GPU node: mpirun -np 8", f"{job[0]:.2f} s ({job[0] / wall:.2f}x the node profile)", "<= 2x the node profile",
           job[0] <= 2 * wall)
    target("fake 8-GPU node: CPU per rank (mpirun -np 8)", f"{(job[1] + job[2]) / 8:.2f} s ({job[2] / 8:.2f} s system)", "reported", True)
print()
for l in lines:
    print("target: " + l)
if summary:
    with open(summary, "a") as f:
        f.write("".join(l + "\n" for l in lines))
PY
