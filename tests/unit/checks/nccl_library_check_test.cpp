// SPDX-License-Identifier: MIT
// nccl.library on hand-built facts: every status, its CUDA build vs the driver (node and image
// profiles), and the known-issue table.
#include <gtest/gtest.h>

#include "checks/check.hpp"

namespace preflight {
extern const CheckSpec kNcclLibrary;
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr const char* kPath = "/usr/local/cuda/lib64/libnccl.so.2.28.9";

Probed<NcclLibrary> nccl(const std::string& version, const std::string& cuda_build, int code = 0) {
  NcclLibrary l;
  l.path = kPath;
  l.source = "--nccl-lib";
  l.version = version;
  l.version_code = code;
  l.cuda_build = cuda_build;
  return Probed<NcclLibrary>::ok(l, "ncclGetVersion");
}

NvmlGpu gpu(const std::string& name, int cc_major, int cc_minor) {
  NvmlGpu g;
  g.name = name;
  g.cc_major = cc_major;
  g.cc_minor = cc_minor;
  return g;
}

RankFacts node_facts(const std::string& driver = "575.57.08", int api = 12090,
                     std::vector<NvmlGpu> gpus = {gpu("NVIDIA A100-SXM4-80GB", 8, 0)}) {
  RankFacts f;
  f.gpu.driver.nvml_driver_version = Probed<std::string>::ok(driver, "NVML");
  f.gpu.driver.cuda_driver_version = Probed<int>::ok(api, "cuDriverGetVersion");
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok(std::move(gpus), "NVML");
  return f;
}

Verdict judge(const RankFacts& f, Options o = {}, Profile p = Profile::Node) {
  return run_check(kNcclLibrary, CheckContext{f, o, p});
}

TEST(NcclLibraryCheck, PassNamesVersionAndFile) {
  RankFacts f = node_facts();
  f.gpu.nccl = nccl("2.28.9", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9")) << v.summary;
  EXPECT_TRUE(has(v.summary, kPath)) << v.summary;
  EXPECT_EQ(v.evidence["path"], kPath);
}

TEST(NcclLibraryCheck, VersionFromCodeWhenTheStringIsMissing) {
  RankFacts f = node_facts();
  f.gpu.nccl = nccl("", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9")) << v.summary;
}

TEST(NcclLibraryCheck, LibraryMissingFailsNamingTheCandidates) {
  RankFacts f = node_facts();
  f.gpu.runtime.nccl_candidates = {{"/venv/site-packages/nvidia/nccl/lib/libnccl.so.2", "wheel nvidia-nccl-cu12 2.21.5", ""},
                                   {"/usr/lib/x86_64-linux-gnu/libnccl.so.2", "ld.so.cache", ""}};
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::LibraryMissing, "libnccl.so.2: cannot open shared object file");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "libnccl.so.2 not found where the job looks")) << v.summary;
  EXPECT_TRUE(has(v.summary, "/venv/site-packages/nvidia/nccl/lib/libnccl.so.2 (wheel nvidia-nccl-cu12 2.21.5)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--nccl-lib")) << v.remedy;
}

TEST(NcclLibraryCheck, LoadFailureCrashOrHangFails) {
  RankFacts f = node_facts();
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::Crashed, "ncclGetVersion crashed with SIGSEGV in 0.1 s");
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "SIGSEGV")) << v.summary;
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::Timeout, "no answer within 5 s");
  EXPECT_EQ(judge(f).status, Status::Fail);
}

TEST(NcclLibraryCheck, NotProbedOrUnreadableIsUnknown) {
  RankFacts f = node_facts();
  EXPECT_EQ(judge(f).status, Status::Unknown);  // never probed
  f.gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::ParseError, "version string 'NCCL x.y'");
  EXPECT_EQ(judge(f).status, Status::Unknown);
  f.gpu.nccl = nccl("garbage", "12.9", 0);
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "unreadable")) << v.summary;
  f.gpu.nccl = nccl("2.28.9", "", 22809);
  v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9") && has(v.summary, "built for")) << v.summary;
}

TEST(NcclLibraryCheck, NoDriverInNodeProfileIsUnknownButNamesTheLibrary) {
  RankFacts f;
  f.gpu.nccl = nccl("2.28.9", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL 2.28.9 from " + std::string(kPath))) << v.summary;
}

TEST(NcclLibraryCheck, CudaBuildNewerThanTheDriverFails) {
  RankFacts f = node_facts("535.104.05", 12020);
  f.gpu.nccl = nccl("2.28.9", "13.0", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "CUDA 13.0") && has(v.summary, "580.65.06") && has(v.summary, "12.2")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "an NCCL build for CUDA ≤ 12.2")) << v.remedy;
}

TEST(NcclLibraryCheck, CudaBuildUnderMinorCompatWarns) {
  RankFacts f = node_facts("535.104.05", 12020);
  f.gpu.nccl = nccl("2.28.9", "12.9", 22809);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "minor-version compatibility")) << v.summary;
}

TEST(NcclLibraryCheck, ImageProfileJudgesAgainstTargetDriver) {
  RankFacts f;
  f.gpu.nccl = nccl("2.28.9", "13.0", 22809);
  Options o;
  o.target_driver = "535.104.05";
  o.target_gpus = {"9.0"};
  Verdict v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "target driver 535.104.05")) << v.summary;
  o.target_driver = "580.95.05";
  v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  o.target_driver.clear();
  EXPECT_EQ(judge(f, o, Profile::Image).status, Status::Unknown);
}

TEST(NcclLibraryCheck, TargetDriverNewerThanTheMatrixIsUnknown) {
  RankFacts f;
  f.gpu.nccl = nccl("2.28.9", "13.0", 22809);
  Options o;
  o.target_driver = "700";
  o.target_gpus = {"9.0"};
  const Verdict v = judge(f, o, Profile::Image);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "driver 700 is newer than this matrix (newest R620): update the matrix or pass --matrix"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "--matrix")) << v.remedy;
}

TEST(NcclLibraryCheck, DriverBelowNcclMinimumFails) {
  RankFacts f = node_facts("460.106.00", 11020);
  f.gpu.nccl = nccl("2.10.3", "11.0", 21003);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "11.3")) << v.summary;
}

TEST(NcclLibraryCheck, KnownIssuesWarnOrFailByCondition) {
  RankFacts f = node_facts();
  f.gpu.nccl = nccl("2.19.3", "12.3", 21903);
  Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "deadlocks")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "NCCL_CUMEM_ENABLE=0")) << v.remedy;

  f.gpu.nccl = nccl("2.26.2", "12.8", 22602);
  EXPECT_EQ(judge(f).status, Status::Pass);
  f.env = EnvSnapshot({{"NCCL_CUMEM_ENABLE", "0"}});
  v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL_CUMEM_ENABLE=0")) << v.summary;

  f = node_facts("535.104.05", 12020, {gpu("NVIDIA H100 80GB HBM3", 9, 0)});
  f.gpu.nccl = nccl("2.18.1", "12.1", 21801);
  v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "H100")) << v.summary;
}

TEST(NcclLibraryCheck, ASetMitigationTurnsAKnownProblemIntoAPassNote) {
  RankFacts f = node_facts("535.104.05", 12020, {gpu("NVIDIA H100 80GB HBM3", 9, 0)});
  f.gpu.nccl = nccl("2.18.1", "12.1", 21801);
  f.env = EnvSnapshot({{"NCCL_PROTO", "^LL128"}});
  const auto mitigated = [](const Verdict& v, const std::string& id) {
    for (const auto& issue : v.evidence.at("known_issues")) {
      if (issue.at("id") == id && issue.contains("mitigated_by")) return issue.at("mitigated_by").get<std::string>();
    }
    return std::string();
  };
  Verdict v = judge(f);
  EXPECT_FALSE(has(v.summary, "H100 80GB")) << v.summary;  // the LL128 problem is not reported as one
  EXPECT_EQ(mitigated(v, "nccl-2.18.1-h100-ll128"), "NCCL_PROTO=^LL128");
  EXPECT_FALSE(has(v.remedy, "NCCL_PROTO")) << v.remedy;
  f.env = EnvSnapshot({{"NCCL_PROTO", "LL,Simple"}});  // an include list without LL128 leaves it out too
  EXPECT_EQ(mitigated(judge(f), "nccl-2.18.1-h100-ll128"), "NCCL_PROTO=^LL128");
  f.env = EnvSnapshot({{"NCCL_PROTO", "LL128"}});  // not a mitigation
  EXPECT_TRUE(has(judge(f).summary, "H100 80GB")) << judge(f).summary;

  f = node_facts();
  f.gpu.nccl = nccl("2.19.3", "12.3", 21903);
  EXPECT_TRUE(has(judge(f).summary, "deadlocks")) << judge(f).summary;  // the cuMem deadlocks of 2.19
  f.env = EnvSnapshot({{"NCCL_CUMEM_ENABLE", "0"}});
  v = judge(f);
  EXPECT_FALSE(has(v.summary, "deadlocks")) << v.summary;
  EXPECT_FALSE(has(v.remedy, "NCCL_CUMEM_ENABLE=0")) << v.remedy;
  EXPECT_EQ(mitigated(v, "nccl-2.19-cumem-deadlock"), "NCCL_CUMEM_ENABLE=0");
}

TEST(NcclLibraryCheck, ExplainNamesReadsFailuresAndFix) {
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN"}) {
    EXPECT_NE(kNcclLibrary.explain.find(part), std::string_view::npos) << part;
  }
}

}  // namespace
}  // namespace preflight
