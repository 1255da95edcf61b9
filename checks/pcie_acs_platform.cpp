// SPDX-License-Identifier: MIT
// rdma-core kernel-boot/rdma_topo (commit 691953d8d502f54088f776c5ba2aeed0a5ac945d) in C++, as far as
// topo.pcie_acs needs it: pci_device_types (its device types by vendor:device), __detect_topo_type,
// __get_nvcx_complex and NVCX_DMA_Complex.compute_acs (L663-694), __get_nvcx_inline_complex and
// NVCX_Inline_Complex.compute_acs (L802-842), PCITopo.compute_acs for every other port.
#include "checks/pcie_acs_platform.hpp"

#include <algorithm>
#include <array>

namespace preflight::pcie_acs_platform {
namespace {

struct TypeById {
  std::string_view vendor_device;
  std::string_view type;
};

// rdma_topo's pci_device_types, in its order (the first match wins); a GPU is "nvgpu" by vendor and
// class, which the probe's kind "gpu" already is.
constexpr std::array<TypeById, 13> kTypes = {{
    {"10de:22b1", "grace_rp"},
    {"10de:22b2", "grace_rp"},
    {"10de:22b8", "grace_rp"},
    {"10de:2f95", "vera_rp"},
    {"10de:2f96", "vera_rp"},
    {"15b3:1021", "cx_nic"},  // ConnectX-7
    {"15b3:1023", "cx_nic"},  // ConnectX-8
    {"15b3:1025", "cx_nic"},  // ConnectX-9
    {"15b3:a2dc", "bf3_nic"},
    {"15b3:2100", "cx_dma"},      // ConnectX-8 DMA Controller
    {"15b3:197b", "bf3_switch"},  // upstream/downstream ports of a BlueField-3 switch
    {"15b3:197c", "cx_switch"},   // upstream/downstream ports of a ConnectX switch
    {"15b3:1979", "cx_switch"},
}};

std::string_view type_by_id(std::string_view vendor_device) {
  for (const TypeById& t : kTypes) {
    if (t.vendor_device == vendor_device) return t.type;
  }
  return {};
}

/// The ports rdma_topo sets on every platform it knows (PCITopo.compute_acs).
bool nvidia_port(std::string_view type) {
  return type == "cx_switch" || type == "bf3_switch" || type == "grace_rp" || type == "vera_rp";
}

/// The facts, indexed: each bridge's device type, by bus id.
struct Topo {
  const std::vector<PciFunction>& fns;
  std::map<std::string, std::string> types;
  std::map<std::string, const AcsState*> states;

  std::string_view type(const std::string& bus_id) const {
    const auto it = types.find(bus_id);
    return it == types.end() ? std::string_view() : std::string_view(it->second);
  }
};

Topo index_topo(const std::vector<PciFunction>& fns, const std::vector<AcsState>& bridges) {
  Topo t{fns, {}, {}};
  for (const AcsState& s : bridges) t.states[s.bus_id] = &s;
  for (const PciFunction& f : fns) {
    for (std::size_t i = 0; i + 1 < f.chain.size(); ++i) {
      const auto it = t.states.find(f.chain[i]);
      t.types[f.chain[i]] = bridge_type(it == t.states.end() ? "" : it->second->vendor_device, i == 0);
    }
  }
  for (const AcsState& s : bridges) t.types.emplace(s.bus_id, bridge_type(s.vendor_device, false));
  return t;
}

bool is_cx_nic(const PciFunction& f) { return type_by_id(f.vendor_device) == "cx_nic"; }

/// True when the bridge `bus_id` is above `f`.
bool below(const PciFunction& f, const std::string& bus_id) {
  if (f.chain.size() < 2) return false;
  const auto last = f.chain.end() - 1;  // the function itself
  return std::find(f.chain.begin(), last, bus_id) != last;
}

/// The bridge `up` steps above a function: 1 its parent; "" past the root port.
std::string above(const PciFunction& f, std::size_t up) {
  return up < f.chain.size() ? f.chain[f.chain.size() - 1 - up] : std::string();
}

Platform detect(const Topo& t) {
  bool dma = false, numa = false, gpu = false, cx_nic = false, cx_switch = false;
  for (const PciFunction& f : t.fns) {
    dma = dma || f.kind == "dma";
    if (f.kind == "gpu") {
      gpu = true;
      // Directly below a root port: its parent is the first bridge of its chain.
      numa = numa || (f.chain.size() == 2 && t.type(f.chain[0]).ends_with("_rp"));
    }
    cx_nic = cx_nic || is_cx_nic(f);
  }
  for (const auto& entry : t.types) cx_switch = cx_switch || entry.second == "cx_switch";
  if (dma) return Platform::DmaDirect;
  if (numa) return Platform::Numa;
  if (cx_switch && gpu && cx_nic) return Platform::Inline;
  return Platform::Generic;
}

/// __get_nvcx_complex: RP -> USP -> DSP -> DMA function, and the one GPU below that root port through
/// RP -> USP -> DSP1 -> USP2 -> DSP2 -> GPU, every port a ConnectX switch's. "" when it matches, else
/// which part differs.
std::string match_dma(const Topo& t, const PciFunction& dma, DmaComplex& out) {
  const std::string dsp = above(dma, 1), usp = above(dma, 2), rp = above(dma, 3);
  if (t.type(dsp) != "cx_switch" || t.type(usp) != "cx_switch" || t.type(rp) != "grace_rp") return "upstream-path";
  std::vector<const PciFunction*> gpus, others;
  for (const PciFunction& f : t.fns) {
    if (&f == &dma || !below(f, rp)) continue;
    (f.kind == "gpu" ? gpus : others).push_back(&f);
  }
  if (gpus.size() != 1) return "gpu-count";
  const PciFunction& gpu = *gpus.front();
  const std::string dsp1 = above(gpu, 3);
  if (t.type(above(gpu, 1)) != "cx_switch" || t.type(above(gpu, 2)) != "cx_switch" || t.type(dsp1) != "cx_switch" ||
      above(gpu, 4) != usp) {
    return "gpu-path";
  }
  if (!others.empty()) return "other-function";  // rdma_topo: nothing else below the root port
  out = DmaComplex{&dma, &gpu, dma.chain.front(), usp, dsp, dsp1};
  return {};
}

void plan_dma(const Topo& t, AcsPlan& p) {
  for (const PciFunction& f : t.fns) {
    if (f.kind != "dma") continue;
    DmaComplex c;
    const std::string reason = match_dma(t, f, c);
    if (reason.empty()) {
      p.dma.push_back(c);
    } else {
      p.unmatched.push_back({&f, reason});
    }
  }
  if (!p.unmatched.empty()) {
    for (const auto& [bus_id, type] : p.types) {
      const auto it = t.states.find(bus_id);
      if (nvidia_port(type) && (it == t.states.end() || it->second->state != "no_acs")) p.unjudged.insert(bus_id);
    }
    p.dma.clear();
    return;
  }
  for (const DmaComplex& c : p.dma) {
    p.expected[c.dma_dsp] = {"xx110x1", Role::DmaDsp, c.dma->bus_id};         // UF CR SV on, RR off
    p.expected[c.gpu_dsp] = {"xx101x1", Role::GpuDsp, c.gpu->bus_id};         // UF RR SV on, CR off
    p.expected[c.root_port] = {"xx111x0", Role::SegmentRoot, c.dma->bus_id};  // SV off: one IOMMU group
  }
}

/// __get_nvcx_inline_complex: GPU -> DSP2 -> USP2 -> DSP1 -> shared USP1 (ConnectX switch ports) below
/// a generic root port, a ConnectX NIC below USP1. False when the GPU's path is not that.
bool plan_inline_gpu(const Topo& t, const PciFunction& gpu, bool virt, AcsPlan& p) {
  if (gpu.chain.size() < 6 || t.type(gpu.chain.front()) != "generic_rp") return false;
  for (std::size_t up = 1; up <= 4; ++up) {
    if (t.type(above(gpu, up)) != "cx_switch") return false;
  }
  const std::string usp1 = above(gpu, 4), dsp1 = above(gpu, 3);
  const PciFunction* nic = nullptr;
  for (const PciFunction& f : t.fns) {
    if (is_cx_nic(f) && below(f, usp1) && (nic == nullptr || f.bus_id < nic->bus_id)) nic = &f;
  }
  if (nic == nullptr) return false;
  const auto at = std::find(nic->chain.begin(), nic->chain.end(), usp1);
  if (at + 2 >= nic->chain.end()) return false;  // the NIC's own downstream port below USP1
  const std::string& nic_dsp = *(at + 1);
  const std::string& rp = gpu.chain.front();
  if (virt) {
    p.expected[nic_dsp] = {"1x111x1", Role::NicDsp, nic->bus_id};
    p.expected[dsp1] = {std::string(kernel_acs_isolated(t.type(dsp1))), Role::GpuDsp, gpu.bus_id};
    p.expected[rp] = {std::string(kernel_acs_isolated(t.type(rp))), Role::RootPort, gpu.bus_id};
  } else {
    p.expected[nic_dsp] = {"xx000x0", Role::NicDsp, nic->bus_id};
    p.expected[dsp1] = {"xx000x0", Role::GpuDsp, gpu.bus_id};
    p.expected[rp] = {"xx000x0", Role::RootPort, gpu.bus_id};
  }
  return true;
}

/// Virtualised when every ConnectX NIC has ATS (__auto_detect_virt); nullopt when one is not known,
/// judged as not virtualised. False from `consistent` when they differ: rdma_topo then refuses.
std::optional<bool> inline_virt(const Topo& t, bool& consistent) {
  std::optional<bool> all;
  bool unknown = false;
  consistent = true;
  for (const PciFunction& f : t.fns) {
    if (!is_cx_nic(f)) continue;
    if (!f.ats) {
      unknown = true;
      continue;
    }
    if (all && *all != *f.ats) consistent = false;
    all = f.ats;
  }
  return unknown ? std::nullopt : all;
}

bool plan_inline(const Topo& t, AcsPlan& p) {
  bool consistent = true;
  p.virt = inline_virt(t, consistent);
  if (!consistent) return false;
  for (const PciFunction& f : t.fns) {
    if (f.kind == "gpu" && !plan_inline_gpu(t, f, p.virt.value_or(false), p)) return false;
  }
  return true;
}

/// PCITopo.compute_acs: every other ConnectX/BlueField switch port and Grace/Vera root port with ACS,
/// isolated as the kernel sets it on DMA-direct and NUMA-based platforms and virtualised inline ones,
/// else redirect off.
void plan_others(const Topo& t, AcsPlan& p) {
  const bool isolated = p.platform != Platform::Inline || p.virt.value_or(false);
  for (const auto& [bus_id, type] : p.types) {
    if (!nvidia_port(type) || p.expected.count(bus_id) != 0) continue;
    const auto it = t.states.find(bus_id);
    if (it != t.states.end() && it->second->state == "no_acs") continue;
    p.expected[bus_id] = {isolated ? std::string(kernel_acs_isolated(type)) : "xx000x0", Role::Other, {}};
  }
}

}  // namespace

std::string bridge_type(std::string_view vendor_device, bool root_port) {
  const std::string_view type = type_by_id(vendor_device);
  if (!type.empty()) return std::string(type);
  return root_port ? "generic_rp" : "bridge";
}

std::string_view kernel_acs_isolated(std::string_view device_type) {
  return device_type == "vera_rp" ? "xx101x1" : "xx111x1";
}

AcsPlan plan(const std::vector<PciFunction>& functions, const std::vector<AcsState>& bridges) {
  const Topo t = index_topo(functions, bridges);
  AcsPlan p;
  p.types = t.types;
  const auto no_opinion = [&t] {  // rdma_topo has none: the ordinary rule judges every bridge
    AcsPlan none;
    none.types = t.types;
    return none;
  };
  p.platform = detect(t);
  if (p.platform == Platform::DmaDirect) {
    plan_dma(t, p);
    if (!p.unmatched.empty()) return p;
  } else if (p.platform == Platform::Inline && !plan_inline(t, p)) {
    return no_opinion();  // rdma_topo does not support it (TopoNotSupportedError)
  } else if (p.platform == Platform::Generic) {
    return p;
  }
  plan_others(t, p);
  // No port rdma_topo sets (an x86 node with a GPU on a root port): no opinion.
  return p.expected.empty() ? no_opinion() : p;
}

}  // namespace preflight::pcie_acs_platform
