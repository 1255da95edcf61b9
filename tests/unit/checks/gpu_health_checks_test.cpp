// SPDX-License-Identifier: MIT
// gpu.memory_health, gpu.clocks, gpu.links, gpu.fabric and gpu.xid on hand-built health facts:
// every finding of their tables made to happen, its code and parameters asserted.
#include <gtest/gtest.h>

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
KernelLogFacts kernel_log_facts(std::string_view text, std::string source);
namespace checks_gpu_health_checks_test {
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

/// A string parameter of a finding.
std::string param(const Finding& f, const std::string& name) { return f.params.value(name, std::string()); }

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
  f.gpu.driver.health =
      Probed<GpuHealthFacts>::error(ProbeErrc::Unsupported, "not run: no check that reads it is selected");
  for (const CheckSpec* spec : {&kGpuMemoryHealth, &kGpuClocks, &kGpuLinks, &kGpuFabric}) {
    const Verdict v = judge(*spec, f);
    EXPECT_EQ(v.status, Status::Unknown) << spec->id << ": " << v.summary;
  }
}

TEST(GpuHealthChecks, HelperCrashFails) {
  RankFacts f = healthy(8);
  f.gpu.driver.health = Probed<GpuHealthFacts>::error(
      ProbeErrc::Crashed, "preflight-gpu-probe health crashed with SIGSEGV", "preflight-gpu-probe health");
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
    EXPECT_EQ(v.finding.code, std::string(spec->id) + "/gpu-lost") << spec->id;
    EXPECT_EQ(param(v.finding, "gpus"),
              "GPU 2 (00000000:1A:00.0): nvmlDeviceGetRemappedRows: NVML_ERROR_GPU_IS_LOST (GPU is lost)")
        << spec->id;
    EXPECT_TRUE(has(v.summary, "GPU 2 (00000000:1A:00.0): nvmlDeviceGetRemappedRows: NVML_ERROR_GPU_IS_LOST"))
        << spec->id << ": " << v.summary;
    EXPECT_TRUE(has(v.remedy, "nvidia-smi -r")) << v.remedy;
  }
}

TEST(GpuHealthChecks, NoGpuSkipsWithEachChecksCode) {
  RankFacts f = healthy(0);
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(healthy_health(0), "preflight-gpu-probe health");
  for (const CheckSpec* spec : {&kGpuMemoryHealth, &kGpuClocks, &kGpuLinks}) {
    const Verdict v = judge(*spec, f);
    EXPECT_EQ(v.status, Status::Skip) << spec->id << ": " << v.summary;
    EXPECT_EQ(v.finding.code, std::string(spec->id) + "/no-gpu");
    EXPECT_TRUE(has(v.summary, "NVML lists no GPU on this node")) << v.summary;
  }
}

// ---- gpu.memory_health ------------------------------------------------------------------------

TEST(GpuMemoryHealth, PendingRemapFailsWhenVerifyingANode) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).remap_pending = true;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/remap-pending");
  EXPECT_EQ(param(v.finding, "pending_gpus"), "GPU 3 (00000000:1B:00.0)");
  EXPECT_TRUE(has(v.summary, "a row remap waits for a GPU reset on GPU 3 (00000000:1B:00.0)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "nvidia-smi -r -i <gpu>")) << v.remedy;
}

TEST(GpuMemoryHealth, PendingRemapWarnsInAJob) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).remap_pending = true;
  const Verdict v = judge(kGpuMemoryHealth, f, Options{}, Profile::Job);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.memory_health/remap-pending-job");
  EXPECT_EQ(param(v.finding, "pending_gpus"), "GPU 3 (00000000:1B:00.0)");
  EXPECT_TRUE(has(v.summary, "running jobs may continue")) << v.summary;
}

TEST(GpuMemoryHealth, RemapFailureFails) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).remap_failure = true;
  const Verdict v = judge(kGpuMemoryHealth, f, Options{}, Profile::Job);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/remap-failed");
  EXPECT_EQ(param(v.finding, "failed_gpus"), "GPU 0 (00000000:18:00.0)");
}

TEST(GpuMemoryHealth, ManyUncorrectableRemapsFail) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).remap_uncorrectable = 512;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/many-uncorrectable-remaps");
  EXPECT_EQ(param(v.finding, "remapped"), "GPU 1 (00000000:19:00.0): 512 rows remapped for uncorrectable errors");
  EXPECT_EQ(v.finding.params["remap_limit"], 512);
  EXPECT_TRUE(has(v.summary, "512 rows remapped for uncorrectable errors (at least 512)")) << v.summary;
}

TEST(GpuMemoryHealth, VolatileDoubleBitErrorsFail) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 5).ecc_dbe_volatile = 2;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/double-bit-errors");
  EXPECT_EQ(param(v.finding, "dbe_errors"), "GPU 5 (00000000:1D:00.0): 2 uncorrectable (double-bit) ECC error(s)");
}

TEST(GpuMemoryHealth, PersistenceOffSaysTheVolatileCountersReset) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).persistence_mode = false;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.memory_health/healthy");
  EXPECT_EQ(param(v.finding, "gpu_count"), "1 GPU");
  EXPECT_TRUE(has(v.summary, "volatile ECC counters restart")) << v.summary;
}

TEST(GpuMemoryHealth, RecoveryActionFailsNamingIt) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 6).recovery_action = kRecoveryDrainAndReset;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/recovery-action");
  EXPECT_EQ(param(v.finding, "recovery"), "GPU 6 (00000000:1E:00.0): drain and reset (recovery action 4)");
}

TEST(GpuMemoryHealth, EccModeChangePendingWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).ecc_pending_enabled = false;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/ecc-change-pending");
  EXPECT_EQ(param(v.finding, "ecc_changes"), "GPU 0 (00000000:18:00.0): ECC on now, off after the next reboot");
}

TEST(GpuMemoryHealth, EccOffWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).ecc_enabled = false;
  gpu(f, 0).ecc_pending_enabled = false;
  gpu(f, 0).ecc_dbe_volatile.reset();
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/ecc-off");
  EXPECT_EQ(param(v.finding, "ecc_off_gpus"), "GPU 0 (00000000:18:00.0)");
}

TEST(GpuMemoryHealth, ExhaustedBankWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).remap_banks_exhausted = 1;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/bank-exhausted");
  EXPECT_EQ(param(v.finding, "exhausted"), "GPU 0 (00000000:18:00.0): 1 memory bank(s) without a spare row");
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
  EXPECT_EQ(v.finding.code, "gpu.memory_health/retirement-pending");
  EXPECT_EQ(param(v.finding, "retired_gpus"), "GPU 0 (00000000:18:00.0)");
}

TEST(GpuMemoryHealth, SixtyThreeRetiredPagesFail) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).retired_pages_dbe = 40;
  gpu(f, 0).retired_pages_sbe = 23;
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.memory_health/many-retired-pages");
  EXPECT_EQ(param(v.finding, "retired_pages"), "GPU 0 (00000000:18:00.0): 63 pages retired");
  EXPECT_EQ(v.finding.params["retired_limit"], 63);
  EXPECT_TRUE(has(v.summary, "63 pages retired (at least 63)")) << v.summary;
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
  EXPECT_EQ(v.finding.code, "gpu.memory_health/unreadable");
  EXPECT_TRUE(has(param(v.finding, "unread"), "MIG is enabled")) << v.finding.params;
}

TEST(GpuMemoryHealth, OldDriverWithoutTheFunctionIsUnknownNamingIt) {
  RankFacts f = with_health(healthy_health(1));
  GpuHealth& g = gpu(f, 0);
  g.remap_pending.reset();
  g.remap_failure.reset();
  g.unavailable["remapped_rows"] = "driver 418.67 has no nvmlDeviceGetRemappedRows";
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/unreadable");
  EXPECT_TRUE(
      has(param(v.finding, "unread"), "GPU 0 (00000000:18:00.0): driver 418.67 has no nvmlDeviceGetRemappedRows"))
      << v.finding.params;
}

TEST(GpuMemoryHealth, NoGpuSkips) {
  GpuHealthFacts h = healthy_health(0);
  RankFacts f = healthy(0);
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(h, "preflight-gpu-probe health");
  const Verdict v = judge(kGpuMemoryHealth, f);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_EQ(v.finding.code, "gpu.memory_health/no-gpu");
}

// ---- gpu.clocks -------------------------------------------------------------------------------

TEST(GpuClocks, HardwareSlowdownUnderLoadFailsNamingGpuAndReason) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 4).clock_event_reasons = kClocksHwSlowdown | kClocksSwPowerCap;
  gpu(f, 4).slowdown_samples = 5;
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.clocks/hardware-slowdown");
  EXPECT_EQ(param(v.finding, "slowed"), "GPU 4 (00000000:1C:00.0): hardware slowdown in 5 of 5 samples");
  EXPECT_TRUE(has(v.summary, "5 of 5 samples under load")) << v.summary;
}

TEST(GpuClocks, PowerBrakeInOneSampleWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).clock_event_reasons = kClocksHwPowerBrake;
  gpu(f, 1).slowdown_samples = 1;
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.clocks/hardware-slowdown-once");
  EXPECT_EQ(param(v.finding, "slowed_once"), "GPU 1 (00000000:19:00.0): hardware power brake in 1 of 5 samples");
}

TEST(GpuClocks, HotGpuWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).temperature_c = 86;
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.clocks/thermal-limit");
  EXPECT_EQ(param(v.finding, "hot"), "GPU 0 (00000000:18:00.0): 86 °C, slowdown at 87 °C");
}

TEST(GpuClocks, SoftwareThermalSlowdownWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 2).clock_event_reasons = kClocksSwThermal;
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.clocks/thermal-limit");
  EXPECT_EQ(param(v.finding, "hot"), "GPU 2 (00000000:1A:00.0): software thermal slowdown");
}

TEST(GpuClocks, IdleAndSoftwarePowerCapAreNotProblems) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).clock_event_reasons = kClocksGpuIdle | kClocksSwPowerCap;
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.clocks/no-slowdown");
  EXPECT_EQ(param(v.finding, "gpu_count"), "8 GPUs");
}

TEST(GpuClocks, NoLoadIsUnknown) {
  GpuHealthFacts h = healthy_health();
  h.loaded = false;
  h.load = "no load (cuInit: CUresult 999): sampled idle";
  const Verdict v = judge(kGpuClocks, with_health(h));
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "gpu.clocks/idle-only");
  EXPECT_EQ(param(v.finding, "load"), "no load (cuInit: CUresult 999): sampled idle");
  EXPECT_TRUE(has(v.summary, "sampled only at idle (no load (cuInit: CUresult 999): sampled idle)")) << v.summary;
}

TEST(GpuClocks, DriverWithoutTheFunctionIsUnknown) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).clock_event_reasons.reset();
  gpu(f, 0).unavailable["clocks"] = "driver 450.80.02 has no nvmlDeviceGetCurrentClocksEventReasons";
  const Verdict v = judge(kGpuClocks, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "gpu.clocks/unreadable");
  EXPECT_EQ(param(v.finding, "unread"),
            "GPU 0 (00000000:18:00.0): driver 450.80.02 has no nvmlDeviceGetCurrentClocksEventReasons");
}

// ---- gpu.links --------------------------------------------------------------------------------

TEST(GpuLinks, NvlinksDownFailNamingTheLinks) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 2).nvlinks_up = 16;
  gpu(f, 2).nvlinks_down = {16, 17};
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.links/nvlink-down");
  EXPECT_EQ(param(v.finding, "links_down"), "GPU 2 (00000000:1A:00.0): 2 of 18 NVLinks down (links 16, 17)");
}

TEST(GpuLinks, UnderMigLinksDownAreDisabledNotFailed) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 2).mig_enabled = true;
  gpu(f, 2).nvlinks_up = 0;
  gpu(f, 2).nvlinks_down = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.links/healthy");
  EXPECT_TRUE(has(v.summary, "under MIG")) << v.summary;
}

TEST(GpuLinks, FewerLinksThanTheOtherGpusWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 7).nvlinks_present = 12;
  gpu(f, 7).nvlinks_up = 12;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.links/nvlink-fewer");
  EXPECT_EQ(param(v.finding, "fewer"), "GPU 7 (00000000:1F:00.0): 12 NVLinks up, other GPUs of the node 18");
}

TEST(GpuLinks, NvlinkReplaysDuringTheLoadFail) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).nvlink_replay_delta = 3;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.links/nvlink-replays");
  EXPECT_EQ(param(v.finding, "nvlink_replays"), "GPU 0 (00000000:18:00.0): 3 NVLink replay/recovery event(s)");
}

TEST(GpuLinks, NvlinkCrcErrorsWarnBelowAndFailAbove100PerSecond) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).nvlink_crc_delta = 1;  // 50/s over 0.02 s
  const Verdict low = judge(kGpuLinks, f);
  EXPECT_EQ(low.status, Status::Warn);
  EXPECT_EQ(low.finding.code, "gpu.links/nvlink-crc");
  EXPECT_EQ(param(low.finding, "crc_low"), "GPU 0 (00000000:18:00.0): 1 NVLink CRC error(s) in 0.02 s");
  gpu(f, 0).nvlink_crc_delta = 10;  // 500/s
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.links/nvlink-crc-high");
  EXPECT_EQ(param(v.finding, "crc_errors"), "GPU 0 (00000000:18:00.0): 10 NVLink CRC error(s) in 0.02 s");
  EXPECT_TRUE(has(v.summary, "100 per second or more")) << v.summary;
}

TEST(GpuLinks, PcieX8UnderLoadFails) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).pcie_width = 8;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.links/pcie-narrow");
  EXPECT_EQ(param(v.finding, "narrow"), "GPU 3 (00000000:1B:00.0): PCIe Gen5 x8 under load, capable of Gen5 x16");
}

TEST(GpuLinks, PcieLowerGenerationUnderLoadWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).pcie_gen = 3;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.links/pcie-slow");
  EXPECT_EQ(param(v.finding, "slow"), "GPU 3 (00000000:1B:00.0): PCIe Gen3 x16 under load, capable of Gen5 x16");
}

TEST(GpuLinks, PcieNotAtP0IsNotJudged) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 3).pcie_gen = 1;
  gpu(f, 3).pstate = 8;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "gpu.links/pcie-idle");
  EXPECT_EQ(param(v.finding, "idle"), "GPU 3 (00000000:1B:00.0)");
  EXPECT_EQ(param(v.finding, "load"), "cuMemsetD32 on 8 GPUs for 0.02 s, 5 sample rounds");
  EXPECT_TRUE(has(v.summary, "idle GPUs lower their link generation")) << v.summary;
}

TEST(GpuLinks, SlowerSlotIsAConfigurationNote) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).pcie_gen = 4;
  gpu(f, 0).pcie_gen_max = 4;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.links/healthy");
  EXPECT_TRUE(has(v.summary, "the slot allows Gen4, the GPU Gen5")) << v.summary;
}

TEST(GpuLinks, PcieReplaysDuringTheLoadWarn) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).pcie_replay_after = 10;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.links/pcie-replays");
  EXPECT_EQ(param(v.finding, "pcie_replays"), "GPU 0 (00000000:18:00.0): 7 PCIe replay(s) during the load");
}

TEST(GpuLinks, ALifetimeOfPcieReplaysWarnsThoughNoneCameDuringTheLoad) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).pcie_replay_before = 500000;
  gpu(f, 1).pcie_replay_after = 500000;
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.links/pcie-replays-lifetime");
  EXPECT_TRUE(has(v.summary, ": 500000 PCIe replays since the driver loaded (1000 or more")) << v.summary;
  // A few over a node's lifetime are no finding.
  gpu(f, 1).pcie_replay_before = 999;
  gpu(f, 1).pcie_replay_after = 999;
  EXPECT_EQ(judge(kGpuLinks, f).status, Status::Pass);
}

TEST(GpuLinks, UnreadableLinkStateIsUnknown) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).nvlinks_present.reset();
  gpu(f, 0).nvlinks_up.reset();
  gpu(f, 0).unavailable["nvlink"] = "driver 450.80.02 has no nvmlDeviceGetNvLinkState";
  const Verdict v = judge(kGpuLinks, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "gpu.links/unreadable");
  EXPECT_EQ(param(v.finding, "unread"), "GPU 0 (00000000:18:00.0): driver 450.80.02 has no nvmlDeviceGetNvLinkState");
}

// ---- gpu.fabric -------------------------------------------------------------------------------

TEST(GpuFabric, NoNvswitchSkips) {
  GpuHealthFacts h = healthy_health(2);
  h.nvswitches = 0;
  for (GpuHealth& g : h.gpus) g.fabric_state = kFabricNotSupported;
  Verdict v = judge(kGpuFabric, with_health(h));
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_EQ(v.finding.code, "gpu.fabric/no-fabric");
  EXPECT_FALSE(v.finding.params.contains("unread_sysfs"));  // a part of the message, not data
  EXPECT_TRUE(has(v.summary, "no NVSwitch on this node and no GPU takes part in an NVSwitch fabric")) << v.summary;
  h.nvswitches.reset();  // sysfs not readable
  v = judge(kGpuFabric, with_health(h));
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_EQ(v.finding.code, "gpu.fabric/no-fabric");
  EXPECT_TRUE(has(v.finding.message, "reported (sysfs not readable)")) << v.finding.message;
  EXPECT_TRUE(has(v.summary, "no NVSwitch on this node reported (sysfs not readable) and no GPU takes part"))
      << v.summary;
}

TEST(GpuFabric, NotStartedFailsWithError802) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).fabric_state = kFabricNotStarted;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.fabric/not-started");
  EXPECT_EQ(param(v.finding, "not_started"), "GPU 0 (00000000:18:00.0)");
  EXPECT_TRUE(has(v.summary, "NVSwitch fabric not started on GPU 0")) << v.summary;
  EXPECT_TRUE(has(v.summary, "802")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "systemctl start nvidia-fabricmanager")) << v.remedy;
}

TEST(GpuFabric, InProgressFails) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).fabric_state = kFabricInProgress;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.fabric/in-progress");
  EXPECT_EQ(param(v.finding, "in_progress"), "GPU 1 (00000000:19:00.0)");
}

TEST(GpuFabric, CompletedWithAnErrorFails) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 1).fabric_status = 999;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.fabric/completed-with-error");
  EXPECT_EQ(param(v.finding, "failed"), "GPU 1 (00000000:19:00.0) (status 999)");
  EXPECT_TRUE(has(v.summary, "completed with an error on GPU 1 (00000000:19:00.0) (status 999)")) << v.summary;
}

TEST(GpuFabric, FabricManagerNotRunningFails) {
  GpuHealthFacts h = healthy_health();
  h.fabric_manager_running = false;
  const Verdict v = judge(kGpuFabric, with_health(h));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.fabric/no-fabric-manager");
  EXPECT_EQ(v.finding.params["nvswitches"], 4);
  EXPECT_TRUE(has(v.summary, "4 NVSwitch(es) on the node and no nvidia-fabricmanager process running")) << v.summary;
}

TEST(GpuFabric, RouteUnhealthyFailsAndDegradedBandwidthWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).fabric_health_mask = 1u << 0;  // degraded bandwidth TRUE
  const Verdict degraded = judge(kGpuFabric, f);
  EXPECT_EQ(degraded.status, Status::Warn);
  EXPECT_EQ(degraded.finding.code, "gpu.fabric/degraded");
  EXPECT_EQ(param(degraded.finding, "degraded"), "GPU 0 (00000000:18:00.0): degraded bandwidth");
  gpu(f, 0).fabric_health_mask = 1u << 4;  // route unhealthy TRUE
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.fabric/unhealthy");
  EXPECT_EQ(param(v.finding, "unhealthy"), "GPU 0 (00000000:18:00.0): route unhealthy");
}

TEST(GpuFabric, V3SummaryLimitedCapacityWarns) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 0).fabric_info_version = 3;
  gpu(f, 0).fabric_health_summary = 3;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.fabric/degraded");
  EXPECT_EQ(param(v.finding, "degraded"), "GPU 0 (00000000:18:00.0): health summary limited capacity");
}

TEST(GpuFabric, DifferentCliquesWarn) {
  RankFacts f = with_health(healthy_health());
  gpu(f, 7).fabric_clique_id = 2;
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "gpu.fabric/split");
  EXPECT_EQ(v.finding.params["groups"], 2);
  EXPECT_TRUE(has(v.summary, "the node's GPUs are in 2 different fabric cliques")) << v.summary;
}

TEST(GpuFabric, OldDriverWithNvswitchesIsUnknown) {
  RankFacts f = with_health(healthy_health(1));
  gpu(f, 0).fabric_state.reset();
  gpu(f, 0).unavailable["fabric"] = "driver 470.82.01 has no nvmlDeviceGetGpuFabricInfoV or nvmlDeviceGetGpuFabricInfo";
  const Verdict v = judge(kGpuFabric, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "gpu.fabric/unreadable");
  EXPECT_EQ(
      param(v.finding, "unread"),
      "GPU 0 (00000000:18:00.0): driver 470.82.01 has no nvmlDeviceGetGpuFabricInfoV or nvmlDeviceGetGpuFabricInfo");
}

TEST(GpuFabric, PreHopperNvswitchesWithUnknownFabricManagerIsUnknown) {
  GpuHealthFacts h = healthy_health(2);
  h.fabric_manager_running.reset();
  for (GpuHealth& g : h.gpus) g.fabric_state = kFabricNotSupported;
  const Verdict v = judge(kGpuFabric, with_health(h));
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.fabric/fabric-manager-unknown");
  EXPECT_EQ(v.finding.params["nvswitches"], 4);
}

TEST(GpuFabric, PreHopperNvswitchesWithTheFabricManagerRunningPass) {
  GpuHealthFacts h = healthy_health(2);
  for (GpuHealth& g : h.gpus) g.fabric_state = kFabricNotSupported;
  const Verdict v = judge(kGpuFabric, with_health(h));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.fabric/fabric-manager-runs");
  EXPECT_EQ(judge(kGpuFabric, with_health(healthy_health())).finding.code, "gpu.fabric/completed");
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
  const Verdict v = judge(
      kGpuXid,
      with_log("6,1,100,-;Linux version 6.1.0\n6,2,200,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.xid/clean");
  EXPECT_EQ(v.finding.params["records"], 2);
  EXPECT_EQ(param(v.finding, "source"), "/dev/kmsg");
  EXPECT_TRUE(has(v.summary, "2 records of /dev/kmsg")) << v.summary;
}

TEST(GpuXid, FatalXidFailsNamingGpuXidTimeAndAction) {
  const Verdict v = judge(kGpuXid, with_log("4,2001,3600000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', "
                                            "name=<unknown>, GPU has fallen off the bus.\n"));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.xid/fatal-in-log");
  EXPECT_TRUE(has(param(v.finding, "fatal"),
                  "GPU 0 (0000:18:00.0): Xid 79 (1h00m after boot: GPU has fallen off the bus: reboot"))
      << v.finding.params;
  EXPECT_TRUE(has(param(v.finding, "action"), "GPU has fallen off the bus: reboot the node")) << v.finding.params;
  EXPECT_TRUE(has(v.remedy, "Drain the node before any job, then act on each: GPU has fallen off the bus: reboot"))
      << v.remedy;
}

TEST(GpuXid, FallenOffTheBusWithoutAnXidFails) {
  const Verdict v =
      judge(kGpuXid, with_log("3,1,7200000000,-;NVRM: The NVIDIA GPU 0000:2a:00.0\n"
                              "3,2,7200000001,c;NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                              "3,3,7200000002,c;NVRM: fallen off the bus and is not responding to commands.\n"));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.xid/fatal-in-log");
  EXPECT_EQ(param(v.finding, "fatal"), "GPU 1 (0000:2a:00.0): fallen off the bus (2h00m after boot)");
  EXPECT_TRUE(has(v.summary, "GPU 1 (0000:2a:00.0): fallen off the bus (2h00m after boot)")) << v.summary;
}

TEST(GpuXid, ApplicationXidsAreTheJobsNeverTheNodes) {
  // 13, 31, 43, 45 and 109 in the log, 672 of them 45s: context for a job's fault, never a WARN
  // that --strict would turn into a drained node.
  std::string log =
      "4,1,5000000,-;NVRM: Xid (PCI:0000:2a:00): 13, pid=2503421, name=python3, "
      "Graphics SM Warp Exception\n"
      "4,2,5100000,-;NVRM: Xid (PCI:0000:2a:00): 31, pid=2503421, name=python3, Ch 00000008, "
      "intr 10000000. MMU Fault\n"
      "4,3,5200000,-;NVRM: Xid (PCI:0000:2a:00): 43, pid=2503421, name=python3, Ch 00000008\n"
      "4,4,5300000,-;NVRM: Xid (PCI:0000:18:00): 109, pid=2503422, name=python3, Ch 00000010, "
      "errorString CTX SWITCH TIMEOUT, Info 0x3c046\n";
  for (int i = 0; i < 672; ++i) {
    log += "4," + std::to_string(10 + i) + "," + std::to_string(6000000 + i * 1000) +
           ",-;NVRM: Xid (PCI:0000:2a:00): 45, pid=2503421, name=python3, Ch 00000008\n";
  }
  const Verdict v = judge(kGpuXid, with_log(log));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.xid/application-xid-in-log");
  EXPECT_TRUE(has(param(v.finding, "application"), "GPU 1 (0000:2a:00.0): Xid 13 (5s after boot")) << v.finding.params;
  EXPECT_TRUE(has(v.summary, "a job's own faults and not the node's")) << v.summary;
  EXPECT_TRUE(has(v.summary, "Xid 109")) << v.summary;
  // A hardware Xid beside them is still the node's.
  const Verdict mixed = judge(kGpuXid, with_log(log + "4,900,9000000,-;NVRM: Xid (PCI:0000:18:00): 63, pid=1896, "
                                                      "Row Remapper: New row\n"));
  EXPECT_EQ(mixed.status, Status::Warn) << mixed.summary;
  EXPECT_EQ(mixed.finding.code, "gpu.xid/error-in-log");
  const Verdict fatal = judge(kGpuXid, with_log(log + "4,901,9100000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1896, "
                                                      "GPU has fallen off the bus.\n"));
  EXPECT_EQ(fatal.status, Status::Fail) << fatal.summary;
}

TEST(GpuXid, OtherXidAndNonFatalSxidWarn) {
  const Verdict v =
      judge(kGpuXid, with_log("4,1,5000000,-;NVRM: Xid (PCI:0000:18:00): 63, pid=1896, Row Remapper: New row\n"
                              "4,2,6000000,-;nvidia-nvswitch2: SXid (PCI:0000:85:00.0): 12028, Non-fatal, Link 61\n"));
  EXPECT_EQ(v.status, Status::Warn);
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "gpu.xid/error-in-log");
  EXPECT_TRUE(has(param(v.findings[0], "errors"), "GPU 0 (0000:18:00.0): Xid 63 (5s after boot"))
      << v.findings[0].params;
  EXPECT_EQ(v.findings[1].code, "gpu.xid/sxid-non-fatal");
  EXPECT_EQ(param(v.findings[1], "sxid_non_fatal"), "NVSwitch 0000:85:00.0: SXid 12028 (non-fatal, 6s after boot)");
  EXPECT_TRUE(has(v.summary, "NVSwitch 0000:85:00.0: SXid 12028 (non-fatal")) << v.summary;
}

TEST(GpuXid, FatalSxidFails) {
  const Verdict v =
      judge(kGpuXid, with_log("4,2,6000000,-;nvidia-nvswitch0: SXid (PCI:0000:85:00.0): 20034, Fatal, Link 33\n"));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "gpu.xid/sxid-fatal");
  EXPECT_EQ(param(v.finding, "sxid_fatal"), "NVSwitch 0000:85:00.0: SXid 20034 (6s after boot)");
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
  EXPECT_EQ(v.finding.code, "gpu.xid/kernel-log-denied");
  EXPECT_TRUE(has(param(v.finding, "detail"), "CAP_SYSLOG")) << v.finding.params;
  EXPECT_EQ(param(v.finding, "uncovered"), "the 8 GPUs");
  EXPECT_TRUE(
      has(v.summary, "; no NVML XID events were collected on the 8 GPUs (preflight's own GPU work did not watch them)"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "CAP_SYSLOG")) << v.summary;
}

TEST(GpuXid, NotReadIsUnknownAndImageSkips) {
  RankFacts f = healthy(8);
  const Verdict v = judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "gpu.xid/kernel-log-not-read");
  EXPECT_EQ(param(v.finding, "why"), f.gpu.driver.kernel_log.why());
  EXPECT_EQ(param(v.finding, "uncovered"), "the 8 GPUs");
  EXPECT_TRUE(
      has(v.summary, "; no NVML XID events were collected on the 8 GPUs (preflight's own GPU work did not watch them)"))
      << v.summary;
  EXPECT_EQ(judge(kGpuXid, f, Options{}, Profile::Image).status, Status::Skip);
}

/// The healthy node with a clean kernel log and the XIDs NVML reported on its GPUs during the
/// health load: {GPU index, Xid}.
RankFacts with_nvml_xids(const std::vector<std::pair<int, std::uint64_t>>& xids) {
  RankFacts f = with_log("6,1,100,-;Linux version 6.1.0\n");
  GpuHealthFacts h = healthy_health();
  NvmlXidWatch& w = h.xid_watch;
  w.work = "health load";
  w.collected = true;
  w.start_s = 0.31;
  w.end_s = 0.52;
  for (int i = 0; i < 8; ++i) {
    NvmlXidGpu g;
    g.index = i;
    g.pci_bus_id = (*f.gpu.driver.nvml_gpus.value())[static_cast<std::size_t>(i)].pci_bus_id;
    g.registered = true;
    w.gpus.push_back(g);
  }
  for (const auto& [index, xid] : xids) {
    NvmlXidEvent e;
    e.gpu = index;
    e.pci_bus_id = w.gpus[static_cast<std::size_t>(index)].pci_bus_id;
    e.xid = xid;
    e.seconds = 0.4;
    w.events.push_back(e);
  }
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(h, "preflight-gpu-probe health");
  return f;
}

TEST(GpuXid, FatalXidDuringPreflightsWorkFails) {
  const Verdict v = judge(kGpuXid, with_nvml_xids({{3, 79}}));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.xid/fatal-during-run");
  EXPECT_TRUE(has(param(v.finding, "run_fatal"),
                  "GPU 3 (00000000:1B:00.0): Xid 79 raised while preflight ran (NVML "
                  "event during the health load: GPU has fallen off the bus: reboot"))
      << v.finding.params;
  EXPECT_TRUE(has(param(v.finding, "run_action"), "GPU has fallen off the bus: reboot the node")) << v.finding.params;
  EXPECT_TRUE(has(v.remedy,
                  "Drain the node before any job (the GPU failed under preflight's own work), then act on "
                  "each: GPU has fallen off the bus: reboot the node"))
      << v.remedy;
}

TEST(GpuXid, OtherAndApplicationXidsDuringPreflightsWorkWarn) {
  Verdict v = judge(kGpuXid, with_nvml_xids({{2, 999}}));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.xid/error-during-run");
  EXPECT_TRUE(has(param(v.finding, "run_errors"), "GPU 2 (00000000:1A:00.0): Xid 999 raised while preflight ran"))
      << v.finding.params;
  v = judge(kGpuXid, with_nvml_xids({{1, 13}}));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.xid/application-xid-during-run");
  EXPECT_TRUE(has(param(v.finding, "run_application"), "GPU 1 (00000000:2A:00.0): Xid 13 raised while preflight ran"))
      << v.finding.params;
  EXPECT_TRUE(has(v.summary, "application Xids: GPU 1 (00000000:2A:00.0): Xid 13")) << v.summary;
}

TEST(GpuXid, NoXidDuringPreflightsWorkWithTheLogUnreadablePassesSayingItsScope) {
  RankFacts f = with_nvml_xids({});
  f.gpu.driver.kernel_log =
      Probed<KernelLogFacts>::error(ProbeErrc::PermissionDenied, "/dev/kmsg: Operation not permitted", "/dev/kmsg");
  const Verdict v = judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.xid/clean-during-run");
  EXPECT_EQ(param(v.finding, "gpu_count"), "8 GPUs");
  EXPECT_EQ(param(v.finding, "read"), "readable");
  EXPECT_EQ(v.summary,
            "no XID during preflight's own GPU work on 8 GPUs (NVML events); this boot's earlier kernel log "
            "was not readable: /dev/kmsg: Operation not permitted");
}

}  // namespace
}  // namespace checks_gpu_health_checks_test
}  // namespace preflight
