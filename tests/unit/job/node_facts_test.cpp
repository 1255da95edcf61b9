// SPDX-License-Identifier: MIT
// The node's facts once per host (RankFacts::node_facts): given its host's leader's facts, a rank
// takes those of each node probe whose inputs are the same for it, probes the others itself, and
// says which and why.
#include <gtest/gtest.h>

#include <algorithm>

#include "job/run.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace job_node_facts_test {
namespace {

bool has(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

/// The facts of rank 4, a host's leader: marked so that a copy is recognised.
std::shared_ptr<RankFacts> leader_facts() {
  auto leader = std::make_shared<RankFacts>();
  leader->placement.rank = 4;
  TopologyFacts t;
  t.source = "rank 4's hwloc";
  leader->topology = Probed<TopologyFacts>::ok(t, "rank 4's hwloc");
  leader->pcie.functions =
      Probed<std::vector<PciFunction>>::error(ProbeErrc::Unsupported, "rank 4's sysfs", "/sys/bus/pci/devices");
  leader->gpu.runtime.nccl_candidates = {{"/leader/only/libnccl.so.2", "LD_LIBRARY_PATH", ""}};
  leader->probe_seconds = {{"topology", 0.05}, {"pcie", 0.01}, {"nccl", 0.1}};  // gpu_driver: never finished
  return leader;
}

ProbeRun probe_with(std::shared_ptr<const RankFacts> leader, Options o = {}) {
  o.timeout_s = 30;
  o.only = {"topo.*", "nccl.library", "gpu.count"};
  return run_probes(o, EnvSnapshot{}, std::chrono::steady_clock::now() + std::chrono::seconds(30), {}, {}, {}, {},
                    std::move(leader));
}

TEST(NodeFacts, ARankTakesTheNodeProbesWhoseInputsAreTheLeaders) {
  const ProbeRun r = probe_with(leader_facts());
  ASSERT_TRUE(r.facts.node_facts.has_value());
  const NodeFactsOrigin& origin = *r.facts.node_facts;
  EXPECT_EQ(origin.leader_rank, 4);
  EXPECT_TRUE(has(origin.adopted, "topology"));
  EXPECT_TRUE(has(origin.adopted, "pcie"));
  ASSERT_NE(r.facts.topology.value(), nullptr);
  EXPECT_EQ(r.facts.topology.value()->source, "rank 4's hwloc");
  EXPECT_EQ(r.facts.pcie.functions.why(), "/sys/bus/pci/devices: rank 4's sysfs");
  // A probe the leader did not finish, and one whose library differs here, are this rank's own.
  EXPECT_EQ(origin.probed_here.at("gpu_driver"), "rank 4 did not run it to the end");
  EXPECT_FALSE(has(origin.adopted, "gpu_driver"));
  EXPECT_NE(origin.probed_here.at("nccl").find("it loads another libnccl.so.2"), std::string::npos)
      << origin.probed_here.at("nccl");
  EXPECT_NE(origin.probed_here.at("nccl").find("'/leader/only/libnccl.so.2' there"), std::string::npos);
  // Rank probes are never taken from the leader.
  EXPECT_FALSE(has(origin.adopted, "affinity"));
  EXPECT_EQ(origin.probed_here.count("affinity"), 0u);
}

TEST(NodeFacts, ALeaderPointingHwlocElsewhereIsNotTaken) {
  auto leader = leader_facts();
  leader->env = EnvSnapshot{{"HWLOC_XMLFILE", "/elsewhere/node.xml"}};
  const ProbeRun r = probe_with(leader);
  ASSERT_TRUE(r.facts.node_facts.has_value());
  EXPECT_FALSE(has(r.facts.node_facts->adopted, "topology"));
  EXPECT_EQ(r.facts.node_facts->probed_here.at("topology"),
            "its HWLOC_XMLFILE differs from the leader's (unset here, '/elsewhere/node.xml' there)");
  ASSERT_TRUE(r.facts.topology.value() == nullptr || r.facts.topology.value()->source != "rank 4's hwloc");
  EXPECT_TRUE(has(r.facts.node_facts->adopted, "pcie"));  // sysfs is read the same way whatever the environment
}

TEST(NodeFacts, WithoutALeaderEveryProbeRunsAndNothingIsNoted) {
  const ProbeRun r = probe_with(nullptr);
  EXPECT_FALSE(r.facts.node_facts.has_value());
  EXPECT_TRUE(r.facts.probe_seconds.count("topology"));
}

TEST(NodeFacts, TheDriverHelpersFactsAreTakenAndTheSmokeTestIsTheRanksOwn) {
  auto leader = leader_facts();
  DriverFacts& d = leader->gpu.driver;
  d.nvml_driver_version = Probed<std::string>::ok("550.54.15", "nvml");
  d.cuda_driver_version = Probed<int>::ok(12040, "cuda");
  d.cuda_devices = Probed<std::vector<CudaDevice>>::ok({}, "cuDeviceGetCount");
  d.smoke = Probed<SmokeResult>::error(ProbeErrc::Timeout, "the leader's own smoke test");
  d.helper = "driver: exited with status 0 after 0.3 s; smoke: exited with status 0 after 0.5 s";
  leader->probe_seconds["gpu_driver"] = 0.8;
  const ProbeRun r = probe_with(leader);
  ASSERT_TRUE(r.facts.node_facts.has_value());
  EXPECT_TRUE(has(r.facts.node_facts->adopted, "gpu_driver"));
  const DriverFacts& mine = r.facts.gpu.driver;
  ASSERT_TRUE(mine.nvml_driver_version.ok() && mine.cuda_driver_version.ok());
  EXPECT_EQ(*mine.nvml_driver_version.value(), "550.54.15");
  EXPECT_EQ(*mine.cuda_driver_version.value(), 12040);
  EXPECT_EQ(mine.helper, "rank 4's driver: exited with status 0 after 0.3 s");
  // Its own smoke test: here, on no device (the leader's CUDA sees none), never the leader's result.
  EXPECT_EQ(mine.smoke.why(), "not run: the CUDA driver sees no device");
}

TEST(NodeFacts, AnotherCudaVisibleDevicesProbesTheDriverHere) {
  auto leader = leader_facts();
  leader->probe_seconds["gpu_driver"] = 0.8;
  leader->env = EnvSnapshot{{"CUDA_VISIBLE_DEVICES", "0"}};
  const ProbeRun r = probe_with(leader);
  ASSERT_TRUE(r.facts.node_facts.has_value());
  EXPECT_EQ(r.facts.node_facts->probed_here.at("gpu_driver"),
            "its CUDA_VISIBLE_DEVICES differs from the leader's (unset here, '0' there)");
}

TEST(NodeFacts, EnvDiffersNamesTheFirstVariableThatDiffers) {
  const EnvSnapshot mine{{"LD_LIBRARY_PATH", "/a"}, {"CUDA_VISIBLE_DEVICES", "1"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}};
  const EnvSnapshot same{{"LD_LIBRARY_PATH", "/a"}, {"CUDA_VISIBLE_DEVICES", "1"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}};
  EXPECT_EQ(env_differs(mine, same, {"CUDA_*", "LD_LIBRARY_PATH", "LD_PRELOAD"}), "");
  const EnvSnapshot other{{"LD_LIBRARY_PATH", "/b"}, {"CUDA_VISIBLE_DEVICES", "1"}};
  EXPECT_EQ(env_differs(mine, other, {"CUDA_*"}),
            "its CUDA_DEVICE_ORDER differs from the leader's ('PCI_BUS_ID' here, unset there)");
  EXPECT_EQ(env_differs(mine, other, {"LD_LIBRARY_PATH"}),
            "its LD_LIBRARY_PATH differs from the leader's ('/a' here, '/b' there)");
  EXPECT_EQ(env_differs(mine, other, {"LD_PRELOAD"}), "");
}

}  // namespace
}  // namespace job_node_facts_test
}  // namespace preflight
