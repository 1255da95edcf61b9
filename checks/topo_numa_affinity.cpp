// SPDX-License-Identifier: MIT
// topo.numa_affinity: the rank runs and allocates next to its GPU (NCCL intersects the process's CPU
// mask with the GPU's local CPUs for its threads, and logs "Affinity for GPU %d is empty, ignoring"
// when they do not meet: NCCL's src/graph/topo.cc; the verdicts are in docs/checks.md). The rank's
// GPU is the CUDA device at local_rank % device count (the rule of the smoke test); its local CPUs
// and NUMA node come from NVML, else hwloc, else sysfs; the rank's CPUs from sched_getaffinity.
#include <algorithm>
#include <array>
#include <map>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_common.hpp"
#include "core/pci_topology.hpp"
#include "core/text.hpp"

namespace preflight {
namespace topo_numa_affinity_check {
namespace {

// Once the rank's GPU is known, the rank and its GPU are parameters of every finding ({rank},
// {local_rank}, {gpu}, {bus}: the GPU's PCI address, lower case as sysfs spells it): ranks with the same
// finding group into one row of the report, each rank's own values kept.
constexpr FindingSpec kForeignTopology = {
    "topo.numa_affinity/foreign-topology", Status::Skip,
    "the topology is another machine's ({source}): an hwloc export holds no rank binding to judge, and this host's "
    "binding is not that machine's; judge it on the node, or from its `preflight capture` (--sysroot)",
    ""};
constexpr FindingSpec kNoGpu = {
    "topo.numa_affinity/no-gpu", Status::Skip,
    "no NVIDIA GPU on this node (none on the PCI bus; CUDA: {why}): no GPU to bind the rank to", ""};
constexpr FindingSpec kGpuUnknown = {
    "topo.numa_affinity/gpu-unknown", Status::Unknown,
    "the rank's GPU is not known: the CUDA devices could not be listed ({why})",
    "Make the NVIDIA driver usable on this node (driver.loaded names the problem), then run preflight again."};
constexpr FindingSpec kNoVisibleGpu = {"topo.numa_affinity/no-visible-gpu", Status::Skip,
                                       "CUDA sees no GPU in this process{cvd_note}: no GPU to bind the rank to", ""};
constexpr FindingSpec kGpuLocalityUnknown = {
    "topo.numa_affinity/gpu-locality-unknown", Status::Unknown,
    "the CPUs local to GPU {gpu} are not known: NVML did not report its CPU affinity and neither hwloc nor sysfs has "
    "the device ({hwloc}; {sysfs})",
    "Check by hand: `nvidia-smi topo -m` (CPU Affinity, NUMA Affinity columns), or for the GPU's PCI address "
    "({bus}) `cat /sys/bus/pci/devices/ADDRESS/local_cpulist`."};
constexpr FindingSpec kRankCpusUnknown = {
    "topo.numa_affinity/rank-cpus-unknown", Status::Unknown, "the CPUs rank {rank} may run on are not known: {why}",
    "Run preflight on the node itself, inside the job's launcher (not with --sysroot), so it sees the rank's real "
    "binding. The binding for its GPU {gpu}: {binding}"};
constexpr FindingSpec kGpuCpusDisjoint = {
    "topo.numa_affinity/gpu-cpus-disjoint", Status::Fail,
    "rank {rank} runs only on {cpus}, away from its GPU {gpu} (local to {gpu_cpus}{numa}): NCCL finds the GPU's "
    "affinity empty",
    "{binding}"};
constexpr FindingSpec kUnbound = {
    "topo.numa_affinity/unbound", Status::Warn,
    "rank {rank} is not bound: it may run on all {online_count} online CPUs, only {local_cpus} of them local to its "
    "GPU {gpu}{numa}; the scheduler can move it and its memory to the other socket",
    "{binding}"};
constexpr FindingSpec kSpansSockets = {
    "topo.numa_affinity/spans-sockets", Status::Warn,
    "rank {rank} runs on {cpus}, beyond its GPU {gpu}'s local {gpu_cpus}{numa} (only {local_cpus} of them are "
    "local): it spans sockets",
    "{binding}"};
constexpr FindingSpec kMempolicyRemote = {
    "topo.numa_affinity/mempolicy-remote", Status::Warn,
    "its memory policy is {mode} to node {policy_nodes}, not its GPU's NUMA node {gpu_node}: pinned host buffers "
    "land on the remote socket",
    "Allocate on the GPU's node: `numactl --cpunodebind={gpu_node} --membind={gpu_node} <cmd>` (drop the other "
    "--membind/--preferred)."};
constexpr FindingSpec kCpusetMemsExclude = {
    "topo.numa_affinity/cpuset-mems-exclude", Status::Warn,
    "its cpuset allows memory on node {mems} only, not its GPU's node {gpu_node}",
    "Give the job's cpuset the GPU's node: `docker run --cpuset-mems={gpu_node} ...` / the Slurm or Kubernetes "
    "cpuset of the job.{binding_tail}"};
constexpr FindingSpec kBoundLocally = {"topo.numa_affinity/bound-locally", Status::Pass,
                                       "rank {rank} runs on {cpus}, all local to its GPU {gpu}: {gpu_cpus}{numa}", ""};

constexpr std::array kFindings = {kForeignTopology,    kNoGpu,           kGpuUnknown,        kNoVisibleGpu,
                                  kGpuLocalityUnknown, kRankCpusUnknown, kGpuCpusDisjoint,   kUnbound,
                                  kSpansSockets,       kMempolicyRemote, kCpusetMemsExclude, kBoundLocally};

struct Locality {
  std::vector<int> cpus;
  std::optional<int> node;
  std::string source;
};

/// "CPU 3" / "CPUs 0-15".
std::string cpus_text(const std::vector<int>& cpus) { return (cpus.size() == 1 ? "CPU " : "CPUs ") + cpu_list(cpus); }

bool subset(const std::vector<int>& a, const std::vector<int>& b) {  // both sorted
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

std::vector<int> intersect(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<int> sorted_unique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

const NvmlGpu* nvml_match(const RankFacts& f, const CudaDevice& dev) {
  if (const auto* gpus = f.gpu.driver.nvml_gpus.value()) {
    for (const NvmlGpu& g : *gpus) {
      if (same_gpu(g, dev)) return &g;
    }
  }
  return nullptr;
}

const PciFunction* pcie_match(const RankFacts& f, const std::string& bus) {
  if (const auto* fns = f.pcie.functions.value()) {
    for (const PciFunction& fn : *fns) {
      if (bus_key(fn.bus_id) == bus_key(bus)) return &fn;
    }
  }
  return nullptr;
}

/// CPU-bearing NUMA nodes: sysfs, else hwloc.
std::optional<std::vector<NodeCpus>> cpu_nodes(const RankFacts& f) {
  std::vector<NodeCpus> out;
  if (const auto* nodes = f.affinity.numa_nodes.value()) {
    for (const NodeCpus& n : *nodes) {
      if (!n.cpus.empty()) out.push_back(n);
    }
    return out;
  }
  if (const TopologyFacts* t = f.topology.value(); t != nullptr && t->this_system) {
    for (const NumaNode& n : t->numa_nodes) {
      if (!n.cpus.empty()) out.push_back({n.os_index, sorted_unique(n.cpus)});
    }
    if (!out.empty()) return out;
  }
  return std::nullopt;
}

std::optional<Locality> locality_of(const RankFacts& f, const CudaDevice& dev, const std::string& bus) {
  std::optional<int> nvml_node;
  std::optional<int> pcie_node;
  const PciFunction* fn = pcie_match(f, bus);
  if (fn != nullptr) pcie_node = fn->numa_node;
  std::optional<Locality> out;
  if (const NvmlGpu* g = nvml_match(f, dev)) {
    nvml_node = g->numa_node;
    if (!g->cpu_affinity.empty())
      out = Locality{sorted_unique(g->cpu_affinity), g->numa_node, "NVML (nvmlDeviceGetCpuAffinity)"};
  }
  if (!out) {
    if (const TopologyFacts* t = f.topology.value(); t != nullptr && t->this_system) {
      if (const PciEndpoint* e = find_endpoint(t->gpus, bus); e != nullptr && !e->local_cpus.empty()) {
        out = Locality{sorted_unique(e->local_cpus), std::nullopt, "hwloc (" + t->source + ")"};
        if (e->numa_nodes.size() == 1) out->node = e->numa_nodes.front();
      }
    }
  }
  if (!out && fn != nullptr && !fn->local_cpus.empty()) {
    out = Locality{sorted_unique(fn->local_cpus), fn->numa_node,
                   "sysfs /sys/bus/pci/devices/" + fn->bus_id + "/local_cpulist"};
  }
  if (!out) return std::nullopt;
  if (!out->node) out->node = nvml_node ? nvml_node : pcie_node;
  if (!out->node) {  // the one node whose CPUs are all local to the GPU
    if (const auto nodes = cpu_nodes(f)) {
      std::optional<int> only;
      int count = 0;
      for (const NodeCpus& n : *nodes) {
        if (subset(n.cpus, out->cpus)) {
          only = n.node;
          ++count;
        }
      }
      if (count == 1) {
        out->node = only;
      } else if (count == 0) {  // the GPU's CPUs are a part of one node's
        for (const NodeCpus& n : *nodes) {
          if (subset(out->cpus, n.cpus)) {
            only = n.node;
            ++count;
          }
        }
        if (count == 1) out->node = only;
      }
    }
  }
  return out;
}

/// How many of the node's GPUs share this NUMA node.
int gpus_on_node(const RankFacts& f, int node) {
  int n = 0;
  if (const auto* gpus = f.gpu.driver.nvml_gpus.value()) {
    for (const NvmlGpu& g : *gpus) n += g.numa_node == node ? 1 : 0;
  }
  if (n == 0) {
    if (const auto* fns = f.pcie.functions.value()) {
      for (const PciFunction& fn : *fns) n += fn.kind == "gpu" && fn.numa_node == node ? 1 : 0;
    }
  }
  return std::max(n, 1);
}

/// The package (socket) above a GPU in hwloc's topology: "Package:1"; empty when not recorded.
std::string package_of(const PciEndpoint& e) {
  for (const TopoHop& h : e.path) {
    if (h.kind == "package") return h.id;
  }
  return {};
}

/// How many of the node's GPUs share the socket of the GPU at `bus` (the N of --map-by ppr:N:socket):
/// hwloc's topology says which package each GPU hangs under; without it, the GPUs of its NUMA node
/// (one NUMA node per socket), and the source says which.
int gpus_per_socket(const RankFacts& f, const std::string& bus, const Locality& loc) {
  if (const TopologyFacts* t = f.topology.value(); t != nullptr && t->this_system) {
    if (const PciEndpoint* e = find_endpoint(t->gpus, bus)) {
      const std::string pkg = package_of(*e);
      if (!pkg.empty()) {
        int n = 0;
        for (const PciEndpoint& g : t->gpus) n += package_of(g) == pkg ? 1 : 0;
        return std::max(n, 1);
      }
    }
  }
  return loc.node ? gpus_on_node(f, *loc.node) : 1;
}

/// Open MPI's major version from MPI_Get_library_version ("Open MPI v4.1.4, package: ..."); nullopt
/// when the job did not run under Open MPI's library or the line does not say.
std::optional<int> open_mpi_major(const RankFacts& f) {
  if (!f.placement.mpi) return std::nullopt;
  const std::string& lib = f.placement.mpi->library;
  const auto at = lib.find("Open MPI v");
  if (at == std::string::npos) return std::nullopt;
  const std::string_view rest = std::string_view(lib).substr(at + 10);
  const auto dot = rest.find_first_not_of("0123456789");
  const std::optional<std::int64_t> major = parse_int(rest.substr(0, dot));
  if (!major || *major < 1 || *major > 1000) return std::nullopt;
  return static_cast<int>(*major);
}

/// The mpirun line that puts N ranks on each socket, bound to it, in the spelling of the Open MPI
/// detected: 4.x knows the object as `socket` (`package` is an error there), 5.x as `package`.
std::string mpirun_binding(const RankFacts& f, int per_socket) {
  const std::string n = std::to_string(per_socket);
  const std::optional<int> major = open_mpi_major(f);
  const auto line = [&](const char* obj) {
    return std::string("`mpirun --map-by ppr:") + n + ":" + obj + " --bind-to " + obj + " ...`";
  };
  if (major && *major >= 5) return "Open MPI " + std::to_string(*major) + ": " + line("package");
  if (major) return "Open MPI " + std::to_string(*major) + ".x: " + line("socket");
  return "Open MPI 4.x: " + line("socket") + " (Open MPI 5: " + line("package") + ")";
}

/// The exact binding lines, the launcher's first.
std::string binding_remedy(const RankFacts& f, const std::vector<CudaDevice>& devs, const Locality& loc,
                           const std::string& bus) {
  const Placement& pl = f.placement;
  std::vector<std::string> lines;
  std::string plain;
  if (loc.node) {
    const std::string n = std::to_string(*loc.node);
    plain =
        "`numactl --cpunodebind=" + n + " --membind=" + n + " <cmd>`, or `taskset -c " + cpu_list(loc.cpus) + " <cmd>`";
  } else {
    plain = "`taskset -c " + cpu_list(loc.cpus) + " <cmd>`";
  }
  const int per_socket = gpus_per_socket(f, bus, loc);
  if (pl.launcher == "openmpi") {
    lines.push_back(mpirun_binding(f, per_socket) + " (" + std::to_string(per_socket) +
                    " ranks per socket, one per GPU on it; each rank's GPU chosen by OMPI_COMM_WORLD_LOCAL_RANK in "
                    "the same order)");
  } else if (pl.launcher == "slurm") {
    std::vector<std::string> ldoms;
    for (int r = 0; r < std::max(pl.local_ranks, 1); ++r) {
      const CudaDevice& d = devs[static_cast<std::size_t>(r) % devs.size()];
      const NvmlGpu* g = nvml_match(f, d);
      if (g == nullptr || !g->numa_node) {
        ldoms.clear();
        break;
      }
      ldoms.push_back(std::to_string(*g->numa_node));
    }
    lines.push_back(ldoms.empty() ? std::string("Slurm: `srun --cpu-bind=ldoms --gpu-bind=closest ...`")
                                  : "Slurm: `srun --cpu-bind=map_ldom:" + join(ldoms, ",") +
                                        " ...` (local rank i on the NUMA node of GPU i)");
  } else if (pl.launcher == "torchrun") {
    lines.push_back("torchrun does not bind: start each local rank under " + plain);
    plain.clear();
  }
  // {local_rank}: a template parameter (the finding's), so that ranks with the same fix group.
  if (!plain.empty()) lines.push_back("Bind local rank {local_rank} to its GPU's CPUs: " + plain);
  if (pl.launcher != "openmpi" && pl.launcher != "slurm") {
    lines.push_back("Under " + mpirun_binding(f, per_socket) +
                    "; under Slurm: `srun --cpu-bind=ldoms --gpu-bind=closest ...`");
  }
  return join(lines, ". ") + ".";
}

bool no_gpu_anywhere(const RankFacts& f) {
  const auto* fns = f.pcie.functions.value();
  if (fns == nullptr) return false;
  for (const PciFunction& fn : *fns) {
    if (fn.kind == "gpu") return false;
  }
  if (const TopologyFacts* t = f.topology.value(); t != nullptr && !t->gpus.empty()) return false;
  if (const auto* gpus = f.gpu.driver.nvml_gpus.value(); gpus != nullptr && !gpus->empty()) return false;
  return true;
}

Verdict run(const CheckContext& ctx) {
  const RankFacts& f = ctx.facts;
  const Placement& pl = f.placement;
  const DriverFacts& d = f.gpu.driver;

  // --topology-xml names another machine: its export holds no process binding and no CUDA device
  // list, and this host's are not that machine's.
  if (const TopologyFacts* t = f.topology.value(); t != nullptr && !t->this_system) {
    return Verdict::of(kForeignTopology, {{"source", f.topology.source()}});
  }

  const std::vector<CudaDevice>* devs = d.cuda_devices.value();
  if (devs == nullptr) {
    return Verdict::of(no_gpu_anywhere(f) ? kNoGpu : kGpuUnknown, {{"why", d.cuda_devices.why()}});
  }
  if (devs->empty()) {
    return Verdict::of(kNoVisibleGpu, cvd_note_params(f.env));
  }
  const int ordinal = std::max(0, pl.local_rank) % static_cast<int>(devs->size());
  const CudaDevice& dev = (*devs)[static_cast<std::size_t>(ordinal)];
  const std::string bus = bus_key(dev.pci_bus_id);
  // The rank and its GPU are the findings' parameters (see kFindings); the notes say them the same way.
  const std::string who = "rank {rank}";
  const std::string gpu_name = "GPU {gpu}";
  const nlohmann::json params = {{"rank", pl.rank}, {"local_rank", pl.local_rank}, {"gpu", ordinal}, {"bus", bus}};
  const auto said = [&params](const std::string& text) { return render_template(text, params); };
  const auto with = [&params](nlohmann::json more) {
    nlohmann::json p = params;
    p.update(more);
    return p;
  };

  VerdictBuilder b;
  nlohmann::json& ev = b.evidence();
  ev["rank"] = pl.rank;
  ev["local_rank"] = pl.local_rank;
  ev["gpu"] = {{"ordinal", ordinal}, {"bus_id", bus}, {"uuid", dev.uuid}};

  const std::optional<Locality> loc = locality_of(f, dev, bus);
  if (!loc) {
    const std::string hwloc = f.topology.ok() ? std::string("hwloc: not found") : f.topology.why();
    const std::string sysfs = f.pcie.functions.ok() ? std::string("sysfs: not found") : f.pcie.functions.why();
    return Verdict::of(kGpuLocalityUnknown, with({{"hwloc", hwloc}, {"sysfs", sysfs}}), ev);
  }
  ev["gpu_local_cpus"] = cpu_list(loc->cpus);
  ev["gpu_numa_node"] = loc->node ? nlohmann::json(*loc->node) : nlohmann::json(nullptr);
  ev["locality_source"] = loc->source;
  ev["gpus_per_socket"] = gpus_per_socket(f, bus, *loc);
  ev["mpirun_binding"] = mpirun_binding(f, gpus_per_socket(f, bus, *loc));  // right for the Open MPI detected

  if (const MemPolicy* m = f.affinity.mempolicy.value()) {
    ev["mempolicy"] = {{"mode", m->mode}, {"nodes", cpu_list(m->nodes)}};
  } else {
    ev["mempolicy_error"] = f.affinity.mempolicy.why();
  }
  const std::vector<int>* a = f.affinity.cpus.value();
  // The binding's fix is a template over {local_rank}, {gpu} and {bus} too (template_param): ranks
  // that differ only in those parameters share one fix ("Bind local rank 4–7 to its GPU's CPUs").
  const std::string binding = binding_remedy(f, *devs, *loc, bus);
  if (a == nullptr) {
    return Verdict::of(kRankCpusUnknown, with({{"why", f.affinity.cpus.why()}, {"binding", template_param(binding)}}),
                       ev);
  }
  const std::vector<int> cpus = sorted_unique(*a);
  ev["cpus"] = cpu_list(cpus);
  std::optional<std::vector<int>> online;
  if (const auto* o = f.affinity.online_cpus.value()) {
    online = *o;
  } else if (const TopologyFacts* t = f.topology.value(); t != nullptr && t->this_system && !t->cpus.empty()) {
    online = sorted_unique(t->cpus);
  }
  if (online) ev["online_cpus"] = cpu_list(*online);
  const std::optional<std::vector<NodeCpus>> nodes = cpu_nodes(f);
  const long node_count = nodes ? static_cast<long>(nodes->size()) : -1;  // -1: unknown
  if (node_count >= 0) ev["numa_nodes"] = node_count;

  const std::vector<int> common = intersect(cpus, loc->cpus);
  const bool single_numa = node_count == 1;
  const bool unbound = online && subset(*online, cpus);

  const nlohmann::json placed = with({{"cpus", cpus_text(cpus)},
                                      {"gpu_cpus", cpus_text(loc->cpus)},
                                      {"numa", part_if(loc->node.has_value(), " (NUMA {numa_node})")},
                                      {"numa_node", loc->node ? nlohmann::json(*loc->node) : nlohmann::json()},
                                      {"local_cpus", cpu_list(common)}});
  const auto add_bound = [&](const FindingSpec& spec, nlohmann::json p) {  // a finding whose fix is the binding
    p["binding"] = template_param(binding);
    b.add(spec, std::move(p));
  };
  if (common.empty()) {
    add_bound(kGpuCpusDisjoint, placed);
  } else if (subset(cpus, loc->cpus)) {
    b.add(kBoundLocally, placed);
  } else if (unbound) {
    if (single_numa) {
      b.note(said(who + " is not bound (all " + std::to_string(online->size()) +
                  " online CPUs); a single NUMA node, so every CPU is near its " + gpu_name));
    } else {
      nlohmann::json p = placed;
      p["online_count"] = online->size();
      add_bound(kUnbound, p);
    }
  } else if (single_numa) {
    b.note(said(who + " runs on " + cpus_text(cpus) + ", partly outside its " + gpu_name + "'s " +
                cpus_text(loc->cpus) + ", all on the one NUMA node"));
  } else {
    add_bound(kSpansSockets, placed);
  }

  // Memory placement. The binding's fix is said once: a CPU finding above already carries it.
  const bool binding_said = b.status() != Status::Pass;
  if (const MemPolicy* m = f.affinity.mempolicy.value()) {
    const bool directed = m->mode == "bind" || m->mode == "preferred" || m->mode == "preferred_many";
    if (directed && loc->node && !m->nodes.empty() &&
        std::find(m->nodes.begin(), m->nodes.end(), *loc->node) == m->nodes.end()) {
      b.add(kMempolicyRemote,
            with({{"mode", m->mode}, {"policy_nodes", cpu_list(m->nodes)}, {"gpu_node", *loc->node}}));
    }
  } else if (const ProbeError* e = f.affinity.mempolicy.error(); e->code == ProbeErrc::PermissionDenied) {
    b.note("the memory policy could not be read (" + e->detail +
           "): NCCL >= 2.24 then falls back to /dev/shm for its shared-memory buffers (size /dev/shm for it, or add "
           "CAP_SYS_NICE)");
  }
  if (const auto* mems = f.affinity.mems_allowed.value()) {
    ev["mems_allowed"] = cpu_list(*mems);
    if (loc->node && !mems->empty() && std::find(mems->begin(), mems->end(), *loc->node) == mems->end()) {
      b.add(kCpusetMemsExclude, with({{"mems", cpu_list(*mems)},
                                      {"gpu_node", *loc->node},
                                      {"binding_tail", template_param(binding_said ? std::string() : " " + binding)}}));
    }
  }
  return b.build();
}

constexpr std::string_view kExplain = R"text(What it reads
  The rank's GPU: the CUDA device at (local rank % number of CUDA devices) — the same rule as the
  smoke test — and its PCI bus id. The CPUs local to that GPU and its NUMA node: NVML
  (nvmlDeviceGetCpuAffinity, the NUMA node id), else hwloc's topology of this machine, else sysfs
  (/sys/bus/pci/devices/<bdf>/local_cpulist and numa_node). The rank's own binding:
  sched_getaffinity(0), get_mempolicy(), Mems_allowed_list of /proc/self/status, the online CPUs
  and the NUMA nodes' CPUs (/sys/devices/system/node/node*/cpulist).

Failures
  FAIL     the rank may run on none of its GPU's local CPUs ("rank 3 (local rank 3) runs only on
           CPUs 0-15, its GPU 3 (0000:9a:00.0) is local to CPUs 16-31 (NUMA 1)"): NCCL logs
           "Affinity for GPU is empty" and its threads and host buffers sit on the wrong socket.
  WARN     the rank's CPUs span beyond its GPU's local CPUs (spans sockets).
  WARN     the rank is not bound at all on a machine with two or more NUMA nodes (on a single-NUMA
           machine that is fine and only noted).
  WARN     the memory policy binds or prefers nodes other than the GPU's node, or the cpuset's
           memory nodes exclude it.
  UNKNOWN  the rank's GPU, its local CPUs or the rank's CPUs could not be determined (no driver and
           no topology for the GPU; a --sysroot tree that is no `preflight capture`, where this
           process's binding is not the node's; a capture holds the capturing process's own).
  SKIP     no NVIDIA GPU on the node or none visible to this process.
  SKIP     --topology-xml names another machine: its export holds no rank binding, and this host's
           binding and GPUs are not that machine's.
  A blocked get_mempolicy (seccomp, no CAP_SYS_NICE) is noted: NCCL >= 2.24 then uses /dev/shm.

Fix
  Every non-PASS result prints the binding to use for this rank: numactl --cpunodebind=N
  --membind=N <cmd>, or taskset -c <cpus> <cmd>; under Open MPI mpirun --map-by ppr:<N>:socket
  --bind-to socket on 4.x and ppr:<N>:package --bind-to package on 5.x (the version detected from
  MPI_Get_library_version decides; both when it is not known), N = the GPUs sharing the socket
  of the rank's GPU (hwloc's package above it, else its NUMA node); the evidence holds that line
  (mpirun_binding) on PASS too. Under Slurm srun --cpu-bind=map_ldom:<nodes> or --cpu-bind=ldoms
  --gpu-bind=closest. Choose the GPU by the local rank in the same order.)text";

}  // namespace

extern const CheckSpec kTopoNumaAffinity = {"topo.numa_affinity",
                                            Scope::Rank,
                                            "the rank runs and allocates on its GPU's NUMA node",
                                            kExplain,
                                            kInNode | kInJob,
                                            "an image build has no topology",
                                            &run,
                                            "affinity,topology,pcie,gpu_driver",
                                            false,
                                            {},
                                            {},
                                            nullptr,
                                            kFindings};

}  // namespace topo_numa_affinity_check
}  // namespace preflight
