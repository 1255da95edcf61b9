// SPDX-License-Identifier: MIT
// One lost GPU among eight (NVML_ERROR_GPU_IS_LOST) and per-GPU NVML and CUDA errors: each check
// that reads that GPU names it with its cause, judges the other GPUs, and never PASSes the node;
// the helper's driver document against the fake scenario gpu3-lost keeps the other seven GPUs.
#include <gtest/gtest.h>

#include <string>

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"
#include "probes/gpu_driver_probe.hpp"
#include "sys/contained.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace checks_gpu_lost_test {
namespace {
using namespace gpu_fixture;
using namespace std::chrono_literals;

constexpr char kLostError[] = "nvmlDeviceGetName: NVML_ERROR_GPU_IS_LOST (GPU is lost)";

const Finding* lost_finding(const Verdict& v, std::string_view code) {
  for (const Finding& f : v.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

/// 8 H100s, GPU 3 (00000000:1B:00.0) lost: NVML lists it with its index, bus id and the error; CUDA
/// lists the other seven; every pair of GPU 3 carries "GPU 3 is lost", the others are NV18.
RankFacts lost_gpu3_node() {
  RankFacts f = healthy(8);
  DriverFacts& d = f.gpu.driver;
  NvmlGpu& g = (*d.nvml_gpus.value())[3];
  g = NvmlGpu{};
  g.index = 3;
  g.pci_bus_id = nvml_bus(3);
  g.lost = kLostError;
  std::vector<CudaDevice>& cuda = *d.cuda_devices.value();
  cuda.erase(cuda.begin() + 3);
  for (std::size_t i = 0; i < cuda.size(); ++i) cuda[i].ordinal = static_cast<int>(i);
  std::vector<GpuPair> pairs;
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) {
      GpuPair p;
      p.a = a;
      p.b = b;
      if (a == 3 || b == 3) {
        p.error = "GPU 3 is lost";
      } else {
        p.path = "NODE";
        p.nvlinks = 18;
        p.p2p_read = p.p2p_write = p.p2p_nvlink = "OK";
      }
      pairs.push_back(p);
    }
  }
  d.gpu_pairs = Probed<std::vector<GpuPair>>::ok(pairs, "test");
  return f;
}

TEST(GpuLost, GpuCountFailsNamingTheLostGpuAndItsCause) {
  RankFacts f = lost_gpu3_node();
  f.placement.local_ranks = 7;
  const Verdict v = judge(kGpuCount, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  const Finding* lost = lost_finding(v, "gpu.count/gpu-lost");
  ASSERT_NE(lost, nullptr) << v.summary;
  EXPECT_EQ(lost->params["gpus"], "GPU 3 (00000000:1B:00.0): " + std::string(kLostError));
  EXPECT_TRUE(has(v.summary,
                  "GPU 3 (00000000:1B:00.0): nvmlDeviceGetName: NVML_ERROR_GPU_IS_LOST (GPU is lost) — "
                  "the GPU is lost or needs a reset"))
      << v.summary;
  // Not also "hidden from CUDA" (its cause is said), and the seven others are judged as usual.
  EXPECT_EQ(lost_finding(v, "gpu.count/hidden-from-cuda"), nullptr) << v.summary;
  EXPECT_EQ(lost_finding(v, "gpu.count/visible"), nullptr) << v.summary;
  EXPECT_EQ(v.findings.size(), 1u) << v.summary;
}

TEST(GpuLost, GpuCountNamesPerGpuReadErrorsOfNvmlAndCudaAsUnknown) {
  RankFacts f = healthy(8);
  (*f.gpu.driver.nvml_gpus.value())[5].error = "nvmlDeviceGetMemoryInfo: NVML_ERROR_UNKNOWN (Unknown Error)";
  (*f.gpu.driver.cuda_devices.value())[6].error = "cuDeviceTotalMem_v2: CUDA_ERROR_UNKNOWN (999)";
  const Verdict v = judge(kGpuCount, f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  const Finding* nvml = lost_finding(v, "gpu.count/gpu-read-error");
  ASSERT_NE(nvml, nullptr) << v.summary;
  EXPECT_EQ(nvml->params["gpus"],
            "GPU 5 (00000000:1D:00.0): nvmlDeviceGetMemoryInfo: NVML_ERROR_UNKNOWN (Unknown Error)");
  const Finding* cuda = lost_finding(v, "gpu.count/cuda-device-error");
  ASSERT_NE(cuda, nullptr) << v.summary;
  EXPECT_EQ(cuda->params["devices"], "device 6: cuDeviceTotalMem_v2: CUDA_ERROR_UNKNOWN (999)");
}

TEST(GpuLost, GpuBusyJudgesTheSevenGpusCudaSees) {
  const Verdict v = judge(kGpuBusy, lost_gpu3_node());
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "gpu.busy/free");
  EXPECT_EQ(v.finding.params["gpus"], "7 GPUs");
}

TEST(GpuLost, GpuBusyFailsALostGpuItJudgesAndStillJudgesTheOthers) {
  // Without CUDA's view every GPU NVML lists is judged, the lost one included.
  RankFacts f = lost_gpu3_node();
  f.gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::error(ProbeErrc::ApiError, "cuInit: 999", "test");
  NvmlGpu& busy = (*f.gpu.driver.nvml_gpus.value())[0];
  busy.processes.push_back({4242, 30000 * kMiB});
  const Verdict v = judge(kGpuBusy, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  const Finding* lost = lost_finding(v, "gpu.busy/gpu-lost");
  ASSERT_NE(lost, nullptr) << v.summary;
  EXPECT_EQ(lost->params["gpus"], "GPU 3 (00000000:1B:00.0): " + std::string(kLostError));
  EXPECT_NE(lost_finding(v, "gpu.busy/foreign-process"), nullptr) << "GPU 0 is still judged: " << v.summary;
}

TEST(GpuLost, GpuBusyLeavesAGpuNvmlCouldNotReadUnjudged) {
  RankFacts f = healthy(8);
  (*f.gpu.driver.nvml_gpus.value())[2].error =
      "nvmlDeviceGetComputeRunningProcesses_v3: NVML_ERROR_UNKNOWN (Unknown Error)";
  const Verdict v = judge(kGpuBusy, f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  const Finding* unread = lost_finding(v, "gpu.busy/gpu-read-error");
  ASSERT_NE(unread, nullptr) << v.summary;
  EXPECT_TRUE(has(unread->params["gpus"].get<std::string>(), "GPU 2 (00000000:1A:00.0)"));
}

TEST(GpuLost, GpuXidNeverPassesANodeWithALostGpu) {
  RankFacts f = lost_gpu3_node();
  KernelLogFacts k;
  k.source = "/dev/kmsg";
  k.records = 1200;
  f.gpu.driver.kernel_log = Probed<KernelLogFacts>::ok(k, "/dev/kmsg");
  const Verdict v = judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  const Finding* lost = lost_finding(v, "gpu.xid/gpu-lost");
  ASSERT_NE(lost, nullptr) << v.summary;
  EXPECT_EQ(lost->params["gpus"], "GPU 3 (00000000:1B:00.0): " + std::string(kLostError));
}

TEST(GpuLost, GpuXidNamesAGpuOnlyTheHealthRunFoundLost) {
  RankFacts f = healthy(2);
  KernelLogFacts k;
  k.source = "/dev/kmsg";
  f.gpu.driver.kernel_log = Probed<KernelLogFacts>::ok(k, "/dev/kmsg");
  GpuHealthFacts h;
  GpuHealth g;
  g.index = 1;
  g.pci_bus_id = nvml_bus(1);
  g.lost = "nvmlDeviceGetRemappedRows: NVML_ERROR_GPU_IS_LOST (GPU is lost)";
  h.gpus.push_back(g);
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(h, "test");
  const Verdict v = judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  ASSERT_NE(lost_finding(v, "gpu.xid/gpu-lost"), nullptr) << v.summary;
}

TEST(GpuLost, TopoP2pFailsTheLostGpuAndJudgesTheOtherPairs) {
  RankFacts f = lost_gpu3_node();
  std::vector<PeerCopy> copies;
  const std::vector<CudaDevice>& cuda = *f.gpu.driver.cuda_devices.value();
  for (const CudaDevice& s : cuda) {
    for (const CudaDevice& t : cuda) {
      if (s.ordinal == t.ordinal) continue;
      PeerCopy c;
      c.src = s.ordinal;
      c.dst = t.ordinal;
      c.src_bus_id = s.pci_bus_id;
      c.dst_bus_id = t.pci_bus_id;
      c.can_access = c.ok = true;
      c.bytes = 64 * kMiB;
      c.gbps = 350;
      c.seconds = static_cast<double>(c.bytes) / 350e9;
      copies.push_back(c);
    }
  }
  f.gpu.driver.peer_copies = Probed<std::vector<PeerCopy>>::ok(copies, "test");
  // GPU 0 and GPU 1's P2P is off on their NVLinks: found although GPU 3 is lost.
  for (GpuPair& p : *f.gpu.driver.gpu_pairs.value()) {
    if (p.a == 0 && p.b == 1) p.p2p_read = "DR";
  }
  const Verdict v = judge(kTopoP2p, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  const Finding* lost = lost_finding(v, "topo.p2p/gpu-lost");
  ASSERT_NE(lost, nullptr) << v.summary;
  EXPECT_EQ(lost->params["gpus"], "GPU 3 (00000000:1B:00.0): " + std::string(kLostError));
  EXPECT_NE(lost_finding(v, "topo.p2p/nvlink-p2p-disabled"), nullptr) << v.summary;
  EXPECT_EQ(lost_finding(v, "topo.p2p/pairs-uncopied"), nullptr) << v.summary;
}

TEST(GpuLost, TopoP2pNamesAPairNvmlCouldNotRead) {
  RankFacts f = healthy(3);
  std::vector<GpuPair> pairs;
  for (int a = 0; a < 3; ++a) {
    for (int b = a + 1; b < 3; ++b) {
      GpuPair p;
      p.a = a;
      p.b = b;
      p.path = "PIX";
      p.p2p_read = p.p2p_write = "OK";
      p.p2p_nvlink = "NS";
      if (a == 0 && b == 2) {
        p = GpuPair{};
        p.a = a;
        p.b = b;
        p.error = "nvmlDeviceGetP2PStatus: NVML_ERROR_UNKNOWN (Unknown Error)";
      }
      pairs.push_back(p);
    }
  }
  f.gpu.driver.gpu_pairs = Probed<std::vector<GpuPair>>::ok(pairs, "test");
  const Verdict v = judge(kTopoP2p, f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  const Finding* unread = lost_finding(v, "topo.p2p/pairs-unread");
  ASSERT_NE(unread, nullptr) << v.summary;
  EXPECT_EQ(unread->params["unread_pairs"], "GPUs 0 and 2: nvmlDeviceGetP2PStatus: NVML_ERROR_UNKNOWN (Unknown Error)");
}

// ---- the helper against the fake scenario gpu3-lost ----------------------------------------------

TEST(GpuLostHelper, TheDriverDocumentKeepsTheOtherSevenGpus) {
  ContainedRequest r;
  r.executable = preflight::test_paths::gpu_helper_dir() + "/preflight-gpu-probe";
  r.args = {"driver"};
  r.extra_env = {"LD_LIBRARY_PATH=" + preflight::test_paths::fake_gpu_lib_dir(),
                 "PREFLIGHT_FAKE_GPU=" + preflight::test_paths::fake_gpu_scenarios_dir() + "/gpu3-lost.json",
                 "CUDA_VISIBLE_DEVICES"};
  r.deadline = 20s;
  const ContainedResult result = run_contained(r);
  ASSERT_TRUE(result.clean()) << result.describe() << result.err;
  const ContainedJson j = parse_contained_json(result);
  ASSERT_TRUE(j.ok()) << j.error;
  DriverFacts d;
  ASSERT_EQ(apply_driver_document(j.value, d), "");

  ASSERT_TRUE(d.nvml_gpus.ok()) << d.nvml_gpus.why();
  const std::vector<NvmlGpu>& nvml = *d.nvml_gpus.value();
  ASSERT_EQ(nvml.size(), 8u);
  for (const NvmlGpu& g : nvml) {
    if (g.index == 3) continue;
    EXPECT_TRUE(g.lost.empty()) << g.index << ": " << g.lost;
    EXPECT_TRUE(g.error.empty()) << g.index << ": " << g.error;
    EXPECT_FALSE(g.uuid.empty()) << g.index;
  }
  EXPECT_EQ(nvml[3].pci_bus_id, "00000000:5D:00.0");
  EXPECT_TRUE(has(nvml[3].lost, "NVML_ERROR_GPU_IS_LOST")) << nvml[3].lost;
  EXPECT_TRUE(nvml[3].uuid.empty());

  ASSERT_TRUE(d.cuda_devices.ok()) << d.cuda_devices.why();
  EXPECT_EQ(d.cuda_devices.value()->size(), 7u);

  ASSERT_TRUE(d.gpu_pairs.ok()) << d.gpu_pairs.why();
  ASSERT_EQ(d.gpu_pairs.value()->size(), 28u);
  for (const GpuPair& p : *d.gpu_pairs.value()) {
    if (p.a == 3 || p.b == 3) {
      EXPECT_EQ(p.error, "GPU 3 is lost") << p.a << "," << p.b;
    } else {
      EXPECT_TRUE(p.error.empty()) << p.a << "," << p.b << ": " << p.error;
      EXPECT_EQ(p.p2p_read, "OK") << p.a << "," << p.b;
    }
  }
}

}  // namespace
}  // namespace checks_gpu_lost_test
}  // namespace preflight
