// SPDX-License-Identifier: MIT
// net.gpu_nic_affinity: each GPU's nearest NIC among the ones NCCL will use, by PCIe path class
// (core/pci_topology.hpp; the classes of `nvidia-smi topo -m`, NCCL's own in src/graph/paths.cc).
// A GPU whose nearest NIC sits across the socket (SYS) sends every inter-node
// byte through the CPU interconnect and gets no GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL
// defaults to PXB); several GPUs crowding one NIC while another NIC has no GPU near it halves the
// bandwidth those GPUs get.
#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "checks/check.hpp"
#include "core/env_grammar.hpp"
#include "core/nccl_names.hpp"
#include "core/nccl_socket.hpp"
#include "core/pci_topology.hpp"
#include "core/text.hpp"

namespace preflight {
namespace net_gpu_nic_affinity_check {
namespace {

#define PREFLIGHT_TOPOLOGY_EXPORT                                                                               \
  "export the node's topology with `lstopo-no-graphics --of xml > node.xml` (Debian/Ubuntu package hwloc) and " \
  "pass `--topology-xml node.xml`"

/// RDMA device names as the kernel drivers register them (hwloc's OpenFabrics OS devices).
bool rdma_name(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {"mlx4_",  "mlx5_", "hfi1_",  "qib",   "bnxt_re", "irdma", "i40iw",
                                                   "efa_",   "erdma", "cxgb4_", "qedr",  "ocrdma",  "hns_",  "mana_",
                                                   "ionic_", "rocep", "iwp",    "rdmap", "siw",     "rxe"};
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](std::string_view p) { return name.starts_with(p); });
}

struct Nic {
  const PciEndpoint* e = nullptr;
  std::vector<std::string> rdma;     // mlx5_0
  std::vector<std::string> netdevs;  // ib0, eth2
  bool as_rdma = true;               // judged as an RDMA NIC (else by its IP interfaces)
  std::string label() const {
    if (as_rdma && !rdma.empty()) return rdma.front();
    if (!netdevs.empty()) return netdevs.front();
    if (!rdma.empty()) return rdma.front();
    return "NIC " + e->bus_id;
  }
};

std::string numa_text(const std::vector<int>& nodes) {
  return nodes.empty() ? std::string("NUMA ?") : "NUMA " + cpu_list(nodes);
}

struct Selection {
  std::vector<Nic> used;
  std::string rule;     // how they were chosen
  bool by_hca = false;  // NCCL_IB_HCA restricted them
  bool rdma = false;    // they are RDMA NICs
};

Selection used_nics(const RankFacts& f, const std::vector<Nic>& all) {
  Selection s;
  std::vector<Nic> rdma;
  for (const Nic& n : all) {
    if (!n.rdma.empty()) rdma.push_back(n);
  }
  const std::optional<NcclSetting> disable = nccl_setting(f, "NCCL_IB_DISABLE");
  const bool ib_disabled = disable && nccl_int_value(disable->value).value_or(0) != 0;
  std::string why_not_rdma;
  if (ib_disabled) {
    why_not_rdma = "NCCL_IB_DISABLE=" + disable->value + " (" + disable->origin + ")";
  } else if (!rdma.empty()) {
    const std::optional<NcclSetting> hca = nccl_setting(f, "NCCL_IB_HCA");
    if (hca && !hca->value.empty()) {
      const NcclNameList list = parse_nccl_names(hca->value);
      for (const Nic& n : rdma) {
        if (std::any_of(n.rdma.begin(), n.rdma.end(), [&](const std::string& d) { return nccl_selects(list, d); })) {
          s.used.push_back(n);
        }
      }
      s.rule = "the RDMA NICs NCCL_IB_HCA=" + hca->value + " selects (" + hca->origin + ")";
      s.by_hca = true;
      s.rdma = true;
      if (!s.used.empty()) return s;
      s.by_hca = false;
      s.rdma = false;
      why_not_rdma = "NCCL_IB_HCA=" + hca->value + " selects none of the RDMA NICs";
    } else {
      s.used = rdma;
      s.rule = "every RDMA NIC, NCCL_IB_HCA unset";
      s.rdma = true;
      return s;
    }
  } else {
    why_not_rdma = "no RDMA NIC in the topology";
  }
  // NCCL's socket transport: the IP interfaces, as NCCL_SOCKET_IFNAME selects them.
  const std::optional<NcclSetting> ifname = nccl_setting(f, "NCCL_SOCKET_IFNAME");
  const bool filtered = ifname && ifname->value.size() > 1;  // NCCL ignores a 1-character value
  const NcclNameList list = parse_nccl_names(filtered ? ifname->value : std::string());
  std::vector<Nic> named, picked;
  for (const Nic& n : all) {
    if (n.netdevs.empty()) continue;
    named.push_back(n);
    if (!filtered ||
        std::any_of(n.netdevs.begin(), n.netdevs.end(), [&](const std::string& d) { return nccl_selects(list, d); })) {
      picked.push_back(n);
    }
  }
  if (!picked.empty()) {
    s.used = std::move(picked);
    s.rule = "the IP NICs" + (filtered ? " NCCL_SOCKET_IFNAME=" + ifname->value + " selects" : std::string()) + ", " +
             why_not_rdma;
  } else {
    s.used = all;
    s.rule = "every NIC, " + why_not_rdma + " and " +
             (named.empty() ? std::string("the topology names no network interface")
                            : "NCCL_SOCKET_IFNAME=" + ifname->value + " matches none of the NICs' interfaces");
  }
  for (Nic& n : s.used) n.as_rdma = false;
  return s;
}

nlohmann::json nic_json(const Nic& n) {
  return {
      {"nic", n.label()}, {"bus_id", n.e->bus_id}, {"os_devices", n.e->os_devices}, {"numa_nodes", n.e->numa_nodes}};
}

#define PREFLIGHT_ACROSS_SOCKET                                                                                      \
  "{far} of {gpus} GPUs {reach} nearest NIC only across the socket: {pairs} — inter-node traffic crosses the CPU " \
  "interconnect and gets no GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL defaults to PXB)"
#define PREFLIGHT_BIND_FIX                                                                                         \
  "Bind each rank to the NUMA node of its GPU (`numactl --cpunodebind={node} --membind={node} <command>` for the " \
  "GPUs on node {node}, or Open MPI `--map-by numa --bind-to numa`) so the bounce through host memory stays on "   \
  "that socket. `NCCL_NET_GDR_LEVEL=SYS` forces GPUDirect RDMA across the socket: set it only where a measured "   \
  "all_reduce shows it helps."

constexpr FindingSpec kNoGpu = {"net.gpu_nic_affinity/no-gpu", Status::Skip, "no NVIDIA GPU in the topology ({source})",
                                ""};
constexpr FindingSpec kNoNic = {"net.gpu_nic_affinity/no-nic", Status::Skip,
                                "no NIC in the topology ({source}): nothing to place the {gpus} GPUs against", ""};
constexpr FindingSpec kAcrossSocket = {
    "net.gpu_nic_affinity/across-socket", Status::Warn, PREFLIGHT_ACROSS_SOCKET,
    "Give the socket of these GPUs ({numa}) a NIC of its own: move or add {slot}. " PREFLIGHT_BIND_FIX};
constexpr FindingSpec kNearerHcaLeftOut = {"net.gpu_nic_affinity/nearer-hca-left-out", Status::Warn,
                                           PREFLIGHT_ACROSS_SOCKET,
                                           "NCCL_IB_HCA leaves out {left_out}, which is nearer to these GPUs: `export "
                                           "NCCL_IB_HCA=={hcas}`. " PREFLIGHT_BIND_FIX};
constexpr FindingSpec kCrowdedNic = {
    "net.gpu_nic_affinity/crowded-nic", Status::Warn,
    "{crowded}, while {idle} {verb} nearest to no GPU — those GPUs split one NIC's bandwidth",
    "Spread the NICs over the GPUs' PCIe switches or sockets (one NIC per GPU or per GPU pair), or, if {idle} is not "
    "meant for this job (storage, management), leave it out with `export NCCL_IB_HCA=^={idle_list}`."};
constexpr FindingSpec kNearestNics = {"net.gpu_nic_affinity/nearest-nics", Status::Pass,
                                      "each GPU's nearest NIC NCCL will use ({rule}): {nearest}", ""};
#undef PREFLIGHT_ACROSS_SOCKET
#undef PREFLIGHT_BIND_FIX

// The topology could not be read: the fix by the probe's error (topology_unreadable).
constexpr FindingSpec kTopologyNotHere = {
    "net.gpu_nic_affinity/topology-not-here", Status::Unknown, kUnreadableMessage,
    "Run preflight on the node itself (without --sysroot), or " PREFLIGHT_TOPOLOGY_EXPORT "."};
constexpr FindingSpec kTopologyExportUnreadable = {
    "net.gpu_nic_affinity/topology-export-unreadable", Status::Unknown, kUnreadableMessage,
    "Give --topology-xml a readable hwloc XML export: on the node, " PREFLIGHT_TOPOLOGY_EXPORT "."};
constexpr FindingSpec kTopologyUnreadable = {
    "net.gpu_nic_affinity/topology-unreadable", Status::Unknown, kUnreadableMessage,
    "Check that hwloc can read /sys (`lstopo-no-graphics --whole-io` must list the GPUs), or " PREFLIGHT_TOPOLOGY_EXPORT
    "."};
constexpr FindingSpec kTopologyHung = {"net.gpu_nic_affinity/topology-hung", Status::Unknown, kHungMessage,
                                       kHungProbeRemedy};
#undef PREFLIGHT_TOPOLOGY_EXPORT

constexpr std::array kFindings = {
    kTopologyNotHere, kTopologyExportUnreadable, kTopologyUnreadable, kTopologyHung, kNoGpu, kNoNic,
    kAcrossSocket,    kNearerHcaLeftOut,         kCrowdedNic,         kNearestNics};

/// The topology could not be read, by the fix its error calls for.
const FindingSpec& topology_unreadable(const Probed<TopologyFacts>& t) {
  const ProbeError* err = t.error();
  const ProbeErrc code = err != nullptr ? err->code : ProbeErrc::NotProbed;
  if (code == ProbeErrc::Unsupported) return kTopologyNotHere;
  if (code == ProbeErrc::NotFound || code == ProbeErrc::ParseError || code == ProbeErrc::PermissionDenied) {
    return kTopologyExportUnreadable;
  }
  return kTopologyUnreadable;
}

Verdict run(const CheckContext& ctx) {
  const Probed<TopologyFacts>& topo = ctx.facts.topology;
  const TopologyFacts* t = topo.value();
  if (t == nullptr) return unknown_from(topo, "the machine's topology", topology_unreadable(topo), kTopologyHung);

  nlohmann::json base = {{"source", t->source}, {"gpus", t->gpus.size()}, {"nics", t->nics.size()}};
  if (!t->notes.empty()) base["topology_notes"] = t->notes;
  if (t->gpus.empty()) return Verdict::of(kNoGpu, {{"source", t->source}}, base);
  if (t->nics.empty()) return Verdict::of(kNoNic, {{"source", t->source}, {"gpus", t->gpus.size()}}, base);

  std::vector<Nic> all;
  for (const PciEndpoint& e : t->nics) {
    Nic n;
    n.e = &e;
    for (const std::string& d : e.os_devices) {
      const bool typed = std::find(e.rdma_devices.begin(), e.rdma_devices.end(), d) != e.rdma_devices.end();
      (typed || rdma_name(d) ? n.rdma : n.netdevs).push_back(d);
    }
    all.push_back(std::move(n));
  }
  // On this machine the RDMA devices the net probe listed are authoritative for the names too.
  if (t->this_system) {
    if (const std::vector<IbDevice>* ib = ctx.facts.net.ib_devices.value()) {
      for (Nic& n : all) {
        for (auto it = n.netdevs.begin(); it != n.netdevs.end();) {
          const bool is_ib = std::any_of(ib->begin(), ib->end(), [&](const IbDevice& d) { return d.name == *it; });
          if (is_ib) {
            n.rdma.push_back(*it);
            it = n.netdevs.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
  }
  const Selection sel = used_nics(ctx.facts, all);
  std::vector<PciEndpoint> used_eps;
  for (const Nic& n : sel.used) used_eps.push_back(*n.e);
  std::vector<PciEndpoint> rdma_eps;
  std::vector<const Nic*> rdma_nics;
  for (const Nic& n : all) {
    if (!n.rdma.empty()) {
      rdma_eps.push_back(*n.e);
      rdma_nics.push_back(&n);
    }
  }

  VerdictBuilder b;
  b.evidence() = base;
  b.evidence()["selection"] = sel.rule;
  nlohmann::json used_json = nlohmann::json::array();
  for (const Nic& n : sel.used) used_json.push_back(nic_json(n));
  b.evidence()["used_nics"] = used_json;

  std::vector<double> load(sel.used.size(), 0.0);  // GPUs per used NIC (a tie splits a GPU)
  std::vector<std::vector<std::string>> near_gpus(sel.used.size());
  std::vector<std::string> lines, across;
  std::vector<std::string> add_hcas;
  std::vector<int> far_nodes;
  nlohmann::json per_gpu = nlohmann::json::array();
  for (const PciEndpoint& g : t->gpus) {
    const std::vector<NearNic> near = nearest_nics(g, used_eps);
    nlohmann::json near_json = nlohmann::json::array();
    std::vector<std::string> labels;
    for (const NearNic& nn : near) {
      const std::size_t i = static_cast<std::size_t>(nn.nic - used_eps.data());
      load[i] += 1.0 / static_cast<double>(near.size());
      near_gpus[i].push_back(g.bus_id);
      labels.push_back(sel.used[i].label());
      nlohmann::json j = nic_json(sel.used[i]);
      j["path"] = nn.path;
      near_json.push_back(std::move(j));
    }
    per_gpu.push_back({{"bus_id", g.bus_id},
                       {"numa_nodes", g.numa_nodes},
                       {"local_cpus", cpu_list(g.local_cpus)},
                       {"nearest", near_json}});
    const std::string cls = near.empty() ? std::string("?") : near.front().path;
    const std::string gpu_text = "GPU " + g.bus_id + " (" + numa_text(g.numa_nodes) + ")";
    lines.push_back(gpu_text + " → " + join(labels, "/") + " " + cls);
    if (cls != "SYS") continue;
    const Nic& nic = sel.used[static_cast<std::size_t>(near.front().nic - used_eps.data())];
    across.push_back(gpu_text + " → " + join(labels, "/") + " (" + numa_text(nic.e->numa_nodes) + ") SYS");
    for (int n : g.numa_nodes) {
      if (std::find(far_nodes.begin(), far_nodes.end(), n) == far_nodes.end()) far_nodes.push_back(n);
    }
    // An RDMA NIC that NCCL_IB_HCA leaves out but is nearer than every used one.
    for (const NearNic& better : sel.by_hca ? nearest_nics(g, rdma_eps) : std::vector<NearNic>{}) {
      if (path_rank(better.path) >= path_rank("SYS")) break;
      const Nic& bn = *rdma_nics[static_cast<std::size_t>(better.nic - rdma_eps.data())];
      if (std::find(add_hcas.begin(), add_hcas.end(), bn.label()) == add_hcas.end()) add_hcas.push_back(bn.label());
    }
  }
  b.evidence()["per_gpu"] = std::move(per_gpu);

  if (!across.empty()) {
    std::sort(far_nodes.begin(), far_nodes.end());
    nlohmann::json params = {{"far", across.size()},
                             {"gpus", t->gpus.size()},
                             {"reach", across.size() == 1 ? "reaches its" : "reach their"},
                             {"pairs", join(across, ", ")},
                             {"node", far_nodes.empty() ? std::string("N") : std::to_string(far_nodes.front())}};
    if (!add_hcas.empty()) {
      std::vector<std::string> names;
      for (const Nic& n : sel.used) names.push_back(n.label());
      for (const std::string& h : add_hcas) names.push_back(h);
      params["left_out"] = join(add_hcas, ", ");
      params["hcas"] = join(names, ",");
      b.add(kNearerHcaLeftOut, std::move(params));
    } else {
      params["numa"] = numa_text(far_nodes);
      params["slot"] = sel.rdma ? "an HCA in a slot of that socket (and list it in NCCL_IB_HCA if that is set)"
                                : "a NIC in a slot of that socket";
      b.add(kAcrossSocket, std::move(params));
    }
  }

  // Several GPUs crowding one NIC while another NIC NCCL uses has no GPU near it.
  std::vector<std::string> crowded, idle;
  for (std::size_t i = 0; i < sel.used.size(); ++i) {
    if (load[i] > 1.0 + 1e-9) {
      crowded.push_back(sel.used[i].label() + " is the nearest NIC of GPUs " + join(near_gpus[i], ", "));
    } else if (near_gpus[i].empty()) {
      idle.push_back(sel.used[i].label());
    }
  }
  if (!crowded.empty() && !idle.empty()) {
    b.add(kCrowdedNic, {{"crowded", join(crowded, "; ")},
                        {"idle", join(idle, ", ")},
                        {"verb", idle.size() == 1 ? "is" : "are"},
                        {"idle_list", join(idle, ",")}});
  }
  if (b.status() == Status::Pass) b.add(kNearestNics, {{"rule", sel.rule}, {"nearest", join(lines, ", ")}});
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  The machine's topology from hwloc (the live machine with its PCI devices, or another node's
  `lstopo --of xml` export given with --topology-xml): every NVIDIA GPU and NIC with the chain of
  packages, host bridges and PCI switches above it, and its NUMA node. The NICs NCCL will use:
  the RDMA NICs (mlx5_*, mlx4_*, ...) that NCCL_IB_HCA selects (NCCL's prefix, '^' and '='
  grammar; all of them when unset), unless NCCL_IB_DISABLE=1; without RDMA NICs, the IP NICs that
  NCCL_SOCKET_IFNAME selects. The variables come from the environment or NCCL's configuration
  files. RDMA NICs are told by their RDMA device names (and, on this machine, by
  /sys/class/infiniband). For each GPU the nearest of those NICs by PCIe path class, as
  `nvidia-smi topo -m` names it: PIX (one PCIe switch), PXB (several switches), PHB (the CPU's
  host bridge), NODE (another host bridge of the same NUMA node), SYS (across the socket
  interconnect). The evidence lists, per GPU, its NUMA node, local CPUs and nearest NICs.

Failures
  WARN     a GPU's nearest NIC is SYS ("GPU 0000:11:00.0 (NUMA 1) → mlx4_0 (NUMA 0) SYS"): its
           inter-node traffic crosses the CPU interconnect and NCCL does not use GPUDirect RDMA for
           it (NCCL_NET_GDR_LEVEL defaults to PXB), so it bounces through host memory.
  WARN     several GPUs have the same NIC as their nearest (more GPUs than equally near NICs to
           share them) while another NIC NCCL uses is nearest to no GPU: those GPUs split one NIC's
           bandwidth ("mlx5_0 is the nearest NIC of GPUs 0000:03:00.0, 0000:04:00.0, while mlx5_1
           is nearest to no GPU").
  UNKNOWN  the topology could not be read (hwloc failed, --topology-xml names a missing or
           unreadable file, or --sysroot is given without --topology-xml for a tree that is no
           `preflight capture`: a capture holds its node's hwloc export, topology.xml).
  SKIP     no NVIDIA GPU or no NIC in the topology; in the image profile (no topology).

Fix
  Use a NIC on each GPU's socket: add it to NCCL_IB_HCA where it is left out
  (`export NCCL_IB_HCA==mlx5_0,mlx5_1`), or move/add an HCA in a slot of that socket. Bind each
  rank to its GPU's NUMA node (`numactl --cpunodebind=N --membind=N`, Open MPI `--map-by numa
  --bind-to numa`). `NCCL_NET_GDR_LEVEL=SYS` forces GPUDirect RDMA across the socket: only as an
  exception a measured all_reduce justifies. Leave out NICs not meant for the job
  (`export NCCL_IB_HCA=^=mlx5_8`). To judge another node, export its topology with
  `lstopo-no-graphics --of xml > node.xml` and run `preflight --topology-xml node.xml`.)";

}  // namespace

extern const CheckSpec kNetGpuNicAffinity = {"net.gpu_nic_affinity",
                                             Scope::Node,
                                             "each GPU has a NIC on its own PCIe switch or socket",
                                             kExplain,
                                             kInNode | kInJob,
                                             "an image build has no topology",
                                             &run,
                                             "topology,net",
                                             false,
                                             {},
                                             {},
                                             nullptr,
                                             kFindings};

}  // namespace net_gpu_nic_affinity_check
}  // namespace preflight
