// SPDX-License-Identifier: MIT
// The contained helper's `health` run against the fake libnvidia-ml / libcuda (tests/fakes): each
// scenario key reaches the facts, an older driver's missing functions become "driver R has no F"
// (never a crash), and the document round-trips into GpuHealthFacts.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "checks/specs.hpp"
#include "core/facts/gpu.hpp"
#include "gpu_facts_fixture.hpp"
#include "sys/contained.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace probes_gpu_health_probe_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kLibDir = preflight::test_paths::fake_gpu_lib_dir();
const std::string kScenarios = preflight::test_paths::fake_gpu_scenarios_dir();

struct HelperRun {
  ContainedResult result;
  nlohmann::json doc;
};

HelperRun health(const std::string& scenario, const std::string& max_load = "2") {
  ContainedRequest r;
  r.executable = preflight::test_paths::gpu_helper_dir() + "/preflight-gpu-probe";
  r.args = {"health", "--max-load", max_load};
  r.extra_env = {"LD_LIBRARY_PATH=" + kLibDir, "PREFLIGHT_FAKE_GPU=" + scenario, "CUDA_VISIBLE_DEVICES"};
  r.deadline = 20s;
  HelperRun out{run_contained(r), {}};
  const ContainedJson parsed = parse_contained_json(out.result);
  if (parsed.ok()) out.doc = parsed.value;
  return out;
}

std::string temp_scenario(const std::string& name, const std::string& text) {
  const fs::path p =
      fs::temp_directory_path() / ("preflight-health-" + std::to_string(::getpid()) + "-" + name + ".json");
  std::ofstream(p) << text;
  return p.string();
}

TEST(GpuHealthHelper, DefaultNodeIsHealthyAndSampledUnderLoad) {
  const HelperRun run = health("");
  ASSERT_TRUE(run.result.clean()) << run.result.describe() << run.result.err;
  const GpuHealthFacts h = run.doc.get<GpuHealthFacts>();
  ASSERT_EQ(h.gpus.size(), 8u);
  EXPECT_TRUE(h.loaded) << h.load;
  EXPECT_EQ(h.driver_version, "550.54.15");
  const GpuHealth& g = h.gpus[0];
  EXPECT_EQ(g.pci_bus_id, "00000000:18:00.0");
  EXPECT_TRUE(g.lost.empty()) << g.lost;
  EXPECT_EQ(g.remap_pending, false);
  EXPECT_EQ(g.ecc_dbe_volatile, 0u);
  EXPECT_EQ(g.nvlinks_present, 18);
  EXPECT_EQ(g.nvlinks_up, 18);
  EXPECT_EQ(g.pcie_gen, 5);
  EXPECT_EQ(g.pcie_width, 16);
  EXPECT_EQ(g.pstate, 0);
  EXPECT_GE(g.load_samples, 5);
  EXPECT_EQ(g.clock_event_reasons, 0u);
  EXPECT_EQ(g.fabric_info_version, 2);  // driver 550: the v2 struct, v3 refused
  EXPECT_EQ(g.fabric_state, kFabricCompleted);
  EXPECT_FALSE(g.recovery_action) << "driver 550 has no recovery action field";
  EXPECT_TRUE(g.unavailable.count("recovery_action"));
  // The fake's GPUs reach P0 at once: the load ends after the fifth sample of every GPU at P0, not
  // at its 1 s cap (which would have taken more samples; a count, not a time: an instrumented
  // build on a loaded machine may take the cap's time for those five rounds).
  for (const GpuHealth& gpu : h.gpus)
    EXPECT_EQ(gpu.load_samples, 5) << "GPU " << gpu.index << ": the load ran to its cap";
}

TEST(GpuHealthHelper, EveryScenarioFaultReachesTheFacts) {
  const HelperRun run = health(kScenarios + "/health-faults.json");
  ASSERT_TRUE(run.result.clean()) << run.result.describe() << run.result.err;
  const GpuHealthFacts h = run.doc.get<GpuHealthFacts>();
  ASSERT_EQ(h.gpus.size(), 8u);
  EXPECT_EQ(h.gpus[0].remap_pending, true);
  EXPECT_EQ(h.gpus[1].ecc_dbe_volatile, 2u);
  EXPECT_EQ(h.gpus[2].nvlinks_up, 16);
  EXPECT_EQ(h.gpus[2].nvlinks_down, (std::vector<int>{16, 17}));
  EXPECT_EQ(h.gpus[3].pcie_width, 8);
  EXPECT_EQ(h.gpus[4].clock_event_reasons, kClocksHwSlowdown);
  EXPECT_GE(h.gpus[4].slowdown_samples, 2);
  EXPECT_NE(h.gpus[5].lost.find("NVML_ERROR_GPU_IS_LOST"), std::string::npos) << h.gpus[5].lost;
  EXPECT_EQ(h.gpus[6].recovery_action, kRecoveryGpuReset);
  EXPECT_EQ(h.gpus[7].fabric_state, kFabricNotStarted);
  EXPECT_GT(h.gpus[7].nvlink_replay_delta.value_or(0), 0u);
  ASSERT_TRUE(h.gpus[7].pcie_replay_after && h.gpus[7].pcie_replay_before);
  EXPECT_GT(*h.gpus[7].pcie_replay_after, *h.gpus[7].pcie_replay_before);
}

// The time limit applies only after two sample rounds, the first as the load starts: a limit
// already spent after the first round (here 0 s; on a real node a slow first round) still gives a
// constant power brake its second sample, so gpu.clocks FAILs it instead of "1 of 1 samples" (WARN).
TEST(GpuHealthHelper, AConstantPowerBrakeIsSampledTwiceBeforeTheTimeLimit) {
  const HelperRun run = health(kScenarios + "/power-brake-gpu2.json", "0");
  ASSERT_TRUE(run.result.clean()) << run.result.describe() << run.result.err;
  const GpuHealthFacts h = run.doc.get<GpuHealthFacts>();
  ASSERT_EQ(h.gpus.size(), 8u);
  EXPECT_TRUE(h.loaded) << h.load;
  for (const GpuHealth& g : h.gpus) EXPECT_EQ(g.load_samples, 2) << "GPU " << g.index;
  EXPECT_EQ(h.gpus[2].clock_event_reasons, kClocksHwPowerBrake);
  EXPECT_EQ(h.gpus[2].slowdown_samples, 2);

  RankFacts f = gpu_fixture::healthy();
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(h, "preflight-gpu-probe health");
  const Verdict v = gpu_fixture::judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings.front().code, "gpu.clocks/hardware-slowdown") << v.summary;
  EXPECT_TRUE(gpu_fixture::has(v.summary, "GPU 2 (00000000:3A:00.0): hardware power brake in 2 of 2 samples"))
      << v.summary;
}

TEST(GpuHealthHelper, AnOldDriverLacksFunctionsAndSaysWhich) {
  const std::string path = temp_scenario("old", R"({"driver_version": "470.82.01", "gpus": 2,
      "nvml_missing": ["nvmlDeviceGetRemappedRows", "nvmlDeviceGetNvLinkErrorCounter"]})");
  const HelperRun run = health(path);
  fs::remove(path);
  ASSERT_TRUE(run.result.clean()) << run.result.describe() << run.result.err;
  const GpuHealthFacts h = run.doc.get<GpuHealthFacts>();
  ASSERT_EQ(h.gpus.size(), 2u);
  const GpuHealth& g = h.gpus[0];
  EXPECT_EQ(g.unavailable.at("remapped_rows"), "driver 470.82.01 has no nvmlDeviceGetRemappedRows");
  EXPECT_EQ(g.unavailable.at("nvlink_errors"), "driver 470.82.01 has no nvmlDeviceGetNvLinkErrorCounter");
  EXPECT_EQ(g.unavailable.at("fabric"),
            "driver 470.82.01 has no nvmlDeviceGetGpuFabricInfoV or nvmlDeviceGetGpuFabricInfo");
  EXPECT_FALSE(g.fabric_state);
  // The older clock reasons name answers where the R535 one is missing.
  EXPECT_EQ(g.clock_event_reasons, 0u);
  EXPECT_EQ(g.unavailable.count("clocks"), 0u);
}

TEST(GpuHealthHelper, Driver580AnswersTheV3FabricStruct) {
  const std::string path = temp_scenario("580", R"({"driver_version": "580.65.06", "gpus": 1})");
  const HelperRun run = health(path);
  fs::remove(path);
  ASSERT_TRUE(run.result.clean()) << run.result.describe() << run.result.err;
  const GpuHealthFacts h = run.doc.get<GpuHealthFacts>();
  ASSERT_EQ(h.gpus.size(), 1u);
  EXPECT_EQ(h.gpus[0].fabric_info_version, 3);
  EXPECT_EQ(h.gpus[0].fabric_health_summary, 1);
  EXPECT_EQ(h.gpus[0].recovery_action, kRecoveryNone);
}

TEST(GpuHealthHelper, NvmlInitFailureIsAnErrorDocument) {
  const HelperRun run = health(kScenarios + "/nvml-driver-not-loaded.json");
  ASSERT_TRUE(run.result.clean()) << run.result.describe() << run.result.err;
  ASSERT_TRUE(run.doc.contains("error")) << run.doc.dump();
  EXPECT_NE(run.doc.at("error").get<std::string>().find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos);
}

}  // namespace
}  // namespace probes_gpu_health_probe_test
}  // namespace preflight
