// SPDX-License-Identifier: MIT
// net.gpu_nic_affinity on hand-built topologies (every status, NCCL's NIC selection rules) and on
// topologies the probe loads from XML: our own fixtures and hwloc's own test topologies of real GPU
// servers, kept outside the repository (skipped when hwloc_dir() below is absent).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "checks/check.hpp"
#include "checks/specs.hpp"
#include "probes/probe.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace checks_gpu_nic_affinity_test {
namespace {

TopoHop hop(std::string kind, std::string id) {
  TopoHop h;
  h.kind = std::move(kind);
  h.id = std::move(id);
  return h;
}

/// A device on socket `pkg` (NUMA node = pkg) below host bridge `hb`, then the given PCI bridges.
PciEndpoint dev(std::string kind, std::string bus, int pkg, std::string hb, std::vector<std::string> bridges,
                std::vector<std::string> os_devices = {}) {
  PciEndpoint e;
  e.kind = std::move(kind);
  e.bus_id = std::move(bus);
  e.numa_nodes = {pkg};
  e.local_cpus = pkg == 0 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{4, 5, 6, 7};
  e.os_devices = std::move(os_devices);
  e.path = {hop("machine", "Machine:L#0"), hop("package", "Package:L#" + std::to_string(pkg)),
            hop("host_bridge", "HostBridge:" + hb)};
  for (std::string& b : bridges) e.path.push_back(hop("pci_bridge", std::move(b)));
  return e;
}

PciEndpoint gpu_on(int pkg, std::string bus, std::string port) {
  return dev("gpu", std::move(bus), pkg, pkg == 0 ? "0000:[00-3f]" : "0000:[80-bf]", {std::move(port)});
}

PciEndpoint nic_on(int pkg, std::string bus, std::string port, std::vector<std::string> os_devices) {
  return dev("nic", std::move(bus), pkg, pkg == 0 ? "0000:[00-3f]" : "0000:[80-bf]", {std::move(port)},
             std::move(os_devices));
}

RankFacts with_topology(std::vector<PciEndpoint> gpus, std::vector<PciEndpoint> nics) {
  TopologyFacts t;
  t.source = "--topology-xml node.xml";
  t.this_system = false;
  t.packages = 2;
  t.cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  t.gpus = std::move(gpus);
  t.nics = std::move(nics);
  RankFacts f;
  f.topology = Probed<TopologyFacts>::ok(std::move(t), "--topology-xml node.xml");
  return f;
}

Verdict judge(const RankFacts& f, Profile p = Profile::Node) {
  const Options o;
  return run_check(kNetGpuNicAffinity, CheckContext{f, o, p});
}

/// GPU 0000:03:00.0 on socket 0 (with mlx5_0 on another root port of its host bridge), GPU
/// 0000:83:00.0 on socket 1 (with mlx5_1), plus an Ethernet port on socket 0.
RankFacts two_sockets_two_hcas() {
  return with_topology({gpu_on(0, "0000:03:00.0", "0000:00:01.0"), gpu_on(1, "0000:83:00.0", "0000:80:01.0")},
                       {nic_on(0, "0000:05:00.0", "0000:00:02.0", {"ib0", "mlx5_0"}),
                        nic_on(0, "0000:06:00.0", "0000:00:1c.0", {"eno1"}),
                        nic_on(1, "0000:85:00.0", "0000:80:02.0", {"ib1", "mlx5_1"})});
}

TEST(GpuNicAffinity, PassListsEachGpuWithItsNearestNic) {
  const Verdict v = judge(two_sockets_two_hcas());
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "net.gpu_nic_affinity/nearest-nics");
  EXPECT_EQ(v.finding.params["rule"], "every RDMA NIC, NCCL_IB_HCA unset");
  EXPECT_NE(v.summary.find("GPU 0000:03:00.0 (NUMA 0) → mlx5_0 PHB"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("GPU 0000:83:00.0 (NUMA 1) → mlx5_1 PHB"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("every RDMA NIC, NCCL_IB_HCA unset"), std::string::npos) << v.summary;
  ASSERT_EQ(v.evidence["per_gpu"].size(), 2u);
  const nlohmann::json& g0 = v.evidence["per_gpu"][0];
  EXPECT_EQ(g0["bus_id"], "0000:03:00.0");
  EXPECT_EQ(g0["numa_nodes"], nlohmann::json::array({0}));
  EXPECT_EQ(g0["local_cpus"], "0-3");
  EXPECT_EQ(g0["nearest"][0]["nic"], "mlx5_0");
  EXPECT_EQ(g0["nearest"][0]["path"], "PHB");
  EXPECT_EQ(g0["nearest"][0]["os_devices"], nlohmann::json::array({"ib0", "mlx5_0"}));
  EXPECT_EQ(v.evidence["used_nics"].size(), 2u);  // the Ethernet port is not used next to RDMA NICs
}

TEST(GpuNicAffinity, WarnWhenTheOnlyNicIsAcrossTheSocket) {
  const RankFacts f = with_topology({gpu_on(1, "0000:83:00.0", "0000:80:01.0")},
                                    {nic_on(0, "0000:05:00.0", "0000:00:02.0", {"ib0", "mlx5_0"})});
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "net.gpu_nic_affinity/across-socket");
  EXPECT_EQ(v.finding.params["far"], 1);
  EXPECT_EQ(v.finding.params["gpus"], 1);
  EXPECT_EQ(v.finding.params["pairs"], "GPU 0000:83:00.0 (NUMA 1) → mlx5_0 (NUMA 0) SYS");
  EXPECT_EQ(v.finding.params["numa"], "NUMA 1");
  EXPECT_EQ(v.finding.params["node"], "1");
  EXPECT_NE(v.summary.find("1 of 1 GPUs reaches its nearest NIC only across the socket: GPU 0000:83:00.0 (NUMA 1) → "
                           "mlx5_0 (NUMA 0) SYS"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("no GPUDirect RDMA by default"), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find("move or add an HCA in a slot of that socket (and list it in NCCL_IB_HCA if that is set). "
                          "Bind each rank"),
            std::string::npos)
      << v.remedy;
  EXPECT_NE(v.remedy.find("(NUMA 1) a NIC of its own"), std::string::npos) << v.remedy;
  EXPECT_NE(v.remedy.find("numactl --cpunodebind=1 --membind=1"), std::string::npos) << v.remedy;
  EXPECT_NE(v.remedy.find("NCCL_NET_GDR_LEVEL=SYS"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.evidence["per_gpu"][0]["nearest"][0]["path"], "SYS");
}

TEST(GpuNicAffinity, NcclIbHcaLeavingOutTheLocalNicWarnsAndNamesIt) {
  RankFacts f = two_sockets_two_hcas();
  f.env.set("NCCL_IB_HCA", "=mlx5_0");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "net.gpu_nic_affinity/nearer-hca-left-out");
  EXPECT_EQ(v.finding.params["left_out"], "mlx5_1");
  EXPECT_EQ(v.finding.params["hcas"], "mlx5_0,mlx5_1");
  EXPECT_EQ(v.finding.params["far"], 1);
  EXPECT_EQ(v.finding.params["gpus"], 2);
  EXPECT_NE(v.summary.find("GPU 0000:83:00.0 (NUMA 1) → mlx5_0 (NUMA 0) SYS"), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find("NCCL_IB_HCA leaves out mlx5_1, which is nearer to these GPUs: "
                          "`export NCCL_IB_HCA==mlx5_0,mlx5_1`. Bind each rank"),
            std::string::npos)
      << v.remedy;
  EXPECT_NE(v.remedy.find("numactl --cpunodebind=1 --membind=1 <command>` for the GPUs on node 1,"), std::string::npos)
      << v.remedy;
  EXPECT_NE(v.evidence["selection"].get<std::string>().find("NCCL_IB_HCA==mlx5_0"), std::string::npos);
}

TEST(GpuNicAffinity, NcclIbHcaFromTheConfigFile) {
  RankFacts f = two_sockets_two_hcas();
  ConfFile file;
  file.path = "/etc/nccl.conf";
  file.role = "system";
  ConfFileContents c;
  ConfEntry e;
  e.name = "NCCL_IB_HCA";
  e.value = "^mlx5_1";
  c.entries.push_back(e);
  file.contents = Probed<ConfFileContents>::ok(c, "/etc/nccl.conf");
  f.nccl_conf.files.push_back(file);
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_NE(v.evidence["selection"].get<std::string>().find("/etc/nccl.conf"), std::string::npos);
  // The environment wins over the file.
  f.env.set("NCCL_IB_HCA", "mlx5");
  EXPECT_EQ(judge(f).status, Status::Pass);
}

TEST(GpuNicAffinity, IbDisabledJudgesTheIpNics) {
  RankFacts f = two_sockets_two_hcas();
  f.env.set("NCCL_IB_DISABLE", "1");
  const Verdict v = judge(f);
  // Socket 1's GPU still has ib1 (IPoIB) on its socket; the labels are the IP interfaces.
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_NE(v.summary.find("GPU 0000:83:00.0 (NUMA 1) → ib1 PHB"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("NCCL_IB_DISABLE=1"), std::string::npos) << v.summary;
  EXPECT_EQ(v.evidence["used_nics"].size(), 3u);
  // Only eno1 selected: socket 1's GPU is across the socket from it.
  f.env.set("NCCL_SOCKET_IFNAME", "=eno1");
  const Verdict w = judge(f);
  EXPECT_EQ(w.status, Status::Warn);
  EXPECT_EQ(w.finding.code, "net.gpu_nic_affinity/across-socket");
  EXPECT_EQ(w.finding.params["slot"], "a NIC in a slot of that socket");
  EXPECT_NE(w.summary.find("→ eno1 (NUMA 0) SYS"), std::string::npos) << w.summary;
  EXPECT_NE(w.remedy.find("move or add a NIC"), std::string::npos) << w.remedy;
}

TEST(GpuNicAffinity, IbDisableReadAsNcclReadsIt) {
  RankFacts f = two_sockets_two_hcas();
  f.env.set("NCCL_IB_DISABLE", "true");  // strtoll reads 0: IB stays enabled
  const Verdict v = judge(f);
  EXPECT_NE(v.summary.find("→ mlx5_1 PHB"), std::string::npos) << v.summary;
}

TEST(GpuNicAffinity, HcaListMatchingNothingFallsBackToTheIpNics) {
  RankFacts f = two_sockets_two_hcas();
  f.env.set("NCCL_IB_HCA", "=mlx5_9");
  const Verdict v = judge(f);
  EXPECT_NE(v.evidence["selection"].get<std::string>().find("selects none of the RDMA NICs"), std::string::npos)
      << v.evidence.dump();
}

TEST(GpuNicAffinity, RdmaNamesFromTheNetProbeOnThisMachine) {
  // udev-renamed RDMA devices ("ibp5s0") are known from /sys/class/infiniband on this machine.
  RankFacts f = with_topology({gpu_on(1, "0000:83:00.0", "0000:80:01.0")},
                              {nic_on(0, "0000:05:00.0", "0000:00:02.0", {"ens5np0", "ibp5s0"}),
                               nic_on(1, "0000:85:00.0", "0000:80:02.0", {"ens85"})});
  f.topology.value()->this_system = true;
  // Without the RDMA device list, both are IP NICs: ens85 is on the GPU's socket.
  EXPECT_EQ(judge(f).status, Status::Pass);
  IbDevice ib;
  ib.name = "ibp5s0";
  ib.pci_bus_id = "0000:05:00.0";
  f.net.ib_devices = Probed<std::vector<IbDevice>>::ok({ib}, "/sys/class/infiniband");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_NE(v.summary.find("→ ibp5s0 (NUMA 0) SYS"), std::string::npos) << v.summary;
}

TEST(GpuNicAffinity, RdmaDevicesTypedByHwlocInAnotherNodesExport) {
  // In an export of another node, hwloc's OpenFabrics type marks the renamed RDMA device.
  RankFacts f = with_topology({gpu_on(1, "0000:83:00.0", "0000:80:01.0")},
                              {nic_on(0, "0000:05:00.0", "0000:00:02.0", {"ens5np0", "ibp5s0"}),
                               nic_on(1, "0000:85:00.0", "0000:80:02.0", {"ens85"})});
  EXPECT_EQ(judge(f).status, Status::Pass);
  f.topology.value()->nics[0].rdma_devices = {"ibp5s0"};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_NE(v.summary.find("→ ibp5s0 (NUMA 0) SYS"), std::string::npos) << v.summary;
}

TEST(GpuNicAffinity, WarnWhenGpusShareOneNicWhileAnotherIsIdle) {
  const RankFacts f = with_topology(
      {dev("gpu", "0000:03:00.0", 0, "0000:[00-3f]", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}),
       dev("gpu", "0000:04:00.0", 0, "0000:[00-3f]", {"0000:00:01.0", "0000:01:00.0", "0000:02:08.0"})},
      {dev("nic", "0000:05:00.0", 0, "0000:[00-3f]", {"0000:00:01.0", "0000:01:00.0", "0000:02:10.0"}, {"mlx5_0"}),
       nic_on(1, "0000:85:00.0", "0000:80:02.0", {"mlx5_1"})});
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_EQ(v.finding.code, "net.gpu_nic_affinity/crowded-nic");
  EXPECT_EQ(v.finding.params["crowded"], "mlx5_0 is the nearest NIC of GPUs 0000:03:00.0, 0000:04:00.0");
  EXPECT_EQ(v.finding.params["idle"], "mlx5_1");
  EXPECT_EQ(v.finding.params["verb"], "is");
  EXPECT_NE(v.summary.find("mlx5_0 is the nearest NIC of GPUs 0000:03:00.0, 0000:04:00.0, while mlx5_1 is nearest to "
                           "no GPU"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.remedy.find("`export NCCL_IB_HCA=^=mlx5_1`"), std::string::npos) << v.remedy;
}

TEST(GpuNicAffinity, TwoGpusWithTwoEquallyNearNicsDoNotCrowdThem) {
  // DGX A100-like: two GPUs and two NICs on one switch, and a storage NIC near no GPU.
  const std::vector<std::string> sw = {"0000:00:01.0", "0000:01:00.0"};
  auto below = [&](std::string dsp1, std::string dsp2) {
    std::vector<std::string> b = sw;
    b.push_back(std::move(dsp1));
    b.push_back(std::move(dsp2));
    return b;
  };
  const RankFacts f =
      with_topology({dev("gpu", "0000:05:00.0", 0, "0000:[00-3f]", below("0000:02:00.0", "0000:03:00.0")),
                     dev("gpu", "0000:07:00.0", 0, "0000:[00-3f]", below("0000:02:08.0", "0000:06:00.0"))},
                    {dev("nic", "0000:09:00.0", 0, "0000:[00-3f]", below("0000:02:10.0", "0000:08:00.0"), {"mlx5_0"}),
                     dev("nic", "0000:0b:00.0", 0, "0000:[00-3f]", below("0000:02:18.0", "0000:0a:00.0"), {"mlx5_1"}),
                     nic_on(1, "0000:85:00.0", "0000:80:02.0", {"mlx5_8"})});
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_NE(v.summary.find("→ mlx5_0/mlx5_1 PXB"), std::string::npos) << v.summary;
}

TEST(GpuNicAffinity, UnknownWhenTheTopologyIsMissing) {
  RankFacts f;
  f.topology = Probed<TopologyFacts>::error(ProbeErrc::NotFound, "cannot open the file: No such file or directory",
                                            "--topology-xml /data/node17.xml");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_NE(v.summary.find("/data/node17.xml"), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find("lstopo-no-graphics --of xml"), std::string::npos) << v.remedy;

  f.topology = Probed<TopologyFacts>::error(ProbeErrc::Unsupported, "the topology of a --sysroot tree is not read",
                                            "--sysroot /captured");
  const Verdict s = judge(f);
  EXPECT_EQ(s.status, Status::Unknown);
  EXPECT_NE(s.remedy.find("without --sysroot"), std::string::npos) << s.remedy;

  EXPECT_EQ(judge(RankFacts{}).status, Status::Unknown);  // never probed
}

TEST(GpuNicAffinity, SkipWithoutGpusOrNics) {
  const Verdict no_gpu = judge(with_topology({}, {nic_on(0, "0000:05:00.0", "0000:00:02.0", {"mlx5_0"})}));
  EXPECT_EQ(no_gpu.status, Status::Skip);
  EXPECT_EQ(no_gpu.finding.code, "net.gpu_nic_affinity/no-gpu");
  EXPECT_EQ(no_gpu.finding.params["source"], "--topology-xml node.xml");
  EXPECT_EQ(no_gpu.summary, "no NVIDIA GPU in the topology (--topology-xml node.xml)");
  const Verdict no_nic = judge(with_topology({gpu_on(0, "0000:03:00.0", "0000:00:01.0")}, {}));
  EXPECT_EQ(no_nic.status, Status::Skip);
  EXPECT_EQ(no_nic.finding.code, "net.gpu_nic_affinity/no-nic");
  EXPECT_EQ(no_nic.finding.params["gpus"], 1);
  EXPECT_EQ(no_nic.summary, "no NIC in the topology (--topology-xml node.xml): nothing to place the 1 GPUs against");
  EXPECT_EQ(no_nic.remedy, "");
}

TEST(GpuNicAffinity, SkipInTheImageProfile) {
  EXPECT_EQ(judge(two_sockets_two_hcas(), Profile::Image).status, Status::Skip);
}

TEST(GpuNicAffinity, ExplainNamesEveryStatus) {
  const std::string_view e = kNetGpuNicAffinity.explain;
  for (const char* word : {"What it reads", "Failures", "Fix", "WARN", "UNKNOWN", "SKIP", "NCCL_IB_HCA", "SYS"}) {
    EXPECT_NE(e.find(word), std::string_view::npos) << word;
  }
}

// --- through the probe, on XML topologies --------------------------------------------------------

std::string hwloc_dir() { return preflight::test_paths::source_dir() + "/../shared/fixtures/hwloc"; }
std::string own_dir() { return preflight::test_paths::fixtures_dir() + "/topology"; }

RankFacts probe_xml(const std::string& xml, EnvSnapshot env = {}) {
  const FileSystem fs;
  Options options;
  options.topology_xml = xml;
  RankFacts facts;
  facts.env = env;
  probe_topology(ProbeContext{fs, env, options}, facts);
  return facts;
}

bool have_hwloc_fixtures() {
  struct stat st {};
  return ::stat((hwloc_dir() + "/nvidiaDGX2.xml").c_str(), &st) == 0;
}

TEST(GpuNicAffinityXml, OwnBalancedFixturePasses) {
  const Verdict v = judge(probe_xml(own_dir() + "/2s-4gpu-2nic-switch.xml"));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_NE(v.summary.find("GPU 0000:03:00.0 (NUMA 0) → mlx5_0 PIX"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("GPU 0000:84:00.0 (NUMA 1) → mlx5_1 PIX"), std::string::npos) << v.summary;
}

TEST(GpuNicAffinityXml, OwnBalancedFixtureWithOneHcaSelected) {
  const Verdict v = judge(probe_xml(own_dir() + "/2s-4gpu-2nic-switch.xml", EnvSnapshot{{"NCCL_IB_HCA", "=mlx5_0"}}));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "net.gpu_nic_affinity/nearer-hca-left-out");
  EXPECT_EQ(v.finding.params["far"], 2);
  EXPECT_EQ(v.finding.params["reach"], "reach their");
  EXPECT_NE(v.summary.find("2 of 4 GPUs reach their nearest NIC only across the socket"), std::string::npos)
      << v.summary;
  EXPECT_NE(v.remedy.find("NCCL_IB_HCA==mlx5_0,mlx5_1"), std::string::npos) << v.remedy;
}

TEST(GpuNicAffinityXml, OwnCrowdedFixtureWarns) {
  const Verdict v = judge(probe_xml(own_dir() + "/2s-2gpu-crowded-nic.xml"));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_NE(v.summary.find("while mlx5_1 is nearest to no GPU"), std::string::npos) << v.summary;
}

TEST(GpuNicAffinityXml, OwnFarFixtureWarns) {
  const Verdict v = judge(probe_xml(own_dir() + "/2s-gpu-far-from-nic.xml"));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_NE(v.summary.find("GPU 0001:41:00.0 (NUMA 1) → mlx5_0 (NUMA 0) SYS"), std::string::npos) << v.summary;
  EXPECT_FALSE(v.evidence["topology_notes"].empty());
}

TEST(GpuNicAffinityXml, MissingFileIsUnknown) {
  const Verdict v = judge(probe_xml("/nonexistent/node.xml"));
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_NE(v.summary.find("/nonexistent/node.xml"), std::string::npos) << v.summary;
}

TEST(GpuNicAffinityXml, Hp24em64tMellanoxNearTheNode0Gpu) {
  if (!have_hwloc_fixtures()) GTEST_SKIP() << hwloc_dir() << " is absent";
  const Verdict v = judge(probe_xml(hwloc_dir() + "/24em64t-2n6c2t-pci.xml"));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_NE(v.summary.find("GPU 0000:11:00.0 (NUMA 1) → mlx4_0 (NUMA 0) SYS"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("GPU 0000:14:00.0 (NUMA 1) → mlx4_0 (NUMA 0) SYS"), std::string::npos) << v.summary;
  const nlohmann::json& g0 = v.evidence["per_gpu"][0];
  EXPECT_EQ(g0["bus_id"], "0000:06:00.0");
  EXPECT_EQ(g0["nearest"].size(), 1u);
  EXPECT_EQ(g0["nearest"][0]["nic"], "mlx4_0");
  EXPECT_EQ(g0["nearest"][0]["path"], "PHB");
}

TEST(GpuNicAffinityXml, Supermicro32em64tMellanoxOnNode1) {
  if (!have_hwloc_fixtures()) GTEST_SKIP() << hwloc_dir() << " is absent";
  for (const char* file : {"32em64t-2n8c2t-pci-wholeio.xml", "32em64t-2n8c2t-pci-normalio.xml"}) {
    const Verdict v = judge(probe_xml(hwloc_dir() + "/" + file));
    EXPECT_EQ(v.status, Status::Warn) << file << ": " << v.summary;
    EXPECT_NE(v.summary.find("1 of 3 GPUs reaches its nearest NIC only across the socket: GPU 0000:03:00.0 (NUMA 0) "
                             "→ mlx5_0 (NUMA 1) SYS"),
              std::string::npos)
        << v.summary;
    for (std::size_t i = 1; i < 3; ++i) {
      const nlohmann::json& g = v.evidence["per_gpu"][i];
      EXPECT_EQ(g["numa_nodes"], nlohmann::json::array({1})) << file;
      EXPECT_EQ(g["nearest"][0]["nic"], "mlx5_0") << file;
      EXPECT_EQ(g["nearest"][0]["numa_nodes"], nlohmann::json::array({1})) << file;
    }
  }
}

TEST(GpuNicAffinityXml, HwlocFixturesWithoutNicsOrGpusSkip) {
  if (!have_hwloc_fixtures()) GTEST_SKIP() << hwloc_dir() << " is absent";
  for (const char* file : {"nvidiaDGX2.xml", "power8gpudistances.xml", "32em64t-2n8c2t-pci-noio.xml"}) {
    EXPECT_EQ(judge(probe_xml(hwloc_dir() + "/" + file)).status, Status::Skip) << file;
  }
  const Verdict v = judge(probe_xml(hwloc_dir() + "/64intel64-3g2n+2n-irregulargroups+pci.xml"));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;  // GPUs on NUMA 4 and 7, Ethernet on NUMA 0
  EXPECT_NE(v.summary.find("GPU 0002:01:00.0 (NUMA 4) → eth0/eth1 (NUMA 0) SYS"), std::string::npos) << v.summary;
}

}  // namespace
}  // namespace checks_gpu_nic_affinity_test
}  // namespace preflight
