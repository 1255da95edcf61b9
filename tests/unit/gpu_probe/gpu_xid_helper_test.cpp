// SPDX-License-Identifier: MIT
// The contained helper's XID watch (NVML events) against the fake libnvidia-ml / libcuda
// (tests/fakes): the health load and the smoke test register XID events before their work and
// report what the scenario scripts (xid_events, per-GPU "events", nvml_missing), a driver without
// the event functions says so and nothing else changes, and gpu.xid judges the helpers' real
// documents.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"
#include "probes/gpu_driver_probe.hpp"
#include "sys/contained.hpp"
#include "test_paths.hpp"

namespace preflight {
KernelLogFacts kernel_log_facts(std::string_view text, std::string source);
namespace gpu_probe_gpu_xid_helper_test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using gpu_fixture::has;

const std::string kLibDir = preflight::test_paths::fake_gpu_lib_dir();
const std::string kScenarios = preflight::test_paths::fake_gpu_scenarios_dir();

std::string scenario(const std::string& name) { return kScenarios + "/" + name + ".json"; }

/// A scenario file of this test, removed with the object.
class TempScenario {
 public:
  TempScenario(const std::string& name, const std::string& text)
      : m_path((fs::temp_directory_path() / ("preflight-xid-" + std::to_string(::getpid()) + "-" + name + ".json"))
                   .string()) {
    std::ofstream(m_path) << text;
  }
  ~TempScenario() { fs::remove(m_path); }
  TempScenario(const TempScenario&) = delete;
  TempScenario& operator=(const TempScenario&) = delete;
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

nlohmann::json helper(const std::string& scenario_path, std::vector<std::string> args,
                      const std::string& visible = "CUDA_VISIBLE_DEVICES") {
  ContainedRequest r;
  r.executable = preflight::test_paths::gpu_helper_dir() + "/preflight-gpu-probe";
  r.args = std::move(args);
  r.extra_env = {"LD_LIBRARY_PATH=" + kLibDir, "PREFLIGHT_FAKE_GPU=" + scenario_path, visible};
  r.deadline = 20s;
  const ContainedResult result = run_contained(r);
  EXPECT_TRUE(result.clean()) << result.describe() << result.err;
  const ContainedJson parsed = parse_contained_json(result);
  EXPECT_TRUE(parsed.ok()) << parsed.error;
  return parsed.ok() ? parsed.value : nlohmann::json::object();
}

GpuHealthFacts health(const std::string& scenario_path) {
  return helper(scenario_path, {"health", "--max-load", "2"}).get<GpuHealthFacts>();
}

SmokeResult smoke(const std::string& scenario_path, int ordinal, const std::string& visible = "CUDA_VISIBLE_DEVICES") {
  return helper(scenario_path, {"smoke", "--ordinal", std::to_string(ordinal), "--bytes", "4096"}, visible)
      .get<SmokeResult>();
}

TEST(GpuXidHelper, TheHealthLoadWatchesEveryGpuAndReportsTheScriptedXid) {
  const GpuHealthFacts h = health(scenario("xid-fatal-gpu3"));
  const NvmlXidWatch& w = h.xid_watch;
  EXPECT_TRUE(w.collected) << w.unavailable;
  EXPECT_EQ(w.work, "health load");
  ASSERT_EQ(w.gpus.size(), 8u);
  for (const NvmlXidGpu& g : w.gpus) EXPECT_TRUE(g.registered) << g.index << ": " << g.why;
  EXPECT_EQ(w.gpus[3].pci_bus_id, "00000000:5D:00.0");
  ASSERT_EQ(w.events.size(), 1u);
  EXPECT_EQ(w.events[0].gpu, 3);
  EXPECT_EQ(w.events[0].pci_bus_id, "00000000:5D:00.0");
  EXPECT_EQ(w.events[0].xid, 79u);
  EXPECT_FALSE(w.events[0].gpu_instance);
  EXPECT_FALSE(w.events[0].compute_instance);
  // Read inside the window, which the load's work lies in; times from the helper's start.
  EXPECT_GT(w.start_s, 0.0);
  EXPECT_LE(w.start_s, w.events[0].seconds);
  EXPECT_LE(w.events[0].seconds, w.end_s);
  EXPECT_FALSE(w.truncated);
  EXPECT_TRUE(h.loaded) << h.load;
}

TEST(GpuXidHelper, AHealthyNodeIsWatchedAndNothingFires) {
  const NvmlXidWatch w = health("").xid_watch;
  EXPECT_TRUE(w.collected) << w.unavailable;
  EXPECT_EQ(w.gpus.size(), 8u);
  EXPECT_TRUE(w.events.empty());
}

TEST(GpuXidHelper, AGpuWithoutXidEventsIsRecordedAndTheOthersWatched) {
  const NvmlXidWatch w = health(scenario("xid-events-unsupported-gpu7")).xid_watch;
  EXPECT_TRUE(w.collected) << w.unavailable;
  ASSERT_EQ(w.gpus.size(), 8u);
  EXPECT_TRUE(w.gpus[6].registered);
  EXPECT_FALSE(w.gpus[7].registered);
  EXPECT_EQ(w.gpus[7].why, "XID events not supported on this GPU (supported event types 0x7)");
}

TEST(GpuXidHelper, RegisteringWithoutTheTypesQueryNamesNotSupported) {
  const TempScenario s("nosupported", R"({"gpus": [{}, {"events": "not_supported"}],
      "nvml_missing": ["nvmlDeviceGetSupportedEventTypes"]})");
  const NvmlXidWatch w = health(s.path()).xid_watch;
  EXPECT_TRUE(w.collected) << w.unavailable;
  ASSERT_EQ(w.gpus.size(), 2u);
  EXPECT_TRUE(w.gpus[0].registered);
  EXPECT_EQ(w.gpus[1].why, "nvmlDeviceRegisterEvents: not supported on this GPU");
}

TEST(GpuXidHelper, NoPermissionOnEveryGpuCollectsNothingAndSaysWhy) {
  const TempScenario s("noperm", R"({"gpus": [{"events": "no_permission"}]})");
  const NvmlXidWatch w = health(s.path()).xid_watch;
  EXPECT_FALSE(w.collected);
  ASSERT_EQ(w.gpus.size(), 1u);
  EXPECT_EQ(w.gpus[0].why, "nvmlDeviceRegisterEvents: NVML_ERROR_NO_PERMISSION (Insufficient Permissions)");
  EXPECT_EQ(w.unavailable,
            "no GPU accepted the registration for XID events (nvmlDeviceRegisterEvents: "
            "NVML_ERROR_NO_PERMISSION (Insufficient Permissions))");
}

TEST(GpuXidHelper, ADriverWithoutTheEventFunctionsSaysSoAndTheRestStands) {
  const GpuHealthFacts h = health(scenario("nvml-no-events"));
  EXPECT_FALSE(h.xid_watch.collected);
  EXPECT_EQ(h.xid_watch.unavailable, "driver 418.67 has no nvmlEventSetCreate");
  EXPECT_TRUE(h.xid_watch.events.empty());
  ASSERT_EQ(h.gpus.size(), 8u);
  EXPECT_TRUE(h.loaded) << h.load;
  EXPECT_GE(h.gpus[0].load_samples, 5);
}

TEST(GpuXidHelper, AnOldLibraryWithoutTheV2WaitIsReadThroughTheOldOne) {
  const TempScenario s("oldwait", R"({"gpus": 2, "nvml_missing": ["nvmlEventSetWait_v2"],
      "xid_events": [{"gpu": 0, "xid": 48, "gpu_instance": 2, "compute_instance": 0}]})");
  const NvmlXidWatch w = health(s.path()).xid_watch;
  EXPECT_TRUE(w.collected) << w.unavailable;
  ASSERT_EQ(w.events.size(), 1u);
  EXPECT_EQ(w.events[0].xid, 48u);
  EXPECT_FALSE(w.events[0].gpu_instance) << "the old struct has no instance ids";
}

TEST(GpuXidHelper, TheV2WaitCarriesTheMigInstance) {
  const TempScenario s("mig", R"({"gpus": 2, "xid_events": [{"gpu": 1, "xid": 94, "gpu_instance": 2,
      "compute_instance": 0}]})");
  const NvmlXidWatch w = health(s.path()).xid_watch;
  ASSERT_EQ(w.events.size(), 1u);
  EXPECT_EQ(w.events[0].gpu, 1);
  EXPECT_EQ(w.events[0].gpu_instance, 2u);
  EXPECT_EQ(w.events[0].compute_instance, 0u);
}

TEST(GpuXidHelper, ReadingStopsAtTheBound) {
  nlohmann::json doc = {{"gpus", 1}, {"xid_events", nlohmann::json::array()}};
  for (int i = 0; i < 300; ++i) doc["xid_events"].push_back({{"gpu", 0}, {"xid", 13}});
  const TempScenario s("flood", doc.dump());
  const NvmlXidWatch w = health(s.path()).xid_watch;
  EXPECT_EQ(w.events.size(), kMaxNvmlXidEvents);
  EXPECT_TRUE(w.truncated);
  EXPECT_TRUE(w.collected) << w.unavailable;
}

TEST(GpuXidHelper, TheSmokeTestWatchesItsOwnGpu) {
  const SmokeResult on3 = smoke(scenario("xid-fatal-gpu3"), 3);
  EXPECT_TRUE(on3.ok) << on3.error;
  EXPECT_TRUE(on3.xid_watch.collected) << on3.xid_watch.unavailable;
  EXPECT_EQ(on3.xid_watch.work, "cuda.smoke");
  ASSERT_EQ(on3.xid_watch.gpus.size(), 1u);
  EXPECT_EQ(on3.xid_watch.gpus[0].index, 3);
  EXPECT_EQ(on3.xid_watch.gpus[0].pci_bus_id, "00000000:5D:00.0");
  ASSERT_EQ(on3.xid_watch.events.size(), 1u);
  EXPECT_EQ(on3.xid_watch.events[0].xid, 79u);
  const SmokeResult on0 = smoke(scenario("xid-fatal-gpu3"), 0);
  EXPECT_TRUE(on0.xid_watch.collected) << on0.xid_watch.unavailable;
  ASSERT_EQ(on0.xid_watch.gpus.size(), 1u);
  EXPECT_EQ(on0.xid_watch.gpus[0].index, 0);
  EXPECT_TRUE(on0.xid_watch.events.empty());
}

TEST(GpuXidHelper, TheSmokeTestFindsItsNvmlGpuByBusIdUnderCudaVisibleDevices) {
  // CUDA ordinal 0 is NVML's GPU 3 here.
  const SmokeResult r = smoke(scenario("xid-fatal-gpu3"), 0, "CUDA_VISIBLE_DEVICES=3");
  EXPECT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.xid_watch.gpus.size(), 1u);
  EXPECT_EQ(r.xid_watch.gpus[0].index, 3);
  ASSERT_EQ(r.xid_watch.events.size(), 1u);
  EXPECT_EQ(r.xid_watch.events[0].gpu, 3);
}

TEST(GpuXidHelper, TheSmokeTestWithoutEventsOrCudaSaysWhyAndStillRuns) {
  const SmokeResult old = smoke(scenario("nvml-no-events"), 0);
  EXPECT_TRUE(old.ok) << old.error;
  EXPECT_FALSE(old.xid_watch.collected);
  EXPECT_EQ(old.xid_watch.unavailable, "driver 418.67 has no nvmlEventSetCreate");
  const SmokeResult no_init = smoke(scenario("cuinit-error100"), 0);
  EXPECT_FALSE(no_init.ok);
  EXPECT_EQ(no_init.xid_watch.work, "cuda.smoke");
  EXPECT_EQ(no_init.xid_watch.unavailable, "not started: the smoke test ended at cuInit before its GPU work");
}

// ---- gpu.xid on the helpers' real documents -----------------------------------------------------

/// A node's facts as the probes would assemble them from the helpers: driver, smoke on ordinal 0
/// and health, with the kernel log unreadable (nullopt) or `kmsg`.
RankFacts from_helpers(const std::string& scenario_path, const std::optional<std::string>& kmsg) {
  RankFacts f;
  const std::string bad = apply_driver_document(helper(scenario_path, {"driver"}), f.gpu.driver);
  EXPECT_TRUE(bad.empty()) << bad;
  f.gpu.driver.smoke = Probed<SmokeResult>::ok(smoke(scenario_path, 0), "preflight-gpu-probe smoke");
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(health(scenario_path), "preflight-gpu-probe health");
  if (kmsg) {
    f.gpu.driver.kernel_log = Probed<KernelLogFacts>::ok(kernel_log_facts(*kmsg, "/dev/kmsg"), "/dev/kmsg");
  } else {
    f.gpu.driver.kernel_log = Probed<KernelLogFacts>::error(
        ProbeErrc::PermissionDenied,
        "/dev/kmsg: Operation not permitted (reading the kernel log needs CAP_SYSLOG (or kernel.dmesg_restrict=0); in "
        "a container --cap-add syslog, or run preflight on the host)",
        "/dev/kmsg");
  }
  return f;
}

TEST(GpuXidHelper, JudgedAFatalXidFromTheHelpersFails) {
  const Verdict v = gpu_fixture::judge(kGpuXid, from_helpers(scenario("xid-fatal-gpu3"), std::nullopt));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "GPU 3 (00000000:5D:00.0): Xid 79 raised while preflight ran (NVML event during the "
                  "health load: GPU has fallen off the bus"))
      << v.summary;
}

TEST(GpuXidHelper, JudgedAnApplicationXidFromTheHelpersWarns) {
  const Verdict v = gpu_fixture::judge(kGpuXid, from_helpers(scenario("xid-application"), std::nullopt));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "GPU 1 (00000000:2A:00.0): Xid 13 raised while preflight ran")) << v.summary;
}

TEST(GpuXidHelper, JudgedAnUnreadableLogWithEventsOnEveryGpuPasses) {
  const Verdict v = gpu_fixture::judge(kGpuXid, from_helpers(scenario("h100x8-healthy"), std::nullopt));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "no XID during preflight's own GPU work on 8 GPUs (NVML events); this boot's earlier "
                  "kernel log was not readable: /dev/kmsg: Operation not permitted"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "CAP_SYSLOG")) << v.summary;
}

TEST(GpuXidHelper, JudgedAnUnreadableLogWithGpu7UnwatchedIsUnknownNamingIt) {
  const Verdict v = gpu_fixture::judge(kGpuXid, from_helpers(scenario("xid-events-unsupported-gpu7"), std::nullopt));
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "CAP_SYSLOG")) << v.summary;
  EXPECT_TRUE(has(v.summary, "on 7 GPUs only, not GPU 7 (00000000:DB:00.0): XID events not supported on this GPU"))
      << v.summary;
}

TEST(GpuXidHelper, JudgedADriverWithoutEventsWorksFromTheKernelLog) {
  const RankFacts f =
      from_helpers(scenario("nvml-no-events"), std::string("4,1,5000000,-;NVRM: Xid (PCI:0000:2a:00): 13, pid=2503421, "
                                                           "name=python3, Graphics SM Warp Exception\n"));
  EXPECT_EQ(f.gpu.driver.health.value()->xid_watch.unavailable, "driver 418.67 has no nvmlEventSetCreate");
  const Verdict v = gpu_fixture::judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.xid/application-xid-in-log");
  EXPECT_TRUE(has(v.summary, "GPU 1 (0000:2a:00.0): Xid 13")) << v.summary;
  const Verdict unreadable = gpu_fixture::judge(kGpuXid, from_helpers(scenario("nvml-no-events"), std::nullopt));
  EXPECT_EQ(unreadable.status, Status::Unknown) << unreadable.summary;
  EXPECT_TRUE(has(unreadable.summary, "driver 418.67 has no nvmlEventSetCreate")) << unreadable.summary;
}

TEST(GpuXidHelper, JudgedTheSameXidFromBothSourcesOnce) {
  const RankFacts f = from_helpers(scenario("xid-fatal-gpu3"),
                                   std::string("4,2001,3600000000,-;NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', "
                                               "name=<unknown>, GPU has fallen off the bus.\n"));
  const Verdict v = gpu_fixture::judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  std::size_t n = 0;
  for (std::size_t at = v.summary.find("Xid 79"); at != std::string::npos; at = v.summary.find("Xid 79", at + 1)) ++n;
  EXPECT_EQ(n, 1u) << v.summary;
  // The health load and the smoke test (ordinal 0 is GPU 0 here, so only the health load saw it).
  EXPECT_TRUE(has(v.summary, "NVML event during the health load, and in this boot's kernel log 1h00m after boot"))
      << v.summary;
}

}  // namespace
}  // namespace gpu_probe_gpu_xid_helper_test
}  // namespace preflight
