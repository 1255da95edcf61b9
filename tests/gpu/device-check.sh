#!/usr/bin/env bash
# One short run on a machine with NVIDIA GPUs (no package registry there): the GPU-labelled tests,
# preflight's own report, and the topology captures wanted as fixtures, all written under $OUT.
# Build here first and carry the build plus the runtime libraries it needs, e.g.
#   apt-get download libboost-program-options1.74.0 libxml2 libhwloc15 libpciaccess0 && dpkg -x each .deb into rt/
#   LD_LIBRARY_PATH=$PWD/rt/usr/lib/x86_64-linux-gnu tests/gpu/device-check.sh build
set -uo pipefail
build=${1:-build}
out=${OUT:-/tmp/preflight-device}
mkdir -p "$out"
{
  echo "== nvidia-smi"; nvidia-smi 2>&1 | head -30
  echo "== ctest -L gpu"; (cd "$build" && ctest -L gpu --output-on-failure 2>&1)
  echo "== preflight -v"; "$build/preflight" -v 2>&1; echo "exit $?"
  echo "== mpirun -np 1 preflight"
  mpirun --allow-run-as-root -np 1 "$build/preflight" 2>&1; echo "exit $?"
} >"$out/device-check.txt" 2>&1
"$build/preflight" -v --json "$out/preflight.json" >/dev/null 2>&1
nvidia-smi topo -m >"$out/nvidia-smi-topo.txt" 2>&1
command -v lstopo >/dev/null && lstopo --of xml >"$out/lstopo.xml" 2>/dev/null
command -v hwloc-gather-topology >/dev/null && (cd "$out" && hwloc-gather-topology --io node >/dev/null 2>&1)
# The same node judged from its own export (what a user sends for analysis) next to the live run.
[ -s "$out/lstopo.xml" ] && "$build/preflight" --topology-xml "$out/lstopo.xml" --only 'topo.p2p,net.gpu_nic_affinity' -v \
  >"$out/topology-xml-run.txt" 2>&1
# The GPU and node health checks' facts from the real GPU (fixtures for the fake scenarios and the
# check tests): the helper's health document, the checks' verdicts, and a kernel-log capture (the
# NVIDIA lines only; unreadable without CAP_SYSLOG, which is recorded too).
"$build/preflight-gpu-probe" health >"$out/gpu-health.json" 2>"$out/gpu-health.err"
# The smoke test's document (its xid_watch: NVML's XID events registered on a real GPU) and gpu.xid
# as an unprivileged user, where only NVML's events can speak for the node.
"$build/preflight-gpu-probe" smoke --ordinal 0 --bytes 64M >"$out/gpu-smoke.json" 2>&1
command -v setpriv >/dev/null && setpriv --reuid=nobody --regid=nogroup --clear-groups "$build/preflight" --only gpu.xid -v \
  >"$out/gpu-xid-nobody.txt" 2>&1
"$build/preflight" --only 'gpu.memory_health,gpu.xid,gpu.fabric,gpu.links,gpu.clocks' -v --json "$out/gpu-health-checks.json" \
  >"$out/gpu-health-checks.txt" 2>&1
{ dmesg -r 2>&1 || timeout 2 cat /dev/kmsg 2>&1; } | grep -a -e NVRM -e Xid -e SXid -e nvidia -e 'Operation not permitted' >"$out/kmsg-nvidia.txt"
"$build/preflight" capture "$out/capture" >/dev/null 2>&1
ls -la "$out"
