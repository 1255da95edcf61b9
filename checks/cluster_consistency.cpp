// SPDX-License-Identifier: MIT
// cluster.consistency (job): the software every rank runs on is the same. For each item (driver,
// CUDA driver API version, CUDA runtimes, NCCL, framework, kernel, NIC drivers) the delivered ranks
// are grouped by value; the largest group is the majority and every other group is named with its
// hosts and ranks. Drift of what shapes the collectives (driver, CUDA, NCCL) is a FAIL, the rest a WARN.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "checks/check.hpp"
#include "checks/gpu_common.hpp"
#include "core/text.hpp"

namespace preflight {
namespace cluster_consistency_check {
namespace {

/// One rank's value of an item: the text compared, or nullopt with why it could not be read.
struct Value {
  std::optional<std::string> text;
  std::string why;
  bool absent = false;  // not installed at all (the library does not exist): a CPU-only node
};

Value known(std::string text) { return Value{std::move(text), {}}; }
template <typename T>
Value unread(const Probed<T>& p) {
  const ProbeError* e = p.error();
  return Value{std::nullopt, p.why(),
               e != nullptr && (e->code == ProbeErrc::LibraryMissing || e->code == ProbeErrc::NotFound)};
}

// A drift of one item: {odd} names every other group with its hosts and ranks ("gpu-c (ranks 4–5) has
// 2.18.1"), {majority} the largest group's value, held by {count} of {total} ranks.
#define PREFLIGHT_DRIFT(item, consequence) \
  item " drift: {odd}, the majority ({count} of {total} ranks) {majority}: " consequence
constexpr FindingSpec kDriverDrift = {
    "cluster.consistency/driver-drift", Status::Fail,
    PREFLIGHT_DRIFT("NVIDIA driver", "mixed drivers change NCCL's and CUDA's behaviour between nodes"),
    "Install one driver version on every node (the majority's) and reboot the odd ones; drain them until then."};
constexpr FindingSpec kCudaDriverDrift = {
    "cluster.consistency/cuda-driver-drift", Status::Fail,
    PREFLIGHT_DRIFT("CUDA driver API", "ranks run on different CUDA driver versions"),
    "Install one driver version on every node (the majority's); check for a forward-compatibility libcuda on "
    "LD_LIBRARY_PATH on the odd hosts (`ldconfig -p | grep libcuda`)."};
constexpr FindingSpec kCudaRuntimeDrift = {
    "cluster.consistency/cuda-runtime-drift", Status::Fail,
    PREFLIGHT_DRIFT("CUDA runtimes", "ranks load different CUDA runtimes"),
    "Run every rank from one image or one Python environment (the majority's): the odd hosts have another framework "
    "build or toolkit."};
constexpr FindingSpec kNcclDrift = {
    "cluster.consistency/nccl-drift", Status::Fail,
    PREFLIGHT_DRIFT("NCCL", "mixed NCCL versions in one communicator can hang or corrupt data"),
    "Make every rank load the same libnccl.so.2 (one image or environment; `--nccl-lib`, LD_LIBRARY_PATH, the "
    "nvidia-nccl-cu* wheel) with the majority's version."};
constexpr FindingSpec kFrameworkDrift = {"cluster.consistency/framework-drift", Status::Warn,
                                         PREFLIGHT_DRIFT("framework", "ranks run different framework builds"),
                                         "Run every rank from one image or one Python environment (the majority's)."};
constexpr FindingSpec kKernelDrift = {
    "cluster.consistency/kernel-drift", Status::Warn, PREFLIGHT_DRIFT("kernel", "nodes boot different kernels"),
    "Boot every node into the majority's kernel (or drain the odd ones for the job)."};
constexpr FindingSpec kNicDriverDrift = {
    "cluster.consistency/nic-driver-drift", Status::Warn,
    PREFLIGHT_DRIFT("NIC drivers", "nodes run different NIC drivers (RDMA and TCP behaviour can differ)"),
    "Install one NIC driver (e.g. one MLNX_OFED/DOCA release) on every node, the majority's."};
#undef PREFLIGHT_DRIFT
#define PREFLIGHT_UNREADABLE_FIX                                                                                   \
  "Look at the named ranks' own checks (driver.loaded, nccl.library, cuda.runtime) for why the version could not " \
  "be read there."
constexpr FindingSpec kUnreadableEverywhere = {"cluster.consistency/unreadable-everywhere", Status::Unknown,
                                               "{item} not readable on any rank ({why}): it cannot be compared",
                                               PREFLIGHT_UNREADABLE_FIX};
// {where}: the hosts and ranks that could not read it ("gpu-b (ranks 2–3)").
constexpr FindingSpec kUnreadable = {"cluster.consistency/unreadable", Status::Unknown,
                                     "{item} could not be read on {where} ({why})", PREFLIGHT_UNREADABLE_FIX};
#undef PREFLIGHT_UNREADABLE_FIX
constexpr FindingSpec kNotGathered = {
    "cluster.consistency/not-gathered", Status::Unknown,
    "only {delivered} of {world} ranks delivered facts: the versions cannot be compared across the job",
    "See launch.ranks: start preflight so every rank's facts reach rank 0 (mpirun, srun --mpi=pmix), or merge "
    "per-rank files (`--json-per-rank DIR`, `preflight merge`)."};
constexpr FindingSpec kSingleRank = {"cluster.consistency/single-rank", Status::Skip,
                                     "a world of one rank: nothing to compare", ""};

constexpr std::array kFindings = {kDriverDrift,    kCudaDriverDrift, kCudaRuntimeDrift, kNcclDrift,
                                  kFrameworkDrift, kKernelDrift,     kNicDriverDrift,   kUnreadableEverywhere,
                                  kUnreadable,     kNotGathered,     kSingleRank};

struct Item {
  const char* name;
  const FindingSpec* drift;
  Value (*read)(const RankFacts&);
};

Value driver_of(const RankFacts& f) {
  const DriverFacts& d = f.gpu.driver;
  if (const std::string* v = d.nvml_driver_version.value()) return known(*v);
  if (const std::string* v = d.kernel_module_version.value()) return known(*v);
  Value v = unread(d.nvml_driver_version);
  v.absent = v.absent && unread(d.kernel_module_version).absent;  // no library and no kernel module
  return v;
}

Value cuda_driver_of(const RankFacts& f) {
  const Probed<int>& p = f.gpu.driver.cuda_driver_version;
  if (const int* v = p.value()) return known(cuda_version_text(*v));
  return unread(p);
}

Value runtimes_of(const RankFacts& f) {
  std::set<std::string> parts;
  for (const CudaRuntime& r : f.gpu.runtime.runtimes) {
    if (!r.loaded_by.empty()) parts.insert(r.version + " (" + r.kind + ")");  // what the job loads
  }
  if (parts.empty()) return known("none found");
  return known(join(std::vector<std::string>(parts.begin(), parts.end()), ", "));
}

Value nccl_of(const RankFacts& f) {
  if (const NcclLibrary* n = f.gpu.nccl.value())
    return known(n->version.empty() ? std::to_string(n->version_code) : n->version);
  return unread(f.gpu.nccl);
}

Value framework_of(const RankFacts& f) {
  std::set<std::string> parts;
  for (const FrameworkBuild& fw : f.gpu.runtime.frameworks)
    parts.insert(fw.name + " " + fw.version + (fw.build == "cpu" ? " (CPU-only)" : ""));
  if (parts.empty()) return known("none found");
  return known(join(std::vector<std::string>(parts.begin(), parts.end()), ", "));
}

Value kernel_of(const RankFacts& f) {
  if (f.identity.kernel.empty()) return Value{std::nullopt, "uname -r was not read"};
  return known(f.identity.kernel);
}

Value nic_drivers_of(const RankFacts& f) {
  const std::vector<NetInterface>* ifs = f.net.interfaces.value();
  if (ifs == nullptr) return unread(f.net.interfaces);
  std::set<std::string> parts;
  for (const NetInterface& i : *ifs) {
    if (i.loopback || i.pci_bus_id.empty() || i.driver.empty()) continue;
    parts.insert(i.driver + (i.driver_version.empty() ? std::string() : " " + i.driver_version));
  }
  if (parts.empty()) return known("none");
  return known(join(std::vector<std::string>(parts.begin(), parts.end()), ", "));
}

constexpr Item kItems[] = {
    {"NVIDIA driver", &kDriverDrift, &driver_of},        {"CUDA driver API", &kCudaDriverDrift, &cuda_driver_of},
    {"CUDA runtimes", &kCudaRuntimeDrift, &runtimes_of}, {"NCCL", &kNcclDrift, &nccl_of},
    {"framework", &kFrameworkDrift, &framework_of},      {"kernel", &kKernelDrift, &kernel_of},
    {"NIC drivers", &kNicDriverDrift, &nic_drivers_of},
};

std::string host_of(const RankFacts& f) { return f.identity.hostname.empty() ? "?" : f.identity.hostname; }

/// "gpu-c (ranks 16–23)" or "gpu-c, gpu-d (ranks 16–31)".
std::string where(const std::vector<const RankFacts*>& ranks) {
  std::vector<std::string> hosts;
  std::vector<int> numbers;
  for (const RankFacts* f : ranks) {
    if (std::find(hosts.begin(), hosts.end(), host_of(*f)) == hosts.end()) hosts.push_back(host_of(*f));
    numbers.push_back(f->placement.rank);
  }
  std::sort(numbers.begin(), numbers.end());
  return join(hosts, ", ") + (numbers.size() == 1 ? " (rank " : " (ranks ") + range_list(numbers) + ")";
}

/// A version that could not be read: one of the unreadable findings with its parameters.
struct Unread {
  const FindingSpec* spec;
  nlohmann::json params;
};

void judge(const Item& item, const std::vector<const RankFacts*>& ranks, VerdictBuilder& b,
           std::vector<Unread>& unknowns) {
  std::map<std::string, std::vector<const RankFacts*>> groups;
  std::vector<const RankFacts*> unreadable;
  std::string why;
  bool all_absent = true;
  for (const RankFacts* f : ranks) {
    const Value v = item.read(*f);
    if (v.text) {
      groups[*v.text].push_back(f);
    } else {
      unreadable.push_back(f);
      all_absent = all_absent && v.absent;
      if (why.empty()) why = v.why;
    }
  }
  nlohmann::json ev = nlohmann::json::object();
  for (const auto& [value, members] : groups) {
    std::vector<int> numbers;
    for (const RankFacts* f : members) numbers.push_back(f->placement.rank);
    ev[value] = numbers;
  }
  if (!unreadable.empty()) {
    std::vector<int> numbers;
    for (const RankFacts* f : unreadable) numbers.push_back(f->placement.rank);
    ev["(unreadable)"] = numbers;
  }
  b.evidence()[item.name] = std::move(ev);
  if (groups.empty() && all_absent) {  // installed nowhere (a CPU-only job): every rank agrees
    b.note(std::string(item.name) + " is installed on no rank (" + why + ")");
    return;
  }
  if (groups.empty()) {
    // Nothing to compare is not agreement: UNKNOWN (unless a drift elsewhere already fails the job).
    unknowns.push_back({&kUnreadableEverywhere, {{"item", item.name}, {"why", why}}});
    return;
  }
  // The majority: the largest group; on a tie, the one holding the lowest rank.
  auto majority = groups.begin();
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    const std::size_t n = it->second.size(), m = majority->second.size();
    if (n > m || (n == m && it->second.front()->placement.rank < majority->second.front()->placement.rank))
      majority = it;
  }
  if (groups.size() > 1) {
    std::vector<std::string> odd;
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      if (it != majority) odd.push_back(where(it->second) + " has " + it->first);
    }
    b.add(*item.drift, {{"odd", join(odd, "; ")},
                        {"count", majority->second.size()},
                        {"total", ranks.size()},
                        {"majority", majority->first}});
  } else {
    b.note(std::string(item.name) + " " + majority->first + " on every rank");
  }
  if (!unreadable.empty()) {
    unknowns.push_back({&kUnreadable, {{"item", item.name}, {"where", where(unreadable)}, {"why", why}}});
  }
}

Verdict run(const CheckContext& ctx) {
  const std::vector<const RankFacts*> ranks = job_ranks(ctx);
  const int world = ctx.job != nullptr ? ctx.job->world_size : std::max(1, ctx.facts.placement.world_size);
  if (ranks.size() < 2) {
    if (world > 1) return Verdict::of(kNotGathered, {{"delivered", ranks.size()}, {"world", world}});
    return Verdict::of(kSingleRank);
  }
  VerdictBuilder b;
  std::vector<Unread> unknowns;
  for (const Item& item : kItems) judge(item, ranks, b, unknowns);
  // A version a rank could not read is not a mismatch: UNKNOWN only when nothing else was found.
  const bool found = b.status() != Status::Pass;
  for (const Unread& u : unknowns) {
    if (found) {
      b.note(render_template(u.spec->message, u.params));
    } else {
      b.add(*u.spec, u.params);
    }
  }
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  From every delivered rank: the NVIDIA driver version (NVML's, else the kernel module's), the CUDA
  driver API version (cuDriverGetVersion), the CUDA runtimes the job loads (version and kind), the
  NCCL version loaded, the framework builds found (torch version), the kernel (uname -r), and the
  drivers of the PCI network interfaces (/sys/class/net/IF/device/driver, /sys/module/DRIVER/version).
  Ranks are grouped by each value; the largest group is the majority.

Failures
  FAIL     driver, CUDA driver API, CUDA runtime or NCCL versions differ between ranks: mixed NCCL
           versions in one communicator can hang or corrupt data, mixed drivers behave differently.
           The odd hosts and ranks are named with their value, and the majority's value.
  WARN     framework, kernel or NIC driver versions differ.
  UNKNOWN  a version could not be read on some ranks, or on every rank ("NVIDIA driver not readable
           on any rank": nothing to compare is not agreement), while nothing else differs (not a
           mismatch; otherwise it is noted). Where it is installed on no rank at all (no library, no
           kernel module: a CPU-only job), every rank agrees and it is noted.
  SKIP     a world of one rank.

Fix
  Install the majority's driver / NIC driver / kernel on the odd hosts (or drain them); run every rank
  from one container image or Python environment so they load the same CUDA runtime, NCCL and torch.)";

}  // namespace

extern const CheckSpec kClusterConsistency = {
    "cluster.consistency",
    Scope::Job,
    "driver, CUDA, NCCL, framework, kernel and NIC driver versions agree across ranks",
    kExplain,
    kInJob,
    "an image build has no job to check",
    &run,
    "gather,gpu_driver,nccl,cuda_runtime,net",
    false,
    {},
    {},
    nullptr,
    kFindings};

}  // namespace cluster_consistency_check
}  // namespace preflight
