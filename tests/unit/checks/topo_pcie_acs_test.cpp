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

// NVIDIA platforms, on facts built here (rdma-core kernel-boot/rdma_topo, commit
// 691953d8d502f54088f776c5ba2aeed0a5ac945d).

PciFunction function(const std::string& bdf, const std::string& kind, const std::string& vendor_device,
                     std::vector<std::string> chain, std::optional<int> group) {
  PciFunction f;
  f.bus_id = bdf;
  f.kind = kind;
  f.vendor_device = vendor_device;
  f.chain = std::move(chain);
  f.chain.push_back(bdf);
  f.iommu_group = group;
  return f;
}

AcsState acs(const std::string& bdf, const std::string& vendor_device, std::uint16_t ctrl) {
  AcsState s;
  s.bus_id = bdf;
  s.vendor_device = vendor_device;
  s.state = "read";
  s.cap = 0x005f;
  s.ctrl = ctrl;
  s.config_bytes = 4096;
  return s;
}

AcsState no_acs(const std::string& bdf, const std::string& vendor_device) {
  AcsState s = acs(bdf, vendor_device, 0);
  s.state = "no_acs";
  s.cap = 0;
  return s;
}

AcsState& bridge_of(RankFacts& f, const std::string& bdf) {
  for (AcsState& s : f.pcie.bridges) {
    if (s.bus_id == bdf) return s;
  }
  throw std::runtime_error("no bridge " + bdf);
}

PciFunction& function_of(RankFacts& f, const std::string& bdf) {
  for (PciFunction& fn : *f.pcie.functions.value()) {
    if (fn.bus_id == bdf) return fn;
  }
  throw std::runtime_error("no function " + bdf);
}

void set_functions(RankFacts& f, std::vector<PciFunction> fns) {
  f.pcie.functions = Probed<std::vector<PciFunction>>::ok(std::move(fns), "/sys/bus/pci/devices");
  f.pcie.iommu.units = Probed<std::vector<std::string>>::ok({"smmu3.0x0000000016000000"}, "/sys/class/iommu");
  f.pcie.iommu.cmdline = Probed<std::string>::ok("ro iommu.passthrough=1", "/proc/cmdline");
}

const std::string kGrace = "10de:22b1", kCxSwitch = "15b3:197c";

/// Grace + ConnectX-8 DMA-direct, as rdma_topo's __get_nvcx_complex describes it, each port as it
/// sets it: Grace RP 0008:00:00.0 - USP 01:00.0 - DSP 02:00.0 - DMA 03:00.0, and DSP1 02:01.0 - USP2
/// 04:00.0 - DSP2 05:00.0 - GPU 06:00.0; the NIC PFs below Grace RP 0009:00:00.0 - USP - DSP.
RankFacts dma_direct() {
  RankFacts f;
  const std::vector<std::string> up = {"0008:00:00.0", "0008:01:00.0"};
  set_functions(
      f,
      {function("0008:03:00.0", "dma", "15b3:2100", {up[0], up[1], "0008:02:00.0"}, 8),
       function("0008:06:00.0", "gpu", "10de:2941", {up[0], up[1], "0008:02:01.0", "0008:04:00.0", "0008:05:00.0"}, 8),
       function("0009:03:00.0", "nic", "15b3:1023", {"0009:00:00.0", "0009:01:00.0", "0009:02:00.0"}, 9),
       function("0009:03:00.1", "nic", "15b3:1023", {"0009:00:00.0", "0009:01:00.0", "0009:02:00.0"}, 10)});
  f.pcie.bridges = {acs("0008:00:00.0", kGrace, 0x001c),    no_acs("0008:01:00.0", kCxSwitch),
                    acs("0008:02:00.0", kCxSwitch, 0x0019), acs("0008:02:01.0", kCxSwitch, 0x0015),
                    no_acs("0008:04:00.0", kCxSwitch),      acs("0008:05:00.0", kCxSwitch, 0x001d),
                    acs("0009:00:00.0", kGrace, 0x001d),    no_acs("0009:01:00.0", kCxSwitch),
                    acs("0009:02:00.0", kCxSwitch, 0x001d)};
  f.pcie.iommu.groups = {{8, "identity", {"0008:03:00.0", "0008:06:00.0"}}, {9, "identity", {"0009:03:00.0"}}};
  return f;
}

TEST(TopoPcieAcs, DmaDirectAsRdmaTopoExpectsPassesWithRedirectOn) {
  const RankFacts f = dma_direct();
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/platform-clean");
  EXPECT_EQ(v.summary,
            "on this ConnectX DMA-direct platform 6 of the 9 bridges above 1 GPU, 2 NICs and 1 ConnectX DMA function "
            "have the ACS Control that NVIDIA's rdma_topo (rdma-core kernel-boot/rdma_topo) expects and no ACS P2P "
            "redirect on the other 3; IOMMU on, GPU groups not translated");
  EXPECT_EQ(v.evidence["platform"]["kind"], "ConnectX DMA-direct");
  const auto& c = v.evidence["platform"]["dma_complexes"][0];
  EXPECT_EQ(c["dma"], "0008:03:00.0");
  EXPECT_EQ(c["gpu"], "0008:06:00.0");
  EXPECT_EQ(c["root_port"], "0008:00:00.0");
  EXPECT_EQ(c["shared_usp"], "0008:01:00.0");
  EXPECT_EQ(c["dma_dsp"], "0008:02:00.0");
  EXPECT_EQ(c["gpu_dsp"], "0008:02:01.0");
  std::map<std::string, std::string> expects;
  for (const auto& b : v.evidence["bridges"]) {
    if (b.contains("rdma_topo_expects")) expects[b["bus_id"]] = b["rdma_topo_expects"];
  }
  EXPECT_EQ(expects, (std::map<std::string, std::string>{{"0008:00:00.0", "xx111x0"},
                                                         {"0008:02:00.0", "xx110x1"},
                                                         {"0008:02:01.0", "xx101x1"},
                                                         {"0008:05:00.0", "xx111x1"},
                                                         {"0009:00:00.0", "xx111x1"},
                                                         {"0009:02:00.0", "xx111x1"}}));
}

TEST(TopoPcieAcs, DmaDirectPortOffRdmaTopoMaskFails) {
  // ReqRedir cleared on the port toward the GPU: what the ordinary rule would want, not rdma_topo.
  RankFacts f = dma_direct();
  bridge_of(f, "0008:02:01.0").ctrl = 0x0011;
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  ASSERT_EQ(v.findings.size(), 1u) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/platform-mismatch");
  EXPECT_EQ(v.finding.params["mismatch_count"], 1);
  EXPECT_EQ(v.finding.params["first_mismatch"], "0008:02:01.0");
  EXPECT_TRUE(has(v.summary,
                  "on this ConnectX DMA-direct platform the ACS Control of 1 of the 9 bridges above 1 GPU, 2 NICs "
                  "and 1 ConnectX DMA function is not what NVIDIA's rdma_topo (rdma-core kernel-boot/rdma_topo) "
                  "expects: 0008:02:01.0 (the ConnectX switch port toward GPU 0008:06:00.0) has SrcValid+ "
                  "ReqRedir- CmpltRedir- UpstreamFwd+, rdma_topo expects SrcValid+ ReqRedir+ CmpltRedir- "
                  "UpstreamFwd+ (xx101x1)"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "`setpci -s 0008:02:01.0 ECAP_ACS+0x6.w=0015`")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "`rdma_topo check`")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "`rdma_topo setpci-acs`")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "NVreg_GrdmaPciTopoCheckOverride=1")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "`rdma_topo write-grub-acs`")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "`pci=config_acs=\"xx111x0@0008:00:00.0;xx110x1@0008:02:00.0;xx101x1@0008:02:01.0\"`"))
      << v.remedy;
  EXPECT_TRUE(has(v.remedy, "lspci -vvv -s 0008:02:01.0 | grep ACSCtl")) << v.remedy;

  // SrcValid set on the Grace root port (the kernel's default there): it must be off.
  RankFacts sv = dma_direct();
  bridge_of(sv, "0008:00:00.0").ctrl = 0x001d;
  const Verdict w = judge(sv);
  EXPECT_EQ(w.status, Status::Fail) << w.summary;
  EXPECT_EQ(w.finding.code, "topo.pcie_acs/platform-mismatch");
  EXPECT_TRUE(has(w.summary,
                  "0008:00:00.0 (the Grace root port above DMA function 0008:03:00.0) has SrcValid+ ReqRedir+ "
                  "CmpltRedir+ UpstreamFwd+, rdma_topo expects SrcValid- ReqRedir+ CmpltRedir+ UpstreamFwd+ "
                  "(xx111x0)"))
      << w.summary;
  EXPECT_TRUE(has(w.remedy, "`setpci -s 0008:00:00.0 ECAP_ACS+0x6.w=001c`")) << w.remedy;

  // Redirect cleared on another ConnectX port (the kernel's default expected): named by its type;
  // a port toward the GPU without ACS cannot be set by setpci.
  RankFacts other = dma_direct();
  bridge_of(other, "0009:02:00.0").ctrl = 0x0000;
  bridge_of(other, "0008:02:01.0") = no_acs("0008:02:01.0", kCxSwitch);
  const Verdict x = judge(other);
  EXPECT_EQ(x.status, Status::Fail) << x.summary;
  EXPECT_EQ(x.finding.params["mismatch_count"], 2);
  EXPECT_TRUE(has(x.summary, "0008:02:01.0 (the ConnectX switch port toward GPU 0008:06:00.0) has no ACS capability"))
      << x.summary;
  EXPECT_TRUE(has(x.summary,
                  "0009:02:00.0 (cx_switch) has SrcValid- ReqRedir- CmpltRedir- UpstreamFwd-, rdma_topo expects "
                  "SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+ (xx111x1)"))
      << x.summary;
  EXPECT_TRUE(has(x.remedy, "`setpci -s 0009:02:00.0 ECAP_ACS+0x6.w=001d`")) << x.remedy;
  EXPECT_FALSE(has(x.remedy, "setpci -s 0008:02:01.0")) << x.remedy;
  EXPECT_TRUE(has(x.remedy, "lspci -vvv -s 0008:02:01.0")) << x.remedy;

  RankFacts none = dma_direct();
  bridge_of(none, "0008:02:01.0") = no_acs("0008:02:01.0", kCxSwitch);
  const Verdict y = judge(none);
  EXPECT_EQ(y.finding.code, "topo.pcie_acs/platform-mismatch");
  EXPECT_FALSE(has(y.remedy, "Set them as root")) << y.remedy;
}

TEST(TopoPcieAcs, DmaFunctionAndGpuInDifferentIommuGroupsFail) {
  RankFacts f = dma_direct();
  function_of(f, "0008:06:00.0").iommu_group = 12;
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/dma-group-split");
  EXPECT_EQ(v.finding.params["split_pairs"],
            "DMA function 0008:03:00.0 is in IOMMU group 8, GPU 0008:06:00.0 in IOMMU group 12");
  EXPECT_TRUE(has(v.summary,
                  "rdma_topo (rdma-core kernel-boot/rdma_topo) requires each DMA function in its GPU's "
                  "IOMMU group"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "`rdma_topo write-grub-acs` (rdma-core) and reboot")) << v.remedy;

  // No group at all (no IOMMU): rdma_topo's check fails it too.
  RankFacts none = dma_direct();
  function_of(none, "0008:03:00.0").iommu_group.reset();
  function_of(none, "0008:06:00.0").iommu_group.reset();
  const Verdict w = judge(none);
  EXPECT_EQ(w.finding.code, "topo.pcie_acs/dma-group-split");
  EXPECT_TRUE(has(w.summary, "DMA function 0008:03:00.0 is in no IOMMU group, GPU 0008:06:00.0 in no IOMMU group"))
      << w.summary;
}

TEST(TopoPcieAcs, DmaFunctionInAShapeRdmaTopoDoesNotKnowIsUnknown) {
  // A second GPU below the same Grace root port: rdma_topo refuses the node ("does not have a nearby
  // GPU"), so its ports are not judged, redirect or not.
  RankFacts f = dma_direct();
  auto fns = *f.pcie.functions.value();
  fns.push_back(function("0008:07:00.0", "gpu", "10de:2941",
                         {"0008:00:00.0", "0008:01:00.0", "0008:02:01.0", "0008:04:00.0", "0008:05:01.0"}, 13));
  set_functions(f, fns);
  f.pcie.bridges.push_back(acs("0008:05:01.0", kCxSwitch, 0x001d));
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  ASSERT_EQ(v.findings.size(), 1u) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/platform-unrecognized");
  EXPECT_EQ(v.finding.params["unmatched"], "0008:03:00.0");
  EXPECT_EQ(v.finding.params["unjudged_count"], 7);
  EXPECT_TRUE(has(v.summary,
                  "this node has 1 ConnectX DMA function (0008:03:00.0), so it is a ConnectX DMA-direct "
                  "platform, but its bridges are not in the shape"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "`rdma_topo check`")) << v.remedy;
  EXPECT_EQ(v.evidence["platform"]["unmatched"][0]["reason"], "gpu-count");

  // The DMA function straight below the root port: its upstream path is not rdma_topo's.
  RankFacts g = dma_direct();
  function_of(g, "0008:03:00.0").chain = {"0008:00:00.0", "0008:03:00.0"};
  const Verdict w = judge(g);
  EXPECT_EQ(w.finding.code, "topo.pcie_acs/platform-unrecognized");
  EXPECT_EQ(w.evidence["platform"]["unmatched"][0]["reason"], "upstream-path");
}

TEST(TopoPcieAcs, OrdinaryX86RedirectStillFails) {
  // GPUs behind a Broadcom switch below an Intel root port, and one directly below a root port
  // (rdma_topo's NUMA-based shape, but no port it sets): the ordinary rule.
  RankFacts f;
  set_functions(f,
                {function("0000:03:00.0", "gpu", "10de:2330", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}, 30),
                 function("0000:41:00.0", "gpu", "10de:2330", {"0000:40:01.0"}, 31),
                 function("0000:05:00.0", "nic", "15b3:1021", {"0000:00:01.0", "0000:01:00.0", "0000:02:02.0"}, 32)});
  f.pcie.bridges = {acs("0000:00:01.0", "8086:347a", 0), no_acs("0000:01:00.0", "1000:c030"),
                    acs("0000:02:00.0", "1000:c030", 0x001d), acs("0000:02:02.0", "1000:c030", 0),
                    acs("0000:40:01.0", "8086:347a", 0x001d)};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/redirect");
  EXPECT_EQ(v.finding.params["redirect_bdfs"], "0000:02:00.0;0000:40:01.0");
  EXPECT_FALSE(v.evidence.contains("platform"));
}

TEST(TopoPcieAcs, NumaBasedGraceRootPortsIsolatedPass) {
  // A GPU and a ConnectX-7 each directly below a Grace root port, the kernel's default ACS.
  RankFacts f;
  set_functions(f, {function("0008:01:00.0", "gpu", "10de:2941", {"0008:00:00.0"}, 1),
                    function("0009:01:00.0", "nic", "15b3:1021", {"0009:00:00.0"}, 2)});
  f.pcie.bridges = {acs("0008:00:00.0", kGrace, 0x001d), acs("0009:00:00.0", kGrace, 0x001d)};
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/platform-clean");
  EXPECT_TRUE(has(v.summary, "on this NUMA-based GPU/ConnectX platform 2 of the 2 bridges")) << v.summary;

  bridge_of(f, "0008:00:00.0").ctrl = 0;
  const Verdict w = judge(f);
  EXPECT_EQ(w.finding.code, "topo.pcie_acs/platform-mismatch");
  EXPECT_TRUE(has(w.summary, "0008:00:00.0 (grace_rp) has SrcValid- ReqRedir- CmpltRedir- UpstreamFwd-")) << w.summary;
}

/// ConnectX inline: GPU - DSP2 - USP2 - DSP1 - shared USP1 (ConnectX switch ports) below an x86 root
/// port, the ConnectX NIC below USP1 through its own port.
RankFacts inline_complex(std::uint16_t ctrl, std::optional<bool> ats) {
  RankFacts f;
  const std::vector<std::string> up = {"0000:00:01.0", "0000:01:00.0"};
  set_functions(f, {function("0000:05:00.0", "gpu", "10de:2941",
                             {up[0], up[1], "0000:02:01.0", "0000:03:00.0", "0000:04:00.0"}, 30),
                    function("0000:06:00.0", "nic", "15b3:1023", {up[0], up[1], "0000:02:00.0"}, 31)});
  function_of(f, "0000:06:00.0").ats = ats;
  f.pcie.bridges = {acs(up[0], "8086:347a", ctrl),        no_acs(up[1], kCxSwitch),
                    acs("0000:02:01.0", kCxSwitch, ctrl), no_acs("0000:03:00.0", kCxSwitch),
                    acs("0000:04:00.0", kCxSwitch, ctrl), acs("0000:02:00.0", kCxSwitch, ctrl)};
  return f;
}

TEST(TopoPcieAcs, InlineComplexFollowsTheNicsAts) {
  // Without ATS: redirect (and SrcValid, UpstreamFwd) off everywhere rdma_topo sets.
  const Verdict off = judge(inline_complex(0, false));
  EXPECT_EQ(off.status, Status::Pass) << off.summary;
  EXPECT_TRUE(has(off.summary, "on this ConnectX inline platform 4 of the 6 bridges")) << off.summary;
  const Verdict on = judge(inline_complex(0x001d, false));
  EXPECT_EQ(on.status, Status::Fail) << on.summary;
  EXPECT_EQ(on.finding.code, "topo.pcie_acs/platform-mismatch");
  EXPECT_EQ(on.finding.params["mismatch_count"], 4);
  EXPECT_TRUE(has(on.summary,
                  "0000:02:00.0 (the ConnectX switch port toward NIC 0000:06:00.0) has SrcValid+ "
                  "ReqRedir+ CmpltRedir+ UpstreamFwd+, rdma_topo expects SrcValid- ReqRedir- "
                  "CmpltRedir- UpstreamFwd- (xx000x0)"))
      << on.summary;
  EXPECT_TRUE(has(on.summary, "0000:00:01.0 (the root port above GPU 0000:05:00.0)")) << on.summary;

  // With ATS (virtualised): the kernel's default, and DirectTrans on the NIC's port.
  RankFacts virt = inline_complex(0x001d, true);
  bridge_of(virt, "0000:02:00.0").ctrl = 0x005d;
  const Verdict v = judge(virt);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "ConnectX inline (virtualised: its NICs have ATS) platform")) << v.summary;
  bridge_of(virt, "0000:02:00.0").ctrl = 0x001d;
  const Verdict w = judge(virt);
  EXPECT_EQ(w.finding.code, "topo.pcie_acs/platform-mismatch");
  EXPECT_TRUE(has(w.summary, "rdma_topo expects SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+ DirectTrans+ (1x111x1)"))
      << w.summary;
}

TEST(TopoPcieAcs, NvidiaPlatformRulesAreNotAppliedInAVm) {
  RankFacts f = dma_direct();
  f.pcie.iommu.hypervisor = true;
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/clean");
  EXPECT_TRUE(has(v.summary, "in a VM (hypervisor flag) ACS redirect is expected")) << v.summary;
  EXPECT_FALSE(v.evidence.contains("platform"));
}

TEST(TopoPcieAcs, DmaDirectWithoutPrivilegeIsStillUnknown) {
  RankFacts f = dma_direct();
  for (AcsState& s : f.pcie.bridges) {
    s.state = "restricted";
    s.cap = 0;
    s.ctrl = 0;
    s.config_bytes = 64;
  }
  const Verdict v = judge(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.pcie_acs/config-restricted");
}

}  // namespace
}  // namespace checks_topo_pcie_acs_test
}  // namespace preflight
