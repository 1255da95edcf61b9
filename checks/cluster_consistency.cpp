// SPDX-License-Identifier: MIT
// cluster.consistency (job): the software every rank runs on is the same. For each item (driver,
// CUDA driver API version, CUDA runtimes, NCCL, framework, kernel, NIC drivers) the delivered ranks
// are grouped by value; the largest group is the majority and every other group is named with its
// hosts and ranks. Drift of what shapes the collectives (driver, CUDA, NCCL) is a FAIL, the rest a WARN.
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>

#include "checks/check.hpp"
#include "checks/env_catalog.hpp"
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
constexpr FindingSpec kGpuDrift = {
    "cluster.consistency/gpu-drift", Status::Warn,
    PREFLIGHT_DRIFT("GPUs", "a job runs at its slowest GPU's speed and fits its smallest memory"),
    "Place the job on nodes of one GPU model (a Slurm constraint or partition, a Kubernetes node selector), or "
    "size it for the smallest."};
constexpr FindingSpec kNicDriverDrift = {
    "cluster.consistency/nic-driver-drift", Status::Warn,
    PREFLIGHT_DRIFT("NIC drivers", "nodes run different NIC drivers (RDMA and TCP behaviour can differ)"),
    "Install one NIC driver (e.g. one MLNX_OFED/DOCA release) on every node, the majority's."};
#undef PREFLIGHT_DRIFT
// A setting every rank of a communicator must read alike (the catalog's rule agree=): {name}; {odd}
// and {majority} as above, each "NAME=VALUE (source)" or "unset (default D)".
constexpr FindingSpec kSettingMustAgree = {
    "cluster.consistency/setting-must-agree", Status::Fail,
    "{name} differs between ranks: {odd}; the majority ({count} of {total} ranks) {majority}: NCCL hangs or fails "
    "when the ranks of one communicator disagree on it (different algorithm/protocol choices hang, NVIDIA/nccl#1136; "
    "different transports or buffer sizes cannot connect)",
    "Set {name} the same way for every rank (the job's environment or NCCL's configuration files on every host), or "
    "nowhere."};
constexpr FindingSpec kSettingDiffers = {
    "cluster.consistency/setting-differs", Status::Warn,
    "{name} differs between ranks: {odd}; the majority ({count} of {total} ranks) {majority}: the ranks behave "
    "differently (paths, channels, error handling)",
    "Set {name} the same way for every rank (the job's environment or NCCL's configuration files on every host), or "
    "nowhere."};
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

constexpr std::array kFindings = {kDriverDrift,      kCudaDriverDrift, kCudaRuntimeDrift, kNcclDrift,
                                  kFrameworkDrift,   kKernelDrift,     kGpuDrift,         kNicDriverDrift,
                                  kSettingMustAgree, kSettingDiffers,  kUnreadable,       kUnreadableEverywhere,
                                  kNotGathered,      kSingleRank};

struct Item {
  std::string name;
  const FindingSpec* drift;
  std::function<Value(const RankFacts&)> read;
  nlohmann::json params = nlohmann::json::object();  // added to the drift finding's
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

/// The node's GPUs by model, memory and compute capability: "8 × NVIDIA H100 80GB HBM3 (81559 MiB, CC 9.0)".
Value gpus_of(const RankFacts& f) {
  const std::vector<NvmlGpu>* gpus = f.gpu.driver.nvml_gpus.value();
  if (gpus == nullptr) return unread(f.gpu.driver.nvml_gpus);
  std::map<std::string, int> kinds;
  for (const NvmlGpu& g : *gpus) {
    ++kinds[g.name + " (" + std::to_string(g.memory_total >> 20) + " MiB, CC " + std::to_string(g.cc_major) + "." +
            std::to_string(g.cc_minor) + ")"];
  }
  if (kinds.empty()) return known("none");
  std::vector<std::string> parts;
  for (const auto& [kind, n] : kinds) parts.push_back(std::to_string(n) + " \u00d7 " + kind);
  return known(join(parts, " + "));
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

/// A setting as the rank's reader takes it: its value as read (the same reading groups together:
/// NCCL_IB_DISABLE=1 and =01), or the default it falls back to when unset; shown with its source.
/// The group key is the reading; the text, "NCCL_ALGO=Ring (environment)", is the first member's.
Value setting_of(const EnvVarSpec& spec, const RankFacts& f, std::map<std::string, std::string>& shown) {
  const std::optional<EffectiveValue> v = effective_value(f, spec.name);
  std::string key, text;
  if (!v) {
    const std::string d = spec.default_value;
    key = d.empty() ? std::string("(unset)") : read_value(spec.grammar, d).canonical;
    text = "unset" + (d.empty() ? std::string() : " (default " + d + ")");
  } else {
    const ValueReading r = read_value(spec.grammar, v->value);
    key = !r.canonical.empty() ? r.canonical : v->value;
    text = spec.name + "=" + printable(v->value, 60) + " (" +
           (v->file.empty() ? std::string("environment") : v->file + ":" + std::to_string(v->line)) + ")";
  }
  shown.emplace(key, text);
  return known(key);
}

std::vector<Item> items(std::map<std::string, std::string>& shown_settings) {
  std::vector<Item> out = {
      {"NVIDIA driver", &kDriverDrift, &driver_of},
      {"CUDA driver API", &kCudaDriverDrift, &cuda_driver_of},
      {"CUDA runtimes", &kCudaRuntimeDrift, &runtimes_of},
      {"NCCL", &kNcclDrift, &nccl_of},
      {"framework", &kFrameworkDrift, &framework_of},
      {"kernel", &kKernelDrift, &kernel_of},
      {"GPUs", &kGpuDrift, &gpus_of},
      {"NIC drivers", &kNicDriverDrift, &nic_drivers_of},
  };
  for (const EnvVarSpec& spec : builtin_env_catalog().vars()) {
    if (spec.agree == EnvVarSpec::Agree::No) continue;
    out.push_back({spec.name,
                   spec.agree == EnvVarSpec::Agree::Fail ? &kSettingMustAgree : &kSettingDiffers,
                   [&spec, &shown_settings](const RankFacts& f) { return setting_of(spec, f, shown_settings); },
                   {{"name", spec.name}}});
  }
  return out;
}

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
           std::vector<Unread>& unknowns, const std::map<std::string, std::string>& shown) {
  const auto text = [&shown](const std::string& key) {
    const auto it = shown.find(key);
    return it == shown.end() ? key : it->second;
  };
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
      if (it != majority) odd.push_back(where(it->second) + " has " + text(it->first));
    }
    nlohmann::json params = item.params;
    params.update({{"odd", join(odd, "; ")},
                   {"count", majority->second.size()},
                   {"total", ranks.size()},
                   {"majority", text(majority->first)}});
    b.add(*item.drift, std::move(params));
  } else if (item.params.empty()) {  // settings that agree are not worth a line each
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
  std::map<std::string, std::string> shown;  // a setting's reading -> how the first rank wrote it
  for (const Item& item : items(shown)) {
    shown.clear();
    judge(item, ranks, b, unknowns, shown);
  }
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
  And the settings every rank of a communicator must read alike (matrix/env_vars.tsv, rule agree=):
  each rank's value as its reader takes it (the environment, else NCCL's configuration files),
  unset counting as the default; NCCL_IB_DISABLE=1 and =01 read the same.
  Ranks are grouped by each value; the largest group is the majority.

Failures
  FAIL     driver, CUDA driver API, CUDA runtime or NCCL versions differ between ranks: mixed NCCL
           versions in one communicator can hang or corrupt data, mixed drivers behave differently.
           The odd hosts and ranks are named with their value, and the majority's value.
  FAIL     NCCL_ALGO, NCCL_PROTO, NCCL_NET, NCCL_IB_DISABLE or NCCL_BUFFSIZE differ between ranks:
           ranks that choose different algorithms or protocols hang (NVIDIA/nccl#1136), different
           transports or buffer sizes cannot connect. Names the odd hosts and ranks with their value
           and source, and the majority's.
  WARN     framework, kernel or NIC driver versions differ.
  WARN     the nodes' GPUs differ in model, memory or compute capability (NVML's list per node, as
           8 × NVIDIA H100 80GB HBM3 with its MiB and CC): the job runs at the slowest GPU's speed
           and fits the smallest memory. Within one node, gpu.count says so.
  WARN     settings that only change behaviour differ: NCCL_P2P_DISABLE, NCCL_SHM_DISABLE,
           NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL, NCCL_CROSS_NIC, NCCL_MIN/MAX_NCHANNELS, NCCL_IB_GID_INDEX,
           NCCL_IB_TC, NCCL_IB_SL, NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE, and the TORCH_NCCL_* timeouts
           and error handling that decide how a failed collective ends.
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
    "driver, CUDA, NCCL, framework, kernel, NIC driver versions and NCCL settings agree across ranks",
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
