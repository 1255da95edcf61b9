// SPDX-License-Identifier: MIT
// gpu.memory_health: the memory faults a GPU carries into the job — a row remap that failed or
// waits for a reset, uncorrectable ECC errors, pre-Ampere page retirement pending, a GPU that is
// lost or whose driver asks for a reset, reboot or drain.
#include <array>

#include "checks/check.hpp"
#include "checks/gpu_health_common.hpp"

namespace preflight {
namespace gpu_memory_health_check {
namespace {

constexpr unsigned kMaxUncorrectableRemaps = 512;  // DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE, sichek
constexpr unsigned kMaxRetiredPages = 63;          // DCGM: retired pages >= 63 fail

const char* recovery_text(int action) {
  switch (action) {
    case kRecoveryGpuReset: return "GPU reset required";
    case kRecoveryNodeReboot: return "node reboot required";
    case kRecoveryDrainP2p: return "drain peer-to-peer traffic, then reset";
    case kRecoveryDrainAndReset: return "drain and reset";
    default: return "recovery action";
  }
}

nlohmann::json evidence_of(const GpuHealth& g) {
  return {{"index", g.index},
          {"pci_bus_id", g.pci_bus_id},
          {"mig_enabled", g.mig_enabled},
          {"persistence_mode", g.persistence_mode},
          {"lost", g.lost},
          {"remap_correctable", g.remap_correctable},
          {"remap_uncorrectable", g.remap_uncorrectable},
          {"remap_pending", g.remap_pending},
          {"remap_failure", g.remap_failure},
          {"remap_banks_exhausted", g.remap_banks_exhausted},
          {"retired_pages_pending", g.retired_pages_pending},
          {"retired_pages_dbe", g.retired_pages_dbe},
          {"retired_pages_sbe", g.retired_pages_sbe},
          {"ecc_enabled", g.ecc_enabled},
          {"ecc_pending_enabled", g.ecc_pending_enabled},
          {"ecc_dbe_volatile", g.ecc_dbe_volatile},
          {"ecc_dbe_aggregate", g.ecc_dbe_aggregate},
          {"recovery_action", g.recovery_action},
          {"unavailable", g.unavailable}};
}

#define PREFLIGHT_REPLACE_GPU_FIX "The GPU's memory is failing: drain the node and replace the GPU."
#define PREFLIGHT_RESET_FOR_REMAP_FIX                                                                   \
  "Reset the GPU before the job (`nvidia-smi -r -i <gpu>` with no process on it, or reboot the node): " \
  "the remap is applied only then."
constexpr FindingSpec kNoGpu = {"gpu.memory_health/no-gpu", Status::Skip,
                                "NVML lists no GPU on this node: no GPU memory to check", ""};
constexpr FindingSpec kGpuLost = {"gpu.memory_health/gpu-lost", Status::Fail, kLostGpuMessage, kLostGpuRemedy};
constexpr FindingSpec kRemapFailed = {
    "gpu.memory_health/remap-failed", Status::Fail,
    "row remapping failed on {failed_gpus} (a memory bank has no spare row left)",
    "Drain the node and have the GPU replaced (an RMA case: `nvidia-smi -q -d ROW_REMAPPER` shows "
    "\"Remapping Failure Occurred: Yes\"); the job would hit the faulty rows."};
constexpr FindingSpec kRemapPending = {"gpu.memory_health/remap-pending", Status::Fail,
                                       "a row remap waits for a GPU reset on {pending_gpus}",
                                       PREFLIGHT_RESET_FOR_REMAP_FIX};
constexpr FindingSpec kRemapPendingJob = {
    "gpu.memory_health/remap-pending-job", Status::Warn,
    "a row remap waits for a GPU reset on {pending_gpus} (running jobs may continue; the remap takes effect at the "
    "next reset)",
    PREFLIGHT_RESET_FOR_REMAP_FIX};
constexpr FindingSpec kManyUncorrectableRemaps = {"gpu.memory_health/many-uncorrectable-remaps", Status::Fail,
                                                  "{remapped} (at least {remap_limit})", PREFLIGHT_REPLACE_GPU_FIX};
constexpr FindingSpec kRecoveryAction = {
    "gpu.memory_health/recovery-action", Status::Fail, "the driver asks for recovery: {recovery}",
    "Do what the driver asks before any job: stop every process on the GPU and `nvidia-smi -r -i <gpu>` (GPU "
    "reset), reboot the node (node reboot), or drain it first (drain and reset)."};
constexpr FindingSpec kDoubleBitErrors = {
    "gpu.memory_health/double-bit-errors", Status::Fail, "{dbe_errors} since the driver loaded",
    "Uncorrectable memory errors kill the job that meets them: drain the node, reset the GPU (`nvidia-smi -r`) "
    "to apply the row remaps, and replace it if the errors come back (`nvidia-smi -q -d ECC`)."};
constexpr FindingSpec kRetirementPending = {
    "gpu.memory_health/retirement-pending", Status::Fail, "page retirement waits for a reboot on {retired_gpus}",
    "Reboot the node (or reset the GPU) so the retired pages are blacklisted before a job uses them."};
constexpr FindingSpec kManyRetiredPages = {"gpu.memory_health/many-retired-pages", Status::Fail,
                                           "{retired_pages} (at least {retired_limit})", PREFLIGHT_REPLACE_GPU_FIX};
constexpr FindingSpec kBankExhausted = {
    "gpu.memory_health/bank-exhausted", Status::Warn, "{exhausted}",
    "The GPU has used up the spare rows of a bank: the next failure there cannot be remapped. Plan to "
    "replace it; `nvidia-smi -q -d ROW_REMAPPER` shows the histogram."};
constexpr FindingSpec kEccChangePending = {
    "gpu.memory_health/ecc-change-pending", Status::Warn, "an ECC mode change is pending: {ecc_changes}",
    "Reboot the node (or reset the GPU) to apply the ECC mode, or set it back (`nvidia-smi -e 1`)."};
constexpr FindingSpec kEccOff = {
    "gpu.memory_health/ecc-off", Status::Warn, "ECC is off on {ecc_off_gpus}: memory errors go undetected",
    "Enable ECC (`nvidia-smi -e 1`, then reboot) unless the fleet runs without it on purpose."};
constexpr FindingSpec kUnreadable = {
    "gpu.memory_health/unreadable", Status::Unknown, "memory health not readable: {unread}",
    "Run preflight with a driver that reports row remapping (R450 or newer) and with MIG off, or check by hand "
    "with `nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT,ECC`."};
constexpr FindingSpec kHealthy = {
    "gpu.memory_health/healthy", Status::Pass,
    "{gpu_count}: no row remap failed or pending, no uncorrectable ECC error, no recovery action", ""};
#undef PREFLIGHT_REPLACE_GPU_FIX
#undef PREFLIGHT_RESET_FOR_REMAP_FIX

// The GPU checks' shared findings, and health facts the helper was not run for.
constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("gpu.memory_health", "")};
constexpr FindingSpec kHealthNotRead = {"gpu.memory_health/health-not-read", Status::Unknown, kHealthNotReadMessage,
                                        kHealthNotReadFix};
constexpr auto kFindings = with_shared(
    kShared, std::array{kHealthNotRead, kNoGpu, kGpuLost, kRemapFailed, kRemapPending, kRemapPendingJob,
                        kManyUncorrectableRemaps, kRecoveryAction, kDoubleBitErrors, kRetirementPending,
                        kManyRetiredPages, kBankExhausted, kEccChangePending, kEccOff, kUnreadable, kHealthy});

Verdict run(const CheckContext& ctx) {
  const HealthView view = node_health(ctx, "the GPUs' memory health (NVML)", kShared, kHealthNotRead);
  if (view.verdict) return *view.verdict;
  const GpuHealthFacts& h = *view.facts;
  VerdictBuilder b;
  nlohmann::json per_gpu = nlohmann::json::array();
  for (const GpuHealth& g : h.gpus) per_gpu.push_back(evidence_of(g));
  b.evidence()["gpus"] = std::move(per_gpu);
  if (h.gpus.empty()) return Verdict::of(kNoGpu, nlohmann::json::object(), b.evidence());
  add_lost_gpus(b, h, kGpuLost);
  const bool acceptance = ctx.profile == Profile::Node;
  std::vector<std::string> failed, pending, many, exhausted, dbe, retired, retired_many, ecc_off, ecc_change, recovery,
      unknown, volatile_note;
  for (const GpuHealth& g : h.gpus) {
    if (!g.lost.empty()) continue;
    const std::string who = health_gpu_text(g);
    if (g.remap_failure.value_or(false)) failed.push_back(who);
    if (g.remap_pending.value_or(false)) pending.push_back(who);
    if (g.remap_uncorrectable.value_or(0) >= kMaxUncorrectableRemaps)
      many.push_back(who + ": " + std::to_string(*g.remap_uncorrectable) + " rows remapped for uncorrectable errors");
    if (g.remap_banks_exhausted.value_or(0) > 0)
      exhausted.push_back(who + ": " + std::to_string(*g.remap_banks_exhausted) +
                          " memory bank(s) without a spare row");
    if (g.ecc_dbe_volatile.value_or(0) > 0) {
      dbe.push_back(who + ": " + std::to_string(*g.ecc_dbe_volatile) + " uncorrectable (double-bit) ECC error(s)");
    }
    if (g.retired_pages_pending.value_or(false)) retired.push_back(who);
    if (g.retired_pages_dbe.value_or(0) + g.retired_pages_sbe.value_or(0) >= kMaxRetiredPages)
      retired_many.push_back(who + ": " +
                             std::to_string(g.retired_pages_dbe.value_or(0) + g.retired_pages_sbe.value_or(0)) +
                             " pages retired");
    if (g.ecc_enabled && !*g.ecc_enabled) ecc_off.push_back(who);
    if (g.ecc_enabled && g.ecc_pending_enabled && *g.ecc_enabled != *g.ecc_pending_enabled)
      ecc_change.push_back(who + std::string(": ECC ") + (*g.ecc_enabled ? "on" : "off") + " now, " +
                           (*g.ecc_pending_enabled ? "on" : "off") + " after the next reboot");
    if (g.recovery_action.value_or(kRecoveryNone) != kRecoveryNone)
      recovery.push_back(who + ": " + recovery_text(*g.recovery_action) + " (recovery action " +
                         std::to_string(*g.recovery_action) + ")");
    // Neither row remapping (Ampere and newer) nor page retirement (older) could be read: unknown.
    if (!g.remap_pending && !g.retired_pages_pending) {
      unknown.push_back(who + ": " + unavailable_text(g, "remapped_rows") +
                        (g.mig_enabled.value_or(false) ? " (under MIG NVML does not report row remapping)" : "") +
                        "; " + unavailable_text(g, "retired_pages"));
    }
    if (g.ecc_dbe_volatile && !g.persistence_mode.value_or(true)) volatile_note.push_back(who);
  }
  if (!failed.empty()) b.add(kRemapFailed, {{"failed_gpus", list_text(failed)}});
  if (!pending.empty()) b.add(acceptance ? kRemapPending : kRemapPendingJob, {{"pending_gpus", list_text(pending)}});
  if (!many.empty())
    b.add(kManyUncorrectableRemaps, {{"remapped", list_text(many)}, {"remap_limit", kMaxUncorrectableRemaps}});
  if (!recovery.empty()) b.add(kRecoveryAction, {{"recovery", list_text(recovery)}});
  if (!dbe.empty()) b.add(kDoubleBitErrors, {{"dbe_errors", list_text(dbe)}});
  if (!retired.empty()) b.add(kRetirementPending, {{"retired_gpus", list_text(retired)}});
  if (!retired_many.empty()) {
    b.add(kManyRetiredPages, {{"retired_pages", list_text(retired_many)}, {"retired_limit", kMaxRetiredPages}});
  }
  if (!exhausted.empty()) b.add(kBankExhausted, {{"exhausted", list_text(exhausted)}});
  if (!ecc_change.empty()) b.add(kEccChangePending, {{"ecc_changes", list_text(ecc_change)}});
  if (!ecc_off.empty()) b.add(kEccOff, {{"ecc_off_gpus", list_text(ecc_off)}});
  if (!unknown.empty()) b.add(kUnreadable, {{"unread", list_text(unknown, 4)}});
  if (!volatile_note.empty()) {
    b.note(
        "persistence mode is off on " + list_text(volatile_note) +
        ": the volatile ECC counters restart whenever the driver loads again, so errors of earlier jobs may be gone");
  }
  if (b.status() == Status::Pass) {
    b.add(kHealthy, {{"gpu_count", std::to_string(h.gpus.size()) + (h.gpus.size() == 1 ? " GPU" : " GPUs")}});
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  From the contained GPU helper's health run (once per node, NVML, unprivileged), per GPU:
  nvmlDeviceGetRemappedRows (rows remapped for correctable / uncorrectable errors, a remap
  pending, a remap failure; Ampere and newer) and the row remapper histogram; page retirement
  (nvmlDeviceGetRetiredPagesPendingStatus, nvmlDeviceGetRetiredPages; before Ampere); the ECC mode
  now and after the next reboot (nvmlDeviceGetEccMode); the volatile and aggregate uncorrectable
  ECC counts (nvmlDeviceGetTotalEccErrors); the GPU recovery action (NVML field 230, R570; the
  reset and drain-and-reset status fields 226/227 on R560); and NVML_ERROR_GPU_IS_LOST /
  NVML_ERROR_RESET_REQUIRED from any of these calls. A function the driver does not export leaves
  its fact empty ("driver 470.82.01 has no nvmlDeviceGetRemappedRows"), never a crash.

Failures
  FAIL     a GPU is lost or needs a reset (NVML_ERROR_GPU_IS_LOST / NVML_ERROR_RESET_REQUIRED).
  FAIL     row remapping failed (no spare row left in a bank), or 512 or more rows remapped for
           uncorrectable errors: the GPU's memory is failing.
  FAIL     a row remap waits for a GPU reset (node profile: verifying a node); WARN in the job
           profile, where NVIDIA documents that running and new work may continue until the reset.
  FAIL     uncorrectable (double-bit) ECC errors since the driver loaded (volatile counter > 0).
  FAIL     the driver reports a recovery action: GPU reset, node reboot, drain P2P, drain and reset.
  FAIL     pre-Ampere: page retirement pending, or 63 or more pages retired.
  WARN     a memory bank without a spare row (histogram "none" > 0); ECC off; an ECC mode change
           pending a reboot.
  UNKNOWN  neither row remapping nor page retirement could be read for a GPU (the reason is named:
           MIG enabled, the driver lacks the function, not supported); the helper did not run.
  SKIP     in the image profile; NVML lists no GPU.
  With persistence mode off the volatile ECC counters restart whenever the driver loads again:
  the verdict says so.

Fix
  `nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT,ECC` shows the same counters. A pending remap or a
  recovery action is cleared by a GPU reset (`nvidia-smi -r -i GPU`, no process on it) or a reboot;
  a failed remap, many uncorrectable remaps or recurring double-bit errors mean the GPU must be
  replaced: drain the node.)EXPLAIN";

}  // namespace

extern const CheckSpec kGpuMemoryHealth = {
    "gpu.memory_health",
    Scope::Node,
    "no GPU carries a memory fault: row remap failed or pending, uncorrectable ECC, reset required",
    kExplain,
    kInNode | kInJob,
    "an image build has no GPU",
    &run,
    "gpu_health,gpu_driver",
    true,
    "driver.loaded",
    {},
    nullptr,
    kFindings};

}  // namespace gpu_memory_health_check
}  // namespace preflight
