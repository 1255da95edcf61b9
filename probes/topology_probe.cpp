// SPDX-License-Identifier: MIT
// The machine's topology through hwloc, with the important I/O devices kept: NUMA nodes and their
// CPUs, and every GPU and NIC with the chain of objects above it. The
// topology is the live machine's, or another node's `lstopo --of xml` export given with
// --topology-xml. PCI devices are found by walking every PCI object, never by looking a bus id up:
// hand-edited or buggy exports can hold two devices with one bus id.
#include <hwloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

constexpr int kMaxBits = 1 << 20;  // bound on bitmap walks (an infinite bitmap stops here)

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::vector<int> bits(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  if (set == nullptr) return out;
  for (int i = hwloc_bitmap_first(set); i >= 0 && i < kMaxBits; i = hwloc_bitmap_next(set, i)) out.push_back(i);
  return out;
}

std::string hex(unsigned value, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*x", width, value);
  return buf;
}

std::string bus_id(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p) {
  return hex(p.domain, 4) + ":" + hex(p.bus, 2) + ":" + hex(p.dev, 2) + "." + hex(p.func, 1);
}

std::string info(hwloc_obj_t obj, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(obj, name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string subtype(hwloc_obj_t obj) { return obj->subtype == nullptr ? std::string() : std::string(obj->subtype); }

bool is_host_bridge(hwloc_obj_t obj) {
  return obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

std::string host_bridge_range(hwloc_obj_t obj) {
  const auto& d = obj->attr->bridge.downstream.pci;
  return hex(d.domain, 4) + ":[" + hex(d.secondary_bus, 2) + "-" + hex(d.subordinate_bus, 2) + "]";
}

/// "Package:L#0", "Group:L#3": unique within the topology (type + logical index).
std::string logical_id(hwloc_obj_t obj) {
  return std::string(hwloc_obj_type_string(obj->type)) + ":L#" + std::to_string(obj->logical_index);
}

std::string hop_kind(hwloc_obj_t obj) {
  switch (obj->type) {
    case HWLOC_OBJ_MACHINE: return "machine";
    case HWLOC_OBJ_PACKAGE: return "package";
    case HWLOC_OBJ_DIE: return "die";
    case HWLOC_OBJ_NUMANODE: return "numa";
    default: return "group";  // Group, or a cache/core that I/O hangs off on some platforms
  }
}

TopoHop hop(std::string kind, std::string id) {
  TopoHop h;
  h.kind = std::move(kind);
  h.id = std::move(id);
  return h;
}

struct Walker {
  std::map<std::string, int> host_bridge_ranges;  // range -> how many host bridges have it

  /// From the root down to the device's parent (the device excluded).
  std::vector<TopoHop> path(hwloc_obj_t dev) const {
    std::vector<TopoHop> up;
    int guard = 0;
    for (hwloc_obj_t o = dev->parent; o != nullptr && guard < 4096; o = o->parent, ++guard) {
      if (o->type == HWLOC_OBJ_BRIDGE) {
        if (is_host_bridge(o)) {
          const std::string range = host_bridge_range(o);
          const auto it = host_bridge_ranges.find(range);
          std::string id = "HostBridge:" + range;
          if (it != host_bridge_ranges.end() && it->second > 1) id += "#" + std::to_string(o->gp_index);
          up.push_back(hop("host_bridge", std::move(id)));
        } else {
          up.push_back(hop("pci_bridge", bus_id(o->attr->bridge.upstream.pci)));
        }
      } else if (o->type == HWLOC_OBJ_PCI_DEVICE || o->type == HWLOC_OBJ_OS_DEVICE || o->type == HWLOC_OBJ_MISC) {
        continue;  // not a hop of its own
      } else {
        up.push_back(hop(hop_kind(o), logical_id(o)));
      }
    }
    return {up.rbegin(), up.rend()};
  }
};

std::string describe_ancestor(hwloc_obj_t anc) {
  std::string s = std::string(hwloc_obj_type_string(anc->type)) + " L#" + std::to_string(anc->logical_index);
  if (anc->os_index != HWLOC_UNKNOWN_INDEX && anc->type != HWLOC_OBJ_MACHINE && anc->type != HWLOC_OBJ_GROUP) {
    s += " (P#" + std::to_string(anc->os_index) + ")";
  }
  return s;
}

/// A NUMA node without CPUs of its own: hwloc gives memory-only nodes their parent's cpuset, so GPU
/// memory exposed as NUMA (POWER9 + V100, Grace Hopper) is told by its subtype or its PCI bus id.
bool is_cpuless(hwloc_obj_t node) {
  return node->cpuset == nullptr || hwloc_bitmap_iszero(node->cpuset) || subtype(node) == "GPUMemory" ||
         !info(node, "PCIBusID").empty();
}

bool is_nvswitch(hwloc_obj_t pci) {
  const auto& p = pci->attr->pcidev;
  return subtype(pci) == "NVSwitch" || (p.vendor_id == 0x10de && p.class_id == 0x0680);
}

/// The live machine is read by the core backend from sysfs alone. The components that would add
/// nothing there, or call into a GPU driver or a display server inside preflight's own process
/// (where no deadline guards them), are left out: "pci" (libpciaccess repeats sysfs and leaves its
/// allocations behind), "opencl" (clGetPlatformIDs initialises NVIDIA's OpenCL driver), "gl"
/// (connects to the X displays), and "cuda", "nvml", "rsmi", "levelzero" where a hwloc build has
/// them. GPUs are found by their PCI class; NVIDIA's view reaches preflight through its helpers. A
/// name this hwloc does not know is refused with EINVAL, which changes nothing.
void skip_driver_components(hwloc_topology_t topo) {
  for (const char* name : {"pci", "opencl", "gl", "cuda", "nvml", "rsmi", "levelzero"}) {
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);
  }
}

/// The PCI device an object stands for (an OS device such as nvml0 stands for its parent), or nullptr.
hwloc_obj_t pci_of(hwloc_obj_t o) {
  if (o != nullptr && o->type == HWLOC_OBJ_OS_DEVICE) o = o->parent;
  return o != nullptr && o->type == HWLOC_OBJ_PCI_DEVICE ? o : nullptr;
}

bool is_gpu_pci(hwloc_obj_t pci) {
  const auto& p = pci->attr->pcidev;
  if ((p.vendor_id == 0x10de && (p.class_id >> 8) == 0x03) || p.class_id == 0x0302) return true;
  for (hwloc_obj_t c = pci->io_first_child; c != nullptr; c = c->next_sibling) {
    if (c->type == HWLOC_OBJ_OS_DEVICE && c->name != nullptr &&
        (std::string_view(c->name).starts_with("nvml") || std::string_view(c->name).starts_with("cuda"))) {
      return true;
    }
  }
  return false;
}

/// hwloc's "NVLinkBandwidth" matrix (NVML's view, recorded in exports of NVIDIA machines): the
/// links of each GPU to other GPUs, NVSwitches and CPUs.
void fill_nvlinks(hwloc_topology_t topo, TopologyFacts& t) {
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &dist, 0) != 0 || nr == 0 || dist == nullptr) return;
  struct Release {
    hwloc_topology_t topo;
    hwloc_distances_s* d;
    ~Release() { hwloc_distances_release(topo, d); }
  } release{topo, dist};
  const unsigned n = std::min(dist->nbobjs, 4096u);
  auto name_of = [&](hwloc_obj_t o, std::string& kind) -> std::string {
    if (hwloc_obj_t pci = pci_of(o)) {
      kind = is_nvswitch(pci) ? "nvswitch" : is_gpu_pci(pci) ? "gpu" : "other";
      return bus_id(pci->attr->pcidev);
    }
    if (o != nullptr && o->type == HWLOC_OBJ_PACKAGE) {
      kind = "cpu";
      return "Package:L#" + std::to_string(o->logical_index);
    }
    kind = "other";
    return o != nullptr ? std::string(hwloc_obj_type_string(o->type)) + ":L#" + std::to_string(o->logical_index) : "?";
  };
  for (unsigned i = 0; i < n; ++i) {
    std::string kind_a;
    const std::string a = name_of(dist->objs[i], kind_a);
    if (kind_a != "gpu") continue;
    for (unsigned j = 0; j < n; ++j) {
      if (i == j) continue;
      const std::uint64_t bw = dist->values[static_cast<std::size_t>(i) * dist->nbobjs + j];
      if (bw == 0) continue;
      TopoLink link;
      link.a = a;
      link.b = name_of(dist->objs[j], link.b_kind);
      link.bandwidth = bw;
      t.nvlinks.push_back(std::move(link));
    }
  }
}

void fill(hwloc_topology_t topo, TopologyFacts& t) {
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  t.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  // Every PU the topology holds: the allowed set on the live machine; for an export loaded with its
  // disallowed parts, every PU of that node (the exporting process's own cpuset says nothing).
  t.cpus = bits(root->cpuset);

  std::vector<int> cpuless;
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); n != nullptr;
       n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) {
    NumaNode node;
    node.os_index = static_cast<int>(n->os_index);
    if (!is_cpuless(n)) node.cpus = bits(n->cpuset);
    node.memory_bytes = n->attr->numanode.local_memory;
    node.subtype = subtype(n);
    if (node.cpus.empty()) cpuless.push_back(node.os_index);
    t.numa_nodes.push_back(std::move(node));
  }
  if (!cpuless.empty()) {
    t.notes.push_back("NUMA node(s) " + range_list(cpuless) +
                      " have no CPUs (GPU or other device memory): never taken as a device's NUMA node");
  }

  Walker w;
  for (hwloc_obj_t b = hwloc_get_next_bridge(topo, nullptr); b != nullptr; b = hwloc_get_next_bridge(topo, b)) {
    if (is_host_bridge(b)) ++w.host_bridge_ranges[host_bridge_range(b)];
  }

  int pci_guard = 0;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr && pci_guard < 100000;
       pci = hwloc_get_next_pcidev(topo, pci), ++pci_guard) {
    const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p = pci->attr->pcidev;
    const std::string bdf = bus_id(p);
    const unsigned cls = p.class_id;
    if (is_nvswitch(pci)) continue;  // NVLink switches: neither a GPU nor a NIC

    std::vector<std::string> os_devices, rdma_devices;
    bool gpu_osdev = false, net_osdev = false;
    for (hwloc_obj_t c = pci->io_first_child; c != nullptr; c = c->next_sibling) {
      if (c->type != HWLOC_OBJ_OS_DEVICE || c->name == nullptr) continue;
      const std::string name = c->name;
      os_devices.push_back(name);
      if (name.starts_with("nvml") || name.starts_with("cuda")) gpu_osdev = true;
      const hwloc_obj_osdev_type_t ot = c->attr->osdev.type;
      if (ot == HWLOC_OBJ_OSDEV_NETWORK || ot == HWLOC_OBJ_OSDEV_OPENFABRICS) net_osdev = true;
      if (ot == HWLOC_OBJ_OSDEV_OPENFABRICS) rdma_devices.push_back(name);
    }

    const bool gpu = (p.vendor_id == 0x10de && (cls >> 8) == 0x03) || cls == 0x0302 || gpu_osdev;
    const bool nic = !gpu && ((cls >> 8) == 0x02 || cls == 0x0c06 || net_osdev);
    if (p.vendor_id == 0 && p.device_id == 0) {
      t.notes.push_back(
          "PCI device " + bdf + " reports vendor:device 0000:0000 (class " + hex(cls, 4) + ")" +
          ((cls >> 8) == 0x03 && !gpu ? ": whether it is an NVIDIA GPU cannot be told; not listed" : std::string()));
    }
    if (!gpu && !nic) continue;

    PciEndpoint e;
    e.kind = gpu ? "gpu" : "nic";
    e.bus_id = bdf;
    e.vendor_device = hex(p.vendor_id, 4) + ":" + hex(p.device_id, 4);
    e.class_id = hex(cls, 4);
    const std::string vendor = info(pci, "PCIVendor"), device = info(pci, "PCIDevice");
    e.name = std::string(trim(vendor + " " + device));
    e.os_devices = std::move(os_devices);
    e.rdma_devices = std::move(rdma_devices);
    e.path = w.path(pci);

    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, pci);
    if (anc != nullptr) {
      e.local_cpus = bits(anc->cpuset);
      for (int os : bits(anc->nodeset)) {
        hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(os));
        if (node != nullptr && !is_cpuless(node)) e.numa_nodes.push_back(os);
      }
      if (e.local_cpus.empty()) {
        t.notes.push_back(std::string(gpu ? "GPU " : "NIC ") + bdf + " hangs off " + describe_ancestor(anc) +
                          ", which has no CPU in the allowed set (a cpuset cgroup or a disallowed socket): its "
                          "NUMA node and local CPUs are unknown");
      }
    }
    (gpu ? t.gpus : t.nics).push_back(std::move(e));
  }
  fill_nvlinks(topo, t);
  // Bus-id order (hwloc's is depth-first); a duplicated bus id keeps both entries.
  const auto by_bus = [](const PciEndpoint& a, const PciEndpoint& b) { return a.bus_id < b.bus_id; };
  std::stable_sort(t.gpus.begin(), t.gpus.end(), by_bus);
  std::stable_sort(t.nics.begin(), t.nics.end(), by_bus);
}

Probed<TopologyFacts> probe(const ProbeContext& ctx) {
  std::string xml = ctx.options.topology_xml;
  bool from_capture = false;
  if (xml.empty() && !ctx.fs.is_live()) {
    // A captured node's topology is its own hwloc export, never this machine's.
    const CapturedFacts& captured = ctx.captured();
    if (captured.topology_xml.empty()) {
      return Probed<TopologyFacts>::error(
          ProbeErrc::Unsupported, captured.missing("topology", "hwloc XML export") + "; pass --topology-xml FILE",
          "--sysroot " + ctx.fs.root());
    }
    xml = captured.topology_xml;
    from_capture = true;
  }
  const std::string source = xml.empty() ? std::string("this machine (hwloc ") + HWLOC_VERSION + ")"
                             : from_capture
                                 ? "--sysroot " + ctx.fs.root() + "/topology.xml (the captured node's hwloc export)"
                                 : "--topology-xml " + xml;
  if (!xml.empty()) {
    struct stat st {};
    if (::stat(xml.c_str(), &st) != 0) {
      const int err = errno;
      ProbeError pe = probe_error_from_errno(err);
      pe.detail = std::string("cannot open the file: ") + std::strerror(err);
      return Probed<TopologyFacts>::error(std::move(pe), source);
    }
    if (!S_ISREG(st.st_mode)) {
      return Probed<TopologyFacts>::error(ProbeErrc::NotFound, "not a regular file", source);
    }
    if (::access(xml.c_str(), R_OK) != 0) {
      const int err = errno;
      ProbeError pe = probe_error_from_errno(err);
      pe.detail = std::string("cannot read the file: ") + std::strerror(err);
      return Probed<TopologyFacts>::error(std::move(pe), source);
    }
  }

  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0 || raw == nullptr) {
    return Probed<TopologyFacts>::error(ProbeErrc::ApiError,
                                        std::string("hwloc_topology_init failed: ") + std::strerror(errno), source);
  }
  TopologyPtr topo(raw);
  // The library keeps no I/O object by default: the filter must be set before loading.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (xml.empty()) {
    skip_driver_components(raw);
  } else {
    // Another node's export: the exporting process's allowed set is irrelevant here.
    hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    errno = 0;
    if (hwloc_topology_set_xml(raw, xml.c_str()) != 0) {
      const int err = errno;
      return Probed<TopologyFacts>::error(ProbeErrc::ParseError,
                                          std::string("hwloc cannot read the file as a topology XML (") +
                                              (err != 0 ? std::strerror(err) : "no detail") + "); hwloc " +
                                              HWLOC_VERSION + " reads `lstopo --of xml` exports of format v1 and v2",
                                          source);
    }
  }
  errno = 0;
  if (hwloc_topology_load(raw) != 0) {
    const int err = errno;
    const std::string why = err != 0 ? std::strerror(err) : "no detail";
    if (!xml.empty()) {
      return Probed<TopologyFacts>::error(ProbeErrc::ParseError,
                                          "hwloc could not load the file as a topology (" + why + "); hwloc " +
                                              HWLOC_VERSION + " reads `lstopo --of xml` exports of format v1 and v2",
                                          source);
    }
    return Probed<TopologyFacts>::error(ProbeErrc::ApiError, "hwloc_topology_load failed: " + why, source);
  }

  TopologyFacts t;
  t.source = source;
  // A capture's export describes the node its other facts come from: judged like this machine's.
  t.this_system = from_capture || (xml.empty() && hwloc_topology_is_thissystem(raw) != 0);
  fill(raw, t);
  if (from_capture)
    t.notes.push_back("the topology is the captured node's own hwloc export, judged with its other captured facts");
  if (xml.empty() && !t.this_system) {
    t.notes.push_back(
        "hwloc did not read this machine (HWLOC_XMLFILE, HWLOC_FSROOT or HWLOC_COMPONENTS in the "
        "environment redirect it)");
  }
  return Probed<TopologyFacts>::ok(std::move(t), source);
}

}  // namespace

void probe_topology(const ProbeContext& ctx, RankFacts& facts) { facts.topology = probe(ctx); }

std::string adopt_topology(const ProbeContext& ctx, const RankFacts& leader, RankFacts& facts) {
  // hwloc reads the machine unless its variables point it elsewhere (HWLOC_XMLFILE, HWLOC_FSROOT).
  if (std::string why = env_differs(ctx.env, leader.env, {"HWLOC_*"}); !why.empty()) return why;
  facts.topology = leader.topology;
  return {};
}

std::string export_topology_xml(const std::string& file) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0 || raw == nullptr)
    return std::string("hwloc_topology_init: ") + std::strerror(errno);
  TopologyPtr topo(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  skip_driver_components(raw);
  errno = 0;
  if (hwloc_topology_load(raw) != 0) return std::string("hwloc_topology_load: ") + std::strerror(errno);
  errno = 0;
  if (hwloc_topology_export_xml(raw, file.c_str(), 0) != 0) {
    return std::string("hwloc_topology_export_xml: ") + (errno != 0 ? std::strerror(errno) : "failed");
  }
  return {};
}

}  // namespace preflight
