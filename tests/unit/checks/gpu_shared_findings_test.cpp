// SPDX-License-Identifier: MIT
// The GPU checks' shared findings (checks/gpu_common.hpp): every check that meets them reports them
// under its own codes with the same templates, their parts as parameters, never a sentence as a
// parameter; the kind of a missing GPU fact follows the probe's error.
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "checks/gpu_common.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
namespace checks_gpu_shared_findings_test {
namespace {

using gpu_fixture::has;

constexpr const char* kGpuChecks[] = {"cuda.smoke", "gpu.busy",   "gpu.count", "topo.p2p",
                                      "gpu.clocks", "gpu.fabric", "gpu.links", "gpu.memory_health"};

TEST(GpuSharedFindings, NoDriverIsEveryGpuChecksOwnCodeWithOneTemplate) {
  RankFacts f = gpu_fixture::no_driver();
  f.topology = Probed<TopologyFacts>::error(ProbeErrc::NotFound, "hwloc found nothing");
  for (const char* id : kGpuChecks) {
    const Verdict v = gpu_fixture::judge(*find_check(id), f);
    EXPECT_EQ(v.status, Status::Fail) << id;
    EXPECT_EQ(v.finding.code, std::string(id) + "/no-driver") << id << ": " << v.summary;
    EXPECT_TRUE(v.finding.message.ends_with("no NVIDIA driver on this node; {consequence}"))
        << id;  // gpu.count: {who} first
    EXPECT_EQ(v.finding.params["consequence"], "the job needs a GPU") << id;
    EXPECT_EQ(v.summary, "no NVIDIA driver on this node; the job needs a GPU") << id;
    EXPECT_EQ(v.remedy, kNoDriverRemedy) << id;
    EXPECT_EQ(v.cause, "driver.loaded") << id;
  }
}

TEST(GpuSharedFindings, EveryCheckDeclaresTheRowsItReports) {
  for (const char* id : kGpuChecks) {
    const CheckSpec* spec = find_check(id);
    int shared = 0;
    for (const FindingSpec& row : spec->findings) {
      for (const char* suffix : {"/no-driver", "/not-gathered", "/helper-crashed", "/helper-hung", "/library-missing",
                                 "/driver-error", "/helper-garbage", "/not-read"}) {
        if (row.code == std::string(id) + suffix) ++shared;
      }
      EXPECT_FALSE(has(std::string(row.message), "{problem}")) << row.code << ": a sentence as a parameter";
      EXPECT_NE(row.fix, "{fix}") << row.code << ": a fix as a parameter";
    }
    EXPECT_EQ(shared, static_cast<int>(kGpuSharedKinds)) << id;
  }
}

TEST(GpuSharedFindings, AMissingFactsKindFollowsTheProbesError) {
  using Kind = GpuShared::Kind;
  const auto kind = [](ProbeErrc code, std::string detail = "boom") {
    return missing_gpu_fact(ProbeError{code, std::move(detail)}, "helper", "the CUDA devices", "the job needs a GPU");
  };
  EXPECT_EQ(kind(ProbeErrc::Crashed).kind, Kind::HelperCrashed);
  EXPECT_EQ(kind(ProbeErrc::Timeout).kind, Kind::HelperHung);
  EXPECT_EQ(kind(ProbeErrc::Timeout, "probe 'gpu_driver' hung: no answer within its deadline of 30 s").kind,
            Kind::NotGathered);
  // Stopped by preflight's own budget (a helper deadline cut to what was left of the probe phase):
  // not a hang of the GPU.
  EXPECT_EQ(kind(ProbeErrc::OutOfBudget).kind, Kind::NotGathered);
  EXPECT_EQ(kind(ProbeErrc::OutOfBudget).status(), Status::Unknown);
  EXPECT_EQ(kind(ProbeErrc::LibraryMissing).kind, Kind::LibraryMissing);
  EXPECT_EQ(kind(ProbeErrc::LibraryMissing).cause, "driver.loaded");
  EXPECT_EQ(kind(ProbeErrc::ApiError).kind, Kind::DriverError);
  EXPECT_EQ(kind(ProbeErrc::ParseError).kind, Kind::HelperGarbage);
  EXPECT_EQ(kind(ProbeErrc::PermissionDenied).kind, Kind::NotRead);
  EXPECT_EQ(kind(ProbeErrc::PermissionDenied).status(), Status::Unknown);
  EXPECT_EQ(kind(ProbeErrc::Crashed).status(), Status::Fail);
}

TEST(GpuSharedFindings, EveryKindOfMissingGpuFactIsEveryGpuChecksOwnCode) {
  // Every GPU fact missing for one reason: each check that reads them (launch.gpu_binding too, in a
  // job) reports that reason under its own code, with the shared status.
  struct Case {
    ProbeErrc code;
    const char* detail;
    const char* suffix;
    Status status;
  };
  const Case cases[] = {
      {ProbeErrc::Crashed, "SIGSEGV in cuInit", "/helper-crashed", Status::Fail},
      {ProbeErrc::Timeout, "no answer within 30.0 s", "/helper-hung", Status::Fail},
      {ProbeErrc::Timeout, "probe 'gpu_driver' hung: no answer within its deadline of 30 s", "/not-gathered",
       Status::Unknown},
      {ProbeErrc::OutOfBudget, "got only what was left of the probe phase, 2.0 s: preflight's own budget ran out",
       "/not-gathered", Status::Unknown},
      {ProbeErrc::LibraryMissing, "libnvidia-ml.so.1: cannot open shared object file", "/library-missing",
       Status::Fail},
      {ProbeErrc::ApiError, "cuInit: CUDA_ERROR_UNKNOWN (999)", "/driver-error", Status::Fail},
      {ProbeErrc::ParseError, "the helper's output is not JSON", "/helper-garbage", Status::Fail},
      {ProbeErrc::PermissionDenied, "/dev/nvidiactl: Permission denied", "/not-read", Status::Unknown},
  };
  std::vector<std::string> ids(std::begin(kGpuChecks), std::end(kGpuChecks));
  ids.push_back("launch.gpu_binding");
  for (const Case& c : cases) {
    RankFacts f = gpu_fixture::healthy(2);
    DriverFacts& d = f.gpu.driver;
    d.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(c.code, c.detail, "driver helper");
    d.cuda_devices = Probed<std::vector<CudaDevice>>::error(c.code, c.detail, "driver helper");
    d.smoke = Probed<SmokeResult>::error(c.code, c.detail, "smoke helper");
    d.gpu_pairs = Probed<std::vector<GpuPair>>::error(c.code, c.detail, "driver helper");
    d.peer_copies = Probed<std::vector<PeerCopy>>::error(c.code, c.detail, "p2p helper");
    d.health = Probed<GpuHealthFacts>::error(c.code, c.detail, "health helper");
    for (const std::string& id : ids) {
      const Verdict v = gpu_fixture::judge(*find_check(id), f, Options{}, Profile::Job);
      std::string want = id + c.suffix;
      // The smoke test's own helper crashing or running out of time are findings of its own.
      if (want == "cuda.smoke/helper-crashed") want = "cuda.smoke/crashed";
      if (want == "cuda.smoke/helper-hung") want = "cuda.smoke/hang";
      EXPECT_EQ(v.finding.code, want) << id << " (" << c.detail << "): " << v.summary;
      EXPECT_EQ(v.status, c.status) << id << ": " << v.summary;
      EXPECT_TRUE(has(v.summary, c.detail)) << id << ": " << v.summary;
    }
  }
}

TEST(GpuSharedFindings, AHelperThatCrashedIsTheSameFindingInTwoChecks) {
  RankFacts f = gpu_fixture::healthy(2);
  f.gpu.driver.nvml_gpus =
      Probed<std::vector<NvmlGpu>>::error(ProbeErrc::Crashed, "SIGSEGV in nvmlInit", "driver helper");
  f.gpu.driver.cuda_devices =
      Probed<std::vector<CudaDevice>>::error(ProbeErrc::Crashed, "SIGSEGV in cuInit", "driver helper");
  const Verdict busy = gpu_fixture::judge(*find_check("gpu.busy"), f);
  const Verdict count = gpu_fixture::judge(*find_check("gpu.count"), f);
  EXPECT_EQ(busy.finding.code, "gpu.busy/helper-crashed") << busy.summary;
  EXPECT_EQ(count.finding.code, "gpu.count/helper-crashed") << count.summary;
  EXPECT_EQ(busy.finding.fix, count.finding.fix);
  EXPECT_EQ(busy.remedy, kHelperCrashedFix);
  EXPECT_EQ(busy.summary,
            "the GPUs' processes and memory (NVML) could not be read: driver helper: SIGSEGV in nvmlInit; the job "
            "needs a GPU");
  EXPECT_EQ(count.finding.params["detail"], "SIGSEGV in cuInit");
}

}  // namespace
}  // namespace checks_gpu_shared_findings_test
}  // namespace preflight
