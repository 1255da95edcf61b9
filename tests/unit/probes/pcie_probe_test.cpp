// SPDX-License-Identifier: MIT
// The pcie probe on a generated two-socket sysfs tree (tests/unit/pcie_sysfs_fixture.hpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "pcie_sysfs_fixture.hpp"
#include "probes/probe.hpp"
#include "sys/sysfs_pci.hpp"

namespace preflight {
namespace probes_pcie_probe_test {
namespace {
using namespace pcie_fixture;

PcieFacts probe_tree(const std::filesystem::path& root) {
  const FileSystem fs(root.string());
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  probe_pcie(ProbeContext{fs, env, options}, facts);
  return facts.pcie;
}

const PciFunction& function(const PcieFacts& p, const std::string& bdf) {
  const auto& fns = *p.functions.value();
  const auto it = std::find_if(fns.begin(), fns.end(), [&](const PciFunction& f) { return f.bus_id == bdf; });
  if (it == fns.end()) throw std::runtime_error("no function " + bdf);
  return *it;
}

const AcsState& bridge(const PcieFacts& p, const std::string& bdf) {
  const auto it = std::find_if(p.bridges.begin(), p.bridges.end(), [&](const AcsState& s) { return s.bus_id == bdf; });
  if (it == p.bridges.end()) throw std::runtime_error("no bridge " + bdf);
  return *it;
}

TEST(PcieProbe, TwoSocketTreeFunctionsAndChains) {
  TempTree t;
  build_two_socket(t.path());
  const PcieFacts p = probe_tree(t.path());
  ASSERT_TRUE(p.functions.ok()) << p.functions.why();
  ASSERT_EQ(p.functions.value()->size(), 6u);  // 4 GPUs, 2 NICs; bridges and the SATA controller are not kept

  const PciFunction& gpu = function(p, "0000:03:00.0");
  EXPECT_EQ(gpu.kind, "gpu");
  EXPECT_EQ(gpu.vendor_device, "10de:2330");
  EXPECT_EQ(gpu.class_code, "0x030200");
  EXPECT_EQ(gpu.root, "pci0000:00");
  EXPECT_EQ(gpu.chain, (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"}));
  EXPECT_EQ(gpu.numa_node, 0);
  ASSERT_EQ(gpu.local_cpus.size(), 16u);
  EXPECT_EQ(gpu.local_cpus.back(), 15);
  EXPECT_EQ(gpu.iommu_group, 30);
  EXPECT_EQ(gpu.driver, "nvidia");

  const PciFunction& nic = function(p, "0000:85:00.0");
  EXPECT_EQ(nic.kind, "nic");
  EXPECT_EQ(nic.class_code, "0x020700");
  EXPECT_EQ(nic.root, "pci0000:80");
  EXPECT_EQ(nic.driver, "mlx5_core");
  EXPECT_EQ(nic.numa_node, 1);

  const PciFunction& no_node = function(p, "0000:84:00.0");
  EXPECT_FALSE(no_node.numa_node.has_value());  // numa_node -1
  EXPECT_EQ(no_node.local_cpus.front(), 16);
}

TEST(PcieProbe, BridgesOnceInChainOrderWithAcs) {
  TempTree t;
  build_two_socket(t.path());
  const PcieFacts p = probe_tree(t.path());
  ASSERT_EQ(p.bridges.size(), 10u);  // 2 root ports, 2 upstream ports, 6 downstream ports
  EXPECT_EQ(p.bridges.front().bus_id, "0000:00:01.0");
  EXPECT_EQ(bridge(p, "0000:00:01.0").state, "read");
  EXPECT_EQ(bridge(p, "0000:00:01.0").ctrl, 0);
  EXPECT_EQ(bridge(p, "0000:01:00.0").state, "no_acs");
  const AcsState& redirect = bridge(p, "0000:82:01.0");
  EXPECT_EQ(redirect.state, "read");
  EXPECT_EQ(redirect.ctrl, 0x001d);
  EXPECT_EQ(redirect.config_bytes, 4096);
  for (const AcsState& s : p.bridges) EXPECT_NE(s.bus_id, "0000:03:00.0");  // endpoints are not bridges
}

TEST(PcieProbe, GraceDmaDirectTreeKeepsTheDmaFunctionBridgeIdsAndAts) {
  TempTree t;
  GraceOptions g;
  g.nic_ats = true;
  build_grace_cx8(t.path(), g);
  const PcieFacts p = probe_tree(t.path());
  ASSERT_TRUE(p.functions.ok()) << p.functions.why();
  ASSERT_EQ(p.functions.value()->size(), 4u);  // the GPU, the DMA function, two NIC PFs

  // The ConnectX-8 DMA Controller (class 0x0801: neither GPU nor NIC) is kept as kind "dma".
  const PciFunction& dma = function(p, "0008:03:00.0");
  EXPECT_EQ(dma.kind, "dma");
  EXPECT_EQ(dma.vendor_device, "15b3:2100");
  EXPECT_EQ(dma.class_code, "0x080100");
  EXPECT_EQ(dma.chain, (std::vector<std::string>{"0008:00:00.0", "0008:01:00.0", "0008:02:00.0", "0008:03:00.0"}));
  EXPECT_EQ(dma.iommu_group, 8);
  EXPECT_FALSE(dma.ats.has_value());  // only NICs
  EXPECT_EQ(function(p, "0008:06:00.0").iommu_group, 8);
  EXPECT_EQ(function(p, "0008:06:00.0").chain.size(), 6u);

  const PciFunction& nic = function(p, "0009:03:00.1");
  EXPECT_EQ(nic.kind, "nic");
  EXPECT_EQ(nic.ats, true);

  // Every bridge with its vendor:device, the DMA function's too.
  ASSERT_EQ(p.bridges.size(), 9u);
  EXPECT_EQ(bridge(p, "0008:00:00.0").vendor_device, "10de:22b1");
  EXPECT_EQ(bridge(p, "0008:00:00.0").ctrl, 0x001c);
  EXPECT_EQ(bridge(p, "0008:02:00.0").vendor_device, "15b3:197c");
  EXPECT_EQ(bridge(p, "0008:02:00.0").ctrl, 0x0019);
  EXPECT_EQ(bridge(p, "0008:02:01.0").ctrl, 0x0015);
  EXPECT_EQ(bridge(p, "0008:01:00.0").state, "no_acs");

  // Without ATS; and without privilege (64 bytes) ATS is not known.
  TempTree plain;
  build_grace_cx8(plain.path());
  EXPECT_EQ(function(probe_tree(plain.path()), "0009:03:00.0").ats, false);
  TempTree restricted;
  GraceOptions r;
  r.config_bytes = 64;
  build_grace_cx8(restricted.path(), r);
  const PcieFacts q = probe_tree(restricted.path());
  EXPECT_FALSE(function(q, "0009:03:00.0").ats.has_value());
  EXPECT_EQ(bridge(q, "0008:02:01.0").state, "restricted");
  EXPECT_EQ(bridge(q, "0008:02:01.0").vendor_device, "15b3:197c");  // from sysfs, no privilege needed
}

TEST(PcieProbe, OldFactsWithoutTheNewFieldsStillLoad) {
  const nlohmann::json old = {{"bus_id", "0000:82:00.0"}, {"state", "read"}, {"cap", 95}, {"ctrl", 29},
                              {"config_bytes", 4096},     {"detail", ""}};
  const AcsState s = old.get<AcsState>();
  EXPECT_EQ(s.ctrl, 29);
  EXPECT_EQ(s.vendor_device, "");
  const nlohmann::json old_fn = {{"bus_id", "0000:05:00.0"}, {"kind", "nic"}, {"chain", {"0000:05:00.0"}}};
  EXPECT_FALSE(old_fn.get<PciFunction>().ats.has_value());
  AcsState now;
  now.vendor_device = "15b3:197c";
  EXPECT_EQ(nlohmann::json(now).get<AcsState>().vendor_device, "15b3:197c");
}

TEST(PcieProbe, SixtyFourByteConfigIsRestricted) {
  TempTree t;
  TreeOptions o;
  o.config_bytes = 64;
  build_two_socket(t.path(), o);
  const PcieFacts p = probe_tree(t.path());
  for (const AcsState& s : p.bridges) {
    EXPECT_EQ(s.state, "restricted") << s.bus_id;
    EXPECT_EQ(s.config_bytes, 64);
  }
}

TEST(PcieProbe, Iommu) {
  TempTree t;
  build_two_socket(t.path());
  const PcieFacts p = probe_tree(t.path());
  ASSERT_TRUE(p.iommu.units.ok());
  EXPECT_EQ(*p.iommu.units.value(), (std::vector<std::string>{"dmar0", "dmar1"}));
  EXPECT_NE(p.iommu.cmdline.value()->find("intel_iommu=on"), std::string::npos);
  ASSERT_EQ(p.iommu.groups.size(), 6u);
  EXPECT_EQ(p.iommu.groups.front().group, 30);
  EXPECT_EQ(p.iommu.groups.front().type, "DMA");
  EXPECT_EQ(p.iommu.groups.front().devices, (std::vector<std::string>{"0000:03:00.0"}));
  EXPECT_EQ(p.iommu.hypervisor, false);

  TempTree vm;
  TreeOptions o;
  o.hypervisor = true;
  o.iommu_units = false;
  build_two_socket(vm.path(), o);
  const PcieFacts q = probe_tree(vm.path());
  EXPECT_EQ(q.iommu.hypervisor, true);
  EXPECT_TRUE(q.iommu.units.value()->empty());
}

TEST(PcieProbe, MissingTreeIsAnErrorNotEmpty) {
  TempTree t;
  const PcieFacts p = probe_tree(t.path());
  ASSERT_FALSE(p.functions.ok());
  EXPECT_EQ(p.functions.error()->code, ProbeErrc::NotFound);
  EXPECT_TRUE(p.iommu.units.ok());  // no /sys/class/iommu: no IOMMU driver
  EXPECT_FALSE(p.iommu.hypervisor.has_value());
}

TEST(PcieProbe, BrokenLinkAndUnreadableConfigAreRecorded) {
  TempTree t;
  build_two_socket(t.path());
  // A GPU whose sysfs entry is a plain directory (no device path): its bridges are unknown.
  const auto dir = t.path() / "sys/bus/pci/devices/0000:a1:00.0";
  std::filesystem::create_directories(dir);
  write_file(dir / "class", "0x030200\n");
  write_file(dir / "vendor", "0x10de\n");
  // A bridge whose config file is gone.
  std::filesystem::remove(t.path() / "sys/devices/pci0000:80/0000:80:01.0/config");
  const PcieFacts p = probe_tree(t.path());
  const AcsState& unknown_chain = bridge(p, "0000:a1:00.0");
  EXPECT_EQ(unknown_chain.state, "unreadable");
  EXPECT_NE(unknown_chain.detail.find("bridges above 0000:a1:00.0 are unknown"), std::string::npos)
      << unknown_chain.detail;
  const AcsState& gone = bridge(p, "0000:80:01.0");
  EXPECT_EQ(gone.state, "unreadable");
  EXPECT_NE(gone.detail.find("does not exist"), std::string::npos) << gone.detail;
}

TEST(PcieProbe, UnreadableClassFileIsAnErrorNotNoGpu) {
  TempTree t;
  build_two_socket(t.path());
  // GPU 0000:83:00.0's class cannot be read (a directory in its place: a read fails as EISDIR, even
  // for root; mode 000 does the same for an unprivileged user): it may be a GPU, so the device list
  // is not known to be complete — an error, not "no GPU" or a list without it.
  const auto cls = t.path() / "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0/class";
  std::filesystem::remove(cls);
  std::filesystem::create_directory(cls);
  const PcieFacts p = probe_tree(t.path());
  ASSERT_FALSE(p.functions.ok());
  EXPECT_NE(p.functions.error()->code, ProbeErrc::NotFound);
  EXPECT_NE(p.functions.why().find("cannot tell which PCI devices are GPUs or NICs"), std::string::npos)
      << p.functions.why();
  EXPECT_NE(p.functions.source().find("0000:83:00.0"), std::string::npos) << p.functions.source();
}

TEST(PcieProbe, DeviceWithoutClassFileIsSkipped) {
  TempTree t;
  build_two_socket(t.path());
  // A listed device whose class file does not exist (removed since the listing): skipped as before.
  std::filesystem::remove(t.path() / "sys/devices/pci0000:00/0000:00:17.0/class");
  const PcieFacts p = probe_tree(t.path());
  ASSERT_TRUE(p.functions.ok()) << p.functions.why();
  EXPECT_EQ(p.functions.value()->size(), 6u);
}

TEST(PcieProbe, ResolvesLinksInsideTheRootOnly) {
  TempTree t;
  build_two_socket(t.path());
  const FileSystem fs(t.path().string());
  const auto c = resolve_pci_chain(fs, "0000:83:00.0");
  ASSERT_TRUE(c.ok()) << c.why();
  EXPECT_EQ(c.value()->root, "pci0000:80");
  EXPECT_EQ(c.value()->chain.size(), 4u);
  // An absolute link is read as a path inside the root, never the live /sys.
  std::filesystem::remove(t.path() / "sys/bus/pci/devices/0000:83:00.0");
  std::filesystem::create_directory_symlink(
      "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0",
      t.path() / "sys/bus/pci/devices/0000:83:00.0");
  const auto abs = resolve_pci_chain(fs, "0000:83:00.0");
  ASSERT_TRUE(abs.ok()) << abs.why();
  EXPECT_EQ(abs.value()->chain.front(), "0000:80:01.0");
}

}  // namespace
}  // namespace probes_pcie_probe_test
}  // namespace preflight
