// SPDX-License-Identifier: MIT
// The pcie probe: the GPUs, NICs and ConnectX-8 DMA functions on the PCI bus, the chain of
// bridges above each (from the sysfs device tree), the vendor:device and ACS Control register of
// every such bridge (from its config space; 64 bytes without CAP_SYS_ADMIN = "restricted"), whether
// each NIC has the ATS capability, and the IOMMU's state:
// its units, the kernel command line, the endpoints' IOMMU groups and their type, and whether this
// is a VM. Everything through ctx.fs, so --sysroot trees drive it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "core/pci_config.hpp"
#include "core/text.hpp"
#include "probes/probe.hpp"
#include "sys/sysfs_pci.hpp"

namespace preflight {
namespace {

constexpr const char* kDevices = "/sys/bus/pci/devices";

std::optional<std::uint32_t> parse_hex32(std::string_view text) {
  text = trim(text);
  if (text.substr(0, 2) == "0x" || text.substr(0, 2) == "0X") text.remove_prefix(2);
  if (text.empty() || text.size() > 8) return std::nullopt;
  std::uint32_t v = 0;
  for (const char c : text) {
    int d = 0;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return std::nullopt;
    v = (v << 4) | static_cast<std::uint32_t>(d);
  }
  return v;
}

/// "gpu", "nic", "dma" or "" for a function of this vendor, device and class.
std::string kind_of(std::uint32_t vendor, std::uint32_t device, std::uint32_t cls) {
  // The ConnectX-8 DMA Controller of the DMA-direct platforms, matched by its ids before its class as
  // rdma-core's kernel-boot/rdma_topo does (commit 691953d8d502f54088f776c5ba2aeed0a5ac945d, pci_device_types).
  if (vendor == 0x15b3 && device == 0x2100) return "dma";
  if (vendor == 0x10de && (cls >> 16) == 0x03) return "gpu";      // NVIDIA display/3D controller
  if ((cls >> 16) == 0x02 || (cls >> 8) == 0x0c06) return "nic";  // network (0x0207 InfiniBand), 0x0c06 IB
  return {};
}

std::string hex4(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x", v & 0xffffu);
  return buf;
}

/// "15b3:197c" from a device's sysfs vendor and device files; "" when either cannot be read.
std::string read_vendor_device(const FileSystem& fs, const std::string& dir) {
  const auto vendor = fs.read_line(dir + "/vendor");
  const auto device = fs.read_line(dir + "/device");
  if (!vendor.ok() || !device.ok()) return {};
  const auto v = parse_hex32(*vendor.value());
  const auto d = parse_hex32(*device.value());
  if (!v || !d) return {};
  return hex4(*v) + ":" + hex4(*d);
}

std::string hex6(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%06x", v & 0xffffffu);
  return buf;
}

PciFunction read_function(const FileSystem& fs, const std::string& bdf, const std::string& kind, std::uint32_t vendor,
                          std::uint32_t device, std::uint32_t cls, std::vector<AcsState>& chain_errors) {
  const std::string dir = std::string(kDevices) + "/" + bdf;
  PciFunction f;
  f.bus_id = bdf;
  f.kind = kind;
  f.vendor_device = hex4(vendor) + ":" + hex4(device);
  f.class_code = hex6(cls);
  const Probed<PciChain> chain = resolve_pci_chain(fs, bdf);
  if (const PciChain* c = chain.value()) {
    f.root = c->root;
    f.chain = c->chain;
  } else {
    f.chain = {bdf};
    // The bridges above it are unknown: recorded so that the check cannot pass over them.
    AcsState s;
    s.bus_id = bdf;
    s.state = "unreadable";
    s.detail = "the bridges above " + bdf + " are unknown: " + chain.why();
    chain_errors.push_back(std::move(s));
  }
  if (const auto node = fs.read_line(dir + "/numa_node"); node.ok()) {
    if (const auto n = parse_int(*node.value()); n && *n >= 0 && *n < (1 << 20)) f.numa_node = static_cast<int>(*n);
  }
  if (const auto list = fs.read_line(dir + "/local_cpulist"); list.ok()) {
    if (auto cpus = parse_cpu_list(*list.value())) f.local_cpus = std::move(*cpus);
  } else if (const auto mask = fs.read_line(dir + "/local_cpus"); mask.ok()) {
    if (auto cpus = parse_cpu_mask(*mask.value())) f.local_cpus = std::move(*cpus);
  }
  if (const auto group = read_link_name(fs, dir + "/iommu_group"); group.ok()) {
    if (const auto g = parse_int(*group.value()); g && *g >= 0 && *g < (1 << 30)) f.iommu_group = static_cast<int>(*g);
  }
  if (const auto driver = read_link_name(fs, dir + "/driver"); driver.ok()) f.driver = *driver.value();
  if (kind == "nic") {
    // rdma_topo tells a virtualised inline complex by the NIC's ATS capability (has_ats_cap).
    if (const auto config = fs.read(dir + "/config", kPcieConfigSize); config.ok()) {
      f.ats = has_ext_cap(*config.value(), kPciExtCapIdAts);
    }
  }
  return f;
}

AcsState read_bridge(const FileSystem& fs, const std::string& bdf) {
  const std::string dir = std::string(kDevices) + "/" + bdf;
  const Probed<std::string> config = fs.read(dir + "/config", kPcieConfigSize);
  AcsState s;
  if (config.ok()) {
    s = parse_acs_config(*config.value(), bdf);
  } else {
    s.bus_id = bdf;
    s.state = "unreadable";
    s.detail = config.why();
  }
  s.vendor_device = read_vendor_device(fs, dir);
  return s;
}

IommuFacts probe_iommu(const FileSystem& fs, const std::vector<PciFunction>& functions) {
  IommuFacts io;
  const auto units = fs.list("/sys/class/iommu");
  if (units.ok() || units.error()->code != ProbeErrc::NotFound) {
    io.units = units;
  } else {
    io.units = Probed<std::vector<std::string>>::ok({}, "/sys/class/iommu (absent: no IOMMU driver)");
  }
  io.cmdline = fs.read_line("/proc/cmdline");

  std::set<int> groups;
  for (const PciFunction& f : functions) {
    if (f.iommu_group) groups.insert(*f.iommu_group);
  }
  for (const int g : groups) {
    const std::string dir = "/sys/kernel/iommu_groups/" + std::to_string(g);
    IommuGroup group;
    group.group = g;
    if (const auto type = fs.read_line(dir + "/type"); type.ok()) group.type = printable(*type.value(), 32);
    if (const auto devices = fs.list(dir + "/devices"); devices.ok()) group.devices = *devices.value();
    io.groups.push_back(std::move(group));
  }

  // The "hypervisor" CPU flag (x86: CPUID leaf 1 ECX bit 31, set by every common hypervisor).
  if (const auto cpuinfo = fs.read("/proc/cpuinfo", 16u << 20); cpuinfo.ok()) {
    for (const std::string_view line : split(*cpuinfo.value(), '\n')) {
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos || trim(line.substr(0, colon)) != "flags") continue;
      const auto flags = split_ws(line.substr(colon + 1));
      io.hypervisor = std::find(flags.begin(), flags.end(), "hypervisor") != flags.end();
      break;
    }
  }
  return io;
}

}  // namespace

std::string adopt_pcie(const ProbeContext&, const RankFacts& leader, RankFacts& facts) {
  facts.pcie = leader.pcie;  // sysfs: the same files for every process of the host
  return {};
}

void probe_pcie(const ProbeContext& ctx, RankFacts& facts) {
  PcieFacts& out = facts.pcie;
  const FileSystem& fs = ctx.fs;
  if (fs.is_live() && !ctx.options.topology_xml.empty()) {
    // The topology judged is another machine's: this host's PCI bus is not it, and an hwloc export
    // holds no ACS register.
    const std::string why = "--topology-xml " + ctx.options.topology_xml +
                            " describes another machine: its PCI bridges' ACS registers and IOMMU groups are not in an "
                            "hwloc export, and this host's are not that machine's";
    out.functions = Probed<std::vector<PciFunction>>::error(ProbeErrc::Unsupported, why, kDevices);
    out.iommu.units = Probed<std::vector<std::string>>::error(ProbeErrc::Unsupported, why, "/sys/class/iommu");
    out.iommu.cmdline = Probed<std::string>::error(ProbeErrc::Unsupported, why, "/proc/cmdline");
    return;
  }
  const Probed<std::vector<std::string>> names = fs.list(kDevices);
  std::vector<PciFunction> functions;
  std::vector<AcsState> chain_errors;
  // A device whose class or vendor cannot be read (other than gone since the listing) may be a GPU
  // or NIC: the list is then not known to be complete, and "no GPU on the bus" would be a guess.
  std::optional<ProbeError> unreadable;
  std::string unreadable_source;
  if (const auto* list = names.value()) {
    for (const std::string& bdf : *list) {
      if (!is_pci_bdf(bdf)) continue;
      const std::string dir = std::string(kDevices) + "/" + bdf;
      const auto cls_text = fs.read_line(dir + "/class");
      const auto vendor_text = fs.read_line(dir + "/vendor");
      if (!cls_text.ok() || !vendor_text.ok()) {
        const auto& bad = cls_text.ok() ? vendor_text : cls_text;
        if (!unreadable && bad.error()->code != ProbeErrc::NotFound) {
          unreadable = *bad.error();
          unreadable_source = bad.source().empty() ? dir + (cls_text.ok() ? "/vendor" : "/class") : bad.source();
        }
        continue;
      }
      const auto cls = parse_hex32(*cls_text.value());
      const auto vendor = parse_hex32(*vendor_text.value());
      if (!cls || !vendor) continue;
      std::uint32_t device = 0;
      if (const auto d = fs.read_line(dir + "/device"); d.ok()) device = parse_hex32(*d.value()).value_or(0);
      const std::string kind = kind_of(*vendor, device, *cls);
      if (kind.empty()) continue;
      functions.push_back(read_function(fs, bdf, kind, *vendor, device, *cls, chain_errors));
    }
    if (unreadable) {
      out.functions = Probed<std::vector<PciFunction>>::error(
          unreadable->code, "cannot tell which PCI devices are GPUs or NICs: " + unreadable->detail, unreadable_source);
    } else {
      out.functions = Probed<std::vector<PciFunction>>::ok(functions, kDevices);
    }
  } else {
    out.functions = Probed<std::vector<PciFunction>>::error(*names.error(), names.source());
  }

  // Every bridge on the chains, once, in chain order (the endpoints themselves excluded).
  std::set<std::string> seen;
  for (const PciFunction& f : functions) {
    for (std::size_t i = 0; i + 1 < f.chain.size(); ++i) {
      if (seen.insert(f.chain[i]).second) out.bridges.push_back(read_bridge(fs, f.chain[i]));
    }
  }
  for (AcsState& e : chain_errors) out.bridges.push_back(std::move(e));
  out.iommu = probe_iommu(fs, functions);
}

}  // namespace preflight
