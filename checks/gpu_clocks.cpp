// SPDX-License-Identifier: MIT
// gpu.clocks: hardware slowdown while the GPUs are busy — the clock event reasons NVML reports
// while the contained helper keeps every GPU busy (idle GPUs report "idle" and prove nothing).
#include <array>

#include "checks/check.hpp"
#include "checks/gpu_health_common.hpp"

namespace preflight {
namespace gpu_clocks_check {
namespace {

constexpr int kSlowdownMarginC = 2;  // WARN within 2 °C of the slowdown threshold (H100's T.Limit offset)

std::string reasons_text(std::uint64_t bits) {
  std::vector<std::string> names;
  if (bits & kClocksHwSlowdown) names.push_back("hardware slowdown");
  if (bits & kClocksHwThermal) names.push_back("hardware thermal slowdown");
  if (bits & kClocksHwPowerBrake) names.push_back("hardware power brake");
  if (bits & kClocksSwThermal) names.push_back("software thermal slowdown");
  return names.empty() ? std::string("none") : list_text(names, 4);
}

#define PREFLIGHT_SLOWDOWN_FIX                                                                             \
  "Hardware slowdown halves the clocks or worse: check cooling and airflow (`nvidia-smi -q -d "            \
  "TEMPERATURE,PERFORMANCE`), the power supplies and the external power-brake signal (power brake), then " \
  "drain the node and have it serviced if it persists under load."
#define PREFLIGHT_NO_LOAD_FIX "See cuda.smoke for why the GPUs could not be given work, then rerun preflight."
constexpr FindingSpec kNoGpu = {"gpu.clocks/no-gpu", Status::Skip, "NVML lists no GPU on this node: no clocks to check",
                                ""};
constexpr FindingSpec kGpuLost = {"gpu.clocks/gpu-lost", Status::Fail, kLostGpuMessage, kLostGpuRemedy};
constexpr FindingSpec kHardwareSlowdown = {"gpu.clocks/hardware-slowdown", Status::Fail, "{slowed} under load",
                                           PREFLIGHT_SLOWDOWN_FIX};
constexpr FindingSpec kHardwareSlowdownOnce = {"gpu.clocks/hardware-slowdown-once", Status::Warn,
                                               "{slowed_once} under load (once: may be a P-state change)",
                                               PREFLIGHT_SLOWDOWN_FIX};
constexpr FindingSpec kThermalLimit = {
    "gpu.clocks/thermal-limit", Status::Warn, "{hot}",
    "The GPU runs at its thermal limit: check fans, airflow and the inlet temperature (`nvidia-smi -q -d "
    "TEMPERATURE`)."};
constexpr FindingSpec kUnreadable = {
    "gpu.clocks/unreadable", Status::Unknown, "clock event reasons not readable: {unread}",
    "Run preflight with a driver that reports clock event reasons (R535+: "
    "nvmlDeviceGetCurrentClocksEventReasons), or check by hand with `nvidia-smi -q -d PERFORMANCE` under load."};
constexpr FindingSpec kIdleOnly = {
    "gpu.clocks/idle-only", Status::Unknown,
    "clock event reasons sampled only at idle ({load}): hardware slowdown shows under load", PREFLIGHT_NO_LOAD_FIX};
constexpr FindingSpec kNoSlowdown = {
    "gpu.clocks/no-slowdown", Status::Pass,
    "{gpu_count}: no hardware slowdown under load ({load}; idle and software power cap are not problems)", ""};
#undef PREFLIGHT_SLOWDOWN_FIX
#undef PREFLIGHT_NO_LOAD_FIX

// The GPU checks' shared findings, and health facts the helper was not run for.
constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("gpu.clocks", "")};
constexpr FindingSpec kHealthNotRead = {"gpu.clocks/health-not-read", Status::Unknown, kHealthNotReadMessage,
                                        kHealthNotReadFix};
constexpr auto kFindings =
    with_shared(kShared, std::array{kHealthNotRead, kNoGpu, kGpuLost, kHardwareSlowdown, kHardwareSlowdownOnce,
                                    kThermalLimit, kUnreadable, kIdleOnly, kNoSlowdown});

Verdict run(const CheckContext& ctx) {
  const HealthView view = node_health(ctx, "the GPUs' clock event reasons (NVML)", kShared, kHealthNotRead);
  if (view.verdict) return *view.verdict;
  const GpuHealthFacts& h = *view.facts;
  VerdictBuilder b;
  nlohmann::json per_gpu = nlohmann::json::array();
  for (const GpuHealth& g : h.gpus) {
    per_gpu.push_back({{"index", g.index},
                       {"pci_bus_id", g.pci_bus_id},
                       {"samples", g.load_samples},
                       {"clock_event_reasons", g.clock_event_reasons},
                       {"slowdown_samples", g.slowdown_samples},
                       {"pstate", g.pstate},
                       {"temperature_c", g.temperature_c},
                       {"slowdown_temperature_c", g.slowdown_temperature_c}});
  }
  b.evidence()["gpus"] = std::move(per_gpu);
  b.evidence()["load"] = h.load;
  if (h.gpus.empty()) return Verdict::of(kNoGpu, nlohmann::json::object(), b.evidence());
  add_lost_gpus(b, h, kGpuLost);
  std::vector<std::string> hard, once, soft, hot, unread;
  for (const GpuHealth& g : h.gpus) {
    if (!g.lost.empty()) continue;
    const std::string who = health_gpu_text(g);
    if (!g.clock_event_reasons) {
      unread.push_back(who + ": " + unavailable_text(g, "clocks"));
      continue;
    }
    const std::uint64_t bits = *g.clock_event_reasons;
    const std::uint64_t hw = bits & (kClocksHwSlowdown | kClocksHwThermal | kClocksHwPowerBrake);
    if (hw != 0) {
      const std::string text = who + ": " + reasons_text(hw) + " in " + std::to_string(g.slowdown_samples) + " of " +
                               std::to_string(g.load_samples) + " samples";
      (g.slowdown_samples >= 2 ? hard : once).push_back(text);
    }
    if ((bits & kClocksSwThermal) != 0) soft.push_back(who + ": software thermal slowdown");
    if (g.temperature_c && g.slowdown_temperature_c && *g.slowdown_temperature_c > 0 &&
        *g.temperature_c >= *g.slowdown_temperature_c - kSlowdownMarginC) {
      hot.push_back(who + ": " + std::to_string(*g.temperature_c) + " °C, slowdown at " +
                    std::to_string(*g.slowdown_temperature_c) + " °C");
    }
  }
  if (!hard.empty()) b.add(kHardwareSlowdown, {{"slowed", list_text(hard, 4)}});
  if (!once.empty()) b.add(kHardwareSlowdownOnce, {{"slowed_once", list_text(once, 4)}});
  if (!soft.empty() || !hot.empty()) {
    std::vector<std::string> all = soft;
    all.insert(all.end(), hot.begin(), hot.end());
    b.add(kThermalLimit, {{"hot", list_text(all, 4)}});
  }
  if (!unread.empty()) b.add(kUnreadable, {{"unread", list_text(unread, 4)}});
  if (!h.loaded && b.status() == Status::Pass) return Verdict::of(kIdleOnly, {{"load", h.load}}, b.evidence());
  if (b.status() == Status::Pass) {
    b.add(kNoSlowdown,
          {{"gpu_count", std::to_string(h.gpus.size()) + (h.gpus.size() == 1 ? " GPU" : " GPUs")}, {"load", h.load}});
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  The contained GPU helper's health run keeps every GPU busy (cuMemsetD32 on each) and samples,
  per GPU, nvmlDeviceGetCurrentClocksEventReasons (R535; the older
  nvmlDeviceGetCurrentClocksThrottleReasons otherwise), the performance state, the temperature and
  the slowdown threshold (nvmlDeviceGetTemperatureThreshold SLOWDOWN). It takes two sample rounds
  at least, the first as the load starts, before its time limit may end the load, so a slowdown
  that lasts is always seen in two samples; then it samples until every GPU has five samples at
  P0 or the limit is reached. Idle (0x1), application clocks, software power cap (0x4) and sync
  boost are not problems and are ignored.

Failures
  FAIL     hardware slowdown (0x8), hardware thermal slowdown (0x40) or hardware power brake
           (0x80) in two or more samples under load, naming the GPU and the reason.
  WARN     one of them in a single sample (the driver also reports hardware slowdown briefly
           during a P-state change); software thermal slowdown (0x20); the temperature within
           2 °C of the slowdown threshold.
  FAIL     a GPU is lost or needs a reset.
  UNKNOWN  the driver has no clock event reasons function (named), or the GPUs could not be given
           work (then only idle samples exist, which prove nothing); the helper did not run.
  SKIP     in the image profile; NVML lists no GPU.

Fix
  Check cooling, fans and inlet temperature (`nvidia-smi -q -d TEMPERATURE,PERFORMANCE` under
  load), the power supplies and the chassis power-brake signal; a GPU that keeps slowing down
  under load needs service: drain the node.)EXPLAIN";

}  // namespace

extern const CheckSpec kGpuClocks = {"gpu.clocks",
                                     Scope::Node,
                                     "no hardware slowdown (thermal, power brake) while the GPUs are busy",
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

}  // namespace gpu_clocks_check
}  // namespace preflight
