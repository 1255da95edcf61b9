#!/usr/bin/env bash
# Start-up time of the binary: `preflight --version` (the process, its shared libraries and the
# command line), `preflight list` (the check table) and `preflight explain` — what a shell
# completion or a wrapper pays — against `/bin/true`, best and median of REPEAT runs, and the largest
# peak RSS among them. Prints a markdown table.
#   bench/startup.sh                 # REPEAT=200
# Environment: BUILD_DIR, PREFLIGHT (the binary), REPEAT.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preflight=${PREFLIGHT:-${BUILD_DIR:-$here/build}/preflight}
repeat=${REPEAT:-200}
[ -x "$preflight" ] || { echo "no binary at $preflight (build it first)" >&2; exit 2; }

python3 - "$preflight" "$repeat" <<'PY'
import resource, statistics, subprocess, sys, time
exe, repeat = sys.argv[1], int(sys.argv[2])
def timed(argv):
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        runs.append(time.perf_counter() - t0)
    return min(runs), statistics.median(runs)
print(f"{repeat} runs each")
print("| command | best | median |")
print("|---|---:|---:|")
for label, argv in [("/bin/true", ["/bin/true"]), ("preflight --version", [exe, "--version"]),
                    ("preflight list", [exe, "list"]), ("preflight explain shm.capacity", [exe, "explain", "shm.capacity"])]:
    best, med = timed(argv)
    print(f"| `{label}` | {best * 1000:.2f} ms | {med * 1000:.2f} ms |")
print(f"\npeak RSS of the largest of these commands: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.1f} MiB")
PY
