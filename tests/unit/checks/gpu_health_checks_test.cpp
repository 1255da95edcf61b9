// SPDX-License-Identifier: MIT
// gpu.memory_health, gpu.clocks, gpu.links and gpu.fabric on hand-built health facts: every
// non-PASS status made to happen, the words asserted.
#include <gtest/gtest.h>

#include "gpu_facts_fixture.hpp"

namespace preflight {
extern const CheckSpec kGpuMemoryHealth;
extern const CheckSpec kGpuClocks;
extern const CheckSpec kGpuLinks;
extern const CheckSpec kGpuFabric;
extern const CheckSpec kGpuXid;
KernelLogFacts kernel_log_facts(std::string_view text, std::string source);
namespace {
using namespace gpu_fixture;

/// A healthy HGX H100 node: n GPUs with 18 NVLinks each, Gen5 x16 at P0 under load, fabric completed.
GpuHealthFacts healthy_health(int n = 8) {
  GpuHealthFacts h;
  h.driver_version = "550.54.15";
  h.load = "cuMemsetD32 on 8 GPUs for 0.02 s, 5 sample rounds";
  h.loaded = true;
  h.load_seconds = 0.02;
  h.nvswitches = 4;
  h.fabric_manager_running = true;
  for (int i = 0; i < n; ++i) {
    GpuHealth g;
    g.index = i;
    g.pci_bus_id = nvml_bus(i);
    g.mig_enabled = false;
    g.persistence_mode = true;
    g.remap_correctable = 0;
    g.remap_uncorrectable = 0;
    g.remap_pending = false;
    g.remap_failure = false;
    g.remap_banks_exhausted = 0;
    g.unavailable["retired_pages"] = "nvmlDeviceGetRetiredPagesPendingStatus: not supported on this GPU";
    g.ecc_enabled = true;
    g.ecc_pending_enabled = true;
    g.ecc_dbe_volatile = 0;
    g.ecc_dbe_aggregate = 0;
    g.recovery_action = 0;
    g.load_samples = 5;
    g.clock_event_reasons = 0;
    g.pstate = 0;
    g.temperature_c = 45;
    g.slowdown_temperature_c = 87;
    g.nvlinks_present = 18;
    g.nvlinks_up = 18;
    g.nvlink_replay_delta = 0;
    g.nvlink_crc_delta = 0;
    g.pcie_gen = 5;
    g.pcie_width = 16;
    g.pcie_gen_max = 5;
    g.pcie_width_max = 16;
    g.pcie_gen_gpu_max = 5;
    g.pcie_replay_before = 3;
    g.pcie_replay_after = 3;
    g.fabric_info_version = 2;
    g.fabric_state = kFabricCompleted;
    g.fabric_status = 0;
    g.fabric_health_mask = 0;
    g.fabric_clique_id = 1;
    g.fabric_cluster_uuid = "00000000000000000000000000000001";
    h.gpus.push_back(g);
  }
  return h;
}

RankFacts with_health(const GpuHealthFacts& h) {
  RankFacts f = healthy(static_cast<int>(h.gpus.size()));
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(h, "preflight-gpu-probe health");
  return f;
}

GpuHealth& gpu(RankFacts& f, std::size_t i) { return f.gpu.driver.health.value()->gpus[i]; }

// ---- shared ---------------------------------------------------------------------------------------

TEST(GpuHealthChecks, AllPassOnAHealthyNode) {
  const RankFacts f = with_health(healthy_health());
  for (const CheckSpec* spec : {&kGpuMemoryHealth, &kGpuClocks, &kGpuLinks, &kGpuFabric}) {
    const Verdict v = judge(*spec, f);
    EXPECT_EQ(v.status, Status::Pass) << spec->id << ": " << v.summary;
  }
}

TEST(GpuHealthChecks, NoDriverFails) {
  for (const CheckSpec* spec : {&kGpuMemoryHealth, &kGpuClocks, &kGpuLinks, &kGpuFabric}) {
    const Verdict v = judge(*spec, no_driver());
    EXPECT_EQ(v.status, Status::Fail) << spec->id << ": " << v.summary;
  }
}

TEST(GpuHealthChecks, HelperNotRunIsUnknown) {
  RankFacts f = healthy(8);
  f.gpu.driver.health = Probed<GpuHealthFacts>::error(ProbeErrc::Unsupported, "not run: no check that reads it is selected");
  for (const CheckSpec* spec : {&kGpuMemoryHealth, &kGpuClocks, &kGpuLinks, &kGpuFabric}) {
    const Verdict v = judge(*spec, f);
    EXPECT_EQ(v.status, Status::Unknown) << spec->id << ": " << v.summary;
  }
}

TEST(GpuHealthChecks, HelperCrashFails) {
  RankFacts f = healthy(8);
  f.gpu.driver.health = Probed<GpuHealthFacts>::error(ProbeErrc::Crashed, "preflight-gpu-probe health crashed with SIGSEGV",
                                                      "preflight-gpu-probe health");
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "SIGSEGV")) << v.summary;
}

TEST(GpuHealthChecks, ImageProfileSkips) {
  const Verdict v = judge(kGpuMemoryHealth, with_health(healthy_health()), Options{}, Profile::Image);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
}

TEST(GpuHealthChecks, LostGpuFailsInEveryCheck) {
  GpuHealthFacts h = healthy_health();
  h.gpus[2].lost = "nvmlDeviceGetRemappedRows: NVML_ERROR_GPU_IS_LOST (GPU is lost)";
  const RankFacts f = with_health(h);
  for (const CheckSpec* spec : {&kGpuMemoryHealth, &kGpuClocks, &kGpuLinks, &kGpuFabric}) {
    const Verdict v = judge(*spec, f);
    EXPECT_EQ(v.status, Status::Fail) << spec->id;
    EXPECT_TRUE(has(v.summary, "GPU 2 (00000000:1A:00.0): nvmlDeviceGetRemappedRows: NVML_ERROR_GPU_IS_LOST"))
        << spec->id << ": " << v.summary;
    EXPECT_TRUE(has(v.remedy, "nvidia-smi -r")) << v.remedy;
  }
}

// ---- gpu.memory_health ------------------------------------------------------------------------

TEST(GpuMemoryHealth, PendingRemapFailsWhenVerifyingANode) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).remap_pending = true;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "a row remap waits for a GPU reset on GPU 3 (00000000:1B:00.0)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "nvidia-smi -r -i <gpu>")) << v.remedy;
}

TEST(GpuMemoryHealth, PendingRemapWarnsInAJob) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).remap_pending = true;
  const Verdict v = judge(kGpuMemoryHealth, f, Options{}, Profile::Job);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "running jobs may continue")) << v.summary;
}

TEST(GpuMemoryHealth, RemapFailureFails) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).remap_failure = true;
  const Verdict v = judge(kGpuMemoryHealth, f, Options{}, Profile::Job);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "row remapping failed on GPU 0")) << v.summary;
}

TEST(GpuMemoryHealth, ManyUncorrectableRemapsFail) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).remap_uncorrectable = 512;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "512 rows remapped for uncorrectable errors")) << v.summary;
}

TEST(GpuMemoryHealth, VolatileDoubleBitErrorsFail) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 5).ecc_dbe_volatile = 2;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "GPU 5 (00000000:1D:00.0): 2 uncorrectable (double-bit) ECC error(s)")) << v.summary;
}

TEST(GpuMemoryHealth, PersistenceOffSaysTheVolatileCountersReset) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).persistence_mode = false;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "volatile ECC counters restart")) << v.summary;
}

TEST(GpuMemoryHealth, RecoveryActionFailsNamingIt) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 6).recovery_action = kRecoveryDrainAndReset;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "GPU 6 (00000000:1E:00.0): drain and reset (recovery action 4)")) << v.summary;
}

TEST(GpuMemoryHealth, EccModeChangePendingWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).ecc_pending_enabled = false;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "ECC on now, off after the next reboot")) << v.summary;
}

TEST(GpuMemoryHealth, EccOffWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).ecc_enabled = false;
  gpu(f, 0).ecc_pending_enabled = false;
  gpu(f, 0).ecc_dbe_volatile.reset();
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "ECC is off on GPU 0")) << v.summary;
}

TEST(GpuMemoryHealth, ExhaustedBankWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).remap_banks_exhausted = 1;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "1 memory bank(s) without a spare row")) << v.summary;
}

TEST(GpuMemoryHealth, RetiredPagesPendingFailsBeforeAmpere) {
  RankFacts f = with_health(healthy_health(1));
  GpuHealth& g = gpu(f, 0);
  g.remap_pending.reset();
  g.remap_failure.reset();
  g.remap_correctable.reset();
  g.remap_uncorrectable.reset();
  g.unavailable.clear();
  g.unavailable["remapped_rows"] = "nvmlDeviceGetRemappedRows: not supported on this GPU";
  g.retired_pages_pending = true;
  g.retired_pages_dbe = 2;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "page retirement waits for a reboot on GPU 0")) << v.summary;
}

TEST(GpuMemoryHealth, UnderMigRemappingIsUnknownNeverPass) {
  RankFacts f = with_health(healthy_health(1));
  GpuHealth& g = gpu(f, 0);
  g.mig_enabled = true;
  g.remap_pending.reset();
  g.remap_failure.reset();
  g.unavailable["remapped_rows"] = "nvmlDeviceGetRemappedRows: not supported on this GPU (MIG is enabled)";
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "MIG is enabled")) << v.summary;
}

TEST(GpuMemoryHealth, OldDriverWithoutTheFunctionIsUnknownNamingIt) {
  RankFacts f = with_health(healthy_health(1));
  GpuHealth& g = gpu(f, 0);
  g.remap_pending.reset();
  g.remap_failure.reset();
  g.unavailable["remapped_rows"] = "driver 418.67 has no nvmlDeviceGetRemappedRows";
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "driver 418.67 has no nvmlDeviceGetRemappedRows")) << v.summary;
}

TEST(GpuMemoryHealth, NoGpuSkips) {
  GpuHealthFacts h = healthy_health(0);
  RankFacts f = healthy(0);
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(h, "preflight-gpu-probe health");
  EXPECT_EQ(judge(kGpuMemoryHealth, f).status, Status::Skip);
}

// ---- gpu.clocks -------------------------------------------------------------------------------

TEST(GpuClocks, HardwareSlowdownUnderLoadFailsNamingGpuAndReason) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 4).clock_event_reasons = kClocksHwSlowdown | kClocksSwPowerCap;
  gpu(f, 4).slowdown_samples = 5;
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "GPU 4 (00000000:1C:00.0): hardware slowdown in 5 of 5 samples")) << v.summary;
}

TEST(GpuClocks, PowerBrakeInOneSampleWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).clock_event_reasons = kClocksHwPowerBrake;
  gpu(f, 1).slowdown_samples = 1;
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "hardware power brake in 1 of 5 samples")) << v.summary;
}

TEST(GpuClocks, HotGpuWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).temperature_c = 86;
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "86 °C, slowdown at 87 °C")) << v.summary;
}

TEST(GpuClocks, IdleAndSoftwarePowerCapAreNotProblems) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).clock_event_reasons = kClocksGpuIdle | kClocksSwPowerCap;
  EXPECT_EQ(judge(kGpuClocks, f).status, Status::Pass);
}

TEST(GpuClocks, NoLoadIsUnknown) {
  GpuHealthFacts h = healthy_health();
  h.loaded = false;
  h.load = "no load (cuInit: CUresult 999): sampled idle";
  const Verdict v = judge(kGpuClocks, with_health(h));
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "sampled only at idle")) << v.summary;
}

TEST(GpuClocks, DriverWithoutTheFunctionIsUnknown) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).clock_event_reasons.reset();
  gpu(f, 0).unavailable["clocks"] = "driver 450.80.02 has no nvmlDeviceGetCurrentClocksEventReasons";
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "has no nvmlDeviceGetCurrentClocksEventReasons")) << v.summary;
}

// ---- gpu.links --------------------------------------------------------------------------------

TEST(GpuLinks, NvlinksDownFailNamingTheLinks) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 2).nvlinks_up = 16;
  gpu(f, 2).nvlinks_down = {16, 17};
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "GPU 2 (00000000:1A:00.0): 2 of 18 NVLinks down (links 16, 17)")) << v.summary;
}

TEST(GpuLinks, UnderMigLinksDownAreDisabledNotFailed) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 2).mig_enabled = true;
  gpu(f, 2).nvlinks_up = 0;
  gpu(f, 2).nvlinks_down = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "under MIG")) << v.summary;
}

TEST(GpuLinks, FewerLinksThanTheOtherGpusWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 7).nvlinks_present = 12;
  gpu(f, 7).nvlinks_up = 12;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "12 NVLinks up, other GPUs of the node 18")) << v.summary;
}

TEST(GpuLinks, NvlinkReplaysDuringTheLoadFail) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).nvlink_replay_delta = 3;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "3 NVLink replay/recovery event(s)")) << v.summary;
}

TEST(GpuLinks, NvlinkCrcErrorsWarnBelowAndFailAbove100PerSecond) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).nvlink_crc_delta = 1;  // 50/s over 0.02 s
  EXPECT_EQ(judge(kGpuLinks, f).status, Status::Warn);
  gpu(f, 0).nvlink_crc_delta = 10;  // 500/s
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "100 per second or more")) << v.summary;
}

TEST(GpuLinks, PcieX8UnderLoadFails) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).pcie_width = 8;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "GPU 3 (00000000:1B:00.0): PCIe Gen5 x8 under load, capable of Gen5 x16")) << v.summary;
}

TEST(GpuLinks, PcieLowerGenerationUnderLoadWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).pcie_gen = 3;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "PCIe Gen3 x16 under load, capable of Gen5 x16")) << v.summary;
}

TEST(GpuLinks, PcieNotAtP0IsNotJudged) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).pcie_gen = 1;
  gpu(f, 3).pstate = 8;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "idle GPUs lower their link generation")) << v.summary;
}

TEST(GpuLinks, SlowerSlotIsAConfigurationNote) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).pcie_gen = 4;
  gpu(f, 0).pcie_gen_max = 4;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "the slot allows Gen4, the GPU Gen5")) << v.summary;
}

TEST(GpuLinks, PcieReplaysDuringTheLoadWarn) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).pcie_replay_after = 10;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "7 PCIe replay(s) during the load")) << v.summary;
}

TEST(GpuLinks, UnreadableLinkStateIsUnknown) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).nvlinks_present.reset();
  gpu(f, 0).nvlinks_up.reset();
  gpu(f, 0).unavailable["nvlink"] = "driver 450.80.02 has no nvmlDeviceGetNvLinkState";
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "has no nvmlDeviceGetNvLinkState")) << v.summary;
}

// ---- gpu.fabric -------------------------------------------------------------------------------

TEST(GpuFabric, NoNvswitchSkips) {
  GpuHealthFacts h = healthy_health(2);
  h.nvswitches = 0;
  for (GpuHealth& g : h.gpus) g.fabric_state = kFabricNotSupported;
  const Verdict v = judge(kGpuFabric, with_health(h));
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_TRUE(has(v.summary, "no NVSwitch")) << v.summary;
}

TEST(GpuFabric, NotStartedFailsWithError802) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).fabric_state = kFabricNotStarted;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "NVSwitch fabric not started on GPU 0")) << v.summary;
  EXPECT_TRUE(has(v.summary, "802")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "systemctl start nvidia-fabricmanager")) << v.remedy;
}

TEST(GpuFabric, InProgressFails) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).fabric_state = kFabricInProgress;
  EXPECT_EQ(judge(kGpuFabric, f).status, Status::Fail);
}

TEST(GpuFabric, CompletedWithAnErrorFails) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).fabric_status = 999;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "completed with an error on GPU 1 (00000000:19:00.0) (status 999)")) << v.summary;
}

TEST(GpuFabric, FabricManagerNotRunningFails) {
  GpuHealthFacts h = healthy_health();
  h.fabric_manager_running = false;
  const Verdict v = judge(kGpuFabric, with_health(h));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "no nvidia-fabricmanager process running")) << v.summary;
}

TEST(GpuFabric, RouteUnhealthyFailsAndDegradedBandwidthWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).fabric_health_mask = 1u << 0;  // degraded bandwidth TRUE
  EXPECT_EQ(judge(kGpuFabric, f).status, Status::Warn);
  gpu(f, 0).fabric_health_mask = 1u << 4;  // route unhealthy TRUE
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "route unhealthy")) << v.summary;
}

TEST(GpuFabric, V3SummaryLimitedCapacityWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).fabric_info_version = 3;
  gpu(f, 0).fabric_health_summary = 3;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "limited capacity")) << v.summary;
}

TEST(GpuFabric, DifferentCliquesWarn) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 7).fabric_clique_id = 2;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "2 different fabric cliques")) << v.summary;
}

TEST(GpuFabric, OldDriverWithNvswitchesIsUnknown) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).fabric_state.reset();
  gpu(f, 0).unavailable["fabric"] = "driver 470.82.01 has no nvmlDeviceGetGpuFabricInfoV or nvmlDeviceGetGpuFabricInfo";
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "driver 470.82.01 has no")) << v.summary;
}

TEST(GpuFabric, PreHopperNvswitchesWithUnknownFabricManagerIsUnknown) {
  GpuHealthFacts h = healthy_health(2);
  h.fabric_manager_running.reset();
  for (GpuHealth& g : h.gpus) g.fabric_state = kFabricNotSupported;
  const Verdict v = judge(kGpuFabric, with_health(h));
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
}

// ---- gpu.xid ----------------------------------------------------------------------------------

RankFacts with_log(const std::string& kmsg) {
  RankFacts f = healthy(8);
  // The fixture's GPUs: NVML bus ids 0x18.. as in healthy(); the kmsg lines name 18 and 2a.
  (*f.gpu.driver.nvml_gpus.value())[1].pci_bus_id = "00000000:2A:00.0";
  f.gpu.driver.kernel_log = Probed<KernelLogFacts>::ok(kernel_log_facts(kmsg, "/dev/kmsg"), "/dev/kmsg");
  return f;
}

TEST(GpuXid, CleanLogPasses) {
  const Verdict v = judge(kGpuXid, with_log("6,1,100,-;Linux version 6.1.0\n6,2,200,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "2 records of /dev/kmsg")) << v.summary;
}

TEST(GpuXid, FatalXidFailsNamingGpuXidTimeAndAction) {
  const Verdict v = judge(kGpuXid, with_log("4,2001,3600000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', "
                                            "name=<unknown>, GPU has fallen off the bus.\n"));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "GPU 0 (0000:18:00.0): Xid 79 (1h00m after boot: GPU has fallen off the bus: reboot"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "Drain the node")) << v.remedy;
}

TEST(GpuXid, FallenOffTheBusWithoutAnXidFails) {
  const Verdict v = judge(kGpuXid, with_log("3,1,7200000000,-;NVRM: The NVIDIA GPU 0000:2a:00.0\n"
                                            "3,2,7200000001,c;NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                                            "3,3,7200000002,c;NVRM: fallen off the bus and is not responding to commands.\n"));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "GPU 1 (0000:2a:00.0): fallen off the bus (2h00m after boot)")) << v.summary;
}

TEST(GpuXid, ApplicationXidWarns) {
  const Verdict v = judge(kGpuXid, with_log("4,1,5000000,-;NVRM: Xid (PCI:0000:2a:00): 13, pid=2503421, name=python3, "
                                            "Graphics SM Warp Exception\n"));
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "application Xids")) << v.summary;
  EXPECT_TRUE(has(v.summary, "GPU 1 (0000:2a:00.0): Xid 13 (5s after boot")) << v.summary;
}

TEST(GpuXid, OtherXidAndNonFatalSxidWarn) {
  const Verdict v = judge(kGpuXid, with_log("4,1,5000000,-;NVRM: Xid (PCI:0000:18:00): 63, pid=1896, Row Remapper: New row\n"
                                            "4,2,6000000,-;nvidia-nvswitch2: SXid (PCI:0000:85:00.0): 12028, Non-fatal, Link 61\n"));
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(has(v.summary, "Xid 63")) << v.summary;
  EXPECT_TRUE(has(v.summary, "NVSwitch 0000:85:00.0: SXid 12028 (non-fatal")) << v.summary;
}

TEST(GpuXid, FatalSxidFails) {
  const Verdict v = judge(kGpuXid, with_log("4,2,6000000,-;nvidia-nvswitch0: SXid (PCI:0000:85:00.0): 20034, Fatal, Link 33\n"));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(has(v.summary, "fatal NVSwitch errors")) << v.summary;
}

TEST(GpuXid, UnreadableLogIsUnknownNamingTheCapability) {
  RankFacts f = healthy(8);
  f.gpu.driver.kernel_log = Probed<KernelLogFacts>::error(
      ProbeErrc::PermissionDenied,
      "/dev/kmsg: Operation not permitted (reading the kernel log needs CAP_SYSLOG (or kernel.dmesg_restrict=0); in a "
      "container --cap-add syslog, or run preflight on the host)",
      "/dev/kmsg");
  const Verdict v = judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "CAP_SYSLOG")) << v.summary;
}

TEST(GpuXid, NotReadIsUnknownAndImageSkips) {
  RankFacts f = healthy(8);
  EXPECT_EQ(judge(kGpuXid, f).status, Status::Unknown);
  EXPECT_EQ(judge(kGpuXid, f, Options{}, Profile::Image).status, Status::Skip);
}

}  // namespace
}  // namespace preflight
