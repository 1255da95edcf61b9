// SPDX-License-Identifier: MIT
// topo.p2p end to end without a GPU: the contained helper's NVML matrix and real peer copies
// against the fake libraries (pairs, path labels, NVLink counts, affinity; copies that succeed,
// hang, crash, corrupt or fail), the parser of the helper's JSON Lines whatever became of it, the
// check on hand-built facts (every status, the topology-only path), and the text report's table.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "checks/gpu_common.hpp"
#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"
#include "probes/gpu_driver_probe.hpp"
#include "probes/gpu_p2p_probe.hpp"
#include "report/report.hpp"
#include "sys/contained.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace checks_topo_p2p_test {
namespace {

using namespace std::chrono_literals;
using namespace gpu_fixture;
namespace fs = std::filesystem;

const std::string kLibDir = preflight::test_paths::fake_gpu_lib_dir();
const std::string kScenarios = preflight::test_paths::fake_gpu_scenarios_dir();
std::string scenario(const std::string& name) { return kScenarios + "/" + name + ".json"; }

/// A scenario written to a temporary file for one test.
class InlineScenario {
 public:
  explicit InlineScenario(const std::string& json) {
    m_path = (fs::temp_directory_path() /
              ("preflight-p2p-" + std::to_string(::getpid()) + "-" + std::to_string(s_n++) + ".json"))
                 .string();
    std::ofstream(m_path) << json;
  }
  ~InlineScenario() { std::remove(m_path.c_str()); }
  InlineScenario(const InlineScenario&) = delete;
  InlineScenario& operator=(const InlineScenario&) = delete;
  const std::string& path() const { return m_path; }

 private:
  static inline int s_n = 0;
  std::string m_path;
};

ContainedResult helper(const std::vector<std::string>& args, const std::string& scenario_file,
                       std::chrono::milliseconds deadline = 20s) {
  ContainedRequest r;
  r.executable = preflight::test_paths::gpu_helper_dir() + "/preflight-gpu-probe";
  r.args = args;
  r.extra_env = {"LD_LIBRARY_PATH=" + kLibDir, "PREFLIGHT_FAKE_GPU=" + scenario_file, "CUDA_VISIBLE_DEVICES"};
  r.deadline = deadline;
  r.kill_grace = 5s;
  return run_contained(r);
}

DriverFacts driver_facts(const std::string& scenario_file) {
  const ContainedResult r = helper({"driver"}, scenario_file);
  EXPECT_TRUE(r.clean()) << r.describe() << r.err;
  const ContainedJson j = parse_contained_json(r);
  EXPECT_TRUE(j.ok()) << j.error;
  DriverFacts d;
  EXPECT_EQ(apply_driver_document(j.value, d), "");
  return d;
}

const GpuPair* pair(const DriverFacts& d, int a, int b) {
  for (const GpuPair& p : *d.gpu_pairs.value())
    if (p.a == a && p.b == b) return &p;
  return nullptr;
}

Probed<std::vector<PeerCopy>> copies(const std::string& scenario_file, std::chrono::milliseconds deadline = 20s,
                                     const std::string& pair_timeout = "5", const std::string& bytes = "1M") {
  const ContainedResult r = helper({"p2p", "--bytes", bytes, "--pair-timeout", pair_timeout}, scenario_file, deadline);
  const DriverFacts d = driver_facts(scenario_file);
  return parse_peer_copies(r, d.cuda_devices.value() ? *d.cuda_devices.value() : std::vector<CudaDevice>{}, "test");
}

const PeerCopy* copy_of(const std::vector<PeerCopy>& list, int src, int dst) {
  for (const PeerCopy& c : list)
    if (c.src == src && c.dst == dst) return &c;
  return nullptr;
}

// ---- the helper's NVML matrix and locality against the fakes ----------------------------------

TEST(TopoP2pHelper, NvSwitchBoardGivesNv18PathsAffinityAndNuma) {
  const DriverFacts d = driver_facts(scenario("nvlink-h100x8"));
  ASSERT_TRUE(d.gpu_pairs.ok()) << d.gpu_pairs.why();
  EXPECT_EQ(d.gpu_pairs.value()->size(), 28u);
  for (const GpuPair& p : *d.gpu_pairs.value()) {
    EXPECT_EQ(p.nvlinks, 18) << p.a << "," << p.b;
    EXPECT_EQ(p.p2p_read, "OK");
    EXPECT_EQ(p.p2p_write, "OK");
    EXPECT_EQ(p.p2p_nvlink, "OK");
  }
  EXPECT_EQ(pair(d, 0, 1)->path, "NODE");
  EXPECT_EQ(pair(d, 0, 4)->path, "SYS");
  const NvmlGpu& g0 = (*d.nvml_gpus.value())[0];
  EXPECT_EQ(g0.cpu_affinity.size(), 112u);
  EXPECT_EQ(g0.cpu_affinity.front(), 0);
  EXPECT_EQ(g0.cpu_affinity.back(), 167);
  EXPECT_EQ(g0.numa_node, 0);
  EXPECT_EQ(g0.nvlinks_active, 18);
  ASSERT_EQ(g0.nvlink_remotes.size(), 18u);
  EXPECT_EQ(g0.nvlink_remotes[0], "0000:f0:00.0");
  EXPECT_EQ((*d.nvml_gpus.value())[7].numa_node, 1);
}

TEST(TopoP2pHelper, PciePathsAndP2pStatusAcrossSockets) {
  const DriverFacts d = driver_facts(scenario("p2p-sys-pcie"));
  ASSERT_TRUE(d.gpu_pairs.ok()) << d.gpu_pairs.why();
  EXPECT_EQ(pair(d, 0, 1)->path, "PIX");
  EXPECT_EQ(pair(d, 0, 1)->nvlinks, 0);
  EXPECT_EQ(pair(d, 0, 1)->p2p_read, "OK");
  EXPECT_EQ(pair(d, 0, 1)->p2p_nvlink, "NS");
  EXPECT_EQ(pair(d, 1, 2)->path, "SYS");
  EXPECT_EQ(pair(d, 1, 2)->p2p_read, "TNS");
  EXPECT_EQ(pair(d, 1, 2)->p2p_write, "CNS");
  EXPECT_EQ((*d.nvml_gpus.value())[2].cpu_affinity,
            (std::vector<int>{32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
                              48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63}));
  EXPECT_EQ((*d.nvml_gpus.value())[2].nvlinks_active, 0);
}

TEST(TopoP2pHelper, AffinityScenarioForTheNumaCheck) {
  const DriverFacts d = driver_facts(scenario("numa-gpu0-cpu1"));
  const std::vector<NvmlGpu>& g = *d.nvml_gpus.value();
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].cpu_affinity, std::vector<int>{1});
  EXPECT_EQ(g[0].numa_node, 0);
  EXPECT_EQ(g[1].cpu_affinity, std::vector<int>{0});
  EXPECT_FALSE(g[1].numa_node.has_value());
}

TEST(TopoP2pHelper, DirectNvLinksCountPerPeer) {
  const InlineScenario s(R"({"gpus": [{"nvlinks": 4, "nvlink_remote": "peer"}, {"nvlinks": 4, "nvlink_remote": "peer"},
                                       {"nvlinks": 0}]})");
  const DriverFacts d = driver_facts(s.path());
  EXPECT_EQ(pair(d, 0, 1)->nvlinks, 4);
  EXPECT_EQ(pair(d, 0, 2)->nvlinks, 0);
  EXPECT_EQ((*d.nvml_gpus.value())[0].nvlink_remotes, std::vector<std::string>(4, "0000:2a:00.0"));
}

TEST(TopoP2pHelper, OlderNvmlWithoutSymbolsLeavesFieldsEmpty) {
  const InlineScenario s(R"({"gpus": [{"numa_node": 1, "cpu_affinity": "0-3"}, {"numa_node": 1}],
      "nvml_missing": ["nvmlDeviceGetNumaNodeId", "nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetP2PStatus",
                       "nvmlDeviceGetNvLinkState"]})");
  const DriverFacts d = driver_facts(s.path());
  ASSERT_TRUE(d.nvml_gpus.ok()) << d.nvml_gpus.why();
  EXPECT_EQ((*d.nvml_gpus.value())[0].numa_node, 1) << "from nvmlDeviceGetMemoryAffinity";
  EXPECT_EQ((*d.nvml_gpus.value())[0].cpu_affinity, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((*d.nvml_gpus.value())[0].nvlinks_active, 0);
  ASSERT_TRUE(d.gpu_pairs.ok()) << d.gpu_pairs.why();
  EXPECT_EQ(pair(d, 0, 1)->path, "");
  EXPECT_EQ(pair(d, 0, 1)->p2p_read, "");
}

TEST(TopoP2pHelper, NoNvmlMakesPairsAnError) {
  const DriverFacts d = driver_facts(scenario("nvml-driver-not-loaded"));
  ASSERT_FALSE(d.gpu_pairs.ok());
  EXPECT_NE(d.gpu_pairs.why().find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos) << d.gpu_pairs.why();
}

// ---- the real peer copies against the fakes -----------------------------------------------------

TEST(TopoP2pHelper, HealthyCopiesAreVerifiedWithBandwidth) {
  const InlineScenario s(R"({"gpus": 3})");
  const auto c = copies(s.path());
  ASSERT_TRUE(c.ok()) << c.why();
  ASSERT_EQ(c.value()->size(), 6u);
  for (const PeerCopy& p : *c.value()) {
    EXPECT_TRUE(p.ok) << p.src << "->" << p.dst << " " << p.failed_step << " " << p.error;
    EXPECT_TRUE(p.can_access);
    EXPECT_EQ(p.bytes, 1u << 20);
    EXPECT_GT(p.gbps, 100.0) << "the fake models NV18 at 360 GB/s";
  }
  EXPECT_EQ(copy_of(*c.value(), 2, 1)->src_bus_id, "00000000:3A:00.0");
}

TEST(TopoP2pHelper, HungCopyIsNamedWithinItsDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const ContainedResult r = helper({"p2p", "--bytes", "1M", "--pair-timeout", "0.3"}, scenario("p2p-hang"), 10s);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.clean()) << r.describe();
  EXPECT_LT(took, 3.0);
  const auto c = parse_peer_copies(r, {}, "test");
  ASSERT_TRUE(c.ok()) << c.why();
  const PeerCopy* hung = copy_of(*c.value(), 0, 1);
  ASSERT_NE(hung, nullptr) << r.out;
  EXPECT_FALSE(hung->ok);
  EXPECT_EQ(hung->failed_step, "deadline");
  EXPECT_EQ(hung->error, "did not finish within 0.3 s");
  EXPECT_EQ(hung->src_bus_id, "00000000:18:00.0");
  EXPECT_EQ(hung->dst_bus_id, "00000000:2A:00.0");
}

TEST(TopoP2pHelper, BlockedCopyKilledByTheParentIsNamed) {
  const InlineScenario s(R"({"gpus": 2, "peer_copy_faults": [{"src": 1, "dst": 0, "fault": "block"}]})");
  // 3 s: the helper starts and makes the first copy within it even sanitized on a busy machine.
  const auto c = copies(s.path(), 3000ms);
  ASSERT_TRUE(c.ok()) << c.why();
  EXPECT_TRUE(copy_of(*c.value(), 0, 1)->ok);
  const PeerCopy* hung = copy_of(*c.value(), 1, 0);
  ASSERT_NE(hung, nullptr);
  EXPECT_EQ(hung->failed_step, "deadline");
  EXPECT_EQ(hung->error, "did not finish within 3.0 s (the helper was killed)");
  EXPECT_EQ(hung->src_bus_id, "00000000:2A:00.0") << "bus ids from the CUDA devices";
}

TEST(TopoP2pHelper, CrashNamesThePairAndTheSignal) {
  const InlineScenario s(R"({"gpus": 2, "peer_copy_faults": [{"src": 0, "dst": 1, "fault": "segv"}]})");
  const auto c = copies(s.path());
  ASSERT_TRUE(c.ok()) << c.why();
  const PeerCopy* p = copy_of(*c.value(), 0, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->failed_step, "crash");
  EXPECT_EQ(p->error, "the helper died of SIGSEGV during this copy");
}

TEST(TopoP2pHelper, CorruptCopyNamesTheFirstBadWord) {
  const auto c = copies(scenario("p2p-corrupt"));
  ASSERT_TRUE(c.ok()) << c.why();
  const PeerCopy* p = copy_of(*c.value(), 1, 2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->failed_step, "verify");
  EXPECT_EQ(p->error, "word 17 is 0xA5FEFD5A, wrote 0x5A0102A5");
  EXPECT_TRUE(copy_of(*c.value(), 2, 1)->ok);
}

TEST(TopoP2pHelper, DriverErrorsNameTheStep) {
  const InlineScenario s(R"({"gpus": 2, "peer_copy_faults": [
      {"src": 0, "dst": 1, "fault": "error:217", "step": "enable"},
      {"src": 1, "dst": 0, "fault": "error:700"}]})");
  const auto c = copies(s.path());
  ASSERT_TRUE(c.ok()) << c.why();
  EXPECT_EQ(copy_of(*c.value(), 0, 1)->failed_step, "cuCtxEnablePeerAccess");
  EXPECT_EQ(copy_of(*c.value(), 0, 1)->error, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED (217)");
  EXPECT_EQ(copy_of(*c.value(), 1, 0)->failed_step, "cuMemcpyPeerAsync");
  EXPECT_EQ(copy_of(*c.value(), 1, 0)->error, "CUDA_ERROR_ILLEGAL_ADDRESS (700)");
}

TEST(TopoP2pHelper, PairsWithoutPeerAccessAreListedNotCopied) {
  const auto c = copies(scenario("p2p-sys-pcie"));
  ASSERT_TRUE(c.ok()) << c.why();
  ASSERT_EQ(c.value()->size(), 12u);
  EXPECT_FALSE(copy_of(*c.value(), 0, 2)->can_access);
  EXPECT_EQ(copy_of(*c.value(), 0, 2)->failed_step, "");
  EXPECT_TRUE(copy_of(*c.value(), 0, 1)->ok);
  EXPECT_NEAR(copy_of(*c.value(), 0, 1)->gbps, 24.0, 3.0) << "the fake's PIX speed";
}

TEST(TopoP2pHelper, CuInitFailureIsAnError) {
  const auto c = copies(scenario("cuinit-error100"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.why().find("cuInit"), std::string::npos) << c.why();
}

// ---- the parser on hand-made outputs ------------------------------------------------------------

ContainedResult output(ContainedOutcome outcome, const std::string& out) {
  ContainedResult r;
  r.outcome = outcome;
  r.exit_code = outcome == ContainedOutcome::Exited ? 0 : -1;
  r.deadline_s = 4.0;
  r.elapsed_s = 4.0;
  r.out = out;
  if (outcome == ContainedOutcome::Signaled) {
    r.signal = 11;
    r.signal_name = "SIGSEGV";
  }
  return r;
}

TEST(TopoP2pParse, StartWithoutDoneIsTheHungPair) {
  const std::vector<CudaDevice> devices = {CudaDevice{0, "", "", "0000:18:00.0", 9, 0, 0, ""},
                                           CudaDevice{1, "", "", "0000:2A:00.0", 9, 0, 0, ""}};
  const auto c = parse_peer_copies(output(ContainedOutcome::TimedOut, "{\"event\":\"start\",\"src\":1,\"dst\":0}\n"),
                                   devices, "test");
  ASSERT_TRUE(c.ok()) << c.why();
  ASSERT_EQ(c.value()->size(), 1u);
  EXPECT_EQ(c.value()->front().src_bus_id, "0000:2A:00.0");
  EXPECT_EQ(c.value()->front().error, "did not finish within 4.0 s (the helper was killed)");
}

TEST(TopoP2pParse, NothingOrGarbageIsAnError) {
  EXPECT_EQ(parse_peer_copies(output(ContainedOutcome::TimedOut, ""), {}, "test").error()->code, ProbeErrc::Timeout);
  EXPECT_EQ(parse_peer_copies(output(ContainedOutcome::Exited, ""), {}, "test").error()->code, ProbeErrc::ParseError);
  EXPECT_EQ(parse_peer_copies(output(ContainedOutcome::Exited, "\x01\x02junk\n"), {}, "test").error()->code,
            ProbeErrc::ParseError);
  EXPECT_TRUE(parse_peer_copies(output(ContainedOutcome::Exited, "{\"event\":\"end\"}\n"), {}, "test").ok());
}

// ---- the check on hand-built facts --------------------------------------------------------------

GpuPair nv_pair(int a, int b, int links, const std::string& path = "NODE", const std::string& st = "OK") {
  return GpuPair{a, b, path, links, st, st, links > 0 ? st : "NS", ""};
}

PeerCopy good_copy(int s, int t, double gbps) {
  PeerCopy c;
  c.src = s;
  c.dst = t;
  c.src_bus_id = cuda_bus(s);
  c.dst_bus_id = cuda_bus(t);
  c.can_access = true;
  c.ok = true;
  c.bytes = 64 * kMiB;
  c.gbps = gbps;
  c.seconds = static_cast<double>(c.bytes) / gbps / 1e9;
  return c;
}

/// n GPUs, every pair with `links` NVLinks (else `path`), every ordered pair copied at `gbps`.
RankFacts p2p_node(int n, int links, const std::string& path = "NODE", double gbps = 350) {
  RankFacts f = healthy(n);
  std::vector<GpuPair> pairs;
  std::vector<PeerCopy> list;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a < b) pairs.push_back(nv_pair(a, b, links, path));
      if (a != b) list.push_back(good_copy(a, b, gbps));
    }
  for (NvmlGpu& g : *f.gpu.driver.nvml_gpus.value()) {
    g.cpu_affinity = g.index < n / 2 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{4, 5, 6, 7};
    g.numa_node = g.index < n / 2 ? 0 : 1;
  }
  f.gpu.driver.gpu_pairs = Probed<std::vector<GpuPair>>::ok(pairs, "test");
  f.gpu.driver.peer_copies = Probed<std::vector<PeerCopy>>::ok(list, "test");
  return f;
}

Verdict judge_p2p(const RankFacts& f, Profile p = Profile::Node) { return judge(kTopoP2p, f, Options{}, p); }

std::string cell(const Verdict& v, std::size_t row, std::size_t col) {
  return v.evidence.at("table").at(row).at(col).get<std::string>();
}

TEST(TopoP2pCheck, PassesOnAnNvSwitchBoardWithTheMatrix) {
  const Verdict v = judge_p2p(p2p_node(8, 18));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.summary, "8 GPUs, all pairs NV18; 56 peer copies verified (min 350 GB/s)");
  EXPECT_EQ(v.finding.code, "topo.p2p/paths-checked");
  EXPECT_EQ(v.finding.params["gpu_count"], 8);
  EXPECT_EQ(v.finding.params["paths"], "all pairs NV18");
  const nlohmann::json& t = v.evidence.at("table");
  ASSERT_EQ(t.size(), 9u);
  EXPECT_EQ(t.at(0), nlohmann::json({"", "GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7", "CPU Affinity",
                                     "NUMA", "Nearest NIC"}));
  EXPECT_EQ(cell(v, 1, 1), "X");
  EXPECT_EQ(cell(v, 1, 2), "NV18");
  EXPECT_EQ(cell(v, 1, 9), "0-3");
  EXPECT_EQ(cell(v, 8, 10), "1");
  EXPECT_TRUE(v.evidence.at("table_legend").get<std::string>().find("NV# = # bonded NVLinks") != std::string::npos);
}

TEST(TopoP2pCheck, HungCopyFailsNamingThePairAndMarksTheCell) {
  RankFacts f = p2p_node(4, 18);
  PeerCopy& c = (*f.gpu.driver.peer_copies.value())[0];  // 0 -> 1
  c.ok = false;
  c.failed_step = "deadline";
  c.error = "did not finish within 4.0 s";
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "topo.p2p/copy-failed");
  EXPECT_EQ(v.finding.params["failed_copies"],
            "peer copy GPU0 (0000:18:00.0) -> GPU1 (0000:19:00.0) failed at deadline: did not finish within 4.0 s");
  EXPECT_TRUE(has(v.summary,
                  "peer copy GPU0 (0000:18:00.0) -> GPU1 (0000:19:00.0) failed at deadline: did not finish "
                  "within 4.0 s"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "NCCL_P2P_DISABLE=1")) << v.remedy;
  EXPECT_EQ(cell(v, 1, 2), "NV18!");
  EXPECT_EQ(cell(v, 2, 1), "NV18!");
  EXPECT_EQ(cell(v, 1, 3), "NV18");
}

TEST(TopoP2pCheck, CorruptCopyFailsWithTheWord) {
  RankFacts f = p2p_node(2, 0, "PIX", 20);
  PeerCopy& c = (*f.gpu.driver.peer_copies.value())[1];  // 1 -> 0
  c.ok = false;
  c.failed_step = "verify";
  c.error = "word 17 is 0xA5FEFD5A, wrote 0x5A0102A5";
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "topo.p2p/copy-failed");
  EXPECT_TRUE(has(v.finding.params["failed_copies"].get<std::string>(), "failed at verify: word 17"));
  EXPECT_TRUE(has(v.summary, "GPU1 (0000:19:00.0) -> GPU0 (0000:18:00.0) failed at verify: word 17")) << v.summary;
  EXPECT_EQ(cell(v, 1, 2), "PIX!");
}

TEST(TopoP2pCheck, NvLinkWithP2pDisabledFails) {
  RankFacts f = p2p_node(2, 12);
  (*f.gpu.driver.gpu_pairs.value())[0].p2p_read = "DR";
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "topo.p2p/nvlink-p2p-disabled");
  EXPECT_EQ(v.finding.params["nvlink_pairs"],
            "GPU0 (00000000:18:00.0) and GPU1 (00000000:19:00.0) (NV12, P2P read DR, write OK)");
  EXPECT_TRUE(has(v.summary,
                  "P2P is disabled between NVLink-connected GPUs: GPU0 (00000000:18:00.0) and GPU1 "
                  "(00000000:19:00.0) (NV12, P2P read DR, write OK)"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "nvidia-fabricmanager")) << v.remedy;
}

TEST(TopoP2pCheck, PcieAcrossSocketsWarnsWithNcclLevelAdvice) {
  RankFacts f = p2p_node(2, 0, "SYS", 9);
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "topo.p2p/pcie-through-cpu");
  EXPECT_EQ(v.finding.params["poor_count"], 1);
  EXPECT_EQ(v.finding.params["plural"], "");
  EXPECT_EQ(v.finding.params["poor_paths"], "SYS");
  EXPECT_EQ(v.finding.params["poor_pairs"], "GPU0-GPU1 SYS");
  EXPECT_FALSE(has(v.summary, "from the PCIe topology alone")) << v.summary;
  EXPECT_TRUE(has(v.summary, "1 GPU pair without NVLink cross SYS: GPU0-GPU1 SYS")) << v.summary;
  EXPECT_TRUE(has(v.summary, "default NCCL_P2P_LEVEL is PXB")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "NCCL_P2P_LEVEL=SYS")) << v.remedy;
  EXPECT_EQ(cell(v, 1, 2), "SYS*");
  // Allowed by the level: no warning for the path.
  f.env = EnvSnapshot{{"NCCL_P2P_LEVEL", "SYS"}};
  EXPECT_EQ(judge_p2p(f).status, Status::Pass) << judge_p2p(f).summary;
}

TEST(TopoP2pCheck, LevelForcedWhereNvmlRefusesWarns) {
  RankFacts f = p2p_node(2, 0, "SYS", 9);
  (*f.gpu.driver.gpu_pairs.value())[0].p2p_read = "TNS";
  (*f.gpu.driver.gpu_pairs.value())[0].p2p_write = "CNS";
  f.gpu.driver.peer_copies = Probed<std::vector<PeerCopy>>::ok({}, "test");
  f.env = EnvSnapshot{{"NCCL_P2P_LEVEL", "SYS"}};
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "topo.p2p/level-refused");
  EXPECT_EQ(v.finding.params["level"], "SYS");
  EXPECT_EQ(v.finding.params["refused_pairs"], "GPU0-GPU1 (SYS, P2P read TNS, write CNS)");
  EXPECT_TRUE(has(v.summary,
                  "NCCL_P2P_LEVEL=SYS asks for P2P where NVML reports it unsupported: GPU0-GPU1 (SYS, P2P "
                  "read TNS, write CNS)"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "unset NCCL_P2P_LEVEL")) << v.remedy;
}

TEST(TopoP2pCheck, SlowCopyWarns) {
  RankFacts f = p2p_node(2, 18);
  (*f.gpu.driver.peer_copies.value())[0].gbps = 12;
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "topo.p2p/copy-slow");
  EXPECT_EQ(v.finding.params["slow_copies"],
            "GPU0 (0000:18:00.0) -> GPU1 (0000:19:00.0) 12.0 GB/s over NV18 (expected at least 144)");
  EXPECT_TRUE(has(v.summary, "GPU0 (0000:18:00.0) -> GPU1 (0000:19:00.0) 12.0 GB/s over NV18 (expected at least 144)"))
      << v.summary;
  EXPECT_EQ(cell(v, 1, 2), "NV18*");
}

TEST(TopoP2pCheck, NcclSettingsNcclIgnoresWarn) {
  RankFacts f = p2p_node(2, 18);
  f.env = EnvSnapshot{{"NCCL_P2P_DISABLE", "true"}, {"NCCL_P2P_LEVEL", "sys"}};
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Warn);
  ASSERT_EQ(v.findings.size(), 2u) << v.summary;
  EXPECT_EQ(v.findings[0].code, "topo.p2p/disable-ignored");
  EXPECT_EQ(v.findings[0].params["disable"], "true");
  EXPECT_EQ(v.findings[1].code, "topo.p2p/level-wrong-case");
  EXPECT_EQ(v.findings[1].params["level"], "sys");
  EXPECT_EQ(v.findings[1].params["upper"], "SYS");
  EXPECT_TRUE(has(v.summary, "NCCL_P2P_DISABLE=true is ignored by NCCL (it reads an integer and only 1 disables)"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL_P2P_LEVEL=sys is ignored by NCCL (level names are case-sensitive")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "export NCCL_P2P_LEVEL=SYS")) << v.remedy;
  f.env = EnvSnapshot{{"NCCL_P2P_DISABLE", "1"}};
  const Verdict off = judge_p2p(f);
  EXPECT_EQ(off.status, Status::Warn);
  EXPECT_EQ(off.finding.code, "topo.p2p/p2p-disabled-on-nvlink");
  EXPECT_EQ(off.finding.params["disable"], "1");
  EXPECT_TRUE(has(off.summary, "NCCL_P2P_DISABLE=1 turns P2P off between NVLink-connected GPUs")) << off.summary;
  f.env = EnvSnapshot{{"NCCL_P2P_LEVEL", "NVLINK"}};
  const Verdict name = judge_p2p(f);
  EXPECT_EQ(name.status, Status::Warn);
  EXPECT_EQ(name.finding.code, "topo.p2p/level-unknown");
  EXPECT_EQ(name.finding.params["level"], "NVLINK");
  EXPECT_TRUE(has(name.summary,
                  "NCCL_P2P_LEVEL=NVLINK is ignored by NCCL (not a level name; it keeps the default "
                  "PXB)"))
      << name.summary;
  EXPECT_TRUE(has(name.remedy, "Use one of LOC, NVL")) << name.remedy;
  f.env = EnvSnapshot{{"NCCL_P2P_LEVEL", "NVL"}, {"NCCL_P2P_DISABLE", "0"}};
  EXPECT_EQ(judge_p2p(f).status, Status::Pass) << judge_p2p(f).summary;
  f.env = EnvSnapshot{{"NCCL_P2P_LEVEL", "3"}};
  EXPECT_EQ(judge_p2p(f).status, Status::Pass) << "legacy integers are accepted";
}

TEST(TopoP2pCheck, UnknownWhenTheMatrixIsMissing) {
  RankFacts f = healthy(2);
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::NotProbed, "not probed");
  f.topology = Probed<TopologyFacts>::error(ProbeErrc::NotFound, "hwloc found nothing");
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.p2p/not-read");
  EXPECT_EQ(v.summary, "could not read the GPUs and their pairs (NVML): not probed");
  RankFacts g = p2p_node(2, 18);
  g.gpu.driver.gpu_pairs = Probed<std::vector<GpuPair>>::error(ProbeErrc::ApiError, "nvmlDeviceGetP2PStatus: boom");
  const Verdict gv = judge_p2p(g);
  EXPECT_EQ(gv.status, Status::Unknown);
  EXPECT_EQ(gv.finding.code, "topo.p2p/facts-unreadable");
  EXPECT_EQ(gv.summary, "could not read NVML's GPU pair matrix: nvmlDeviceGetP2PStatus: boom") << gv.summary;
  g.gpu.driver.gpu_pairs = Probed<std::vector<GpuPair>>::error(
      ProbeErrc::Timeout, "probe 'gpu_driver' hung: it had not finished at the probe deadline (7.5 s of the start)");
  const Verdict hung = judge_p2p(g);
  EXPECT_EQ(hung.status, Status::Unknown);
  EXPECT_EQ(hung.finding.code, "topo.p2p/facts-hung") << hung.summary;
  EXPECT_TRUE(has(hung.summary, "NVML's GPU pair matrix was not gathered: probe 'gpu_driver' hung")) << hung.summary;
  RankFacts h = p2p_node(2, 18);
  h.gpu.driver.peer_copies = Probed<std::vector<PeerCopy>>::error(ProbeErrc::Timeout, "killed after 0 copies");
  const Verdict hv = judge_p2p(h);
  EXPECT_EQ(hv.status, Status::Unknown);
  EXPECT_TRUE(has(hv.summary, "the peer copies could not be run")) << hv.summary;
  // No copy ran, so the one pair claiming P2P is unverified too.
  ASSERT_EQ(hv.findings.size(), 2u) << hv.summary;
  EXPECT_EQ(hv.findings[0].code, "topo.p2p/copies-not-run");
  EXPECT_EQ(hv.findings[0].params["why"], "killed after 0 copies");
  EXPECT_EQ(hv.findings[1].code, "topo.p2p/pairs-uncopied");
  EXPECT_EQ(hv.findings[1].params["uncopied_count"], 1);
  EXPECT_EQ(hv.finding.code, "topo.p2p/copies-not-run");
}

TEST(TopoP2pCheck, NvmlErrorTheJobMeetsFails) {
  RankFacts f = healthy(2);
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::ApiError, "NVML_ERROR_UNKNOWN", "nvmlInit");
  f.topology = Probed<TopologyFacts>::error(ProbeErrc::NotFound, "hwloc found nothing");
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.p2p/driver-error");
  EXPECT_EQ(v.summary,
            "the GPUs and their pairs (NVML) could not be read: nvmlInit: NVML_ERROR_UNKNOWN; the job needs a GPU");
  EXPECT_EQ(v.finding.params["source"], "nvmlInit");
  EXPECT_EQ(v.finding.params["detail"], "NVML_ERROR_UNKNOWN");
  EXPECT_EQ(v.remedy, kDriverErrorFix);
  EXPECT_EQ(v.cause, "driver.loaded");
}

TEST(TopoP2pCheck, SkipsWithFewerThanTwoGpusAndInTheImageProfile) {
  const Verdict one = judge_p2p(p2p_node(1, 0));
  EXPECT_EQ(one.status, Status::Skip);
  EXPECT_EQ(one.finding.code, "topo.p2p/single-gpu");
  EXPECT_EQ(one.finding.params["gpus"], 1);
  EXPECT_FALSE(one.finding.params.contains("source"));
  EXPECT_EQ(one.summary, "fewer than 2 GPUs (1): no peer-to-peer path to check");
  EXPECT_EQ(judge_p2p(p2p_node(2, 18), Profile::Image).status, Status::Skip);
}

TEST(TopoP2pCheck, PairsClaimingP2pWithoutCopiesAreNeverPass) {
  // Local rank 0 saw one GPU (CUDA_VISIBLE_DEVICES=0), so its helper copied nothing, while the
  // node's four ranks use GPUs 0-3 whose pairs NVML says can do P2P.
  std::vector<RankFacts> ranks;
  for (int l = 0; l < 4; ++l) {
    RankFacts f = p2p_node(8, 18);
    f.identity.hostname = "gpu-a";
    f.placement.rank = f.placement.local_rank = l;
    std::vector<CudaDevice>& cuda = *f.gpu.driver.cuda_devices.value();
    CudaDevice mine = cuda[static_cast<std::size_t>(l)];
    mine.ordinal = 0;
    cuda = {mine};
    f.env.set("CUDA_VISIBLE_DEVICES", std::to_string(l));
    f.gpu.driver.peer_copies =
        Probed<std::vector<PeerCopy>>::error(ProbeErrc::Unsupported, "fewer than 2 GPUs visible (1 CUDA device)");
    ranks.push_back(std::move(f));
  }
  std::vector<const RankFacts*> host;
  for (const RankFacts& f : ranks) host.push_back(&f);
  const Options o;
  CheckContext ctx{ranks.front(), o, Profile::Job};
  ctx.host_ranks = &host;
  Verdict v = run_check(kTopoP2p, ctx);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.p2p/pairs-uncopied");
  EXPECT_EQ(v.finding.params["uncopied_count"], 6);
  EXPECT_EQ(v.finding.params["job_gpus"], 4);
  EXPECT_EQ(v.finding.params["reason"], "fewer than 2 GPUs visible (1 CUDA device)");
  EXPECT_TRUE(has(v.summary, "6 pair(s) of the job's 4 GPUs claim P2P but their peer copies did not run")) << v.summary;
  EXPECT_TRUE(has(v.summary, "fewer than 2 GPUs visible")) << v.summary;
  // The same node where local rank 0's helper copied across the union: PASS with the copies.
  std::vector<PeerCopy> copies;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) copies.push_back(good_copy(a, b, 350));
  ranks.front().gpu.driver.peer_copies = Probed<std::vector<PeerCopy>>::ok(copies, "test");
  v = run_check(kTopoP2p, ctx);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "12 peer copies verified")) << v.summary;
  // A single process whose only GPU has no peer: nothing to copy, PASS with the note.
  RankFacts alone = ranks[1];
  alone.gpu.driver.peer_copies =
      Probed<std::vector<PeerCopy>>::error(ProbeErrc::Unsupported, "fewer than 2 GPUs visible (1 CUDA device)");
  v = judge_p2p(alone);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "peer copies not run: fewer than 2 GPUs visible")) << v.summary;
  // CUDA_VISIBLE_DEVICES=0,1 in the node profile with no copies run: UNKNOWN for that one pair.
  RankFacts two = p2p_node(8, 18);
  two.gpu.driver.cuda_devices.value()->resize(2);
  two.gpu.driver.peer_copies = Probed<std::vector<PeerCopy>>::error(ProbeErrc::Unsupported, "not run");
  v = judge_p2p(two);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "1 pair(s) of the job's 2 GPUs claim P2P")) << v.summary;
}

TopologyFacts two_socket_topology(bool this_system) {
  TopologyFacts t;
  t.source = this_system ? "this machine (hwloc 2.9.0)" : "--topology-xml node17.xml";
  t.this_system = this_system;
  t.packages = 2;
  for (int i = 0; i < 3; ++i) {
    PciEndpoint g;
    g.kind = "gpu";
    g.bus_id = i == 0 ? "0000:18:00.0" : i == 1 ? "0000:19:00.0" : "0000:b1:00.0";
    const std::string pkg = i < 2 ? "Package:0" : "Package:1";
    const std::string numa = i < 2 ? "NUMANode:0" : "NUMANode:1";
    const std::string hb = i < 2 ? "HostBridge:0000:17" : "HostBridge:0000:b0";
    g.path = {{"machine", "Machine:0"},
              {"package", pkg},
              {"numa", numa},
              {"host_bridge", hb},
              {"pci_bridge", i < 2 ? "0000:17:00.0" : "0000:b0:00.0"}};
    g.numa_nodes = {i < 2 ? 0 : 1};
    g.local_cpus = i < 2 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{4, 5, 6, 7};
    t.gpus.push_back(g);
  }
  PciEndpoint nic;
  nic.kind = "nic";
  nic.bus_id = "0000:1a:00.0";
  nic.os_devices = {"mlx5_0"};
  nic.path = {{"machine", "Machine:0"},
              {"package", "Package:0"},
              {"numa", "NUMANode:0"},
              {"host_bridge", "HostBridge:0000:17"},
              {"pci_bridge", "0000:17:00.0"}};
  nic.numa_nodes = {0};
  t.nics.push_back(nic);
  return t;
}

TEST(TopoP2pCheck, NoDriverAndNoTopologyFailsAsEveryGpuCheck) {
  RankFacts f = no_driver();
  f.topology = Probed<TopologyFacts>::error(ProbeErrc::NotFound, "hwloc found nothing");
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.p2p/no-driver");
  EXPECT_EQ(v.finding.params["consequence"], "the job needs a GPU");
  EXPECT_EQ(v.summary, "no NVIDIA driver on this node; the job needs a GPU");
  EXPECT_EQ(v.cause, "driver.loaded");
  EXPECT_TRUE(has(v.summary, "the job needs a GPU")) << v.summary;
  // This machine's topology shows GPUs but there is no driver: the matrix, and still FAIL.
  f.topology = Probed<TopologyFacts>::ok(two_socket_topology(true), "hwloc");
  const Verdict t = judge_p2p(f);
  EXPECT_EQ(t.status, Status::Fail) << t.summary;
  EXPECT_EQ(t.evidence.at("table").size(), 4u);
  ASSERT_EQ(t.findings.size(), 2u) << t.summary;
  EXPECT_EQ(t.findings[0].code, "topo.p2p/no-driver");
  EXPECT_EQ(t.findings[1].code, "topo.p2p/pcie-through-cpu");
  EXPECT_TRUE(has(t.summary, "the job needs a GPU")) << t.summary;
}

TEST(TopoP2pCheck, NoNvmlViewBesideThisMachinesTopologyIsUnknown) {
  // A driver is there, but NVML's GPU list failed: hwloc's PCIe matrix, and UNKNOWN for NVML's view.
  RankFacts f = healthy(3);
  f.gpu.driver.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::ApiError, "NVML_ERROR_UNKNOWN", "nvmlInit");
  f.topology = Probed<TopologyFacts>::ok(two_socket_topology(true), "hwloc");
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.p2p/nvml-missing");
  EXPECT_EQ(v.finding.params["why"], "nvmlInit: NVML_ERROR_UNKNOWN");
  EXPECT_EQ(
      v.summary.rfind("NVML's view of the GPUs is missing: nvmlInit: NVML_ERROR_UNKNOWN; also WARN: 2 GPU pairs", 0),
      0u)
      << v.summary;
  ASSERT_EQ(v.findings.size(), 2u) << v.summary;
  EXPECT_EQ(v.findings[1].code, "topo.p2p/pcie-through-cpu");
  EXPECT_EQ(v.remedy.rfind("See driver.loaded; the matrix below is hwloc's PCIe view only.", 0), 0u) << v.remedy;
  EXPECT_EQ(v.evidence.at("table").size(), 4u);
}

TEST(TopoP2pCheck, TopologyWithOneOrNoGpuSkips) {
  RankFacts f = no_driver();
  TopologyFacts t = two_socket_topology(false);
  t.gpus.resize(1);
  f.topology = Probed<TopologyFacts>::ok(t, "--topology-xml node17.xml");
  const Verdict one = judge_p2p(f);
  EXPECT_EQ(one.status, Status::Skip) << one.summary;
  EXPECT_EQ(one.finding.code, "topo.p2p/single-gpu");
  EXPECT_EQ(one.finding.params["gpus"], 1);
  EXPECT_EQ(one.finding.params["source"], "--topology-xml node17.xml");
  EXPECT_EQ(one.summary, "fewer than 2 GPUs (1 in --topology-xml node17.xml): no peer-to-peer path to check");
  // Another node's topology without GPUs, beside this machine's NVML: judged on its own, nothing to check.
  RankFacts g = p2p_node(2, 18);
  t.gpus.clear();
  g.topology = Probed<TopologyFacts>::ok(t, "--topology-xml node17.xml");
  const Verdict none = judge_p2p(g);
  EXPECT_EQ(none.status, Status::Skip) << none.summary;
  EXPECT_EQ(none.finding.code, "topo.p2p/no-gpus-in-topology");
  EXPECT_EQ(none.finding.params["source"], "--topology-xml node17.xml");
  EXPECT_EQ(none.summary, "no GPUs in --topology-xml node17.xml");
}

TEST(TopoP2pCheck, TopologyAloneGivesTheMatrixWithoutTheDriver) {
  RankFacts f = no_driver();
  f.topology = Probed<TopologyFacts>::ok(two_socket_topology(false), "--topology-xml node17.xml");
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.p2p/pcie-through-cpu");
  EXPECT_EQ(v.finding.params["poor_count"], 2);
  EXPECT_EQ(v.finding.params["plural"], "s");
  EXPECT_EQ(v.finding.params["poor_pairs"], "GPU0-GPU2 SYS, GPU1-GPU2 SYS");
  EXPECT_TRUE(has(v.summary, "from the PCIe topology alone")) << v.summary;
  EXPECT_TRUE(has(v.summary, "GPU0-GPU2 SYS")) << v.summary;
  EXPECT_TRUE(has(v.summary, "from the PCIe topology alone")) << v.summary;
  EXPECT_EQ(cell(v, 1, 2), "PIX");
  EXPECT_EQ(cell(v, 1, 3), "SYS*");
  EXPECT_EQ(cell(v, 1, 4), "0-3");
  EXPECT_EQ(cell(v, 3, 5), "1");
  EXPECT_EQ(cell(v, 1, 6), "mlx5_0 (PIX)");
  EXPECT_FALSE(v.evidence.contains("peer_copies"));
}

TEST(TopoP2pCheck, NvLinksRecordedInTheTopologyAreNotJudgedAsPcie) {
  RankFacts f = no_driver();
  TopologyFacts t = two_socket_topology(false);
  ASSERT_GE(t.gpus.size(), 3u);
  // GPU0 and GPU2 sit across the sockets but both link to an NVSwitch; GPU1 has no NVLink.
  t.nvlinks.push_back(TopoLink{t.gpus[0].bus_id, "0000:c1:00.0", "nvswitch", 25000});
  t.nvlinks.push_back(TopoLink{t.gpus[2].bus_id, "0000:c1:00.0", "nvswitch", 25000});
  f.topology = Probed<TopologyFacts>::ok(t, "--topology-xml node17.xml");
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(cell(v, 1, 3), "NV") << v.evidence.dump();
  EXPECT_EQ(cell(v, 1, 2), "PIX");
  EXPECT_FALSE(has(v.summary, "GPU0-GPU2")) << v.summary;
  EXPECT_TRUE(has(v.summary, "GPU1-GPU2 SYS")) << v.summary;
  EXPECT_FALSE(has(v.summary, "from the PCIe topology alone")) << v.summary;
  // Every pair joined by NVLink: nothing to warn about.
  t.nvlinks.push_back(TopoLink{t.gpus[1].bus_id, t.gpus[0].bus_id, "gpu", 40000});
  t.nvlinks.push_back(TopoLink{t.gpus[1].bus_id, t.gpus[2].bus_id, "gpu", 40000});
  f.topology = Probed<TopologyFacts>::ok(t, "--topology-xml node17.xml");
  const Verdict all = judge_p2p(f);
  EXPECT_EQ(all.status, Status::Pass) << all.summary;
  EXPECT_TRUE(has(all.summary, "all pairs NV")) << all.summary;
}

TEST(TopoP2pCheck, ForeignTopologyIsNotMixedWithThisMachinesNvml) {
  RankFacts f = p2p_node(8, 18);  // this machine: 8 NVLink GPUs
  f.topology = Probed<TopologyFacts>::ok(two_socket_topology(false), "--topology-xml node17.xml");
  const Verdict v = judge_p2p(f);
  EXPECT_EQ(v.evidence.at("table").size(), 4u) << "the XML's 3 GPUs, not NVML's 8";
  EXPECT_EQ(cell(v, 1, 2), "PIX");
  // The same topology of this machine fills the locality columns next to NVML's matrix.
  RankFacts g = p2p_node(2, 18);
  for (NvmlGpu& n : *g.gpu.driver.nvml_gpus.value()) {
    n.cpu_affinity.clear();
    n.numa_node.reset();
  }
  g.topology = Probed<TopologyFacts>::ok(two_socket_topology(true), "hwloc");
  const Verdict local = judge_p2p(g);
  EXPECT_EQ(local.status, Status::Pass) << local.summary;
  EXPECT_EQ(cell(local, 1, 2), "NV18");
  EXPECT_EQ(cell(local, 1, 3), "0-3");
  EXPECT_EQ(cell(local, 1, 4), "0");
  EXPECT_EQ(cell(local, 1, 5), "mlx5_0 (PIX)");
}

// ---- the text report renders the table ----------------------------------------------------------

TEST(TopoP2pReport, TextRendersTheEvidenceTableAligned) {
  Report r;
  r.version = "0.1.0";
  CheckResult c;
  c.id = "topo.p2p";
  c.area = "topo";
  c.verdict = judge_p2p(p2p_node(2, 18));
  r.results.push_back(c);
  r.ranks.emplace_back();
  const std::string text = render_text(r, Options{}, false);
  EXPECT_TRUE(has(text, "  GPU0  X     NV18  0-3           0     N/A\n")) << text;
  EXPECT_TRUE(has(text, "        GPU0  GPU1  CPU Affinity  NUMA  Nearest NIC\n")) << text;
  EXPECT_TRUE(has(text, "X = self; NV# = # bonded NVLinks")) << text;
}

}  // namespace
}  // namespace checks_topo_p2p_test
}  // namespace preflight
