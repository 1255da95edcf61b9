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
#include "core/facts/gpu_health.hpp"

namespace preflight {

/// The node's health facts: those of the first rank of the node that gathered them. When none did,
/// `verdict` is what the check answers (FAIL without a driver, FAIL when the helper crashed or
/// hung, UNKNOWN when it could not run, SKIP in the image profile).
struct HealthView {
  const GpuHealthFacts* facts = nullptr;
  std::optional<Verdict> verdict;
};
HealthView node_health(const CheckContext& ctx, std::string_view what);

/// "GPU 3 (00000000:5D:00.0)".
std::string health_gpu_text(const GpuHealth& g);

/// Why `fact` of this GPU is empty, or "not reported".
std::string unavailable_text(const GpuHealth& g, const std::string& fact);

/// FAIL findings for GPUs that are lost or need a reset (NVML_ERROR_GPU_IS_LOST /
/// NVML_ERROR_RESET_REQUIRED from any call); true when any was added.
bool add_lost_gpus(VerdictBuilder& b, const GpuHealthFacts& h);

extern const std::string_view kLostGpuRemedy;

/// "3, 5 and 7" of up to `most` items, then "and N more".
std::string list_text(const std::vector<std::string>& items, std::size_t most = 6);

}  // namespace preflight
