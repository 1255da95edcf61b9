// SPDX-License-Identifier: MIT
// The one table of probes, in run order. A probe with an adopt function gathers facts of the node
// (the same for every rank of a host): in a job, a host's other ranks take them from its local rank 0.
// A probe with a tree function reads a --sysroot tree's capture instead of probing this machine.
#include <algorithm>
#include <array>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include "probes/probe.hpp"
#include "probes/tree_os.hpp"

namespace preflight {
namespace {
// The size is the rows': a row added or removed needs no count kept by hand.
constexpr auto kProbes = std::to_array<ProbeSpec>({
    {FactSource::Identity, &probe_identity},
    {FactSource::Placement, &probe_placement},  // before shm: the shm need depends on the local rank count
    // early: its allocation test runs in the background
    {FactSource::Shm, &probe_shm, nullptr, &probe_shm_tree},
    // files only; finds the libnccl candidates
    {FactSource::CudaRuntime, &probe_cuda_runtime, nullptr, &probe_cuda_runtime_tree},
    // the contained GPU helper: NVML, CUDA driver; smoke test
    {FactSource::GpuDriver, &probe_gpu_driver, &adopt_gpu_driver, &probe_gpu_driver_tree},
    // the contained GPU helper loads the first candidate
    {FactSource::Nccl, &probe_nccl, &adopt_nccl, &probe_nccl_tree},
    // the contained GPU helper: peer copies where NVML claims P2P
    {FactSource::GpuP2p, &probe_gpu_p2p, nullptr, &probe_gpu_p2p_tree},
    // the contained GPU helper: NVML health, clocks/PCIe under load
    {FactSource::GpuHealth, &probe_gpu_health, nullptr, &probe_gpu_health_tree},
    // /dev/kmsg: this boot's Xid / SXid / fallen-off-the-bus lines
    {FactSource::KernelLog, &probe_kernel_log, nullptr, &probe_kernel_log_tree},
    {FactSource::Topology, &probe_topology, &adopt_topology},  // hwloc with I/O devices, or --topology-xml
    {FactSource::Pcie, &probe_pcie, &adopt_pcie},              // sysfs chains, ACS bits, IOMMU
    {FactSource::Affinity, &probe_affinity},                   // this process's CPU and memory binding
    {FactSource::Net, &probe_net},                             // interfaces, RDMA devices, MASTER_ADDR/MASTER_PORT
    {FactSource::Memory, &probe_memory},
    {FactSource::Limits, &probe_limits},
    {FactSource::NcclConf, &probe_nccl_conf},
    {FactSource::NcclNames, &probe_nccl_names},  // after nccl and nccl_conf: the library's names, its plugins
    // last: statvfs of a hung network mount blocks, and only it waits then
    {FactSource::Disk, &probe_disk, nullptr, &probe_disk_tree},
});
}  // namespace

std::span<const ProbeSpec> all_probes() { return kProbes; }

void run_probe(FactSource source, const ProbeContext& ctx, RankFacts& facts) {
  const auto it =
      std::find_if(kProbes.begin(), kProbes.end(), [source](const ProbeSpec& p) { return p.source == source; });
  if (it == kProbes.end()) throw std::invalid_argument("run_probe: no probe of " + std::string(to_string(source)));
  it->for_context(ctx)(ctx, facts);
}

std::string env_differs(const EnvSnapshot& mine, const EnvSnapshot& leader,
                        std::initializer_list<std::string_view> names) {
  const auto shown = [](const std::optional<std::string>& v) { return v ? "'" + *v + "'" : std::string("unset"); };
  const auto differs = [&](const std::string& name) -> std::string {
    const std::optional<std::string> a = mine.get(name);
    const std::optional<std::string> b = leader.get(name);
    if (a == b) return {};
    return "its " + name + " differs from the leader's (" + shown(a) + " here, " + shown(b) + " there)";
  };
  for (std::string_view name : names) {
    std::set<std::string> variables;  // a prefix: every variable either side has, in name order
    if (!name.empty() && name.back() == '*') {
      const std::string_view prefix = name.substr(0, name.size() - 1);
      for (const auto& [n, v] : mine.with_prefix(prefix)) variables.insert(n);
      for (const auto& [n, v] : leader.with_prefix(prefix)) variables.insert(n);
    } else {
      variables.insert(std::string(name));
    }
    for (const std::string& v : variables) {
      if (std::string why = differs(v); !why.empty()) return why;
    }
  }
  return {};
}

ProbeContext::ProbeContext(const FileSystem& file_system, const EnvSnapshot& environment, const Options& run_options,
                           std::chrono::steady_clock::time_point probe_deadline)
    : m_tree_os(file_system.is_live() ? nullptr : make_tree_os(*this)),
      fs(file_system),
      os(m_tree_os ? *m_tree_os : live_os()),
      env(environment),
      options(run_options),
      deadline(probe_deadline) {}

ProbeContext::ProbeContext(const FileSystem& file_system, const EnvSnapshot& environment, const Options& run_options,
                           const Os& system, std::chrono::steady_clock::time_point probe_deadline)
    : fs(file_system), os(system), env(environment), options(run_options), deadline(probe_deadline) {}

HelperDeadline ProbeContext::helper_deadline(Helper helper, double allowance_s) const {
  using std::chrono::milliseconds;
  milliseconds left = milliseconds::max();
  if (deadline != std::chrono::steady_clock::time_point::max()) {
    left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
  }
  return preflight::helper_deadline(helper, options.timeout_s, left, allowance_s);
}

struct ProbeContext::Background {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  bool awaited = true;   // false: beside_the_job, applied as `pending` when not done
  bool applied = false;  // beside_the_job work whose finisher or `pending` finish_background applied
  Finisher finisher;
  Finisher pending;
};

void ProbeContext::in_background(std::function<Finisher()> work) const { beside_the_job(std::move(work), nullptr); }

void ProbeContext::beside_the_job(std::function<Finisher()> work, Finisher pending) const {
  auto state = std::make_shared<Background>();
  state->awaited = pending == nullptr;
  state->pending = std::move(pending);
  m_background.push_back(state);
  std::thread([state, work = std::move(work)] {
    Finisher f = work();
    std::lock_guard lock(state->mutex);
    state->finisher = std::move(f);
    state->done = true;
    state->done_cv.notify_all();
  }).detach();
}

void ProbeContext::keep_through_gpu_work(std::shared_ptr<const void> resource) const {
  m_kept.push_back(std::move(resource));
}

std::vector<std::shared_ptr<const void>> ProbeContext::take_kept() const {
  if (m_kept.empty()) return {};
  // What was kept, with the work beside the job that waits on it: whoever drops it also waits (a
  // few seconds at most) for that work to end, so that no thread of it outlives its holder (the
  // hold helper's thread reads the environment, which the caller may change next).
  struct Kept {
    std::vector<std::shared_ptr<const void>> resources;
    std::vector<std::shared_ptr<Background>> work;
    ~Kept() {
      resources.clear();  // the work's signal to end
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      for (const std::shared_ptr<Background>& b : work) {
        std::unique_lock lock(b->mutex);
        b->done_cv.wait_until(lock, until, [&] { return b->done; });
      }
    }
  };
  auto kept = std::make_shared<Kept>();
  kept->resources = std::exchange(m_kept, {});
  for (const std::shared_ptr<Background>& b : m_background) {
    if (!b->awaited) kept->work.push_back(b);
  }
  return {std::move(kept)};
}

ProbeContext::~ProbeContext() {
  if (m_kept.empty()) return;  // taken: whoever holds it ends that work (take_kept)
  take_kept();                 // dropped at once, and waited for
}

bool ProbeContext::finish_background(RankFacts& facts, std::chrono::steady_clock::time_point until) const {
  bool all = true;
  for (const std::shared_ptr<Background>& b : m_background) {
    std::unique_lock lock(b->mutex);
    if (!b->awaited) {
      if (b->applied) continue;
      if (const Finisher& f = b->done ? b->finisher : b->pending) f(facts);
      b->applied = true;
      continue;
    }
    if (!b->done_cv.wait_until(lock, until, [&] { return b->done; })) {
      all = false;
      continue;
    }
    if (b->finisher) b->finisher(facts);
  }
  // What runs beside the job stays known: the context's end waits for it when nobody took it on.
  std::erase_if(m_background, [](const std::shared_ptr<Background>& b) { return b->awaited; });
  return all;
}

const CapturedFacts& ProbeContext::captured() const {
  if (!m_captured) m_captured = fs.is_live() ? CapturedFacts{} : load_capture(fs);
  return *m_captured;
}

const Probed<MountInfo>& ProbeContext::mountinfo() const {
  if (!m_mountinfo) {
    const Probed<std::string> text = fs.read("/proc/self/mountinfo");
    m_mountinfo = text.ok() ? Probed<MountInfo>::ok(parse_mountinfo(*text.value()), text.source())
                            : Probed<MountInfo>::error(*text.error(), text.source());
  }
  return *m_mountinfo;
}

}  // namespace preflight
