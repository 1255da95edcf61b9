// SPDX-License-Identifier: MIT
// topo.pcie_acs: no PCIe ACS P2P redirect on the bridges above the GPUs and NICs, and no translated
// IOMMU on the GPUs' groups (ACS redirect sends P2P traffic through the root complex: NCCL's GPU
// troubleshooting guide; the register layout is Linux's include/uapi/linux/pci_regs.h, the IOMMU
// group types Linux's Documentation/ABI/testing/sysfs-kernel-iommu_groups). Where a bridge's
// config space could not be read (no CAP_SYS_ADMIN) the answer is UNKNOWN with the IOMMU-group
// hint, never PASS.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/pci_config.hpp"
#include "core/text.hpp"

namespace preflight {
namespace topo_pcie_acs_check {
namespace {

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
                                  kClean};

std::string hex16(std::uint16_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

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

/// "GPU 0000:03:00.0" / "NIC 0000:05:00.0".
std::string name_of(const PciFunction& f) { return (f.kind == "gpu" ? "GPU " : "NIC ") + f.bus_id; }

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

  std::vector<const PciFunction*> gpus, nics;
  for (const PciFunction& f : *fns) (f.kind == "gpu" ? gpus : nics).push_back(&f);
  if (gpus.empty()) {
    return Verdict::of(kNoGpu, {{"nics", nics.size()}, {"nic_noun", nics.size() == 1 ? "NIC" : "NICs"}},
                       {{"nics", nics.size()}});
  }

  VerdictBuilder b;
  nlohmann::json& ev = b.evidence();
  ev["gpus"] = gpus.size();
  ev["nics"] = nics.size();
  const std::optional<bool> vm = p.iommu.hypervisor;
  ev["hypervisor"] = vm ? nlohmann::json(*vm) : nlohmann::json(nullptr);
  const bool bare_metal = !vm.value_or(false);

  // Which endpoints sit below each bridge.
  std::map<std::string, std::vector<const PciFunction*>> below;
  for (const PciFunction& f : *fns) {
    for (std::size_t i = 0; i + 1 < f.chain.size(); ++i) below[f.chain[i]].push_back(&f);
  }

  std::vector<std::string> redirect_bdfs, redirect_texts, restricted, unreadable;
  std::vector<std::string> vm_redirects;
  nlohmann::json bridges = nlohmann::json::array();
  for (const AcsState& s : p.bridges) {
    nlohmann::json j = {{"bus_id", s.bus_id}, {"state", s.state}, {"config_bytes", s.config_bytes}};
    if (s.state == "read") {
      j["cap"] = hex16(s.cap);
      j["ctrl"] = hex16(s.ctrl);
      j["acsctl"] = acs_ctrl_text(s.ctrl);
    }
    if (!s.detail.empty()) j["detail"] = s.detail;
    const auto it = below.find(s.bus_id);
    if (it != below.end()) j["above"] = below_text(it->second);
    bridges.push_back(std::move(j));

    if (s.state == "read" && acs_redirects(s.ctrl)) {
      const std::string text = s.bus_id + " (" + acs_set_bits_text(s.ctrl) + ")" +
                               (it != below.end() ? " above " + below_text(it->second) : std::string());
      if (bare_metal) {
        redirect_bdfs.push_back(s.bus_id);
        redirect_texts.push_back(text);
      } else {
        vm_redirects.push_back(text);
      }
    } else if (s.state == "restricted") {
      restricted.push_back(s.bus_id);
      if (restricted.size() == 1) ev["restricted_example"] = std::to_string(s.config_bytes) + " bytes";
    } else if (s.state == "unreadable") {
      unreadable.push_back(s.bus_id + ": " + s.detail);
    }
  }
  ev["bridges"] = std::move(bridges);

  // IOMMU.
  bool iommu_on = false;
  if (const auto* units = p.iommu.units.value()) {
    ev["iommu_units"] = *units;
    iommu_on = !units->empty();
  } else {
    ev["iommu_units_error"] = p.iommu.units.why();
  }
  std::vector<std::string> flags;
  if (const std::string* cmdline = p.iommu.cmdline.value()) {
    flags = iommu_flags(*cmdline);
    ev["cmdline_flags"] = flags;
  } else {
    ev["cmdline_error"] = p.iommu.cmdline.why();
  }
  std::set<int> gpu_groups;
  for (const PciFunction* g : gpus) {
    if (g->iommu_group) gpu_groups.insert(*g->iommu_group);
  }
  nlohmann::json groups = nlohmann::json::array();
  std::vector<std::string> translated_gpus;
  for (const IommuGroup& g : p.iommu.groups) {
    groups.push_back({{"group", g.group}, {"type", g.type}, {"devices", g.devices}});
    if (translated(g.type)) iommu_on = true;
    if (!gpu_groups.count(g.group) || !translated(g.type)) continue;
    for (const PciFunction* gpu : gpus) {
      if (gpu->iommu_group == g.group)
        translated_gpus.push_back(gpu->bus_id + " (group " + std::to_string(g.group) + ", " + g.type + ")");
    }
  }
  ev["iommu_groups"] = std::move(groups);
  ev["iommu_active"] = iommu_on;

  const std::string where = std::to_string(p.bridges.size()) + " bridge" + (p.bridges.size() == 1 ? "" : "s") +
                            " above " + std::to_string(gpus.size()) + " GPU" + (gpus.size() == 1 ? "" : "s") + " and " +
                            std::to_string(nics.size()) + " NIC" + (nics.size() == 1 ? "" : "s");

  if (!redirect_bdfs.empty()) {
    std::vector<std::string> cmds;
    for (const std::string& bdf : redirect_bdfs) cmds.push_back("`setpci -s " + bdf + " ECAP_ACS+0x6.w=0000`");
    b.add(kRedirect, {{"redirect_count", redirect_bdfs.size()},
                      {"bridges_above", where},
                      {"redirects", join(redirect_texts, "; ")},
                      {"setpci", join(cmds, "; ")},
                      {"redirect_bdfs", join(redirect_bdfs, ";")},
                      {"first_redirect", redirect_bdfs.front()}});
  }
  if (!vm_redirects.empty()) {
    b.note("in a VM (hypervisor flag) ACS redirect is expected on the virtual bridges: " + join(vm_redirects, "; "));
  }

  if (!translated_gpus.empty()) {
    if (!bare_metal) {
      b.note("in a VM the GPUs' IOMMU groups are translated (" + join(translated_gpus, ", ") + "): expected");
    } else {
      b.add(redirect_bdfs.empty() ? kIommuTranslated : kIommuTranslatedWithRedirect,
            {{"gpu_noun", translated_gpus.size() == 1 ? "GPU" : "GPUs"},
             {"translated_gpus", join(translated_gpus, ", ")}});
    }
  }

  if (!restricted.empty()) {
    const std::string first = restricted.front();
    const std::string bytes = ev.value("restricted_example", std::string("64 bytes"));
    std::vector<PciFunction> all(fns->begin(), fns->end());
    b.add(kConfigRestricted,
          {{"restricted_first", first},
           {"config_bytes", bytes},
           {"more_restricted", part_if(restricted.size() > 1, " (and of {restricted_more} more bridges)")},
           {"restricted_more", restricted.size() - 1},
           {"hint", iommu_group_hint(all, iommu_on)}});
  }
  if (!unreadable.empty()) {
    b.add(kBridgeUnreadable, {{"unreadable_count", unreadable.size()},
                              {"bridge_noun", unreadable.size() == 1 ? "bridge" : "bridges"},
                              {"unreadable", join(unreadable, "; ")}});
  }

  if (b.status() == Status::Pass) {
    const char* iommu_text = !iommu_on                 ? "off"
                             : translated_gpus.empty() ? "on, GPU groups not translated"
                                                       : "translating (VM)";
    b.add(kClean, {{"checked", p.bridges.empty() ? "no PCIe bridge above the " + std::to_string(gpus.size()) + " GPUs"
                                                 : "no ACS P2P redirect on the " + where},
                   {"iommu", iommu_text},
                   {"vm", part_if(vm.value_or(false), " (VM)")}});
  }
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  /sys/bus/pci/devices: the NVIDIA GPUs (vendor 0x10de, class 0x03xxxx) and the NICs (class 0x02xxxx,
  0x0c06xx), and the chain of bridges above each one (the sysfs device path below pciDDDD:BB: root
  port, switch upstream and downstream ports). For every such bridge, its config space
  (/sys/bus/pci/devices/<bdf>/config): the extended capability list from offset 0x100, the ACS
  capability (ID 0x0d) and its Control register (+0x6). Without CAP_SYS_ADMIN the kernel returns
  only the first 64 bytes, so the ACS state cannot be read as an ordinary user.
  The IOMMU: /sys/class/iommu units, /proc/cmdline, each endpoint's IOMMU group and
  /sys/kernel/iommu_groups/N/type (identity = passthrough; DMA, DMA-FQ = translated), and the
  "hypervisor" flag of /proc/cpuinfo (in a VM, ACS and a translating IOMMU are expected).

Failures
  FAIL     on bare metal, a bridge above a GPU or NIC has ACS P2P Request Redirect (ReqRedir+) or
           Completion Redirect (CmpltRedir+) set: peer-to-peer and GPUDirect RDMA traffic is sent up
           to the root complex — P2P hangs or crawls, NCCL may report IBV_WC_LOC_PROT_ERR.
  FAIL     the same, with the IOMMU also translating the GPUs' DMA.
  WARN     on bare metal, a GPU's IOMMU group is translated (type DMA or DMA-FQ): NVIDIA does not
           support PCIe P2P with the IOMMU translating on bare metal.
  UNKNOWN  a bridge's config space is shorter than 256 bytes (no privilege to read it): the result
           names the bridge and adds what the IOMMU groups suggest (two GPUs below one switch in
           different groups: ACS is likely enabled there). Never PASS.
  UNKNOWN  a bridge's config space or the device tree could not be read or parsed.
  SKIP     no NVIDIA GPU on the PCI bus.
  SKIP     --topology-xml names another machine: an hwloc export holds no ACS register, and this
           host's PCI bus is not that machine's (judge it from the node's `preflight capture`).
  In a VM the redirect bits and translated groups are reported as notes only.

Fix
  Until reboot, as root: setpci -s <bdf> ECAP_ACS+0x6.w=0000 for each bridge named (check with
  lspci -vvv -s <bdf> | grep ACSCtl). Persistently: disable ACS in the BIOS, or boot with
  pci=disable_acs_redir=<bdf>[;<bdf>...] on kernels that support it, or re-apply setpci at boot.
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
