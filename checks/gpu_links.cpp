// SPDX-License-Identifier: MIT
// gpu.links: NVLinks down, NVLink errors that rise while the GPUs are busy, and PCIe links trained
// below what the GPU and the slot can do, judged under load (idle GPUs downshift their links).
#include <algorithm>
#include <array>

#include "checks/check.hpp"
#include "checks/gpu_health_common.hpp"
#include "core/text.hpp"

namespace preflight {
namespace gpu_links_check {
namespace {

constexpr double kMaxCrcPerSecond = 100.0;  // DCGM_LIMIT_MAX_NVLINK_CRC_ERROR

std::string links_text(const std::vector<int>& links) {
  std::vector<std::string> parts;
  for (const int l : links) parts.push_back(std::to_string(l));
  return join(parts, ", ");
}

#define PREFLIGHT_NVLINK_FIX                                                                                    \
  "Check `nvidia-smi nvlink --status` and `nvidia-smi nvlink -e`; a link down or erroring needs the GPU reset " \
  "(`nvidia-smi -r`), the fabric manager restarted, or the baseboard serviced: drain the node. NCCL routes "    \
  "around nothing: a missing link lowers every all_reduce's bandwidth."
#define PREFLIGHT_PCIE_FIX                                                                                \
  "A link trained below its width or generation: reseat the GPU or riser, check the slot's BIOS setting " \
  "(link speed forced lower), and compare with `nvidia-smi -q | grep -A4 'Link Width'` under load; "      \
  "`lspci -vv -s <bus id>` shows LnkSta against LnkCap."
constexpr FindingSpec kNoGpu = {"gpu.links/no-gpu", Status::Skip, "NVML lists no GPU on this node: no links to check",
                                ""};
constexpr FindingSpec kGpuLost = {"gpu.links/gpu-lost", Status::Fail, kLostGpuMessage, kLostGpuRemedy};
constexpr FindingSpec kNvlinkDown = {"gpu.links/nvlink-down", Status::Fail, "{links_down}", PREFLIGHT_NVLINK_FIX};
constexpr FindingSpec kNvlinkReplays = {"gpu.links/nvlink-replays", Status::Fail,
                                        "{nvlink_replays} during the load (should always be 0)", PREFLIGHT_NVLINK_FIX};
constexpr FindingSpec kNvlinkCrcHigh = {"gpu.links/nvlink-crc-high", Status::Fail,
                                        "{crc_errors} (100 per second or more)", PREFLIGHT_NVLINK_FIX};
constexpr FindingSpec kPcieNarrow = {"gpu.links/pcie-narrow", Status::Fail, "{narrow}", PREFLIGHT_PCIE_FIX};
constexpr FindingSpec kNvlinkFewer = {"gpu.links/nvlink-fewer", Status::Warn, "{fewer}", PREFLIGHT_NVLINK_FIX};
constexpr FindingSpec kNvlinkCrc = {"gpu.links/nvlink-crc", Status::Warn, "{crc_low}", PREFLIGHT_NVLINK_FIX};
constexpr FindingSpec kPcieSlow = {"gpu.links/pcie-slow", Status::Warn, "{slow}", PREFLIGHT_PCIE_FIX};
constexpr FindingSpec kPcieReplays = {
    "gpu.links/pcie-replays", Status::Warn, "{pcie_replays} (link errors the link layer retried)",
    "Rising PCIe replays mean a marginal link: reseat the GPU or riser; if it keeps rising, service the slot."};
// The counter counts since the driver loaded: a healthy link retries next to never, so thousands
// are a marginal link even when none came during preflight's short load.
constexpr unsigned kLifetimeReplaysWarn = 1000;
constexpr FindingSpec kPcieReplaysLifetime = {
    "gpu.links/pcie-replays-lifetime", Status::Warn,
    "{lifetime} PCIe replays since the driver loaded ({threshold} or more: a marginal link, though none came during "
    "preflight's short load)",
    "A healthy PCIe link retries next to never: watch `nvidia-smi -q -d PCIE` (Replays Since Reset) under the "
    "job's load; if it keeps rising, reseat the GPU or riser, or service the slot."};
constexpr FindingSpec kUnreadable = {
    "gpu.links/unreadable", Status::Unknown, "link state not readable: {unread}",
    "Run preflight with a driver that reports NVLink and PCIe link state, or check with `nvidia-smi nvlink "
    "--status` and `nvidia-smi -q -d PCIE`."};
constexpr FindingSpec kPcieIdle = {
    "gpu.links/pcie-idle", Status::Unknown,
    "PCIe link not judged for {idle}: not sampled busy ({load}); idle GPUs lower their link generation",
    "See cuda.smoke for why the GPUs could not be given work, then rerun preflight."};
constexpr FindingSpec kLinksHealthy = {
    "gpu.links/healthy", Status::Pass,
    "{gpu_count}: every NVLink up, no NVLink error during the load, PCIe at its maximum width and generation under "
    "load",
    ""};
#undef PREFLIGHT_NVLINK_FIX
#undef PREFLIGHT_PCIE_FIX

// The GPU checks' shared findings, and health facts the helper was not run for.
constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("gpu.links", "")};
constexpr FindingSpec kHealthNotRead = {"gpu.links/health-not-read", Status::Unknown, kHealthNotReadMessage,
                                        kHealthNotReadFix};
constexpr auto kFindings =
    with_shared(kShared, std::array{kHealthNotRead, kNoGpu, kGpuLost, kNvlinkDown, kNvlinkReplays, kNvlinkCrcHigh,
                                    kPcieNarrow, kNvlinkFewer, kNvlinkCrc, kPcieSlow, kPcieReplays,
                                    kPcieReplaysLifetime, kUnreadable, kPcieIdle, kLinksHealthy});

Verdict run(const CheckContext& ctx) {
  const HealthView view = node_health(ctx, "the GPUs' NVLink and PCIe link state (NVML)", kShared, kHealthNotRead);
  if (view.verdict) return *view.verdict;
  const GpuHealthFacts& h = *view.facts;
  VerdictBuilder b;
  nlohmann::json per_gpu = nlohmann::json::array();
  for (const GpuHealth& g : h.gpus) {
    per_gpu.push_back({{"index", g.index},
                       {"pci_bus_id", g.pci_bus_id},
                       {"mig_enabled", g.mig_enabled},
                       {"nvlinks_present", g.nvlinks_present},
                       {"nvlinks_up", g.nvlinks_up},
                       {"nvlinks_down", g.nvlinks_down},
                       {"nvlink_replay_delta", g.nvlink_replay_delta},
                       {"nvlink_crc_delta", g.nvlink_crc_delta},
                       {"pstate", g.pstate},
                       {"pcie_gen", g.pcie_gen},
                       {"pcie_width", g.pcie_width},
                       {"pcie_gen_max", g.pcie_gen_max},
                       {"pcie_width_max", g.pcie_width_max},
                       {"pcie_gen_gpu_max", g.pcie_gen_gpu_max},
                       {"pcie_replay_before", g.pcie_replay_before},
                       {"pcie_replay_after", g.pcie_replay_after}});
  }
  b.evidence()["gpus"] = std::move(per_gpu);
  b.evidence()["load"] = h.load;
  if (h.gpus.empty()) return Verdict::of(kNoGpu, nlohmann::json::object(), b.evidence());
  add_lost_gpus(b, h, kGpuLost);
  int most_up = 0;
  for (const GpuHealth& g : h.gpus)
    if (!g.mig_enabled.value_or(false)) most_up = std::max(most_up, g.nvlinks_up.value_or(0));
  std::vector<std::string> down, fewer, replay, crc_fail, crc_warn, narrow, slow, replays, lifetime, unread, idle,
      notes;
  for (const GpuHealth& g : h.gpus) {
    if (!g.lost.empty()) continue;
    const std::string who = health_gpu_text(g);
    // NVLinks.
    if (g.nvlinks_present) {
      if (g.mig_enabled.value_or(false)) {
        if (!g.nvlinks_down.empty())
          notes.push_back(
              who + ": " + std::to_string(g.nvlinks_down.size()) +
              " NVLinks reported down under MIG (NVML reports MIG GPUs' links as down: treated as disabled)");
      } else if (!g.nvlinks_down.empty()) {
        down.push_back(who + ": " + std::to_string(g.nvlinks_down.size()) + " of " +
                       std::to_string(*g.nvlinks_present) + " NVLinks down (link" +
                       (g.nvlinks_down.size() == 1 ? " " : "s ") + links_text(g.nvlinks_down) + ")");
      } else if (*g.nvlinks_up > 0 && *g.nvlinks_up < most_up) {
        fewer.push_back(who + ": " + std::to_string(*g.nvlinks_up) + " NVLinks up, other GPUs of the node " +
                        std::to_string(most_up));
      }
    } else if (g.unavailable.count("nvlink") && unavailable_text(g, "nvlink") != "this GPU has no NVLink") {
      unread.push_back(who + ": " + unavailable_text(g, "nvlink"));
    }
    if (g.nvlink_replay_delta.value_or(0) > 0)
      replay.push_back(who + ": " + std::to_string(*g.nvlink_replay_delta) + " NVLink replay/recovery event(s)");
    if (g.nvlink_crc_delta.value_or(0) > 0) {
      const double rate = h.load_seconds > 0 ? static_cast<double>(*g.nvlink_crc_delta) / h.load_seconds : 0.0;
      (rate >= kMaxCrcPerSecond ? crc_fail : crc_warn)
          .push_back(who + ": " + std::to_string(*g.nvlink_crc_delta) + " NVLink CRC error(s) in " +
                     fixed(h.load_seconds, 2) + " s");
    }
    // PCIe, judged only when busy (at P0 where the P-state is known).
    const bool busy = h.loaded && g.unavailable.count("load") == 0 && g.pstate.value_or(0) == 0;
    if (!g.pcie_gen || !g.pcie_width || !g.pcie_gen_max || !g.pcie_width_max) {
      if (g.unavailable.count("pcie")) unread.push_back(who + ": " + unavailable_text(g, "pcie"));
    } else if (!busy) {
      idle.push_back(who);
    } else {
      const std::string now = "Gen" + std::to_string(*g.pcie_gen) + " x" + std::to_string(*g.pcie_width);
      const std::string max = "Gen" + std::to_string(*g.pcie_gen_max) + " x" + std::to_string(*g.pcie_width_max);
      if (*g.pcie_width < *g.pcie_width_max)
        narrow.push_back(who + ": PCIe " + now + " under load, capable of " + max);
      else if (*g.pcie_gen < *g.pcie_gen_max)
        slow.push_back(who + ": PCIe " + now + " under load, capable of " + max);
      if (g.pcie_gen_gpu_max && *g.pcie_gen_gpu_max > *g.pcie_gen_max)
        notes.push_back(who + ": the slot allows Gen" + std::to_string(*g.pcie_gen_max) + ", the GPU Gen" +
                        std::to_string(*g.pcie_gen_gpu_max) + " (a configuration, not a fault)");
    }
    if (g.pcie_replay_before && g.pcie_replay_after && *g.pcie_replay_after > *g.pcie_replay_before)
      replays.push_back(who + ": " + std::to_string(*g.pcie_replay_after - *g.pcie_replay_before) +
                        " PCIe replay(s) during the load");
    else if (g.pcie_replay_before && *g.pcie_replay_before >= kLifetimeReplaysWarn)
      lifetime.push_back(who + ": " + std::to_string(*g.pcie_replay_before));
  }
  if (!down.empty()) b.add(kNvlinkDown, {{"links_down", list_text(down, 4)}});
  if (!replay.empty()) b.add(kNvlinkReplays, {{"nvlink_replays", list_text(replay, 4)}});
  if (!crc_fail.empty()) b.add(kNvlinkCrcHigh, {{"crc_errors", list_text(crc_fail, 4)}});
  if (!narrow.empty()) b.add(kPcieNarrow, {{"narrow", list_text(narrow, 4)}});
  if (!fewer.empty()) b.add(kNvlinkFewer, {{"fewer", list_text(fewer, 4)}});
  if (!crc_warn.empty()) b.add(kNvlinkCrc, {{"crc_low", list_text(crc_warn, 4)}});
  if (!slow.empty()) b.add(kPcieSlow, {{"slow", list_text(slow, 4)}});
  if (!replays.empty()) b.add(kPcieReplays, {{"pcie_replays", list_text(replays, 4)}});
  if (!lifetime.empty())
    b.add(kPcieReplaysLifetime, {{"lifetime", list_text(lifetime, 4)}, {"threshold", kLifetimeReplaysWarn}});
  if (!unread.empty()) b.add(kUnreadable, {{"unread", list_text(unread, 4)}});
  if (!idle.empty()) b.add(kPcieIdle, {{"idle", list_text(idle, 4)}, {"load", h.load}});
  for (const std::string& n : notes) b.note(n);
  if (b.status() == Status::Pass) {
    b.add(kLinksHealthy, {{"gpu_count", std::to_string(h.gpus.size()) + (h.gpus.size() == 1 ? " GPU" : " GPUs")}});
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  From the contained GPU helper's health run, per GPU: nvmlDeviceGetNvLinkState for every link
  the GPU has (NOT_SUPPORTED on link 0: no NVLink; on link k: the GPU has k links), the NVLink
  replay, recovery and CRC counters (nvmlDeviceGetNvLinkErrorCounter) before and after the load,
  the PCIe link generation and width sampled while every GPU runs cuMemsetD32 (the best seen at
  P0) against the maximum of the GPU and slot (nvmlDeviceGetMaxPcieLinkGeneration/Width) and the
  GPU's own (nvmlDeviceGetGpuMaxPcieLinkGeneration), and the PCIe replay counter before and after.

Failures
  FAIL     NVLinks down among the links the GPU has ("2 of 18 NVLinks down (links 16, 17)").
  FAIL     NVLink replay or recovery events during the load (should always be 0), or CRC errors at
           100 per second or more.
  FAIL     the PCIe link runs narrower than it can under load (x8 on an x16 link).
  WARN     fewer NVLinks up than the node's other GPUs; NVLink CRC errors below 100 per second; a
           lower PCIe generation than the link can under load; PCIe replays during the load.
  WARN     1,000 or more PCIe replays since the driver loaded (the counter is a lifetime count), even
           when none came during the load: a healthy link retries next to never.
  FAIL     a GPU is lost or needs a reset.
  UNKNOWN  the link state is not readable (the driver's function named); the PCIe link could not
           be sampled busy (no load: idle GPUs downshift, so an idle reading proves nothing).
  SKIP     in the image profile; NVML lists no GPU.
  Under MIG NVML reports a GPU's NVLinks as down: they are treated as disabled and noted. A slot
  slower than the GPU (Gen5 GPU in a Gen4 slot) is a configuration, noted, not a fault.

Fix
  `nvidia-smi nvlink --status`, `nvidia-smi nvlink -e`, `nvidia-smi -q -d PCIE` under load and
  `lspci -vv` (LnkSta vs LnkCap). Reset the GPU, reseat it or its riser, check BIOS link settings;
  links that stay down or keep erroring need service: drain the node.)EXPLAIN";

}  // namespace

extern const CheckSpec kGpuLinks = {"gpu.links",
                                    Scope::Node,
                                    "every NVLink up and error-free, PCIe at full width and generation under load",
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

}  // namespace gpu_links_check
}  // namespace preflight
