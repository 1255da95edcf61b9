// SPDX-License-Identifier: MIT
// core/pci_topology: bus-id spellings, the nvidia-smi path classes from hwloc paths, and the nearest
// NICs of a GPU, on hand-built endpoints.
#include <gtest/gtest.h>

#include "core/pci_topology.hpp"

namespace preflight {
namespace core_pci_topology_test {
namespace {

TopoHop hop(std::string kind, std::string id) {
  TopoHop h;
  h.kind = std::move(kind);
  h.id = std::move(id);
  return h;
}

/// A device on socket `pkg` (NUMA node = pkg), below host bridge `hb` and then the given PCI bridges.
PciEndpoint dev(std::string kind, std::string bus, int pkg, std::string hb, std::vector<std::string> bridges) {
  PciEndpoint e;
  e.kind = std::move(kind);
  e.bus_id = std::move(bus);
  e.numa_nodes = {pkg};
  e.path = {hop("machine", "Machine:L#0"), hop("package", "Package:L#" + std::to_string(pkg))};
  if (!hb.empty()) e.path.push_back(hop("host_bridge", "HostBridge:" + hb));
  for (std::string& b : bridges) e.path.push_back(hop("pci_bridge", std::move(b)));
  return e;
}

TEST(NormalizeBusId, Spellings) {
  EXPECT_EQ(normalize_bus_id("00000000:18:00.0"), "0000:18:00.0");  // NVML busId
  EXPECT_EQ(normalize_bus_id("0000:1B:00.0"), "0000:1b:00.0");      // CUDA
  EXPECT_EQ(normalize_bus_id("18:00.0"), "0000:18:00.0");
  EXPECT_EQ(normalize_bus_id("0000:18:00"), "0000:18:00.0");
  EXPECT_EQ(normalize_bus_id(" 0002:01:00.0\n"), "0002:01:00.0");
  EXPECT_EQ(normalize_bus_id("000A:01:00.0"), "000a:01:00.0");
  EXPECT_EQ(normalize_bus_id("1:2:3.4"), "0001:02:03.4");
  EXPECT_EQ(normalize_bus_id("00000035:04:00.0"), "0035:04:00.0");
}

TEST(NormalizeBusId, RejectsWhatIsNotABusId) {
  for (const char* bad : {"", "GPU-0f2c", "0000:18:00.", "0000:18:000.0", "00010000:18:00.0", "0000:18:00.00",
                          "zz:00.0", "a:b:c:d", "0000::00.0", ":"}) {
    EXPECT_EQ(normalize_bus_id(bad), "") << bad;
  }
}

TEST(PathClass, EveryClass) {
  const PciEndpoint g0 =
      dev("gpu", "0000:03:00.0", 0, "0000:[00-3f]", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"});
  const PciEndpoint g1 =
      dev("gpu", "0000:04:00.0", 0, "0000:[00-3f]", {"0000:00:01.0", "0000:01:00.0", "0000:02:08.0"});
  // Behind a second switch cascaded below the first one's downstream port 02:10.0.
  const PciEndpoint g2 = dev("gpu", "0000:07:00.0", 0, "0000:[00-3f]",
                             {"0000:00:01.0", "0000:01:00.0", "0000:02:10.0", "0000:05:00.0", "0000:06:00.0"});
  const PciEndpoint n_rp = dev("nic", "0000:10:00.0", 0, "0000:[00-3f]", {"0000:00:02.0"});
  const PciEndpoint n_hb = dev("nic", "0000:41:00.0", 0, "0000:[40-7f]", {"0000:40:01.0"});
  const PciEndpoint n_far = dev("nic", "0000:81:00.0", 1, "0000:[80-bf]", {"0000:80:01.0"});
  EXPECT_EQ(path_class(g0, g0), "X");
  EXPECT_EQ(path_class(g0, g1), "PIX");
  EXPECT_EQ(path_class(g1, g0), "PIX");
  EXPECT_EQ(path_class(g0, g2), "PXB");
  EXPECT_EQ(path_class(g0, n_rp), "PHB");
  EXPECT_EQ(path_class(g0, n_hb), "NODE");
  EXPECT_EQ(path_class(g0, n_far), "SYS");
  EXPECT_EQ(path_class(n_far, g0), "SYS");
}

TEST(PathClass, SiblingFunctionsAreOneSwitchAway) {
  const PciEndpoint a = dev("nic", "0000:04:00.0", 0, "0000:[00-0f]", {"0000:00:01.0"});
  const PciEndpoint b = dev("nic", "0000:04:00.1", 0, "0000:[00-0f]", {"0000:00:01.0"});
  EXPECT_EQ(path_class(a, b), "PIX");
}

TEST(PathClass, DevicesOnTheRootComplexItself) {
  // A device directly below the host bridge (no root port object), as on some AMD platforms.
  const PciEndpoint a = dev("gpu", "0000:00:05.0", 0, "0000:[00-0f]", {});
  const PciEndpoint b = dev("nic", "0000:01:00.0", 0, "0000:[00-0f]", {"0000:00:01.0"});
  EXPECT_EQ(path_class(a, b), "PHB");
}

TEST(PathClass, SameBusIdOfAnotherKindIsNotTheSameDevice) {
  PciEndpoint gpu = dev("gpu", "0000:04:00.0", 0, "0000:[00-05]", {"0000:00:11.0"});
  PciEndpoint nic = dev("nic", "0000:04:00.0", 1, "0000:[80-84]", {"0000:80:03.0"});
  EXPECT_EQ(path_class(gpu, nic), "SYS");
}

TEST(PathClass, WithoutNumaNodesTheCpuSideAncestorDecides) {
  PciEndpoint a = dev("gpu", "0000:03:00.0", 0, "0000:[00-3f]", {"0000:00:01.0"});
  PciEndpoint b = dev("nic", "0000:41:00.0", 0, "0000:[40-7f]", {"0000:40:01.0"});
  PciEndpoint c = dev("nic", "0000:81:00.0", 1, "0000:[80-bf]", {"0000:80:01.0"});
  a.numa_nodes.clear();
  b.numa_nodes.clear();
  c.numa_nodes.clear();
  EXPECT_EQ(path_class(a, b), "NODE");  // the same package
  EXPECT_EQ(path_class(a, c), "SYS");
  // Both hanging off the machine root only (no package): nothing says they share a socket.
  PciEndpoint m1, m2;
  m1.bus_id = "0000:01:00.0";
  m2.bus_id = "0000:02:00.0";
  m1.path = {hop("machine", "Machine:L#0"), hop("host_bridge", "HostBridge:0000:[01-01]")};
  m2.path = {hop("machine", "Machine:L#0"), hop("host_bridge", "HostBridge:0000:[02-02]")};
  EXPECT_EQ(path_class(m1, m2), "SYS");
}

TEST(PathClass, DeviceLocalToSeveralNodes) {
  // Cluster-on-Die without groups: the device's nodeset is {0,1}; any shared node is NODE.
  PciEndpoint a = dev("gpu", "0000:03:00.0", 0, "0000:[00-3f]", {"0000:00:01.0"});
  PciEndpoint b = dev("nic", "0000:41:00.0", 0, "0000:[40-7f]", {"0000:40:01.0"});
  a.numa_nodes = {0, 1};
  b.numa_nodes = {1};
  EXPECT_EQ(path_class(a, b), "NODE");
  b.numa_nodes = {2};
  EXPECT_EQ(path_class(a, b), "SYS");
}

TEST(PathRank, Order) {
  EXPECT_LT(path_rank("NV4"), path_rank("X"));
  EXPECT_LT(path_rank("X"), path_rank("PIX"));
  EXPECT_LT(path_rank("PIX"), path_rank("PXB"));
  EXPECT_LT(path_rank("PXB"), path_rank("PHB"));
  EXPECT_LT(path_rank("PHB"), path_rank("NODE"));
  EXPECT_LT(path_rank("NODE"), path_rank("SYS"));
  EXPECT_EQ(path_rank("SYS"), 5);
  EXPECT_EQ(path_rank("bogus"), 99);
}

TEST(FindEndpoint, AnySpelling) {
  const std::vector<PciEndpoint> v = {dev("gpu", "0000:1b:00.0", 0, "h", {}), dev("gpu", "0002:01:00.0", 0, "h", {})};
  EXPECT_EQ(find_endpoint(v, "00000000:1B:00.0"), &v[0]);
  EXPECT_EQ(find_endpoint(v, "0002:01:00.0"), &v[1]);
  EXPECT_EQ(find_endpoint(v, "0000:1c:00.0"), nullptr);
  EXPECT_EQ(find_endpoint(v, "not a bus id"), nullptr);
}

TEST(NearestNics, BestClassWithTies) {
  const PciEndpoint g = dev("gpu", "0000:03:00.0", 0, "0000:[00-3f]", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"});
  const std::vector<PciEndpoint> nics = {
      dev("nic", "0000:81:00.0", 1, "0000:[80-bf]", {"0000:80:01.0"}),
      dev("nic", "0000:10:00.0", 0, "0000:[00-3f]", {"0000:00:02.0"}),
      dev("nic", "0000:11:00.0", 0, "0000:[00-3f]", {"0000:00:03.0"}),
  };
  const std::vector<NearNic> near = nearest_nics(g, nics);
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0].nic, &nics[1]);
  EXPECT_EQ(near[1].nic, &nics[2]);
  EXPECT_EQ(near[0].path, "PHB");
  EXPECT_TRUE(nearest_nics(g, {}).empty());
}

}  // namespace
}  // namespace core_pci_topology_test
}  // namespace preflight
