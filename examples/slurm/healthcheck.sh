#!/usr/bin/env bash
# preflight as a Slurm node health check or prolog.
#
# Runs `preflight --profile node` on this node within Slurm's budget (slurmd kills a
# HealthCheckProgram after 60 s; preflight gets --timeout 45 and this script stops it at 55 s),
# prints ONE line an admin can act on -- the most severe finding, e.g.
#   preflight: FAIL shm.capacity: /dev/shm is 64 MiB; 8 local ranks need >= 1.1 GiB (+2 more, see /var/log/preflight/last.json)
# and exits 0 when the node is healthy, non-zero (preflight's own exit status) otherwise.
# It drains nothing itself.
#
# slurm.conf, either as the periodic health check (Slurm ignores its exit status: drain from here,
# see the end of this script):
#   HealthCheckProgram=/usr/local/sbin/preflight-healthcheck
#   HealthCheckInterval=600
#   HealthCheckNodeState=IDLE,CYCLE
# or as a prolog before every job (a non-zero exit drains the node and requeues the job; the line
# printed here lands in slurmd's log):
#   Prolog=/usr/local/sbin/preflight-healthcheck
#   PrologFlags=Alloc
#
# Environment (all optional):
#   PREFLIGHT          the binary (default: preflight on PATH)
#   PREFLIGHT_ARGS     extra arguments, split on spaces (e.g. "--ranks-per-node 8 --expect-gpus 8")
#   PREFLIGHT_TIMEOUT  preflight's --timeout in seconds (default 45)
#   PREFLIGHT_SKIP     checks to leave out if the node cannot finish in time
#                      (e.g. "comm.allreduce,topo.p2p": the two that exercise the GPUs)
#   PREFLIGHT_JSON     keep the JSON report here (default: a temporary file, removed)
#   PREFLIGHT_DRAIN=1  drain the node with the reason line (only if you uncomment the scontrol line)
set -uo pipefail

preflight=${PREFLIGHT:-preflight}
timeout_s=${PREFLIGHT_TIMEOUT:-45}
read -r -a extra <<<"${PREFLIGHT_ARGS:-}"
args=(--profile node --mpi off --timeout "$timeout_s" --format json)
[ -n "${PREFLIGHT_SKIP:-}" ] && args+=(--skip "$PREFLIGHT_SKIP")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json=${PREFLIGHT_JSON:-$tmp/report.json}

# A hard stop 10 s after preflight's own deadline, in case something cannot be interrupted.
rc=0
timeout -k 2 "$((${timeout_s%.*} + 10))" "$preflight" "${args[@]}" "${extra[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ -s "$tmp/out" ] && [ "$json" != "$tmp/out" ] && cp "$tmp/out" "$json"

# The most severe finding (FAIL, then UNKNOWN, then WARN), one line.
line=$(python3 - "$tmp/out" "$rc" "${PREFLIGHT_JSON:-}" 2>/dev/null <<'PY'
import json, sys
path, rc, kept = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = json.load(open(path))
rank = {"FAIL": 0, "UNKNOWN": 1, "WARN": 2}
bad = sorted((c for c in d.get("checks", []) if c.get("status") in rank), key=lambda c: rank[c["status"]])
if rc == 0 or not bad:
    counts = d.get("summary", {}).get("counts", {})
    word = "ok" if rc == 0 else f"exit {rc}"
    print(f"preflight: {word} ({', '.join(f'{v} {k}' for k, v in counts.items() if v)})")
else:
    c = bad[0]
    more = sum(1 for b in bad[1:] if b["status"] in ("FAIL", "UNKNOWN"))
    tail = (f" (+{more} more, see {kept})" if kept else f" (+{more} more)") if more else ""
    summary = " ".join(str(c.get("summary", "")).split())
    print(f"preflight: {c['status']} {c['id']}: {summary}{tail}")
PY
) || line=""
if [ -z "$line" ]; then
  # No report to read: a usage error, a crash, or the hard stop.
  why=$(head -n 1 "$tmp/err" | tr -d '\r')
  case $rc in
    124 | 137) line="preflight: did not finish within $((${timeout_s%.*} + 10)) s" ;;
    0) line="preflight: ok" ;;
    *) line="preflight: exit $rc${why:+: $why}" ;;
  esac
fi
echo "$line"

# To drain from here (HealthCheckProgram does not drain by itself), uncomment:
# if [ "$rc" -ne 0 ] && [ "${PREFLIGHT_DRAIN:-0}" = 1 ]; then
#   scontrol update nodename="$(hostname -s)" state=drain reason="${line:0:200}"
# fi
exit "$rc"
