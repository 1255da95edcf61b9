// SPDX-License-Identifier: MIT
// cuda.smoke: on this rank's GPU, in a contained helper process: init, context, allocate, write a
// pattern, read it back. A crash (signal), a hang (deadline) or wrong data is a FAIL naming it.
#include <array>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_common.hpp"
#include "core/text.hpp"

namespace preflight {
namespace cuda_smoke_check {
namespace {

constexpr std::string_view kNeedsGpu = "the job needs a GPU";

std::string seconds_text(double s) { return format_duration(s); }

bool mentions(std::string_view text, std::string_view needle) { return text.find(needle) != std::string_view::npos; }

/// "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0)" from what CUDA reported about the ordinal.
std::string device_text(const DriverFacts& d, int ordinal) {
  std::string s = "GPU " + std::to_string(ordinal);
  if (const std::vector<CudaDevice>* devs = d.cuda_devices.value()) {
    for (const CudaDevice& c : *devs) {
      if (c.ordinal != ordinal) continue;
      std::vector<std::string> parts;
      if (!c.name.empty()) parts.push_back(c.name);
      if (!c.pci_bus_id.empty()) parts.push_back(c.pci_bus_id);
      if (!parts.empty()) s += " (" + join(parts, ", ") + ")";
    }
  }
  return s;
}

// The GPU checks' shared findings (no driver; a GPU fact the helper could not deliver).
constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("cuda.smoke", "")};
constexpr FindingSpec kNoDevice = {
    "cuda.smoke/no-device", Status::Fail, "no CUDA device visible to this rank ({why}); the job needs a GPU",
    "Give the rank a GPU: check CUDA_VISIBLE_DEVICES, `docker run --gpus …`, the Slurm --gpus/--gres request, and "
    "gpu.count."};
// The helper ran past its deadline: {hang} is the probe's message where it names the helper and its
// deadline, else "the CUDA smoke test did not finish within …"; {from}: " [{source}]" (the probe), or "".
constexpr FindingSpec kHang = {"cuda.smoke/hang", Status::Fail, "{hang}{from}", kHelperHungFix};
constexpr FindingSpec kCrashed = {"cuda.smoke/crashed", Status::Fail, "the CUDA smoke test died: {why}",
                                  kHelperCrashedFix};
// What kept it from running ({reason}): the CUDA devices could not be listed, an error gpu.count
// reports with its own fix.
constexpr FindingSpec kNotRun = {
    "cuda.smoke/not-run", Status::Fail, "the CUDA smoke test was not run: {reason}; the job needs a GPU",
    "The test needs the rank's CUDA devices listed first: fix what kept them from it (gpu.count reports the same "
    "error with its fix; see driver.loaded), then run preflight again."};
constexpr FindingSpec kNotRunUnknown = {
    "cuda.smoke/not-run-unknown", Status::Unknown, "the CUDA smoke test was not run: {reason}",
    "Run preflight on the node itself, as the job's user, so its GPU helper can list the CUDA devices (see "
    "gpu.count)."};
// A step of the test failed, by the fix its error calls for.
#define PREFLIGHT_STEP_FAILED "CUDA smoke test on {device} failed at {step}: {error}"
constexpr FindingSpec kWrongData = {
    "cuda.smoke/wrong-data", Status::Fail, PREFLIGHT_STEP_FAILED,
    "The GPU returned different data than was written: do not train on it. Drain the node, check "
    "`nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` and `dmesg | grep -i Xid` (48, 63, 64, 94, 95), run "
    "`dcgmi diag -r 3`; reset the GPU (`nvidia-smi -r -i <gpu>`) and, if it repeats, send it for repair."};
constexpr FindingSpec kDriverMismatch = {
    "cuda.smoke/driver-mismatch", Status::Fail, PREFLIGHT_STEP_FAILED,
    "The user-space driver and the kernel module differ: reboot (or reload the nvidia module) after the driver "
    "upgrade; see driver.loaded."};
constexpr FindingSpec kOutOfMemory = {"cuda.smoke/out-of-memory", Status::Fail, PREFLIGHT_STEP_FAILED,
                                      "The GPU's memory is taken: see gpu.busy for the processes holding it."};
constexpr FindingSpec kNoUsableGpu = {
    "cuda.smoke/no-usable-gpu", Status::Fail, PREFLIGHT_STEP_FAILED,
    "No usable GPU for this rank: check CUDA_VISIBLE_DEVICES, the container's --gpus, and gpu.count."};
constexpr FindingSpec kFabricNotReady = {
    "cuda.smoke/fabric-not-ready", Status::Fail, PREFLIGHT_STEP_FAILED,
    "On NVSwitch systems start nvidia-fabricmanager (same release as the driver) and wait for it."};
constexpr FindingSpec kGpuExclusive = {
    "cuda.smoke/gpu-exclusive", Status::Fail, PREFLIGHT_STEP_FAILED,
    "The GPU is in an exclusive compute mode and another process holds it: see gpu.busy, or `nvidia-smi -c DEFAULT` "
    "where exclusivity is not wanted."};
constexpr FindingSpec kStepFailed = {
    "cuda.smoke/step-failed", Status::Fail, PREFLIGHT_STEP_FAILED,
    "The job's first GPU calls will fail the same way at {failed_step}. Check `nvidia-smi` and "
    "`dmesg | grep -i -e NVRM -e Xid`; see driver.loaded and cuda.runtime."};
#undef PREFLIGHT_STEP_FAILED
constexpr FindingSpec kPassed = {"cuda.smoke/passed", Status::Pass,
                                 "wrote and read back {bytes} on {device} in {seconds}", ""};

constexpr auto kFindings =
    with_shared(kShared, std::array{kNoDevice, kHang, kCrashed, kNotRun, kNotRunUnknown, kWrongData, kDriverMismatch,
                                    kOutOfMemory, kNoUsableGpu, kFabricNotReady, kGpuExclusive, kStepFailed, kPassed});

/// The finding of a failed step, by the fix its error calls for.
const FindingSpec& step_finding(const SmokeResult& r) {
  const std::string& e = r.error;
  if (r.failed_step == "verify" || mentions(e, "wrong data") || mentions(e, "wrote 0x")) return kWrongData;
  if (mentions(e, "803") || mentions(e, "MISMATCH")) return kDriverMismatch;
  if (mentions(e, "OUT_OF_MEMORY") || mentions(e, "(2)")) return kOutOfMemory;
  if (mentions(e, "NO_DEVICE") || mentions(e, "(100)") || mentions(e, "INVALID_DEVICE") || mentions(e, "(101)")) {
    return kNoUsableGpu;
  }
  if (mentions(e, "SYSTEM_NOT_READY") || mentions(e, "(802)")) return kFabricNotReady;
  if (mentions(e, "DEVICES_UNAVAILABLE") || mentions(e, "(46)")) return kGpuExclusive;
  return kStepFailed;
}

Verdict run(const CheckContext& ctx) {
  const DriverFacts& d = ctx.facts.gpu.driver;
  if (std::optional<GpuShared> none = no_driver(d, kNeedsGpu)) return shared_verdict(kShared, *none);

  nlohmann::json ev = {{"local_rank", ctx.facts.placement.local_rank}};
  if (!d.helper.empty()) ev["helper"] = d.helper;
  if (const std::optional<std::string> cvd = ctx.facts.env.get("CUDA_VISIBLE_DEVICES"))
    ev["CUDA_VISIBLE_DEVICES"] = *cvd;

  const SmokeResult* r = d.smoke.value();
  if (r == nullptr) {
    const ProbeError& err = *d.smoke.error();
    // No device to test on: name that rather than a step.
    if (const std::vector<CudaDevice>* devs = d.cuda_devices.value(); devs != nullptr && devs->empty()) {
      return Verdict::of(kNoDevice, {{"why", d.smoke.why()}}, ev);
    }
    if (hung_probe(err)) {  // a probe before it hung: the smoke test never started
      GpuShared hung = missing_gpu_fact(err, d.smoke.source(), "the CUDA smoke test result", {});
      hung.evidence.update(ev);
      return shared_verdict(kShared, hung);
    }
    if (err.code == ProbeErrc::Timeout) {
      std::string what = err.detail;
      if (!mentions(what, "within")) what = "did not finish within its deadline (" + what + ")";
      // The probe's message names the helper, its deadline and --timeout: it stands on its own.
      const bool named = what.starts_with("the GPU smoke test helper");
      nlohmann::json evidence = gpu_fact_evidence(err, d.smoke.source());
      evidence.update(ev);
      nlohmann::json params = {{"hang", named ? what : "the CUDA smoke test " + what},
                               {"from", part_if(!d.smoke.source().empty(), " [{source}]")}};
      if (!d.smoke.source().empty()) params["source"] = d.smoke.source();
      return Verdict::of(kHang, std::move(params), evidence);
    }
    if (err.code == ProbeErrc::Crashed) {
      nlohmann::json evidence = gpu_fact_evidence(err, d.smoke.source());
      evidence.update(ev);
      return Verdict::of(kCrashed, {{"why", d.smoke.why()}}, evidence);
    }
    GpuShared missing = missing_gpu_fact(err, d.smoke.source(), "the CUDA smoke test result", kNeedsGpu);
    missing.evidence.update(ev);
    // A test that never ran has no result to read: say it was not run, and why.
    if (err.detail.starts_with("not run: ")) {
      Verdict v = Verdict::of(missing.status() == Status::Fail ? kNotRun : kNotRunUnknown,
                              {{"reason", err.detail.substr(9)}}, missing.evidence);
      v.cause = missing.cause;
      return v;
    }
    return shared_verdict(kShared, missing);
  }

  ev["ordinal"] = r->ordinal;
  ev["bytes"] = r->bytes;
  ev["seconds"] = r->seconds;
  ev["ok"] = r->ok;
  const std::string dev = device_text(d, r->ordinal);
  if (!r->ok) {
    ev["failed_step"] = r->failed_step;
    ev["error"] = r->error;
    const std::string step = r->failed_step.empty() ? std::string("an unnamed step") : r->failed_step;
    return Verdict::of(
        step_finding(*r),
        {{"device", dev}, {"step", step}, {"error", printable(r->error, 200)}, {"failed_step", r->failed_step}}, ev);
  }
  return Verdict::of(kPassed,
                     {{"bytes", format_bytes(r->bytes)}, {"device", dev}, {"seconds", seconds_text(r->seconds)}}, ev);
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  The result of the smoke test the contained GPU helper ran on this rank's GPU (the ordinal the
  rank will use, under the rank's CUDA_VISIBLE_DEVICES): cuInit, a context, cuMemAlloc, a pattern
  written with cuMemsetD32, cuMemcpyDtoH, and a word-by-word comparison. The helper is a separate
  process started with posix_spawn (CUDA is not fork-safe) with a deadline; a signal or an expired
  deadline is recorded instead of a result.

Failures
  FAIL     a step returned an error, named with its CUDA error ("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)").
  FAIL     the data read back differs from what was written ("verify: word 17 is 0x00000000, wrote
           0x5AA5F00D"): a faulty GPU or memory — drain the node.
  FAIL     the helper crashed ("driver helper crashed with SIGSEGV after 0.2 s"): the job's first GPU
           call dies the same way (exit -11).
  FAIL     the helper did not finish within its deadline (15% of --timeout plus the cuInit time the
           driver helper measured; the message names it and its length): a GPU that never answers
           hangs the job's first GPU call; one only slow to initialise needs a larger --timeout.
  FAIL     no CUDA device is visible, or no driver at all (node and job profiles: the job needs a GPU).
  UNKNOWN  the smoke test did not run (nothing to judge; never PASS).
  SKIP     in the image profile: an image build has no GPU.

Fix
  Wrong data: `nvidia-smi -q -d ECC,ROW_REMAPPER`, `dmesg | grep Xid`, `dcgmi diag -r 3`, reset or
  repair the GPU. Crash or hang: see driver.loaded and cuda.runtime (a runtime newer than the
  driver, a stray libcuda), `dmesg | grep -i NVRM`; reset the GPU or reboot. No device:
  CUDA_VISIBLE_DEVICES, `--gpus`, the scheduler's GPU request.)EXPLAIN";

}  // namespace

extern const CheckSpec kCudaSmoke = {
    "cuda.smoke",
    Scope::Rank,
    "init, allocate, write and read back on the rank's GPU, in a contained child process",
    kExplain,
    kInNode | kInJob,
    "an image build has no GPU to run on",
    &run,
    "gpu_driver",
    false,
    "driver.loaded",
    {},
    nullptr,
    kFindings};

}  // namespace cuda_smoke_check
}  // namespace preflight
