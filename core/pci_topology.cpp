// SPDX-License-Identifier: MIT
#include "core/pci_topology.hpp"

#include <algorithm>
#include <cctype>

#include "core/text.hpp"

namespace preflight {
namespace {

bool all_hex(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

bool is_pci_hop(const TopoHop& h) { return h.kind == "pci_bridge" || h.kind == "host_bridge"; }

/// The part of the path above the first I/O object: where the device attaches to the CPU side.
std::vector<TopoHop> cpu_side(const PciEndpoint& e) {
  std::vector<TopoHop> out;
  for (const TopoHop& h : e.path) {
    if (is_pci_hop(h)) break;
    out.push_back(h);
  }
  return out;
}

}  // namespace

std::string normalize_bus_id(std::string_view text) {
  text = trim(text);
  std::string_view domain = "0000";
  std::string_view rest = text;
  const std::vector<std::string_view> colon = split(text, ':');
  if (colon.size() == 3) {
    domain = colon[0];
    rest = text.substr(colon[0].size() + 1);
  } else if (colon.size() != 2) {
    return {};
  }
  const std::vector<std::string_view> bus_dev = split(rest, ':');
  if (bus_dev.size() != 2) return {};
  const std::string_view bus = bus_dev[0];
  std::string_view dev = bus_dev[1];
  std::string_view fn = "0";
  if (const std::size_t dot = dev.find('.'); dot != std::string_view::npos) {
    fn = dev.substr(dot + 1);
    dev = dev.substr(0, dot);
  }
  if (!all_hex(domain) || !all_hex(bus) || !all_hex(dev) || !all_hex(fn)) return {};
  // NVML prints an 8-digit domain; keep the low 4 digits when the high ones are zero.
  while (domain.size() > 4 && domain.front() == '0') domain.remove_prefix(1);
  if (domain.size() > 4 || bus.size() > 2 || dev.size() > 2 || fn.size() > 1) return {};
  auto pad = [](std::string_view s, std::size_t n) { return std::string(n - s.size(), '0') + std::string(s); };
  return to_lower(pad(domain, 4) + ":" + pad(bus, 2) + ":" + pad(dev, 2) + "." + std::string(fn));
}

std::string path_class(const PciEndpoint& a, const PciEndpoint& b) {
  if (!a.bus_id.empty() && a.bus_id == b.bus_id && a.kind == b.kind) return "X";
  std::size_t common = 0;
  while (common < a.path.size() && common < b.path.size() && a.path[common].kind == b.path[common].kind &&
         a.path[common].id == b.path[common].id) {
    ++common;
  }
  if (common > 0) {
    const TopoHop& last = a.path[common - 1];
    if (last.kind == "pci_bridge") {
      const std::size_t tail_a = a.path.size() - common;
      const std::size_t tail_b = b.path.size() - common;
      return tail_a <= 1 && tail_b <= 1 ? "PIX" : "PXB";
    }
    if (last.kind == "host_bridge") return "PHB";
  }
  // No common PCI object: the same NUMA node (or package, when nodes are not known) is NODE.
  if (!a.numa_nodes.empty() && !b.numa_nodes.empty()) {
    for (int n : a.numa_nodes) {
      if (std::find(b.numa_nodes.begin(), b.numa_nodes.end(), n) != b.numa_nodes.end()) return "NODE";
    }
    return "SYS";
  }
  const std::vector<TopoHop> ca = cpu_side(a);
  const std::vector<TopoHop> cb = cpu_side(b);
  if (!ca.empty() && !cb.empty() && ca.back().id == cb.back().id && ca.back().kind != "machine") return "NODE";
  return "SYS";
}

int path_rank(std::string_view cls) {
  if (cls == "X") return 0;
  if (cls.starts_with("NV")) return -1;
  if (cls == "PIX") return 1;
  if (cls == "PXB") return 2;
  if (cls == "PHB") return 3;
  if (cls == "NODE") return 4;
  if (cls == "SYS") return 5;
  return 99;
}

const PciEndpoint* find_endpoint(const std::vector<PciEndpoint>& endpoints, std::string_view bus_id) {
  const std::string key = normalize_bus_id(bus_id);
  if (key.empty()) return nullptr;
  for (const PciEndpoint& e : endpoints) {
    if (e.bus_id == key) return &e;
  }
  return nullptr;
}

std::vector<NearNic> nearest_nics(const PciEndpoint& gpu, const std::vector<PciEndpoint>& nics) {
  std::vector<NearNic> out;
  int best = 1000;
  for (const PciEndpoint& nic : nics) {
    std::string cls = path_class(gpu, nic);
    const int rank = path_rank(cls);
    if (rank < best) {
      best = rank;
      out.clear();
    }
    if (rank == best) out.push_back({&nic, std::move(cls)});
  }
  return out;
}

}  // namespace preflight
