#!/usr/bin/env bash
# The GPU checks end to end: the real binary and its contained helper, with the project's fake
# libcuda / libnvidia-ml / libnccl selected through LD_LIBRARY_PATH and scripted per scenario.
source "$(dirname "$0")/lib.sh"
: "${PREFLIGHT_FAKE_GPU_LIB_DIR:?}" "${PREFLIGHT_FAKE_GPU_SCENARIOS_DIR:?}"
S=$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR
R=$PREFLIGHT_FIXTURES_DIR/cuda_runtime

with_gpu() {  # with_gpu SCENARIO PREFLIGHT-ARGS...
  local scenario=$1
  shift
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$S/$scenario.json" "$PREFLIGHT" "$@"
}
summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
remedy_of() { json_get "[c['remedy'] for c in d['checks'] if c['id']=='$1'][0]"; }

# Driver 535.104.05 (CUDA 12.2) against a PyTorch built for CUDA 12.4: minor-version compatibility.
# A fixture tree made the capture of the fake node (its GPU helper's report; --sysroot never runs a
# helper on the judging machine).
cp -a "$R/cu124" "$work/cu124" && as_capture "$work/cu124" driver535-cuda122 ""
expect_rc 0 "driver 535 with torch cu124" -- "$PREFLIGHT" --sysroot "$work/cu124" --site-packages /site \
  --only cuda.runtime --format json
expect_eq "$(check_status cuda.runtime)" WARN "cuda.runtime"
expect_contains "$(summary_of cuda.runtime)" "CUDA 12.4" "summary"
expect_contains "$(summary_of cuda.runtime)" "CUDA 12.2" "summary"

# ... and against a CUDA 13.0 build: it cannot run.
cp -a "$R/cu130" "$work/cu130" && as_capture "$work/cu130" driver535-cuda122 "" HOME=/home/user
expect_rc 1 "driver 535 with torch cu130" -- "$PREFLIGHT" --sysroot "$work/cu130" --only cuda.runtime --format json
expect_eq "$(check_status cuda.runtime)" FAIL "cuda.runtime"
expect_contains "$(remedy_of cuda.runtime)" "580.65.06" "remedy"
expect_contains "$(remedy_of cuda.runtime)" "CUDA 12.x build" "remedy"

# The same in the image profile, with no driver at all.
expect_rc 0 "image profile, target driver 535, cu124" -- "$PREFLIGHT" --profile image --target-driver 535.104.05 \
  --target-gpu 9.0 --sysroot "$R/cu124" --site-packages /site --only cuda.runtime --format json
expect_eq "$(check_status cuda.runtime)" WARN "cuda.runtime (image)"
expect_rc 1 "image profile, target driver 535, cu130" -- env HOME=/home/user "$PREFLIGHT" --profile image \
  --target-driver 535.104.05 --target-gpu 9.0 --sysroot "$R/cu130" --only cuda.runtime --format json
expect_eq "$(check_status cuda.runtime)" FAIL "cuda.runtime (image)"
expect_contains "$(remedy_of cuda.runtime)" "580.65.06" "remedy (image)"

# A compute capability 7.0 GPU with a CUDA 13 runtime.
cp -a "$R/cu130" "$work/cu130-volta" && as_capture "$work/cu130-volta" cc70-volta "" HOME=/home/user
expect_rc 1 "Volta with CUDA 13" -- "$PREFLIGHT" --sysroot "$work/cu130-volta" --only cuda.arch --format json
expect_eq "$(check_status cuda.arch)" FAIL "cuda.arch"
expect_contains "$(summary_of cuda.arch)" "CC 7.0" "summary"

# cuInit crashes: the helper dies, preflight reports it and exits 1, not 139.
expect_rc 1 "cuInit crashes with SIGSEGV" -- with_gpu cuinit-segv --only 'cuda.smoke,driver.loaded' --format json
expect_eq "$(check_status cuda.smoke)" FAIL "cuda.smoke"
expect_contains "$(summary_of cuda.smoke)" "SIGSEGV" "cuda.smoke summary"
expect_contains "$(summary_of driver.loaded)" "SIGSEGV" "driver.loaded summary"

# Started by a parent that ignores SIGCHLD (the disposition survives exec): the helpers' exit
# statuses are still seen — a healthy node passes and a crash is still named.
ignoring_sigchld() {
  "${PYTHON3:-python3}" -c 'import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
expect_rc 0 "a healthy node under a parent that ignores SIGCHLD" -- ignoring_sigchld env \
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$S/h100x8-healthy.json" "$PREFLIGHT" \
  --only 'driver.loaded,cuda.smoke' --format json
expect_eq "$(check_status driver.loaded)" PASS "driver.loaded, SIGCHLD ignored"
expect_eq "$(check_status cuda.smoke)" PASS "cuda.smoke, SIGCHLD ignored"
expect_rc 1 "cuInit crashes under a parent that ignores SIGCHLD" -- ignoring_sigchld env \
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$S/cuinit-segv.json" "$PREFLIGHT" \
  --only 'driver.loaded,cuda.smoke' --format json
expect_contains "$(summary_of cuda.smoke)" "SIGSEGV" "cuda.smoke summary, SIGCHLD ignored"

# A device-to-host copy that never returns: FAIL within the helper's deadline.
start=$(date +%s%N)
expect_rc 1 "a copy that hangs" -- with_gpu copy-hang --timeout 3 --only cuda.smoke --format json
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$elapsed_ms" -lt 8000 ] && pass "ended after ${elapsed_ms} ms" || fail "took ${elapsed_ms} ms"
expect_eq "$(check_status cuda.smoke)" FAIL "cuda.smoke"
expect_contains "$(summary_of cuda.smoke)" "did not finish" "summary"

# A copy that returns wrong data.
expect_rc 1 "a corrupted copy" -- with_gpu copy-corrupt --only cuda.smoke --format json
expect_contains "$(summary_of cuda.smoke)" "word 17" "summary"

# Another process holds 30 000 MiB on GPU 0.
expect_rc 1 "a busy GPU" -- with_gpu busy-30000mib --only gpu.busy --format json
expect_eq "$(check_status gpu.busy)" FAIL "gpu.busy"
expect_contains "$(summary_of gpu.busy)" "pid 4242" "summary"
expect_contains "$(summary_of gpu.busy)" "30000 MiB" "summary"

# A healthy node passes the GPU checks; --expect-gpus catches a short node.
expect_rc 0 "healthy 8 x H100" -- with_gpu h100x8-healthy --only 'driver.loaded,cuda.smoke,gpu.*' --format json
expect_rc 1 "--expect-gpus 16 on 8 GPUs" -- with_gpu h100x8-healthy --only gpu.count --expect-gpus 16 --format json
expect_contains "$(summary_of gpu.count)" "16" "summary"

# No driver at all: driver.loaded FAILs with a reason, every non-GPU check is still reported.
rc=0
LD_LIBRARY_PATH=/nonexistent "$PREFLIGHT" --format json >"$work/out" 2>"$work/err" || rc=$?
expect_eq "$rc" 1 "exit code without a driver"
expect_eq "$(check_status driver.loaded)" FAIL "driver.loaded"
expect_contains "$(summary_of driver.loaded)" "no NVIDIA driver" "summary"
for id in shm.capacity host.memory host.limits env.nccl launch.env; do
  st=$(check_status "$id")
  case "$st" in PASS|WARN|FAIL|UNKNOWN) pass "$id reported ($st)" ;; *) fail "$id missing without a driver" ;; esac
done

# comm.allreduce in the node profile: one NCCL helper per local GPU, in one communicator.
with_gpu h100x8-healthy --only comm.allreduce --allreduce-bytes 1M --format json >"$work/out" 2>/dev/null
expect_eq "$(check_status comm.allreduce)" PASS "comm.allreduce across the 8 fake GPUs"
expect_eq "$(json_get "d['job']['allreduce']['transport'], d['job']['allreduce']['ranks']")" "nccl 8" "all_reduce over NCCL, 8 ranks"
with_gpu allreduce-corrupt-rank1 --only comm.allreduce --allreduce-bytes 1M --format json >"$work/out" 2>/dev/null
expect_eq "$(check_status comm.allreduce)" FAIL "comm.allreduce with GPU 1's result corrupted"
expect_contains "$(summary_of comm.allreduce)" "1" "the corrupt GPU named"
with_gpu allreduce-busbw-40 --only comm.allreduce --allreduce-bytes 1M --min-busbw 100 --format json >"$work/out" 2>/dev/null
expect_eq "$(check_status comm.allreduce)" FAIL "comm.allreduce at 40 GB/s below --min-busbw 100"

# One GPU's helper never joins (it exits before its NCCL init, as one that could not start or load
# NCCL would): the seven others are stopped at once instead of waiting in init until the deadline,
# and the report names the one that never joined, not them as hung.
mkdir -p "$work/helpers"
cat >"$work/helpers/preflight-gpu-probe" <<EOS
#!/bin/sh
case " \$* " in *' nccl-allreduce '*' --device 3 '*) echo 'cannot set up GPU 3' >&2; exit 1;; esac
exec '$(dirname "$PREFLIGHT")/preflight-gpu-probe' "\$@"
EOS
chmod +x "$work/helpers/preflight-gpu-probe"
start=$(date +%s%N)
PREFLIGHT_HELPER_DIR="$work/helpers" with_gpu h100x8-healthy --only comm.allreduce --allreduce-bytes 1M --timeout 30 \
  --format json >"$work/out" 2>/dev/null
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$elapsed_ms" -lt 15000 ] && pass "stopped after ${elapsed_ms} ms (--timeout 30)" || fail "took ${elapsed_ms} ms"
expect_eq "$(check_status comm.allreduce)" FAIL "comm.allreduce with GPU 3's helper failing before init"
expect_contains "$(summary_of comm.allreduce)" "cannot set up GPU 3" "the cause quoted"
expect_contains "$(summary_of comm.allreduce)" "waited for rank 3 (GPU 3), which never joined the communicator" \
  "the others waited for it"
case "$(summary_of comm.allreduce)" in *hung*) fail "the ranks that waited are called hung" ;; *) pass "none called hung" ;; esac

# The real NCCL of the CUDA toolkit, where installed.
if [ -f /usr/local/cuda/lib64/libnccl.so.2 ]; then
  "$PREFLIGHT" --nccl-lib /usr/local/cuda/lib64/libnccl.so.2 --only nccl.library --format json >"$work/out" 2>/dev/null
  expect_contains "$(summary_of nccl.library)" "NCCL 2.28.9" "real NCCL"
  expect_contains "$(summary_of nccl.library)" "libnccl.so.2" "the file it loaded"
fi
# CUDA_VISIBLE_DEVICES as the driver reads it, in the node profile: 0,1,99 stops at 99 (only 0 and
# 1 visible) and is named; empty, none and NoDevFiles leave the job without a GPU, and gpu.busy does
# not call the job's GPUs free.
expect_rc 1 "CUDA_VISIBLE_DEVICES=0,1,99" -- env CUDA_VISIBLE_DEVICES=0,1,99 \
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" "$PREFLIGHT" --only gpu.count --expect-gpus 2 --format json
expect_eq "$(check_status gpu.count)" FAIL "gpu.count with 0,1,99"
expect_contains "$(summary_of gpu.count)" "invalid entry '99'" "gpu.count names the entry"
expect_contains "$(summary_of gpu.count)" "only 2 GPUs are visible" "gpu.count says what the driver kept"
for value in "" none NoDevFiles; do
  expect_rc 1 "CUDA_VISIBLE_DEVICES='$value'" -- env CUDA_VISIBLE_DEVICES="$value" \
    LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" "$PREFLIGHT" --only 'gpu.count,gpu.busy' --format json
  expect_eq "$(check_status gpu.count)" FAIL "gpu.count with '$value'"
  expect_contains "$(summary_of gpu.count)" "the job will see no GPU" "gpu.count with '$value'"
  expect_eq "$(check_status gpu.busy)" FAIL "gpu.busy with '$value'"
  expect_contains "$(summary_of gpu.busy)" "the job will see no GPU" "gpu.busy with '$value'"
done

# GPU and node health on the fake 8-GPU node: healthy by default; one fault per GPU in
# health-faults.json, each named by its check.
health='gpu.memory_health,gpu.clocks,gpu.links,gpu.fabric'
expect_rc 0 "health checks on a healthy node" -- with_gpu h100x8-healthy --only "$health" --format json
for id in gpu.memory_health gpu.clocks gpu.links; do expect_eq "$(check_status $id)" PASS "$id healthy"; done
expect_rc 1 "health faults" -- with_gpu health-faults --only "$health" --format json
expect_eq "$(check_status gpu.memory_health)" FAIL "gpu.memory_health"
expect_contains "$(summary_of gpu.memory_health)" "a row remap waits for a GPU reset on GPU 0 (00000000:18:00.0)" "remap pending"
expect_contains "$(summary_of gpu.memory_health)" "GPU 1 (00000000:2A:00.0): 2 uncorrectable (double-bit) ECC error(s)" "DBE"
expect_contains "$(summary_of gpu.memory_health)" "NVML_ERROR_GPU_IS_LOST" "GPU lost"
expect_contains "$(summary_of gpu.memory_health)" "GPU 6 (00000000:BA:00.0): GPU reset required" "recovery action"
expect_eq "$(check_status gpu.links)" FAIL "gpu.links"
expect_contains "$(summary_of gpu.links)" "GPU 2 (00000000:3A:00.0): 2 of 18 NVLinks down (links 16, 17)" "NVLinks down"
expect_contains "$(summary_of gpu.links)" "GPU 3 (00000000:5D:00.0): PCIe Gen5 x8 under load, capable of Gen5 x16" "x8"
expect_contains "$(summary_of gpu.links)" "GPU 7 (00000000:DB:00.0):" "NVLink replays"
expect_eq "$(check_status gpu.clocks)" FAIL "gpu.clocks"
expect_contains "$(summary_of gpu.clocks)" "GPU 4 (00000000:9A:00.0): hardware slowdown" "HW slowdown"
expect_eq "$(check_status gpu.fabric)" FAIL "gpu.fabric"
expect_contains "$(summary_of gpu.fabric)" "NVSwitch fabric not started on GPU 7 (00000000:DB:00.0)" "fabric"

# gpu.xid on a tree whose /dev/kmsg holds the multi-line "fallen off the bus" report (no Xid line).
mkdir -p "$work/kmsg/dev" && cp "$PREFLIGHT_FIXTURES_DIR/kmsg/fallen-off-bus-multiline.kmsg" "$work/kmsg/dev/kmsg"
expect_rc 1 "fallen off the bus in the kernel log" -- "$PREFLIGHT" --sysroot "$work/kmsg" --only gpu.xid --format json
expect_eq "$(check_status gpu.xid)" FAIL "gpu.xid"
expect_contains "$(summary_of gpu.xid)" "0000:b3:00.0: fallen off the bus (2h00m after boot)" "gpu.xid summary"

# gpu.xid and the XIDs NVML reports while preflight's own GPU work runs (the health load, the
# smoke test): live, whatever this machine's kernel log holds or lets us read.
expect_rc 1 "a fatal Xid raised while preflight ran" -- with_gpu xid-fatal-gpu3 --only gpu.xid --format json
expect_eq "$(check_status gpu.xid)" FAIL "gpu.xid (fatal NVML event)"
expect_contains "$(summary_of gpu.xid)" "GPU 3 (00000000:5D:00.0): Xid 79 raised while preflight ran" "gpu.xid summary"
expect_contains "$(summary_of gpu.xid)" "GPU has fallen off the bus" "gpu.xid action"
expect_rc 0 "an application Xid raised while preflight ran" -- with_gpu xid-application --only gpu.xid --format json
expect_eq "$(check_status gpu.xid)" WARN "gpu.xid (application NVML event)"
expect_contains "$(summary_of gpu.xid)" "GPU 1 (00000000:2A:00.0): Xid 13 raised while preflight ran" "gpu.xid summary"
# ... and during the NCCL all_reduce (the fake raises Xid 74 on GPU 1 only in a process running
# NCCL): gpu.xid was judged before the all_reduce ran, and is judged again after it.
expect_rc 1 "a fatal Xid raised during the all_reduce" -- with_gpu xid-during-allreduce-gpu1 \
  --only 'gpu.xid,comm.allreduce' --allreduce-bytes 1M --format json
expect_eq "$(check_status gpu.xid)" FAIL "gpu.xid (an Xid during the all_reduce)"
expect_contains "$(summary_of gpu.xid)" "GPU 1 (00000000:2A:00.0): Xid 74 raised while preflight ran" "gpu.xid summary"
expect_contains "$(summary_of gpu.xid)" "the NCCL all_reduce" "gpu.xid names the work it was raised in"
expect_eq "$(check_status comm.allreduce)" PASS "comm.allreduce (the collective itself completed)"
# Without the all_reduce nothing raises it: the health load and the smoke test watched the same GPU.
expect_rc 0 "the same node without the all_reduce" -- with_gpu xid-during-allreduce-gpu1 --only gpu.xid --format json
case $(check_status gpu.xid) in FAIL) fail "gpu.xid FAILs without the all_reduce: $(summary_of gpu.xid)" ;;
  *) pass "gpu.xid without the all_reduce: $(check_status gpu.xid)" ;; esac

# The same judged elsewhere (--sysroot over a capture of the fake node) where the kernel log could
# not be read there: PASS saying its scope when the events covered every GPU, UNKNOWN naming the
# GPU they did not cover, and naming the driver that has no event functions.
unreadable_log() {  # unreadable_log TREE: the capture's kernel log as an unprivileged run reads it
  "${PYTHON3:-python3}" - "$1/facts/gpu.json" <<'PY'
import json, sys
path = sys.argv[1]
doc = json.load(open(path))
doc["kernel_log"] = {"error": "permission_denied", "source": "/dev/kmsg",
                     "detail": "/dev/kmsg: Operation not permitted (reading the kernel log needs CAP_SYSLOG "
                               "(or kernel.dmesg_restrict=0); in a container --cap-add syslog, or run preflight on the host)"}
json.dump(doc, open(path, "w"))
PY
}
for scenario in h100x8-healthy xid-events-unsupported-gpu7 nvml-no-events; do
  mkdir -p "$work/xid-$scenario" && as_capture "$work/xid-$scenario" "$scenario" "" && unreadable_log "$work/xid-$scenario"
done
expect_rc 0 "no Xid during preflight's work, kernel log unreadable" -- "$PREFLIGHT" --sysroot "$work/xid-h100x8-healthy" \
  --only gpu.xid --format json
expect_eq "$(check_status gpu.xid)" PASS "gpu.xid (NVML events on every GPU)"
expect_contains "$(summary_of gpu.xid)" "no XID during preflight's own GPU work on 8 GPUs (NVML events); this boot's earlier kernel log was not readable" "scoped PASS"
expect_contains "$(summary_of gpu.xid)" "CAP_SYSLOG" "scoped PASS names the capability"
expect_rc 3 "NVML events unsupported on GPU 7, kernel log unreadable" -- "$PREFLIGHT" \
  --sysroot "$work/xid-xid-events-unsupported-gpu7" --only gpu.xid --format json
expect_eq "$(check_status gpu.xid)" UNKNOWN "gpu.xid (GPU 7 not covered)"
expect_contains "$(summary_of gpu.xid)" "CAP_SYSLOG" "UNKNOWN names the capability"
expect_contains "$(summary_of gpu.xid)" "not GPU 7 (00000000:DB:00.0): XID events not supported on this GPU" "UNKNOWN names GPU 7"
expect_rc 3 "a driver without NVML events, kernel log unreadable" -- "$PREFLIGHT" --sysroot "$work/xid-nvml-no-events" \
  --only gpu.xid --format json
expect_eq "$(check_status gpu.xid)" UNKNOWN "gpu.xid (no NVML events)"
expect_contains "$(summary_of gpu.xid)" "driver 418.67 has no nvmlEventSetCreate" "UNKNOWN names the driver"

# One lost GPU among eight (NVML_ERROR_GPU_IS_LOST on GPU 3, CUDA lists the other seven): every
# check that reads GPU 3 names it with its cause, the seven others are still judged, and neither
# gpu.count nor gpu.xid PASSes the node.
# The findings other than PASS of each check, by check, on the healthy node of the same GPUs.
not_pass_codes() { json_get "[f['code'] for c in d['checks'] if c['id']=='$1' for f in c['findings'] if f['status']!='PASS' and f['code']!='$1/gpu-lost']"; }
gpu_checks="gpu.count gpu.xid gpu.memory_health gpu.clocks gpu.links gpu.fabric topo.p2p"
with_gpu h100x8-healthy --only 'gpu.*,topo.p2p' --format json >"$work/out" 2>/dev/null || true
declare -A healthy_codes
for id in $gpu_checks; do healthy_codes[$id]=$(not_pass_codes $id); done
expect_rc 1 "GPU 3 lost" -- with_gpu gpu3-lost --only 'gpu.*,topo.p2p' --format json
for id in $gpu_checks; do
  expect_eq "$(check_status $id)" FAIL "$id (GPU 3 lost)"
  expect_contains "$(summary_of $id)" "GPU 3 (00000000:5D:00.0): nvml" "$id names GPU 3 and the call"
  expect_contains "$(summary_of $id)" "NVML_ERROR_GPU_IS_LOST" "$id names the cause"
  expect_contains "$(json_get "[f['code'] for c in d['checks'] if c['id']=='$id' for f in c['findings']]")" \
    "'$id/gpu-lost'" "$id: GPU 3 lost is a finding"
  expect_eq "$(not_pass_codes $id)" "${healthy_codes[$id]}" "$id: the seven others judged as on a healthy node"
done
expect_eq "$(check_status gpu.busy)" PASS "gpu.busy judges the GPUs CUDA lists"
expect_contains "$(summary_of gpu.busy)" "the 7 GPUs this job will use" "gpu.busy summary"
expect_eq "$(json_get "sorted(g['index'] for c in d['checks'] if c['id']=='gpu.clocks' for g in c['evidence']['gpus'] if g['samples'] >= 2)")" \
  "[0, 1, 2, 4, 5, 6, 7]" "gpu.clocks sampled the seven healthy GPUs under load"
expect_eq "$(json_get "[len([p for p in c['evidence']['peer_copies'] if p['ok']]) for c in d['checks'] if c['id']=='topo.p2p'][0]")" \
  42 "topo.p2p verified the peer copies of the seven healthy GPUs"
expect_eq "$(json_get "[len(c['evidence']['pairs']) for c in d['checks'] if c['id']=='topo.p2p'][0]")" \
  21 "topo.p2p judged the pairs of the seven healthy GPUs"

# gpu.clocks: a constant power brake (GPU 2) is seen in every sample, two at least: FAIL, not the
# "once" WARN.
expect_rc 1 "a constant power brake" -- with_gpu power-brake-gpu2 --only gpu.clocks --format json
expect_eq "$(check_status gpu.clocks)" FAIL "gpu.clocks (constant power brake)"
expect_contains "$(summary_of gpu.clocks)" "GPU 2 (00000000:3A:00.0): hardware power brake in" "gpu.clocks summary"

finish
