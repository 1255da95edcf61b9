// SPDX-License-Identifier: MIT
// topo.pcie_acs: every status, on facts the pcie probe gathered from generated sysfs trees.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "checks/specs.hpp"
#include "pcie_sysfs_fixture.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace checks_topo_pcie_acs_test {
namespace {
using namespace pcie_fixture;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

RankFacts probe_tree(const TreeOptions& o) {
  TempTree t;
  build_two_socket(t.path(), o);
  const FileSystem fs(t.path().string());
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  probe_pcie(ProbeContext{fs, env, options}, facts);
  return facts;
}

Verdict judge(const RankFacts& f, Profile p = Profile::Node) {
  return run_check(kTopoPcieAcs, CheckContext{f, Options{}, p});
}

TreeOptions clean() {
  TreeOptions o;
  o.socket1_port_ctrl = 0;
  o.group_type = "identity";
  o.cmdline = "BOOT_IMAGE=/vmlinuz-6.1.0 root=/dev/nvme0n1p2 ro intel_iommu=on iommu=pt";
  return o;
}

TEST(TopoPcieAcs, RedirectOnBareMetalFailsNamingBridgesBitsAndFix) {
  const Verdict v = judge(probe_tree(TreeOptions{}));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  ASSERT_EQ(v.findings.size(), 2u) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/redirect");
  EXPECT_EQ(v.findings[0].code, "topo.pcie_acs/redirect");
  EXPECT_EQ(v.findings[0].params["redirect_count"], 3);
  EXPECT_EQ(v.findings[0].params["bridges_above"], "10 bridges above 4 GPUs and 2 NICs");
  EXPECT_EQ(v.findings[0].params["redirect_bdfs"], "0000:82:00.0;0000:82:01.0;0000:82:02.0");
  EXPECT_EQ(v.findings[0].params["first_redirect"], "0000:82:00.0");
  EXPECT_EQ(v.findings[1].code, "topo.pcie_acs/iommu-translated-with-redirect");
  EXPECT_EQ(v.findings[1].status, Status::Fail);
  EXPECT_EQ(v.findings[1].params["gpu_noun"], "GPUs");
  EXPECT_TRUE(has(v.summary, "PCIe ACS P2P redirect is on for 3 of the 10 bridges above 4 GPUs and 2 NICs"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "0000:82:00.0 (SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+) above GPU 0000:83:00.0"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "0000:82:02.0 (SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+) above NIC 0000:85:00.0"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "redirected to the root complex")) << v.summary;
  EXPECT_FALSE(has(v.summary, "0000:02:00.0 (")) << v.summary;  // the clean switch is not named
  EXPECT_TRUE(has(v.remedy, "setpci -s 0000:82:00.0 ECAP_ACS+0x6.w=0000")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "setpci -s 0000:82:02.0 ECAP_ACS+0x6.w=0000")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "pci=disable_acs_redir=0000:82:00.0;0000:82:01.0;0000:82:02.0")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "BIOS")) << v.remedy;
  // With the IOMMU translating the GPUs' groups too, that is part of the FAIL.
  EXPECT_TRUE(has(v.summary, "the IOMMU translates DMA for GPUs 0000:03:00.0 (group 30, DMA)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "iommu=pt")) << v.remedy;
  // Evidence: per bridge state and decoded control; IOMMU units, flags, group types.
  const auto& bridges = v.evidence["bridges"];
  ASSERT_EQ(bridges.size(), 10u);
  bool seen = false;
  for (const auto& b : bridges) {
    if (b["bus_id"] == "0000:82:01.0") {
      seen = true;
      EXPECT_EQ(b["state"], "read");
      EXPECT_EQ(b["ctrl"], "0x001d");
      EXPECT_EQ(b["acsctl"], "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-");
      EXPECT_EQ(b["above"], "GPU 0000:84:00.0");
    }
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(v.evidence["iommu_units"], nlohmann::json({"dmar0", "dmar1"}));
  EXPECT_EQ(v.evidence["cmdline_flags"], nlohmann::json({"intel_iommu=on"}));
  EXPECT_EQ(v.evidence["iommu_groups"][0]["type"], "DMA");
}

TEST(TopoPcieAcs, CleanTreeWithPassthroughPasses) {
  const Verdict v = judge(probe_tree(clean()));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/clean");
  EXPECT_EQ(v.finding.params["iommu"], "on, GPU groups not translated");
  EXPECT_EQ(v.summary,
            "no ACS P2P redirect on the 10 bridges above 4 GPUs and 2 NICs; IOMMU on, GPU groups not translated");
  EXPECT_TRUE(v.remedy.empty());
}

TEST(TopoPcieAcs, TranslatedIommuAloneWarns) {
  TreeOptions o = clean();
  o.group_type = "DMA-FQ";
  o.cmdline = "root=/dev/sda1 intel_iommu=on";
  const Verdict v = judge(probe_tree(o));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/iommu-translated");
  EXPECT_EQ(v.finding.params["gpu_noun"], "GPUs");
  EXPECT_TRUE(has(v.finding.params["translated_gpus"].get<std::string>(), "0000:03:00.0 (group 30, DMA-FQ)"));
  EXPECT_TRUE(has(v.summary, "the IOMMU translates DMA for GPUs 0000:03:00.0 (group 30, DMA-FQ)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "intel_iommu=on iommu=pt")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "update-grub")) << v.remedy;
}

TEST(TopoPcieAcs, RestrictedConfigIsUnknownWithIommuHintNeverPass) {
  TreeOptions o = clean();
  o.config_bytes = 64;
  const Verdict v = judge(probe_tree(o));
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/config-restricted");
  EXPECT_EQ(v.finding.params["restricted_first"], "0000:00:01.0");
  EXPECT_EQ(v.finding.params["config_bytes"], "64 bytes");
  EXPECT_EQ(v.finding.params["restricted_more"], 9);
  EXPECT_TRUE(has(v.summary,
                  "config space of 0000:00:01.0 is 64 bytes (and of 9 more bridges): reading ACS needs root "
                  "(CAP_SYS_ADMIN)"))
      << v.summary;
  // Two GPUs under switch 01:00.0 in groups 30 and 31: the switch isolates them.
  EXPECT_TRUE(has(v.summary,
                  "GPU 0000:03:00.0 and GPU 0000:04:00.0 sit below the same switch (0000:01:00.0) but in "
                  "different IOMMU groups (30, 31): ACS is likely enabled"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "lspci -vvv -s 0000:00:01.0 | grep ACSCtl")) << v.remedy;

  // Restricted and a translated IOMMU: the WARN does not hide the UNKNOWN (worst wins).
  o.group_type = "DMA";
  const Verdict both = judge(probe_tree(o));
  EXPECT_EQ(both.status, Status::Unknown);
  ASSERT_EQ(both.findings.size(), 2u) << both.summary;
  EXPECT_EQ(both.findings[0].code, "topo.pcie_acs/config-restricted");
  EXPECT_EQ(both.findings[1].code, "topo.pcie_acs/iommu-translated");

  // Without an IOMMU the hint says the kernel did not enable ACS.
  TreeOptions off = o;
  off.iommu_units = false;
  off.group_type = "";
  const Verdict w = judge(probe_tree(off));
  EXPECT_EQ(w.status, Status::Unknown) << w.summary;
  EXPECT_EQ(w.finding.code, "topo.pcie_acs/config-restricted");
  EXPECT_TRUE(has(w.finding.params["hint"].get<std::string>(), "no IOMMU is active")) << w.summary;
  EXPECT_TRUE(has(w.summary, "no IOMMU is active")) << w.summary;
}

TEST(TopoPcieAcs, InAVmRedirectIsOnlyANote) {
  TreeOptions o;
  o.hypervisor = true;
  const Verdict v = judge(probe_tree(o));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/clean");
  EXPECT_EQ(v.finding.params["iommu"], "translating (VM)");
  EXPECT_TRUE(has(v.summary, " (VM)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "in a VM (hypervisor flag) ACS redirect is expected")) << v.summary;
  EXPECT_TRUE(has(v.summary, "0000:82:00.0 (SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+)")) << v.summary;
  EXPECT_EQ(v.evidence["hypervisor"], true);
}

TEST(TopoPcieAcs, UnreadableBridgeIsUnknown) {
  RankFacts f = probe_tree(clean());
  f.pcie.bridges[3].state = "unreadable";
  f.pcie.bridges[3].detail = "/sys/bus/pci/devices/0000:02:01.0/config: Input/output error";
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/bridge-unreadable");
  EXPECT_EQ(v.finding.params["unreadable_count"], 1);
  EXPECT_EQ(v.finding.params["bridge_noun"], "bridge");
  EXPECT_TRUE(has(v.finding.params["unreadable"].get<std::string>(), "Input/output error")) << v.summary;
  EXPECT_EQ(v.summary.rfind("the ACS state of 1 bridge could not be read: ", 0), 0u) << v.summary;
  EXPECT_TRUE(has(v.summary, "Input/output error")) << v.summary;
}

TEST(TopoPcieAcs, NoGpuSkipsUnlistableIsUnknownImageSkips) {
  RankFacts f;
  PciFunction nic;
  nic.bus_id = "0000:00:03.0";
  nic.kind = "nic";
  f.pcie.functions = Probed<std::vector<PciFunction>>::ok({nic}, "/sys/bus/pci/devices");
  const Verdict skip = judge(f);
  EXPECT_EQ(skip.status, Status::Skip);
  EXPECT_EQ(skip.finding.code, "topo.pcie_acs/no-gpu");
  EXPECT_EQ(skip.finding.params["nics"], 1);
  EXPECT_EQ(skip.finding.params["nic_noun"], "NIC");
  EXPECT_EQ(skip.evidence["nics"], 1);
  EXPECT_EQ(skip.summary, "no NVIDIA GPU on the PCI bus (1 NIC): there is no GPU P2P or GPUDirect path to judge");

  RankFacts none;  // not probed
  EXPECT_EQ(judge(none).status, Status::Unknown);
  none.pcie.functions =
      Probed<std::vector<PciFunction>>::error(ProbeErrc::PermissionDenied, "permission denied", "/sys/bus/pci/devices");
  const Verdict u = judge(none);
  EXPECT_EQ(u.status, Status::Unknown);
  EXPECT_TRUE(has(u.summary, "permission denied")) << u.summary;

  EXPECT_EQ(judge(probe_tree(TreeOptions{}), Profile::Image).status, Status::Skip);
}

TEST(TopoPcieAcs, SourceWithoutThePciBusSkips) {
  // --topology-xml: an hwloc export holds no ACS register.
  RankFacts f;
  f.pcie.functions = Probed<std::vector<PciFunction>>::error(
      ProbeErrc::Unsupported, "an hwloc export holds no ACS register", "--topology-xml node17.xml");
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/pci-not-in-source");
  EXPECT_EQ(v.finding.params["why"], "--topology-xml node17.xml: an hwloc export holds no ACS register");
  EXPECT_EQ(v.summary, "--topology-xml node17.xml: an hwloc export holds no ACS register");
  EXPECT_TRUE(v.remedy.empty());
}

}  // namespace
}  // namespace checks_topo_pcie_acs_test
}  // namespace preflight
