// SPDX-License-Identifier: MIT
// What gpu.memory_health, gpu.clocks, gpu.links and gpu.fabric share: the health facts of the node
// (gathered once per node by the contained helper's `health` run, on the node's local rank 0) and
// the wording of a GPU and of a fact the driver could not give.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check.hpp"
#include "checks/gpu_common.hpp"
#include "core/facts/gpu_health.hpp"

namespace preflight {

/// The node's health facts: those of the first rank of the node that gathered them. When none did,
/// `verdict` is what the check answers (FAIL without a driver, FAIL when the helper crashed or
/// hung, UNKNOWN when it could not run, SKIP in the image profile).
struct HealthView {
  const GpuHealthFacts* facts = nullptr;
  std::optional<Verdict> verdict;
};
/// `shared`: the check's rows of the GPU checks' shared findings; `not_read`: its row for health
/// facts the helper was not run for (kHealthNotReadMessage, kHealthNotReadFix).
HealthView node_health(const CheckContext& ctx, std::string_view what, const GpuSharedRows& shared,
                       const FindingSpec& not_read);

/// The health helper was not run for this check (not selected, or NVML cannot be used at all):
/// {what} names the facts, {detail} why.
inline constexpr std::string_view kHealthNotReadMessage = "{what} not read: {detail}";
inline constexpr std::string_view kHealthNotReadFix =
    "Run preflight on the node in the node or job profile without --skip of this check (the GPU health helper runs "
    "once per node, on its local rank 0), or judge a `preflight capture` of the node with --sysroot.";

/// "GPU 3 (00000000:5D:00.0)".
std::string health_gpu_text(const GpuHealth& g);

/// Why `fact` of this GPU is empty, or "not reported".
std::string unavailable_text(const GpuHealth& g, const std::string& fact);

/// Each health check's FAIL finding for GPUs that are lost or need a reset (its table's
/// "<id>/gpu-lost" row) uses kLostGpuMessage and kLostGpuRemedy (checks/gpu_common.hpp).
/// The finding `spec` (kLostGpuMessage, kLostGpuRemedy) for GPUs that are lost or need a reset
/// (NVML_ERROR_GPU_IS_LOST / NVML_ERROR_RESET_REQUIRED from any call); true when it was added.
bool add_lost_gpus(VerdictBuilder& b, const GpuHealthFacts& h, const FindingSpec& spec);

/// "3, 5 and 7" of up to `most` items, then "and N more".
std::string list_text(const std::vector<std::string>& items, std::size_t most = 6);

}  // namespace preflight
