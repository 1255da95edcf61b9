// SPDX-License-Identifier: MIT
// gpu.busy: processes or memory already on the GPUs this job will use — typically orphans of an
// earlier job that still hold tens of GiB, so the new job runs out of memory on its first step.
#include <algorithm>
#include <array>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_common.hpp"
#include "core/gpu_binding.hpp"
#include "core/text.hpp"

namespace preflight {
namespace gpu_busy_check {
namespace {

constexpr std::string_view kNeedsGpu = "the job needs a GPU";
constexpr std::uint64_t kUnexplainedBytes = 1ull << 30;  // WARN above 1 GiB used with no process listed…
constexpr double kUnexplainedShare = 0.05;               // …or above 5% of the GPU's memory

std::string gpu_text(const NvmlGpu& g) {
  return "GPU " + std::to_string(g.index) + " (" + (g.pci_bus_id.empty() ? g.uuid : g.pci_bus_id) + ")";
}

// {visible_devices}: " (CUDA_VISIBLE_DEVICES='{cvd_value}')", or " (CUDA lists no device)" when it is unset.
constexpr FindingSpec kJobSeesNoGpu = {
    "gpu.busy/job-sees-no-gpu", Status::Fail,
    "the job will see no GPU{visible_devices}: no GPU of the job to check for other processes (NVML sees {nvml_gpus} "
    "GPUs); the job needs a GPU",
    "See gpu.count: give the job its GPUs (unset or correct CUDA_VISIBLE_DEVICES, the scheduler's GPU "
    "request), then rerun preflight to check them."};
constexpr FindingSpec kForeignProcess = {
    "gpu.busy/foreign-process", Status::Fail, "{processes} — another process is already on a GPU this job will use",
    "List them with `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` (on the host: inside a "
    "container the pids are the host's), confirm they are leftovers of an earlier job (`ps -o pid,user,etime,cmd -p "
    "{pid}`), then `kill {pid}` (preflight kills nothing), or drain the node (`scontrol update nodename=$(hostname -s) "
    "state=drain reason=\"orphan GPU processes\"`)."};
constexpr FindingSpec kUnexplainedMemory = {
    "gpu.busy/unexplained-memory", Status::Warn,
    "{memory} (a process in another container or pid namespace, or a leak the driver still holds)",
    "Run `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` on the host to find the owner and stop it; "
    "memory held with no process at all needs a GPU reset (`nvidia-smi -r -i <gpu>`) or a reboot."};
constexpr FindingSpec kNoJobGpu = {"gpu.busy/no-job-gpu", Status::Pass,
                                   "no GPU of this job found in NVML's list ({nvml_gpus} GPUs): nothing to check", ""};
constexpr FindingSpec kFree = {
    "gpu.busy/free", Status::Pass,
    "no other process on the {gpus} this job will use (most memory in use on one: {max_used})", ""};

constexpr FindingSpec kGpuLost = {"gpu.busy/gpu-lost", Status::Fail, kLostGpuMessage, kLostGpuRemedy};
constexpr FindingSpec kGpuReadError = {"gpu.busy/gpu-read-error", Status::Unknown, kGpuReadErrorMessage,
                                       kGpuReadErrorFix};

constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("gpu.busy", "")};
constexpr auto kFindings = with_shared(
    kShared, std::array{kJobSeesNoGpu, kForeignProcess, kGpuLost, kUnexplainedMemory, kGpuReadError, kNoJobGpu, kFree});

Verdict run(const CheckContext& ctx) {
  const DriverFacts& d = ctx.facts.gpu.driver;
  if (std::optional<GpuShared> none = no_driver(d, kNeedsGpu)) return shared_verdict(kShared, *none);

  const std::vector<NvmlGpu>* nvml = d.nvml_gpus.value();
  if (nvml == nullptr) {
    const ProbeError& err = *d.nvml_gpus.error();
    return shared_verdict(
        kShared, missing_gpu_fact(err, d.nvml_gpus.source(), "the GPUs' processes and memory (NVML)", kNeedsGpu));
  }

  VerdictBuilder b;
  // The GPUs this job will use: the union of the GPUs CUDA enumerates in each of the node's ranks
  // (CUDA_VISIBLE_DEVICES applies), matched to NVML by UUID. Without CUDA's view, NVML's list
  // filtered by CUDA_VISIBLE_DEVICES as the driver filters it, else every GPU NVML sees (stricter,
  // never blind). A job that will see no GPU has no GPU to call free.
  const std::vector<const RankFacts*> host = node_ranks(ctx);
  std::vector<const NvmlGpu*> used;
  std::vector<std::string> judged;
  std::vector<int> blind;
  bool all_nvml = false;
  for (const RankFacts* f : host) {
    const RankGpus view = rank_gpus(*f);
    const std::vector<CudaDevice>* cuda = f->gpu.driver.cuda_devices.value();
    const bool cuda_sees_mig = cuda != nullptr && std::any_of(cuda->begin(), cuda->end(), [](const CudaDevice& c) {
                                 return uuid_key(c.uuid).starts_with("mig-");
                               });
    if (!view.visible) {
      all_nvml = true;
      continue;
    }
    if (view.visible->empty() && !cuda_sees_mig) blind.push_back(f->placement.rank);
    for (const NvmlGpu& g : *nvml) {
      const bool visible = std::any_of(view.visible->begin(), view.visible->end(), [&](const BoundGpu& c) {
        return (!c.uuid.empty() && !g.uuid.empty()) ? uuid_key(c.uuid) == uuid_key(g.uuid)
                                                    : !c.bus.empty() && bus_key(c.bus) == bus_key(g.pci_bus_id);
      });
      if ((visible || (cuda_sees_mig && g.mig_enabled.value_or(false))) &&
          std::find(used.begin(), used.end(), &g) == used.end()) {
        used.push_back(&g);
      }
    }
  }
  if (all_nvml) {
    used.clear();
    for (const NvmlGpu& g : *nvml) used.push_back(&g);
    b.evidence()["gpus_judged"] = "every GPU NVML sees (CUDA's view not available: " + d.cuda_devices.why() + ")";
  } else {
    b.evidence()["gpus_judged"] =
        host.size() > 1 ? "the GPUs visible to CUDA in the node's ranks" : "the GPUs visible to CUDA";
  }
  if (!all_nvml && blind.size() == host.size()) {
    const auto cvd = ctx.facts.env.get("CUDA_VISIBLE_DEVICES");
    nlohmann::json params = {
        {"visible_devices", template_param(cvd ? " (CUDA_VISIBLE_DEVICES='{cvd_value}')" : " (CUDA lists no device)")},
        {"nvml_gpus", nvml->size()}};
    if (cvd) params["cvd_value"] = printable(*cvd);
    return Verdict::of(kJobSeesNoGpu, std::move(params), b.evidence());
  }

  // This job's own processes (every rank of the node) are not another job's.
  std::vector<int> own_pids;
  for (const RankFacts* f : host) {
    if (f->identity.pid != 0) own_pids.push_back(f->identity.pid);
  }
  nlohmann::json per_gpu = nlohmann::json::array();
  std::vector<std::string> foreign, unexplained, unread;
  std::vector<int> foreign_pids;
  std::uint64_t max_used = 0;
  std::size_t judged_count = 0;
  // A lost GPU, or one whose processes or memory NVML could not read, is named with its cause; the
  // others are judged.
  const std::vector<std::string> lost = lost_nvml_gpus(used);
  for (const NvmlGpu* g : used) {
    if (!g->lost.empty()) continue;
    if (!g->error.empty()) {
      unread.push_back(gpu_text(*g) + ": " + g->error);
      continue;
    }
    ++judged_count;
    std::vector<std::string> holders;
    std::uint64_t listed = 0;
    nlohmann::json procs = nlohmann::json::array();
    for (const GpuProcess& p : g->processes) {
      listed += p.used_bytes;
      const bool own = std::find(own_pids.begin(), own_pids.end(), p.pid) != own_pids.end();
      procs.push_back({{"pid", p.pid}, {"used_bytes", p.used_bytes}, {"own", own}});
      if (own) continue;
      holders.push_back(
          "pid " + std::to_string(p.pid) +
          (p.used_bytes > 0 ? " holds " + mib_text(p.used_bytes) : std::string(" (memory not reported)")));
      foreign_pids.push_back(p.pid);
    }
    per_gpu.push_back({{"index", g->index},
                       {"pci_bus_id", g->pci_bus_id},
                       {"uuid", g->uuid},
                       {"memory_total", g->memory_total},
                       {"memory_used", g->memory_used},
                       {"processes", procs}});
    max_used = std::max(max_used, g->memory_used);
    if (!holders.empty()) {
      foreign.push_back(gpu_text(*g) + ": " + join(holders, ", "));
      continue;
    }
    const std::uint64_t hidden = g->memory_used > listed ? g->memory_used - listed : 0;
    const bool big =
        hidden > kUnexplainedBytes ||
        (g->memory_total > 0 && static_cast<double>(hidden) > kUnexplainedShare * static_cast<double>(g->memory_total));
    if (big) {
      unexplained.push_back(gpu_text(*g) + ": " + mib_text(g->memory_used) + " of " + mib_text(g->memory_total) +
                            " in use, no process listed");
    }
  }
  b.evidence()["gpus"] = std::move(per_gpu);
  b.evidence()["own_pid"] = ctx.facts.identity.pid;
  b.evidence()["own_pids"] = own_pids;

  if (!foreign.empty()) b.add(kForeignProcess, {{"processes", join(foreign, "; ")}, {"pid", foreign_pids.front()}});
  if (!lost.empty()) b.add(kGpuLost, {{"gpus", join(lost, "; ")}});
  if (!unexplained.empty()) b.add(kUnexplainedMemory, {{"memory", join(unexplained, "; ")}});
  if (!unread.empty()) b.add(kGpuReadError, {{"gpus", join(unread, "; ")}});
  if (b.status() == Status::Pass) {
    if (used.empty()) {
      b.add(kNoJobGpu, {{"nvml_gpus", nvml->size()}});
    } else {
      b.add(kFree, {{"gpus", std::to_string(judged_count) + (judged_count == 1 ? " GPU" : " GPUs")},
                    {"max_used", mib_text(max_used)}});
    }
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  From the contained GPU helper, per GPU NVML sees: the running compute processes (pid and used
  memory; inside a container the pids are the host's) and the memory in use and in total. The
  GPUs judged are the ones the job will use: those CUDA enumerates (CUDA_VISIBLE_DEVICES applies),
  matched to NVML by UUID; in a job, rank 0 judges each node once with the union of the GPUs its
  ranks see (a per-rank CUDA_VISIBLE_DEVICES counts every rank's GPU). When CUDA's view is missing,
  NVML's list filtered by CUDA_VISIBLE_DEVICES, else every GPU NVML sees. The pids of the job's
  own ranks on the node are not counted.

Failures
  FAIL     a process that is not this job's is on a GPU the job will use, named with its memory
           ("GPU 0 (00000000:18:00.0): pid 4242 holds 30000 MiB"): usually an orphan of an earlier
           job; the new job runs out of memory or shares the GPU's compute.
  WARN     memory is in use with no process listed, above 1 GiB or 5% of the GPU's memory: a process
           in another container or pid namespace, or memory the driver has not released.
  FAIL     a GPU the job will use is lost or needs a reset (NVML_ERROR_GPU_IS_LOST /
           RESET_REQUIRED), named with its bus id and the call; the other GPUs are judged.
  UNKNOWN  NVML answered another error for a GPU the job will use (named, with the call): its
           processes are not judged, the other GPUs' are.
  FAIL     the GPUs could not be listed because the helper crashed, hung or NVML returned an error,
           or there is no driver at all (node and job profiles: the job needs a GPU).
  FAIL     the job will see no GPU (CUDA_VISIBLE_DEVICES empty, "none" or "NoDevFiles", or CUDA
           lists no device): there is no GPU of the job to call free; see gpu.count.
  UNKNOWN  NVML's list was not gathered (the helper did not run).
  SKIP     in the image profile: an image build has no GPU.

Fix
  `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` lists the processes (run it on the
  host); confirm with `ps -o pid,user,etime,cmd -p PID` and `kill PID`, or drain the node
  (`scontrol update nodename=NODE state=drain reason=...`). Memory held with no process needs a GPU
  reset (`nvidia-smi -r`) or a reboot. preflight itself never kills anything.)EXPLAIN";

}  // namespace

extern const CheckSpec kGpuBusy = {"gpu.busy",
                                   Scope::Node,
                                   "no other process or memory already on the GPUs this job will use",
                                   kExplain,
                                   kInNode | kInJob,
                                   "an image build has no GPU",
                                   &run,
                                   "gpu_driver",
                                   true,
                                   "driver.loaded",
                                   {},
                                   nullptr,
                                   kFindings};

}  // namespace gpu_busy_check
}  // namespace preflight
