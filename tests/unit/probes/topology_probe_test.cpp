// SPDX-License-Identifier: MIT
// The hwloc topology probe on real GPU-server exports (hwloc's own test topologies, tests/hwloc/xml
// of hwloc's repository, kept outside this one in hwloc_dir() below; skipped when absent) and on our
// small hand-written XMLs: every GPU's NUMA node and local CPUs as the machines have them, the NICs
// with their OS devices (the duplicate-bus-id gotcha), CPU-less NUMA nodes, and files that cannot be loaded.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/pci_topology.hpp"
#include "core/text.hpp"
#include "probes/probe.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace probes_topology_probe_test {
namespace {

std::string hwloc_dir() { return preflight::test_paths::source_dir() + "/../shared/fixtures/hwloc"; }
std::string own_dir() { return preflight::test_paths::fixtures_dir() + "/topology"; }

bool have_hwloc_fixtures() {
  struct stat st {};
  return ::stat((hwloc_dir() + "/nvidiaDGX2.xml").c_str(), &st) == 0;
}

#define REQUIRE_HWLOC_FIXTURES() \
  if (!have_hwloc_fixtures()) GTEST_SKIP() << hwloc_dir() << " is absent"

Probed<TopologyFacts> load(const std::string& xml, const std::string& sysroot = {}) {
  const FileSystem fs(sysroot);
  const EnvSnapshot env;
  Options options;
  options.topology_xml = xml;
  RankFacts facts;
  probe_topology(ProbeContext{fs, env, options}, facts);
  return facts.topology;
}

TopologyFacts load_ok(const std::string& xml) {
  const Probed<TopologyFacts> t = load(xml);
  EXPECT_TRUE(t.ok()) << t.why();
  return t.ok() ? *t.value() : TopologyFacts{};
}

std::vector<int> cpus(std::string_view list) { return parse_cpu_list(list).value_or(std::vector<int>{}); }

const PciEndpoint& gpu(const TopologyFacts& t, std::string_view bus) {
  const PciEndpoint* e = find_endpoint(t.gpus, bus);
  if (e == nullptr) {
    ADD_FAILURE() << "no GPU " << bus;
    static const PciEndpoint none;
    return none;
  }
  return *e;
}

void expect_gpu(const TopologyFacts& t, std::string_view bus, const std::vector<int>& numa, std::string_view pus) {
  const PciEndpoint& g = gpu(t, bus);
  EXPECT_EQ(g.kind, "gpu") << bus;
  EXPECT_EQ(g.numa_nodes, numa) << bus;
  EXPECT_EQ(g.local_cpus, cpus(pus)) << bus;
}

std::vector<std::string> bus_ids(const std::vector<PciEndpoint>& v) {
  std::vector<std::string> out;
  for (const PciEndpoint& e : v) out.push_back(e.bus_id);
  return out;
}

std::vector<PciEndpoint> rdma_nics(const TopologyFacts& t) {
  std::vector<PciEndpoint> out;
  for (const PciEndpoint& n : t.nics) {
    if (std::any_of(n.os_devices.begin(), n.os_devices.end(),
                    [](const std::string& d) { return d.starts_with("mlx"); })) {
      out.push_back(n);
    }
  }
  return out;
}

TEST(TopologyProbe, Hp24em64tGpusPerSocketAndMellanoxOnNode0) {
  REQUIRE_HWLOC_FIXTURES();
  const TopologyFacts t = load_ok(hwloc_dir() + "/24em64t-2n6c2t-pci.xml");
  EXPECT_FALSE(t.this_system);
  EXPECT_EQ(t.source, "--topology-xml " + hwloc_dir() + "/24em64t-2n6c2t-pci.xml");
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(t.cpus, cpus("0-23"));
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[0].cpus, cpus("0,2,4,6,8,10,12,14,16,18,20,22"));
  EXPECT_EQ(t.numa_nodes[1].cpus, cpus("1,3,5,7,9,11,13,15,17,19,21,23"));
  EXPECT_EQ(t.numa_nodes[0].memory_bytes, 19316633600u);
  // The ATI ES1000 VGA (1002:515e, class 0300) is not an NVIDIA GPU.
  EXPECT_EQ(bus_ids(t.gpus), (std::vector<std::string>{"0000:06:00.0", "0000:11:00.0", "0000:14:00.0"}));
  expect_gpu(t, "0000:06:00.0", {0}, "0,2,4,6,8,10,12,14,16,18,20,22");
  expect_gpu(t, "0000:11:00.0", {1}, "1,3,5,7,9,11,13,15,17,19,21,23");
  expect_gpu(t, "0000:14:00.0", {1}, "1,3,5,7,9,11,13,15,17,19,21,23");
  EXPECT_EQ(gpu(t, "0000:06:00.0").vendor_device, "10de:06d2");
  EXPECT_EQ(gpu(t, "0000:06:00.0").class_id, "0302");

  EXPECT_EQ(bus_ids(t.nics), (std::vector<std::string>{"0000:04:00.0", "0000:04:00.1", "0000:05:00.0"}));
  const PciEndpoint* mlx = find_endpoint(t.nics, "05:00.0");
  ASSERT_NE(mlx, nullptr);
  EXPECT_EQ(mlx->class_id, "0c06");  // InfiniBand as a serial-bus class
  EXPECT_EQ(mlx->os_devices, (std::vector<std::string>{"eth2", "ib0", "mlx4_0"}));
  EXPECT_EQ(mlx->rdma_devices, (std::vector<std::string>{"mlx4_0"}));  // hwloc types it OpenFabrics
  EXPECT_EQ(mlx->numa_nodes, std::vector<int>{0});

  // GPU 06:00.0 and the HCA hang off different root ports of one host bridge: PHB. The others: SYS.
  const std::vector<PciEndpoint> hcas = rdma_nics(t);
  const std::vector<NearNic> near = nearest_nics(gpu(t, "0000:06:00.0"), hcas);
  ASSERT_EQ(near.size(), 1u);
  EXPECT_EQ(near[0].nic->bus_id, "0000:05:00.0");
  EXPECT_EQ(near[0].path, "PHB");
  EXPECT_EQ(nearest_nics(gpu(t, "0000:11:00.0"), hcas).at(0).path, "SYS");

  // The path runs from the machine down to the device's parent, with unique ids.
  const std::vector<TopoHop>& p = gpu(t, "0000:06:00.0").path;
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].kind, "machine");
  EXPECT_EQ(p[1].kind, "package");
  EXPECT_EQ(p[1].id, "Package:L#0");
  EXPECT_EQ(p[2].kind, "host_bridge");
  EXPECT_EQ(p[2].id, "HostBridge:0000:[00-0f]");
  EXPECT_EQ(p[3].kind, "pci_bridge");
  EXPECT_EQ(p[3].id, "0000:00:07.0");
}

void check_32em64t(const std::string& file) {
  const TopologyFacts t = load_ok(hwloc_dir() + "/" + file);
  EXPECT_EQ(t.packages, 2);
  // The AMD Tahiti (1002:6798, class 0300) at 84:00.1 is not an NVIDIA GPU.
  EXPECT_EQ(bus_ids(t.gpus), (std::vector<std::string>{"0000:03:00.0", "0000:83:00.0", "0000:84:00.0"}));
  expect_gpu(t, "0000:03:00.0", {0}, "0-7,16-23");
  expect_gpu(t, "0000:83:00.0", {1}, "8-15,24-31");
  expect_gpu(t, "0000:84:00.0", {1}, "8-15,24-31");
  const std::vector<std::string>& osd = gpu(t, "0000:84:00.0").os_devices;
  EXPECT_NE(std::find(osd.begin(), osd.end(), "cuda0"), osd.end());
  EXPECT_NE(std::find(osd.begin(), osd.end(), "card0"), osd.end());

  // The duplicate bus id: the ConnectX-4 at 0000:04:00.0 is on NUMA 1; the SAS controller with
  // the same bus id on NUMA 0 is no NIC. A lookup by bus id would find the SAS controller.
  const std::vector<PciEndpoint> hcas = rdma_nics(t);
  ASSERT_EQ(hcas.size(), 1u);
  EXPECT_EQ(hcas[0].bus_id, "0000:04:00.0");
  EXPECT_EQ(hcas[0].vendor_device, "15b3:1013");
  EXPECT_EQ(hcas[0].class_id, "0207");
  EXPECT_EQ(hcas[0].os_devices, (std::vector<std::string>{"ib0", "mlx5_0"}));
  EXPECT_EQ(hcas[0].numa_nodes, std::vector<int>{1});
  EXPECT_EQ(hcas[0].local_cpus, cpus("8-15,24-31"));
  for (const PciEndpoint& n : t.nics) EXPECT_NE(n.vendor_device, "8086:1d6b") << "the SAS controller is no NIC";

  EXPECT_EQ(nearest_nics(gpu(t, "0000:03:00.0"), hcas).at(0).path, "SYS");
  EXPECT_EQ(nearest_nics(gpu(t, "0000:83:00.0"), hcas).at(0).nic->os_devices.back(), "mlx5_0");
  EXPECT_EQ(nearest_nics(gpu(t, "0000:83:00.0"), hcas).at(0).path, "PHB");
  // The hand-inserted HCA sits below 84:00.0's root port: PIX to that GPU.
  EXPECT_EQ(nearest_nics(gpu(t, "0000:84:00.0"), hcas).at(0).path, "PIX");
}

TEST(TopologyProbe, Supermicro32em64tWholeIoDuplicateBusId) {
  REQUIRE_HWLOC_FIXTURES();
  check_32em64t("32em64t-2n8c2t-pci-wholeio.xml");
}

TEST(TopologyProbe, Supermicro32em64tNormalIo) {
  REQUIRE_HWLOC_FIXTURES();
  check_32em64t("32em64t-2n8c2t-pci-normalio.xml");
}

TEST(TopologyProbe, NoIoExportHasNoDevices) {
  REQUIRE_HWLOC_FIXTURES();
  const TopologyFacts t = load_ok(hwloc_dir() + "/32em64t-2n8c2t-pci-noio.xml");
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.cpus, cpus("0-31"));
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_TRUE(t.nics.empty());
}

TEST(TopologyProbe, IrregularGroupsIncludeDisallowedSockets) {
  REQUIRE_HWLOC_FIXTURES();
  // Only PUs 0-15 were allowed where it was exported; another node's export is read whole.
  const TopologyFacts t = load_ok(hwloc_dir() + "/64intel64-3g2n+2n-irregulargroups+pci.xml");
  EXPECT_EQ(t.packages, 8);
  EXPECT_EQ(t.cpus, cpus("0-63"));
  EXPECT_EQ(t.numa_nodes.size(), 8u);
  EXPECT_EQ(bus_ids(t.gpus), (std::vector<std::string>{"0002:01:00.0", "0004:01:00.0"}));
  expect_gpu(t, "0002:01:00.0", {4}, "32-39");
  expect_gpu(t, "0004:01:00.0", {7}, "56-63");
  EXPECT_EQ(gpu(t, "0002:01:00.0").class_id, "0300");
  for (const std::string& n : t.notes) EXPECT_EQ(n.find("no CPU in the allowed set"), std::string::npos) << n;
  // Socket 0's Ethernet hangs off Package L#0 inside Group0 L#0.
  const PciEndpoint* eth = find_endpoint(t.nics, "0000:01:00.0");
  ASSERT_NE(eth, nullptr);
  EXPECT_EQ(eth->numa_nodes, std::vector<int>{0});
  EXPECT_EQ(eth->local_cpus, cpus("0-7"));
  ASSERT_GE(eth->path.size(), 3u);
  EXPECT_EQ(eth->path[1].kind, "group");
  EXPECT_EQ(eth->path[1].id, "Group:L#0");
  EXPECT_EQ(eth->path[2].id, "Package:L#0");
  EXPECT_EQ(gpu(t, "0004:01:00.0").path[1].id, "Package:L#7");
}

TEST(TopologyProbe, DgxTwoSixteenGpusEightPerNodeNoNvSwitches) {
  REQUIRE_HWLOC_FIXTURES();
  const TopologyFacts t = load_ok(hwloc_dir() + "/nvidiaDGX2.xml");
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(t.cpus, cpus("0-1,24-25"));
  ASSERT_EQ(t.gpus.size(), 16u);  // the 12 NVSwitches (one with zeroed ids) are not GPUs
  EXPECT_TRUE(t.nics.empty());
  const std::vector<std::string> node0 = {"0000:34:00.0", "0000:36:00.0", "0000:39:00.0", "0000:3b:00.0",
                                          "0000:57:00.0", "0000:59:00.0", "0000:5c:00.0", "0000:5e:00.0"};
  const std::vector<std::string> node1 = {"0000:b7:00.0", "0000:b9:00.0", "0000:bc:00.0", "0000:be:00.0",
                                          "0000:e0:00.0", "0000:e2:00.0", "0000:e5:00.0", "0000:e7:00.0"};
  for (std::size_t i = 0; i < 8; ++i) {
    expect_gpu(t, node0[i], {0}, "0-1");
    expect_gpu(t, node1[i], {1}, "24-25");
    EXPECT_EQ(gpu(t, node0[i]).os_devices, std::vector<std::string>{"nvml" + std::to_string(i)});
    EXPECT_EQ(gpu(t, node1[i]).os_devices, std::vector<std::string>{"nvml" + std::to_string(i + 8)});
  }
  for (const PciEndpoint& g : t.gpus) EXPECT_EQ(g.vendor_device, "10de:1db8");
  for (const std::string& n : t.notes) EXPECT_EQ(n.find("0000:66:00.0"), std::string::npos) << n;

  // nvidia-smi's classes as hwloc's tree gives them (core/pci_topology.hpp).
  const PciEndpoint& g0 = gpu(t, "0000:34:00.0");
  EXPECT_EQ(path_class(g0, g0), "X");
  EXPECT_EQ(path_class(g0, gpu(t, "0000:36:00.0")), "PIX");   // one switch
  EXPECT_EQ(path_class(g0, gpu(t, "0000:39:00.0")), "PXB");   // cascaded switches
  EXPECT_EQ(path_class(g0, gpu(t, "0000:57:00.0")), "NODE");  // other host bridge, same socket
  EXPECT_EQ(path_class(g0, gpu(t, "0000:b7:00.0")), "SYS");   // other socket
  EXPECT_EQ(path_class(gpu(t, "0000:b7:00.0"), gpu(t, "0000:b9:00.0")), "PIX");

  // hwloc's NVLinkBandwidth matrix: every V100 has NVLinks to NVSwitches only (none to a peer).
  ASSERT_FALSE(t.nvlinks.empty());
  for (const PciEndpoint& g : t.gpus) {
    int to_switch = 0;
    for (const TopoLink& l : t.nvlinks) {
      if (l.a != g.bus_id) continue;
      EXPECT_EQ(l.b_kind, "nvswitch") << l.a << " -> " << l.b;
      EXPECT_GT(l.bandwidth, 0u);
      ++to_switch;
    }
    EXPECT_GE(to_switch, 1) << g.bus_id;
  }
}

TEST(TopologyProbe, Power8GpusInNonZeroPciDomains) {
  REQUIRE_HWLOC_FIXTURES();
  const TopologyFacts t = load_ok(hwloc_dir() + "/power8gpudistances.xml");
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(bus_ids(t.gpus),
            (std::vector<std::string>{"0002:01:00.0", "0003:01:00.0", "000a:01:00.0", "000b:01:00.0"}));
  expect_gpu(t, "0002:01:00.0", {0}, "0-1,8-9,16-17,24-25");
  expect_gpu(t, "0003:01:00.0", {0}, "0-1,8-9,16-17,24-25");
  expect_gpu(t, "000a:01:00.0", {1}, "80-81,88-89,96-97,104-105");
  expect_gpu(t, "000b:01:00.0", {1}, "80-81,88-89,96-97,104-105");
  const std::vector<std::string>& osd = gpu(t, "0002:01:00.0").os_devices;
  for (const char* d : {"cuda0", "opencl0d0", "nvml0"}) EXPECT_NE(std::find(osd.begin(), osd.end(), d), osd.end()) << d;
  EXPECT_TRUE(t.nics.empty());

  // NVLinks as recorded: GPU pairs on one socket joined directly, and each GPU to its CPU.
  auto bw = [&](const std::string& a, const std::string& b) {
    for (const TopoLink& l : t.nvlinks)
      if (l.a == a && l.b == b) return l.bandwidth;
    return std::uint64_t{0};
  };
  EXPECT_GT(bw("0002:01:00.0", "0003:01:00.0"), 0u);
  EXPECT_GT(bw("000a:01:00.0", "000b:01:00.0"), 0u);
  EXPECT_EQ(bw("0002:01:00.0", "000a:01:00.0"), 0u);
  const bool to_cpu = std::any_of(t.nvlinks.begin(), t.nvlinks.end(),
                                  [](const TopoLink& l) { return l.a == "0002:01:00.0" && l.b_kind == "cpu"; });
  EXPECT_TRUE(to_cpu);
}

TEST(TopologyProbe, OwnFixtureBalancedSwitches) {
  const TopologyFacts t = load_ok(own_dir() + "/2s-4gpu-2nic-switch.xml");
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(bus_ids(t.gpus),
            (std::vector<std::string>{"0000:03:00.0", "0000:04:00.0", "0000:83:00.0", "0000:84:00.0"}));
  expect_gpu(t, "0000:03:00.0", {0}, "0-3");
  expect_gpu(t, "0000:84:00.0", {1}, "4-7");
  EXPECT_EQ(bus_ids(t.nics), (std::vector<std::string>{"0000:05:00.0", "0000:06:00.0", "0000:85:00.0"}));
  EXPECT_EQ(find_endpoint(t.nics, "0000:06:00.0")->os_devices, std::vector<std::string>{"eno1"});
  const std::vector<PciEndpoint> hcas = rdma_nics(t);
  const std::vector<NearNic> near = nearest_nics(gpu(t, "0000:83:00.0"), hcas);
  ASSERT_EQ(near.size(), 1u);
  EXPECT_EQ(near[0].nic->bus_id, "0000:85:00.0");
  EXPECT_EQ(near[0].path, "PIX");
  EXPECT_EQ(path_class(gpu(t, "0000:03:00.0"), gpu(t, "0000:04:00.0")), "PIX");
  EXPECT_EQ(path_class(gpu(t, "0000:03:00.0"), *find_endpoint(t.nics, "0000:06:00.0")), "PHB");
}

TEST(TopologyProbe, OwnFixtureCpuLessGpuMemoryNodeAndZeroedIds) {
  const TopologyFacts t = load_ok(own_dir() + "/2s-gpu-far-from-nic.xml");
  ASSERT_EQ(t.numa_nodes.size(), 3u);
  EXPECT_EQ(t.numa_nodes[2].os_index, 2);
  EXPECT_EQ(t.numa_nodes[2].subtype, "GPUMemory");
  EXPECT_TRUE(t.numa_nodes[2].cpus.empty());  // hwloc gives it the package's cpuset; it has no CPU of its own
  EXPECT_EQ(t.numa_nodes[2].memory_bytes, 17179869184u);
  ASSERT_EQ(t.gpus.size(), 1u);  // the zeroed-id display device is not taken for a GPU
  expect_gpu(t, "0001:41:00.0", {1}, "2-3");
  EXPECT_EQ(t.gpus[0].name, "NVIDIA Corporation GH100 [H100 PCIe]");
  EXPECT_EQ(t.gpus[0].os_devices, std::vector<std::string>{"nvml0"});
  const std::string notes = join(t.notes, "\n");
  EXPECT_NE(notes.find("NUMA node(s) 2 have no CPUs"), std::string::npos) << notes;
  EXPECT_NE(notes.find("0001:42:00.0 reports vendor:device 0000:0000 (class 0300)"), std::string::npos) << notes;
  EXPECT_EQ(nearest_nics(t.gpus[0], t.nics).at(0).path, "SYS");
}

TEST(TopologyProbe, MissingFileIsNotFoundNamingIt) {
  const Probed<TopologyFacts> t = load("/nonexistent/node17.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error()->code, ProbeErrc::NotFound);
  EXPECT_NE(t.why().find("/nonexistent/node17.xml"), std::string::npos) << t.why();
  EXPECT_NE(t.why().find("No such file"), std::string::npos) << t.why();
}

TEST(TopologyProbe, DirectoryIsNotAFile) {
  const Probed<TopologyFacts> t = load(own_dir());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error()->code, ProbeErrc::NotFound);
}

TEST(TopologyProbe, GarbageAndForeignXmlAreParseErrors) {
  const std::string dir = ::testing::TempDir();
  const std::vector<std::pair<std::string, std::string>> files = {
      {"garbage.xml", "this is not <xml at all\n"},
      {"empty.xml", ""},
      {"v3.xml", "<?xml version=\"1.0\"?>\n<topology version=\"3.0\"><object type=\"Machine\"/></topology>\n"},
      {"other.xml", "<?xml version=\"1.0\"?>\n<html><body/></html>\n"},
  };
  for (const auto& [name, body] : files) {
    const std::string path = dir + "/topology-probe-" + name;
    std::ofstream(path) << body;
    const Probed<TopologyFacts> t = load(path);
    ASSERT_FALSE(t.ok()) << name;
    EXPECT_EQ(t.error()->code, ProbeErrc::ParseError) << name << ": " << t.why();
    EXPECT_NE(t.why().find(path), std::string::npos) << t.why();
    EXPECT_NE(t.why().find("Invalid argument"), std::string::npos) << t.why();  // hwloc's errno
    std::remove(path.c_str());
  }
}

TEST(TopologyProbe, SysrootWithoutXmlIsUnsupported) {
  const Probed<TopologyFacts> t = load("", preflight::test_paths::fixtures_dir() + "/sysroot");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error()->code, ProbeErrc::Unsupported);
  EXPECT_NE(t.why().find("pass --topology-xml FILE"), std::string::npos) << t.why();
}

TEST(TopologyProbe, SysrootWithXmlReadsTheXml) {
  REQUIRE_HWLOC_FIXTURES();
  const Probed<TopologyFacts> t =
      load(hwloc_dir() + "/nvidiaDGX2.xml", preflight::test_paths::fixtures_dir() + "/sysroot");
  ASSERT_TRUE(t.ok()) << t.why();
  EXPECT_EQ(t.value()->gpus.size(), 16u);
}

TEST(TopologyProbe, LiveMachine) {
  const Probed<TopologyFacts> t = load("");
  ASSERT_TRUE(t.ok()) << t.why();
  EXPECT_TRUE(t.source().starts_with("this machine (hwloc ")) << t.source();
  EXPECT_TRUE(t.value()->this_system);
  EXPECT_FALSE(t.value()->cpus.empty());
  EXPECT_GE(t.value()->packages, 1);
  for (const PciEndpoint& e : t.value()->nics) EXPECT_EQ(normalize_bus_id(e.bus_id), e.bus_id);
}

}  // namespace
}  // namespace probes_topology_probe_test
}  // namespace preflight
