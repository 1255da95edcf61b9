#!/usr/bin/env bash
# What the GPU and node health checks (gpu.memory_health, gpu.fabric, gpu.links, gpu.clocks: the
# helper's `health` run; gpu.xid: the kernel log) add to a node run on the fake 8-GPU node: the
# node profile with them and with them skipped, best of REPEAT wall-clock runs each, and the time
# the report gives their probes (the checks' "seconds").
set -euo pipefail
BUILD_DIR=${BUILD_DIR:-build}
PREFLIGHT=${PREFLIGHT:-$BUILD_DIR/preflight}
LIB=${PREFLIGHT_FAKE_GPU_LIB_DIR:-$BUILD_DIR/tests/fakes/lib}
REPEAT=${REPEAT:-5}
health='gpu.memory_health,gpu.fabric,gpu.links,gpu.clocks,gpu.xid'
best() {  # best ARGS...: the best wall time in ms of REPEAT runs
  local b=999999 s e ms
  for _ in $(seq "$REPEAT"); do
    s=$(date +%s%N)
    LD_LIBRARY_PATH="$LIB" "$PREFLIGHT" --profile node --format json "$@" >/tmp/preflight-health-bench.json 2>/dev/null || true
    e=$(date +%s%N)
    ms=$(( (e - s) / 1000000 ))
    [ "$ms" -lt "$b" ] && b=$ms
  done
  echo "$b"
}
with=$(best)
without=$(best --skip "$health")
LD_LIBRARY_PATH="$LIB" "$PREFLIGHT" --profile node --format json >/tmp/preflight-health-bench.json 2>/dev/null || true
probe=$(python3 -c "
import json,sys
d=json.load(open('/tmp/preflight-health-bench.json'))
s={c['id']:c.get('seconds',0) for c in d['checks']}
print('%.1f ms (gpu.memory_health, the health helper), %.1f ms (gpu.xid, the kernel log)' % (1000*s.get('gpu.memory_health',0), 1000*s.get('gpu.xid',0)))")
echo "| node run, fake 8-GPU node | with the health checks | without | difference | their probes |"
echo "|---|---|---|---|---|"
echo "| best of $REPEAT | $with ms | $without ms | $((with - without)) ms | $probe |"
