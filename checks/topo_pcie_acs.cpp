// SPDX-License-Identifier: MIT
// topo.pcie_acs: no PCIe ACS P2P redirect on the bridges above the GPUs and NICs, and no translated
// IOMMU on the GPUs' groups (ACS redirect sends P2P traffic through the root complex: NCCL's GPU
// troubleshooting guide; the register layout is Linux's include/uapi/linux/pci_regs.h, the IOMMU
// group types Linux's Documentation/ABI/testing/sysfs-kernel-iommu_groups). On the NVIDIA platforms
// that rdma-core's kernel-boot/rdma_topo knows (commit 691953d8d502f54088f776c5ba2aeed0a5ac945d: Grace
// with ConnectX-8 DMA-direct, ConnectX inline, NUMA-based) its ConnectX switch ports and Grace/Vera
// root ports are judged against the masks rdma_topo computes (checks/pcie_acs_platform.hpp), which
// want redirect on for some of them. Where a bridge's config space could not be read (no
// CAP_SYS_ADMIN) the answer is UNKNOWN with the IOMMU-group hint, never PASS.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/pcie_acs_platform.hpp"
#include "core/pci_config.hpp"
#include "core/text.hpp"

namespace preflight {
namespace topo_pcie_acs_check {
namespace {

using pcie_acs_platform::AcsPlan;
using pcie_acs_platform::Platform;
using pcie_acs_platform::Role;

constexpr FindingSpec kPciNotInSource = {"topo.pcie_acs/pci-not-in-source", Status::Skip, "{why}", ""};
constexpr FindingSpec kNoGpu = {
    "topo.pcie_acs/no-gpu", Status::Skip,
    "no NVIDIA GPU on the PCI bus ({nics} {nic_noun}): there is no GPU P2P or GPUDirect path to judge", ""};
constexpr FindingSpec kRedirect = {
    "topo.pcie_acs/redirect", Status::Fail,
    "PCIe ACS P2P redirect is on for {redirect_count} of the {bridges_above}: {redirects}: P2P/GPUDirect traffic is "
    "redirected to the root complex (hangs or slow P2P/GDR)",
    "Clear the ACS Control register of each bridge (as root; until the next reboot): {setpci}. Make it persistent: "
    "disable ACS (often under PCIe / IOMMU / VT-d settings) in the BIOS, or boot with "
    "`pci=disable_acs_redir={redirect_bdfs}` on kernels that have it, or re-apply the setpci lines at boot (a "
    "systemd unit). Check with `lspci -vvv -s {first_redirect} | grep ACSCtl`."};
#define PREFLIGHT_TRANSLATED                                                                                     \
  "the IOMMU translates DMA for {gpu_noun} {translated_gpus}: PCIe P2P between GPUs with the IOMMU translating " \
  "is unsupported on bare metal (NVIDIA) and GPUDirect RDMA goes through it"
#define PREFLIGHT_PASSTHROUGH_FIX                                                                               \
  "Put the IOMMU in passthrough mode: add `iommu=pt` to the kernel command line (Intel: `intel_iommu=on "       \
  "iommu=pt`; AMD: `amd_iommu=on iommu=pt`) in GRUB_CMDLINE_LINUX of /etc/default/grub, run `update-grub` (or " \
  "`grub2-mkconfig -o /boot/grub2/grub.cfg`) and reboot; or `intel_iommu=off` if nothing needs it."
constexpr FindingSpec kIommuTranslated = {"topo.pcie_acs/iommu-translated", Status::Warn, PREFLIGHT_TRANSLATED,
                                          PREFLIGHT_PASSTHROUGH_FIX};
// The same with a redirect on the bridges too: part of that FAIL.
constexpr FindingSpec kIommuTranslatedWithRedirect = {"topo.pcie_acs/iommu-translated-with-redirect", Status::Fail,
                                                      PREFLIGHT_TRANSLATED, PREFLIGHT_PASSTHROUGH_FIX};
#undef PREFLIGHT_TRANSLATED
#undef PREFLIGHT_PASSTHROUGH_FIX
constexpr FindingSpec kConfigRestricted = {
    "topo.pcie_acs/config-restricted", Status::Unknown,
    "config space of {restricted_first} is {config_bytes}{more_restricted}: reading ACS needs root (CAP_SYS_ADMIN); "
    "{hint}",
    "Run preflight as root on the host (in a container: --privileged, or CAP_SYS_ADMIN in the initial user "
    "namespace), or check by hand: `sudo lspci -vvv -s {restricted_first} | grep ACSCtl` (ReqRedir+ or CmpltRedir+ "
    "means P2P is redirected)."};
constexpr FindingSpec kBridgeUnreadable = {
    "topo.pcie_acs/bridge-unreadable", Status::Unknown,
    "the ACS state of {unreadable_count} {bridge_noun} could not be read: {unreadable}",
    "Check the bridges by hand: `sudo lspci -vvv -s <bdf> | grep ACSCtl`."};
constexpr FindingSpec kClean = {"topo.pcie_acs/clean", Status::Pass, "{checked}; IOMMU {iommu}{vm}", ""};
// The platforms of rdma-core's kernel-boot/rdma_topo (commit 691953d8d502f54088f776c5ba2aeed0a5ac945d).
#define PREFLIGHT_RDMA_TOPO "NVIDIA's rdma_topo (rdma-core kernel-boot/rdma_topo)"
constexpr FindingSpec kPlatformMismatch = {
    "topo.pcie_acs/platform-mismatch", Status::Fail,
    "on this {platform} platform the ACS Control of {mismatch_count} of the {bridges_above} is not "
    "what " PREFLIGHT_RDMA_TOPO
    " expects: {mismatches}: the platform needs these bits for reliable GPUDirect RDMA and P2P "
    "between its GPUs and ConnectX devices (wrong ones: hangs, errors or slow transfers)",
    "{setpci_part}With rdma-core's rdma_topo: `rdma_topo check` lists the same, `rdma_topo setpci-acs` sets them now "
    "(the nvidia module then needs NVreg_GrdmaPciTopoCheckOverride=1: the IOMMU groups were formed at boot), and "
    "`rdma_topo write-grub-acs` and a reboot have the kernel set them at boot{config_acs_part}. Check with "
    "`lspci -vvv -s {first_mismatch} | grep ACSCtl`."};
constexpr FindingSpec kDmaGroupSplit = {
    "topo.pcie_acs/dma-group-split", Status::Fail,
    "on this ConnectX DMA-direct platform {split_pairs}: " PREFLIGHT_RDMA_TOPO
    " requires each DMA function in its GPU's IOMMU group; otherwise the GPU driver's GPUDirect RDMA topology check "
    "passes only with NVreg_GrdmaPciTopoCheckOverride=1",
    "The kernel forms the IOMMU groups at boot from the ACS it finds then: have it set rdma_topo's ACS at boot with "
    "`rdma_topo write-grub-acs` (rdma-core) and reboot; ACS changed later (setpci, `rdma_topo setpci-acs`) leaves the "
    "groups as they were. Check with `rdma_topo check`."};
constexpr FindingSpec kPlatformUnrecognized = {
    "topo.pcie_acs/platform-unrecognized", Status::Unknown,
    "this node has {unmatched_count} ConnectX DMA {dma_noun} ({unmatched}), so it is a ConnectX DMA-direct platform, "
    "but its bridges are not in the shape " PREFLIGHT_RDMA_TOPO
    " knows (Grace root port, ConnectX switch with the DMA function on one downstream port and one GPU behind a second "
    "ConnectX switch on another): the ACS of its {unjudged_count} ConnectX switch and Grace ports is not judged",
    "Run `rdma_topo check` (rdma-core kernel-boot/rdma_topo) as root on the node: it names the ACS it expects there, "
    "or why it does not know this topology."};
constexpr FindingSpec kPlatformClean = {
    "topo.pcie_acs/platform-clean", Status::Pass,
    "on this {platform} platform {matched_count} of the {bridges_above} have the ACS Control that " PREFLIGHT_RDMA_TOPO
    " expects{others}; IOMMU {iommu}",
    ""};
#undef PREFLIGHT_RDMA_TOPO

// The words of each platform and of each bridge's role in it.
constexpr std::string_view kDmaDirectName = "ConnectX DMA-direct";
constexpr std::string_view kInlineName = "ConnectX inline";
constexpr std::string_view kInlineVirtName = "ConnectX inline (virtualised: its NICs have ATS)";
constexpr std::string_view kNumaName = "NUMA-based GPU/ConnectX";
constexpr std::string_view kRoleDmaDsp = "the ConnectX switch port toward DMA function {toward}";
constexpr std::string_view kRoleGpuDsp = "the ConnectX switch port toward GPU {toward}";
constexpr std::string_view kRoleSegmentRoot = "the Grace root port above DMA function {toward}";
constexpr std::string_view kRoleNicDsp = "the ConnectX switch port toward NIC {toward}";
constexpr std::string_view kRoleRootPort = "the root port above GPU {toward}";
constexpr std::string_view kRoleOther = "{type}";
constexpr std::string_view kMismatchItem = "{bridge} ({role}) has {current}, rdma_topo expects {expected} ({mask})";
constexpr std::string_view kNoAcs = "no ACS capability";
constexpr std::string_view kDmaPair = "DMA function {dma} is in {dma_group}, GPU {gpu} in {gpu_group}";
constexpr std::string_view kNoGroup = "no IOMMU group";
constexpr std::string_view kGroup = "IOMMU group {group}";

constexpr FindingSpec kFactsUnreadable = {"topo.pcie_acs/facts-unreadable", Status::Unknown, kUnreadableMessage,
                                          kUnreadableFix};
constexpr FindingSpec kFactsHung = {"topo.pcie_acs/facts-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};

constexpr std::array kFindings = {kFactsUnreadable,
                                  kFactsHung,
                                  kPciNotInSource,
                                  kNoGpu,
                                  kRedirect,
                                  kIommuTranslated,
                                  kIommuTranslatedWithRedirect,
                                  kConfigRestricted,
                                  kBridgeUnreadable,
                                  kClean,
                                  kPlatformMismatch,
                                  kDmaGroupSplit,
                                  kPlatformUnrecognized,
                                  kPlatformClean};

std::string hex4(std::uint16_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x", v);
  return buf;
}

std::string hex16(std::uint16_t v) { return "0x" + hex4(v); }

bool translated(const std::string& type) { return type == "DMA" || type == "DMA-FQ"; }

/// The kernel command line's IOMMU and PCI words: "intel_iommu=on", "iommu=pt", "pci=...".
std::vector<std::string> iommu_flags(const std::string& cmdline) {
  std::vector<std::string> out;
  for (const std::string_view w : split_ws(cmdline)) {
    if (w == "--") break;  // what follows is init's arguments
    if (w.substr(0, 11) == "intel_iommu" || w.substr(0, 9) == "amd_iommu" || w.substr(0, 5) == "iommu" ||
        w.substr(0, 4) == "pci=") {
      out.emplace_back(w);
    }
  }
  return out;
}

/// "GPU 0000:03:00.0" / "NIC 0000:05:00.0" / "DMA function 0008:03:00.0".
std::string name_of(const PciFunction& f) {
  return (f.kind == "gpu" ? "GPU " : f.kind == "dma" ? "DMA function " : "NIC ") + f.bus_id;
}

std::string below_text(const std::vector<const PciFunction*>& fs) {
  std::vector<std::string> names;
  for (const PciFunction* f : fs) names.push_back(name_of(*f));
  if (names.size() > 4) {
    const std::size_t more = names.size() - 3;
    names.resize(3);
    names.push_back(std::to_string(more) + " more");
  }
  return join(names, ", ");
}

/// The non-root ACS hint: two endpoints below the same switch (same root port and
/// the same upstream port) in different IOMMU groups means the switch's downstream ports isolate
/// them, i.e. ACS is enabled there; in one group, it is not.
std::string iommu_group_hint(const std::vector<PciFunction>& fns, bool iommu_on) {
  if (!iommu_on) {
    return "no IOMMU is active (no /sys/class/iommu unit, no translated group), so the kernel did not enable "
           "ACS itself; the BIOS may still have";
  }
  for (std::size_t i = 0; i < fns.size(); ++i) {
    for (std::size_t j = i + 1; j < fns.size(); ++j) {
      const PciFunction& a = fns[i];
      const PciFunction& b = fns[j];
      if (a.kind != "gpu" && b.kind != "gpu") continue;
      if (a.chain.size() < 3 || b.chain.size() < 3 || a.chain[0] != b.chain[0] || a.chain[1] != b.chain[1]) continue;
      if (!a.iommu_group || !b.iommu_group) continue;
      if (*a.iommu_group != *b.iommu_group) {
        return "IOMMU hint: " + name_of(a) + " and " + name_of(b) + " sit below the same switch (" + a.chain[1] +
               ") but in different IOMMU groups (" + std::to_string(*a.iommu_group) + ", " +
               std::to_string(*b.iommu_group) + "): ACS is likely enabled on that switch's downstream ports";
      }
      return "IOMMU hint: " + name_of(a) + " and " + name_of(b) + " below the same switch (" + a.chain[1] +
             ") share IOMMU group " + std::to_string(*a.iommu_group) + ": ACS is likely not isolating them";
    }
  }
  return "no two GPUs/NICs share a switch, so IOMMU groups give no hint";
}

/// The endpoints by kind.
struct Endpoints {
  std::vector<const PciFunction*> gpus, nics, dmas;
};

Endpoints endpoints(const std::vector<PciFunction>& fns) {
  Endpoints e;
  for (const PciFunction& f : fns) (f.kind == "gpu" ? e.gpus : f.kind == "dma" ? e.dmas : e.nics).push_back(&f);
  return e;
}

std::string plural(std::size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

/// "10 bridges above 4 GPUs and 2 NICs" (", 2 NICs and 1 ConnectX DMA function" where there are some).
std::string where_text(std::size_t bridges, const Endpoints& e) {
  std::string out = plural(bridges, "bridge") + " above " + plural(e.gpus.size(), "GPU");
  if (e.dmas.empty()) return out + " and " + plural(e.nics.size(), "NIC");
  return out + ", " + plural(e.nics.size(), "NIC") + " and " + plural(e.dmas.size(), "ConnectX DMA function");
}

std::string platform_name(const AcsPlan& plan) {
  switch (plan.platform) {
    case Platform::DmaDirect: return std::string(kDmaDirectName);
    case Platform::Inline: return std::string(plan.virt.value_or(false) ? kInlineVirtName : kInlineName);
    case Platform::Numa: return std::string(kNumaName);
    case Platform::Generic: break;
  }
  return "generic";
}

std::string role_text(const pcie_acs_platform::Expectation& x, const std::string& type) {
  std::string_view text = kRoleOther;
  switch (x.role) {
    case Role::DmaDsp: text = kRoleDmaDsp; break;
    case Role::GpuDsp: text = kRoleGpuDsp; break;
    case Role::SegmentRoot: text = kRoleSegmentRoot; break;
    case Role::NicDsp: text = kRoleNicDsp; break;
    case Role::RootPort: text = kRoleRootPort; break;
    case Role::Other: break;
  }
  return render_template(text, {{"toward", x.toward}, {"type", type}});
}

/// What the bridges are, one by one: the lists each finding names.
struct Judged {
  std::vector<std::string> redirect_bdfs, redirect_texts, vm_redirects, restricted, unreadable;
  std::vector<std::string> mismatch_bdfs, mismatch_texts, setpci_fixes;
  std::size_t matched = 0;      // as rdma_topo expects
  std::size_t no_redirect = 0;  // judged by the ordinary rule, no redirect
  std::string restricted_example;
};

/// A bridge rdma_topo expects a mask of: a read ACS Control matching it, or the mismatch named.
void judge_expected(const AcsState& s, const pcie_acs_platform::Expectation& x, const std::string& type, Judged& out) {
  const AcsMask mask = parse_acs_mask(x.mask).value_or(AcsMask{});
  if (s.state == "read" && acs_matches(s.ctrl, mask)) {
    ++out.matched;
    return;
  }
  const std::uint16_t bits = static_cast<std::uint16_t>(mask.set | mask.clear);
  const std::string current = s.state == "read" ? acs_bits_text(s.ctrl, bits) : std::string(kNoAcs);
  out.mismatch_bdfs.push_back(s.bus_id);
  out.mismatch_texts.push_back(render_template(kMismatchItem, {{"bridge", s.bus_id},
                                                               {"role", role_text(x, type)},
                                                               {"current", current},
                                                               {"expected", acs_mask_text(mask)},
                                                               {"mask", x.mask}}));
  if (s.state == "read") {
    out.setpci_fixes.push_back("`setpci -s " + s.bus_id + " ECAP_ACS+0x6.w=" + hex4(acs_apply(s.ctrl, mask)) + "`");
  }
}

/// Every bridge: by rdma_topo's mask where the platform has one, else no redirect on bare metal.
Judged judge_bridges(const PcieFacts& p, const AcsPlan& plan, bool bare_metal,
                     const std::map<std::string, std::vector<const PciFunction*>>& below) {
  Judged out;
  for (const AcsState& s : p.bridges) {
    const auto x = plan.expected.find(s.bus_id);
    const auto type = plan.types.find(s.bus_id);
    if (x != plan.expected.end() && (s.state == "read" || s.state == "no_acs")) {
      judge_expected(s, x->second, type == plan.types.end() ? std::string() : type->second, out);
    } else if (s.state == "read" && plan.unjudged.count(s.bus_id) != 0) {
      continue;  // a DMA-direct node rdma_topo does not know: platform-unrecognized counts them
    } else if (s.state == "read" && acs_redirects(s.ctrl)) {
      const auto it = below.find(s.bus_id);
      const std::string text = s.bus_id + " (" + acs_set_bits_text(s.ctrl) + ")" +
                               (it != below.end() ? " above " + below_text(it->second) : std::string());
      if (bare_metal) {
        out.redirect_bdfs.push_back(s.bus_id);
        out.redirect_texts.push_back(text);
      } else {
        out.vm_redirects.push_back(text);
      }
    } else if (s.state == "read" || s.state == "no_acs") {
      ++out.no_redirect;
    } else if (s.state == "restricted") {
      out.restricted.push_back(s.bus_id);
      if (out.restricted.size() == 1) out.restricted_example = std::to_string(s.config_bytes) + " bytes";
    } else if (s.state == "unreadable") {
      out.unreadable.push_back(s.bus_id + ": " + s.detail);
    }
  }
  return out;
}

nlohmann::json bridges_evidence(const PcieFacts& p, const AcsPlan& plan,
                                const std::map<std::string, std::vector<const PciFunction*>>& below) {
  nlohmann::json bridges = nlohmann::json::array();
  for (const AcsState& s : p.bridges) {
    nlohmann::json j = {{"bus_id", s.bus_id}, {"state", s.state}, {"config_bytes", s.config_bytes}};
    if (!s.vendor_device.empty()) j["vendor_device"] = s.vendor_device;
    if (s.state == "read") {
      j["cap"] = hex16(s.cap);
      j["ctrl"] = hex16(s.ctrl);
      j["acsctl"] = acs_ctrl_text(s.ctrl);
    }
    if (!s.detail.empty()) j["detail"] = s.detail;
    if (const auto type = plan.types.find(s.bus_id); type != plan.types.end() && plan.platform != Platform::Generic) {
      j["rdma_topo_type"] = type->second;
    }
    if (const auto x = plan.expected.find(s.bus_id); x != plan.expected.end()) j["rdma_topo_expects"] = x->second.mask;
    const auto it = below.find(s.bus_id);
    if (it != below.end()) j["above"] = below_text(it->second);
    bridges.push_back(std::move(j));
  }
  return bridges;
}

nlohmann::json platform_evidence(const AcsPlan& plan) {
  nlohmann::json j = {{"kind", platform_name(plan)},
                      {"rdma_topo", "rdma-core 691953d8d502f54088f776c5ba2aeed0a5ac945d kernel-boot/rdma_topo"}};
  if (plan.platform == Platform::Inline) j["virt"] = plan.virt ? nlohmann::json(*plan.virt) : nlohmann::json(nullptr);
  nlohmann::json complexes = nlohmann::json::array();
  for (const pcie_acs_platform::DmaComplex& c : plan.dma) {
    complexes.push_back({{"dma", c.dma->bus_id},
                         {"gpu", c.gpu->bus_id},
                         {"root_port", c.root_port},
                         {"shared_usp", c.shared_usp},
                         {"dma_dsp", c.dma_dsp},
                         {"gpu_dsp", c.gpu_dsp}});
  }
  if (!complexes.empty()) j["dma_complexes"] = std::move(complexes);
  nlohmann::json unmatched = nlohmann::json::array();
  for (const pcie_acs_platform::Unmatched& u : plan.unmatched) {
    unmatched.push_back({{"dma", u.dma->bus_id}, {"reason", u.reason}});
  }
  if (!unmatched.empty()) j["unmatched"] = std::move(unmatched);
  return j;
}

/// `pci=config_acs=` as `rdma_topo write-grub-acs` writes it: each mask other than the kernel's default.
std::string config_acs(const AcsPlan& plan) {
  std::vector<std::string> parts;
  for (const auto& [bus_id, x] : plan.expected) {
    const auto type = plan.types.find(bus_id);
    const std::string_view isolated =
        pcie_acs_platform::kernel_acs_isolated(type == plan.types.end() ? "" : std::string_view(type->second));
    if (x.mask != isolated) parts.push_back(x.mask + "@" + bus_id);
  }
  return join(parts, ";");
}

void add_platform_findings(VerdictBuilder& b, const AcsPlan& plan, const Judged& j, const std::string& where) {
  if (!j.mismatch_bdfs.empty()) {
    const std::string grub = config_acs(plan);
    b.add(
        kPlatformMismatch,
        {{"platform", platform_name(plan)},
         {"mismatch_count", j.mismatch_bdfs.size()},
         {"bridges_above", where},
         {"mismatches", join(j.mismatch_texts, "; ")},
         {"setpci_part", part_if(!j.setpci_fixes.empty(), "Set them as root (until the next reboot): {setpci_fix}. ")},
         {"setpci_fix", join(j.setpci_fixes, "; ")},
         {"config_acs_part", part_if(!grub.empty(), " (`pci=config_acs=\"{config_acs}\"`)")},
         {"config_acs", grub},
         {"first_mismatch", j.mismatch_bdfs.front()}});
  }
  std::vector<std::string> split;
  for (const pcie_acs_platform::DmaComplex& c : plan.dma) {
    if (c.dma->iommu_group && c.dma->iommu_group == c.gpu->iommu_group) continue;
    const auto group = [](const std::optional<int>& g) {
      return g ? render_template(kGroup, {{"group", *g}}) : std::string(kNoGroup);
    };
    split.push_back(render_template(kDmaPair, {{"dma", c.dma->bus_id},
                                               {"dma_group", group(c.dma->iommu_group)},
                                               {"gpu", c.gpu->bus_id},
                                               {"gpu_group", group(c.gpu->iommu_group)}}));
  }
  if (!split.empty()) b.add(kDmaGroupSplit, {{"split_pairs", join(split, "; ")}});
  if (!plan.unmatched.empty()) {
    std::vector<std::string> ids;
    for (const pcie_acs_platform::Unmatched& u : plan.unmatched) ids.push_back(u.dma->bus_id);
    b.add(kPlatformUnrecognized, {{"unmatched_count", ids.size()},
                                  {"dma_noun", ids.size() == 1 ? "function" : "functions"},
                                  {"unmatched", join(ids, ", ")},
                                  {"unjudged_count", plan.unjudged.size()}});
  }
}

/// The IOMMU as the findings need it (with its evidence): active or not, the GPUs it translates for.
struct IommuView {
  bool on = false;
  std::vector<std::string> translated_gpus;  // "0000:03:00.0 (group 30, DMA)"
};

IommuView iommu_view(const IommuFacts& iommu, const std::vector<const PciFunction*>& gpus, nlohmann::json& ev) {
  IommuView out;
  if (const auto* units = iommu.units.value()) {
    ev["iommu_units"] = *units;
    out.on = !units->empty();
  } else {
    ev["iommu_units_error"] = iommu.units.why();
  }
  if (const std::string* cmdline = iommu.cmdline.value()) {
    ev["cmdline_flags"] = iommu_flags(*cmdline);
  } else {
    ev["cmdline_error"] = iommu.cmdline.why();
  }
  std::set<int> gpu_groups;
  for (const PciFunction* g : gpus) {
    if (g->iommu_group) gpu_groups.insert(*g->iommu_group);
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const IommuGroup& g : iommu.groups) {
    groups.push_back({{"group", g.group}, {"type", g.type}, {"devices", g.devices}});
    if (translated(g.type)) out.on = true;
    if (!gpu_groups.count(g.group) || !translated(g.type)) continue;
    for (const PciFunction* gpu : gpus) {
      if (gpu->iommu_group == g.group)
        out.translated_gpus.push_back(gpu->bus_id + " (group " + std::to_string(g.group) + ", " + g.type + ")");
    }
  }
  ev["iommu_groups"] = std::move(groups);
  ev["iommu_active"] = out.on;
  return out;
}

Verdict run(const CheckContext& ctx) {
  const PcieFacts& p = ctx.facts.pcie;
  const std::vector<PciFunction>* fns = p.functions.value();
  if (fns == nullptr) {
    // A fact the judged source cannot hold (--topology-xml: an hwloc export has no ACS register).
    if (p.functions.error()->code == ProbeErrc::Unsupported) {
      return Verdict::of(kPciNotInSource, {{"why", p.functions.why()}});
    }
    return unknown_from(p.functions, "the PCI devices", kFactsUnreadable, kFactsHung);
  }

  const Endpoints e = endpoints(*fns);
  if (e.gpus.empty()) {
    return Verdict::of(kNoGpu, {{"nics", e.nics.size()}, {"nic_noun", e.nics.size() == 1 ? "NIC" : "NICs"}},
                       {{"nics", e.nics.size()}});
  }

  VerdictBuilder b;
  nlohmann::json& ev = b.evidence();
  ev["gpus"] = e.gpus.size();
  ev["nics"] = e.nics.size();
  if (!e.dmas.empty()) ev["dma_functions"] = e.dmas.size();
  const std::optional<bool> vm = p.iommu.hypervisor;
  ev["hypervisor"] = vm ? nlohmann::json(*vm) : nlohmann::json(nullptr);
  const bool bare_metal = !vm.value_or(false);

  // Which endpoints sit below each bridge.
  std::map<std::string, std::vector<const PciFunction*>> below;
  for (const PciFunction& f : *fns) {
    for (std::size_t i = 0; i + 1 < f.chain.size(); ++i) below[f.chain[i]].push_back(&f);
  }

  // Derive: rdma_topo's platform and masks (bare metal only: a VM's bridges are the hypervisor's).
  const AcsPlan plan = bare_metal ? pcie_acs_platform::plan(*fns, p.bridges) : AcsPlan{};
  // Judge each bridge.
  const Judged j = judge_bridges(p, plan, bare_metal, below);
  ev["bridges"] = bridges_evidence(p, plan, below);
  if (plan.platform != Platform::Generic) ev["platform"] = platform_evidence(plan);

  const IommuView io = iommu_view(p.iommu, e.gpus, ev);
  const bool iommu_on = io.on;
  const std::vector<std::string>& translated_gpus = io.translated_gpus;

  const std::string where = where_text(p.bridges.size(), e);

  if (!j.redirect_bdfs.empty()) {
    std::vector<std::string> cmds;
    for (const std::string& bdf : j.redirect_bdfs) cmds.push_back("`setpci -s " + bdf + " ECAP_ACS+0x6.w=0000`");
    b.add(kRedirect, {{"redirect_count", j.redirect_bdfs.size()},
                      {"bridges_above", where},
                      {"redirects", join(j.redirect_texts, "; ")},
                      {"setpci", join(cmds, "; ")},
                      {"redirect_bdfs", join(j.redirect_bdfs, ";")},
                      {"first_redirect", j.redirect_bdfs.front()}});
  }
  add_platform_findings(b, plan, j, where);
  if (!j.vm_redirects.empty()) {
    b.note("in a VM (hypervisor flag) ACS redirect is expected on the virtual bridges: " + join(j.vm_redirects, "; "));
  }

  if (!translated_gpus.empty()) {
    if (!bare_metal) {
      b.note("in a VM the GPUs' IOMMU groups are translated (" + join(translated_gpus, ", ") + "): expected");
    } else {
      b.add(j.redirect_bdfs.empty() ? kIommuTranslated : kIommuTranslatedWithRedirect,
            {{"gpu_noun", translated_gpus.size() == 1 ? "GPU" : "GPUs"},
             {"translated_gpus", join(translated_gpus, ", ")}});
    }
  }

  if (!j.restricted.empty()) {
    ev["restricted_example"] = j.restricted_example;
    const std::string first = j.restricted.front();
    std::vector<PciFunction> all(fns->begin(), fns->end());
    b.add(kConfigRestricted,
          {{"restricted_first", first},
           {"config_bytes", j.restricted_example},
           {"more_restricted", part_if(j.restricted.size() > 1, " (and of {restricted_more} more bridges)")},
           {"restricted_more", j.restricted.size() - 1},
           {"hint", iommu_group_hint(all, iommu_on)}});
  }
  if (!j.unreadable.empty()) {
    b.add(kBridgeUnreadable, {{"unreadable_count", j.unreadable.size()},
                              {"bridge_noun", j.unreadable.size() == 1 ? "bridge" : "bridges"},
                              {"unreadable", join(j.unreadable, "; ")}});
  }

  if (b.status() == Status::Pass) {
    const char* iommu_text = !iommu_on                 ? "off"
                             : translated_gpus.empty() ? "on, GPU groups not translated"
                                                       : "translating (VM)";
    if (j.matched > 0) {
      b.add(kPlatformClean,
            {{"platform", platform_name(plan)},
             {"matched_count", j.matched},
             {"bridges_above", where},
             {"others", part_if(j.no_redirect > 0, " and no ACS P2P redirect on the other {no_redirect_count}")},
             {"no_redirect_count", j.no_redirect},
             {"iommu", iommu_text}});
    } else {
      b.add(kClean,
            {{"checked", p.bridges.empty() ? "no PCIe bridge above the " + std::to_string(e.gpus.size()) + " GPUs"
                                           : "no ACS P2P redirect on the " + where},
             {"iommu", iommu_text},
             {"vm", part_if(vm.value_or(false), " (VM)")}});
    }
  }
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  /sys/bus/pci/devices: the NVIDIA GPUs (vendor 0x10de, class 0x03xxxx), the NICs (class 0x02xxxx,
  0x0c06xx; each one's ATS capability, ID 0x0f) and the ConnectX-8 DMA functions (15b3:2100), and
  the chain of bridges above each one (the sysfs device path below pciDDDD:BB: root port, switch
  upstream and downstream ports). For every such bridge, its vendor:device and its config space
  (/sys/bus/pci/devices/<bdf>/config): the extended capability list from offset 0x100, the ACS
  capability (ID 0x0d) and its Control register (+0x6). Without CAP_SYS_ADMIN the kernel returns
  only the first 64 bytes, so the ACS state cannot be read as an ordinary user.
  The IOMMU: /sys/class/iommu units, /proc/cmdline, each endpoint's IOMMU group and
  /sys/kernel/iommu_groups/N/type (identity = passthrough; DMA, DMA-FQ = translated), and the
  "hypervisor" flag of /proc/cpuinfo (in a VM, ACS and a translating IOMMU are expected).

NVIDIA platforms
  On bare metal the platform is told as NVIDIA's rdma_topo tells it (rdma-core
  kernel-boot/rdma_topo, commit 691953d8d502f54088f776c5ba2aeed0a5ac945d; NCCL 2.32 runs it), in
  this order: ConnectX DMA-direct (a ConnectX-8 DMA function, 15b3:2100: Grace + ConnectX-8),
  NUMA-based (a GPU directly below a root port), ConnectX inline (a ConnectX switch port
  15b3:197c/1979, a GPU and a ConnectX-7/8/9 NIC). There its ConnectX and BlueField switch ports
  and Grace/Vera root ports (10de:22b1/22b2/22b8, 10de:2f95/2f96) must have the ACS Control bits
  rdma_topo computes; its masks read bit 6 to bit 0 (DT EC UF CR RR TB SV), 1 set, 0 clear, x
  either:
    DMA-direct: the Grace root port -> ConnectX switch -> downstream port -> DMA function, and
      through another downstream port and a second ConnectX switch the GPU. The port toward the
      DMA function xx110x1 (CmpltRedir on, ReqRedir off), the port toward the GPU xx101x1 (ReqRedir
      on, CmpltRedir off), the Grace root port xx111x0 (SrcValid off, so that the segment is one
      IOMMU group); the DMA function and its GPU must share an IOMMU group.
    inline: GPU behind two ConnectX switches, the NIC on the first: with the NICs' ATS
      (virtualised) the NIC's port 1x111x1 and the GPU's port and the root port the kernel's
      default; without it (or when ATS is unknown) all three xx000x0.
    every other such port: the kernel's default xx111x1 (SrcValid ReqRedir CmpltRedir
      UpstreamFwd; Vera root ports xx101x1), or xx000x0 on an inline platform without ATS.
  A bridge that matches PASSes although redirect is on; the ordinary rule below still applies to
  every other bridge (a Broadcom/PLX switch, an x86 root port), and on every other machine.

Failures
  FAIL     on bare metal, a bridge above a GPU or NIC that rdma_topo sets no mask for has ACS P2P
           Request Redirect (ReqRedir+) or Completion Redirect (CmpltRedir+) set: peer-to-peer and
           GPUDirect RDMA traffic is sent up to the root complex — P2P hangs or crawls, NCCL may
           report IBV_WC_LOC_PROT_ERR.
  FAIL     the same, with the IOMMU also translating the GPUs' DMA.
  FAIL     on an NVIDIA platform above, a bridge's ACS Control differs from rdma_topo's mask: it is
           named with its bits, the bits expected and the setpci value that sets them.
  FAIL     on a DMA-direct platform, a DMA function and its GPU are in different IOMMU groups (or in
           none): rdma_topo's check fails, and the GPU driver's GPUDirect RDMA topology check then
           needs NVreg_GrdmaPciTopoCheckOverride=1.
  WARN     on bare metal, a GPU's IOMMU group is translated (type DMA or DMA-FQ): NVIDIA does not
           support PCIe P2P with the IOMMU translating on bare metal.
  UNKNOWN  a ConnectX DMA function whose bridges are not in the shape rdma_topo knows: it refuses
           such a node, so its ConnectX and Grace ports are not judged.
  UNKNOWN  a bridge's config space is shorter than 256 bytes (no privilege to read it): the result
           names the bridge and adds what the IOMMU groups suggest (two GPUs below one switch in
           different groups: ACS is likely enabled there). Never PASS.
  UNKNOWN  a bridge's config space or the device tree could not be read or parsed.
  SKIP     no NVIDIA GPU on the PCI bus.
  SKIP     --topology-xml names another machine: an hwloc export holds no ACS register, and this
           host's PCI bus is not that machine's (judge it from the node's `preflight capture`).
  In a VM the redirect bits and translated groups are reported as notes only, and the NVIDIA
  platform rules are not applied (the bridges are the hypervisor's).

Fix
  Until reboot, as root: setpci -s <bdf> ECAP_ACS+0x6.w=0000 for each bridge named (check with
  lspci -vvv -s <bdf> | grep ACSCtl). Persistently: disable ACS in the BIOS, or boot with
  pci=disable_acs_redir=<bdf>[;<bdf>...] on kernels that support it, or re-apply setpci at boot.
  NVIDIA platforms: rdma-core's `rdma_topo check` shows the same expectations; `rdma_topo
  write-grub-acs` and a reboot have the kernel set them at boot (pci=config_acs=, which also forms
  the IOMMU groups from them); `rdma_topo setpci-acs` sets them now (the GPU driver then needs
  NVreg_GrdmaPciTopoCheckOverride=1); or setpci with the value the result prints.
  IOMMU: boot with iommu=pt (intel_iommu=on iommu=pt / amd_iommu=on iommu=pt) and reboot.
  To let preflight read ACS: run it as root on the host (containers: --privileged).)";

}  // namespace

extern const CheckSpec kTopoPcieAcs = {"topo.pcie_acs",
                                       Scope::Node,
                                       "no PCIe ACS redirect or translated IOMMU between GPUs and NICs",
                                       kExplain,
                                       kInNode | kInJob,
                                       "an image build has no topology",
                                       &run,
                                       "pcie",
                                       false,
                                       {},
                                       {},
                                       nullptr,
                                       kFindings};

}  // namespace topo_pcie_acs_check
}  // namespace preflight
