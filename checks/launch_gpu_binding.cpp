// SPDX-License-Identifier: MIT
// launch.gpu_binding (job): every rank of a host will use a GPU of its own. The GPU a rank uses is
// chosen as the frameworks choose it (core/gpu_binding.hpp): the only GPU it sees (a per-rank
// CUDA_VISIBLE_DEVICES or the scheduler's binding), else the device at index LOCAL_RANK (else the
// launcher's local rank) among the GPUs visible to it — CUDA's list when the driver probe ran,
// else NVML's list filtered by CUDA_VISIBLE_DEVICES the way the driver filters it.
#include <algorithm>
#include <array>
#include <map>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_common.hpp"
#include "core/gpu_binding.hpp"
#include "core/text.hpp"

namespace preflight {
namespace launch_gpu_binding_check {
namespace {

constexpr std::string_view kNeedsGpu = "the job needs a GPU";
#define PREFLIGHT_BIND_FIX                                                                                    \
  "Give every local rank its own GPU: with Slurm `srun --gpus-per-task=1` (or `--gpu-bind=single:1`), with "  \
  "mpirun a per-rank wrapper `export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK`, and in the training " \
  "script `torch.cuda.set_device(local_rank)` with LOCAL_RANK set per rank (torchrun sets it)."
// One rank, named by its number and host.
#define PREFLIGHT_RANK "rank {rank} ({host}): "

constexpr FindingSpec kBadLocalRank = {
    "launch.gpu_binding/bad-local-rank", Status::Fail, PREFLIGHT_RANK "LOCAL_RANK='{local_rank}' is not a device index",
    "Unset LOCAL_RANK or let the launcher set it (torchrun does; under mpirun use $OMPI_COMM_WORLD_LOCAL_RANK)."};
constexpr FindingSpec kVisibleDevicesHideAll = {
    "launch.gpu_binding/visible-devices-hide-all", Status::Fail,
    PREFLIGHT_RANK "CUDA_VISIBLE_DEVICES='{cvd}' hides every GPU: the rank will see no GPU",
    "Unset CUDA_VISIBLE_DEVICES or list the rank's GPU in it (`nvidia-smi -L`); with Slurm request GPUs "
    "(`srun --gpus-per-task=1`): NoDevFiles/none means the scheduler or container gave the job none."};
constexpr FindingSpec kVisibleDevicesInvalid = {
    "launch.gpu_binding/visible-devices-invalid", Status::Fail,
    PREFLIGHT_RANK
    "CUDA_VISIBLE_DEVICES={cvd} has an invalid entry {entry} at position {position}: the driver stops "
    "reading the list there, so only {visible} GPU(s) are visible",
    "Fix CUDA_VISIBLE_DEVICES: list valid indices (0..{last_index}) or full GPU UUIDs from `nvidia-smi -L`, each once, "
    "separated by commas without a space; or let the scheduler set it (`srun --gpus-per-task=1`)."};
constexpr FindingSpec kInvalidOrdinal = {
    "launch.gpu_binding/invalid-ordinal", Status::Fail,
    PREFLIGHT_RANK
    "{index} but it sees {visible} GPU(s){cvd_note}: torch.cuda.set_device({ordinal}) fails with "
    "\"invalid device ordinal\"",
    PREFLIGHT_BIND_FIX};
constexpr FindingSpec kSeesNoGpu = {
    "launch.gpu_binding/sees-no-gpu", Status::Fail, PREFLIGHT_RANK "it sees no GPU{cvd_note}; the job needs a GPU",
    "See gpu.count on its host: give the rank a GPU (the container's --gpus, the scheduler's GPU request, a valid "
    "CUDA_VISIBLE_DEVICES)."};
// The GPUs of some ranks could not be listed, as the GPU checks' shared findings: {who} names the
// ranks where the job has several ("ranks 0–3 (gpu-a, gpu-b): ").
constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("launch.gpu_binding", "{who}")};
constexpr FindingSpec kSharedGpu = {
    "launch.gpu_binding/shared-gpu", Status::Fail,
    "ranks {ranks} on {host} all use GPU {gpu}: NCCL fails with \"Duplicate GPU detected\" (and without NCCL they "
    "share one GPU's memory)",
    PREFLIGHT_BIND_FIX};
constexpr FindingSpec kTooManyRanks = {
    "launch.gpu_binding/too-many-ranks", Status::Fail,
    "{host}: {local} local ranks but only {gpus} GPU(s) visible to them: ranks must share GPUs",
    "Start at most {gpus} ranks per node (`--map-by ppr:{gpus}:node`, `srun --ntasks-per-node={gpus}`), or make more "
    "GPUs visible."};
constexpr FindingSpec kIdleGpus = {
    "launch.gpu_binding/idle-gpus", Status::Warn,
    "{host}: {local} local rank(s) for {gpus} visible GPUs: {idle} GPU(s) stay idle",
    "Start one rank per GPU (`--map-by ppr:{gpus}:node`, `srun --ntasks-per-node={gpus}`), or restrict "
    "CUDA_VISIBLE_DEVICES to the GPUs the job should use."};
constexpr FindingSpec kRankUsesGpu = {"launch.gpu_binding/rank-uses-gpu", Status::Pass,
                                      "rank {rank} ({host}) uses GPU {gpu} ({choice})", ""};
constexpr FindingSpec kGpuPerRank = {"launch.gpu_binding/gpu-per-rank", Status::Pass,
                                     "{rank_count} ranks on {host_count} host(s), each with a GPU of its own", ""};
#undef PREFLIGHT_RANK
#undef PREFLIGHT_BIND_FIX

constexpr auto kFindings =
    with_shared(kShared, std::array{kBadLocalRank, kVisibleDevicesHideAll, kVisibleDevicesInvalid, kInvalidOrdinal,
                                    kSeesNoGpu, kSharedGpu, kTooManyRanks, kIdleGpus, kRankUsesGpu, kGpuPerRank});

struct RankView {
  const RankFacts* facts = nullptr;
  RankGpus gpus;
  std::optional<BoundGpu> gpu;  // the GPU it will use
};

std::string host_of(const RankFacts& f) { return f.identity.hostname.empty() ? "?" : f.identity.hostname; }

/// The parameters that name a rank ({rank}, {host}), with `more`.
nlohmann::json who(const RankFacts& f, nlohmann::json more = nlohmann::json::object()) {
  nlohmann::json p = {{"rank", f.placement.rank}, {"host", host_of(f)}};
  p.update(more);
  return p;
}

/// Why a rank's GPUs are not known: the GPU checks' shared verdict, and the row it is reported by.
using Unlisted = GpuShared;

/// Findings about the rank's CUDA_VISIBLE_DEVICES and LOCAL_RANK; why its GPUs are not known, when
/// they are not.
std::optional<Unlisted> judge_view(RankView& v, VerdictBuilder& b) {
  const RankFacts& f = *v.facts;
  const DriverFacts& d = f.gpu.driver;
  const RankGpus& g = v.gpus;
  if (g.bad_local_rank) b.add(kBadLocalRank, who(f, {{"local_rank", printable(*g.bad_local_rank)}}));
  if (g.cvd && cvd_hides_all(*g.cvd)) {
    b.add(kVisibleDevicesHideAll, who(f, {{"cvd", printable(*g.cvd)}}));
  } else if (g.parsed && g.parsed->invalid) {
    const std::size_t n = d.nvml_gpus.value() != nullptr ? d.nvml_gpus.value()->size() : 0;
    b.add(kVisibleDevicesInvalid, who(f, {{"cvd", printable(*g.cvd)},
                                          {"entry", *g.parsed->invalid},
                                          {"position", g.parsed->position},
                                          {"visible", g.parsed->visible.size()},
                                          {"last_index", static_cast<long>(n) - 1}}));
  }
  if (g.visible) return std::nullopt;

  if (std::optional<GpuShared> none = no_driver(d, kNeedsGpu)) return none;
  const ProbeError& err =
      d.cuda_devices.error() != nullptr ? *d.cuda_devices.error() : ProbeError{ProbeErrc::NotProbed, "no GPU list"};
  return missing_gpu_fact(err, d.cuda_devices.source(), "the visible GPUs", kNeedsGpu);
}

Verdict run(const CheckContext& ctx) {
  const std::vector<const RankFacts*> ranks = job_ranks(ctx);
  const bool gathered = ctx.job != nullptr && ctx.job->source != "none";
  VerdictBuilder b;
  nlohmann::json per_rank = nlohmann::json::array();
  std::vector<RankView> views;
  struct Missing {
    GpuShared shared;
    std::vector<const RankFacts*> ranks;
  };
  std::map<std::pair<GpuShared::Kind, std::string>, Missing> missing_by_reason;  // one per finding and parameters
  for (const RankFacts* f : ranks) {
    RankView v;
    v.facts = f;
    v.gpus = rank_gpus(*f);
    const RankGpus& g = v.gpus;
    if (std::optional<Unlisted> missing = judge_view(v, b)) {
      Missing& m = missing_by_reason[{missing->kind, missing->params.dump()}];
      m.shared = std::move(*missing);
      m.ranks.push_back(f);
    } else if (!g.ordinal && !g.visible->empty() && !g.bad_local_rank) {
      nlohmann::json params = cvd_note_params(f->env);
      params.update({{"index", g.index_text}, {"visible", g.visible->size()}, {"ordinal", g.index}});
      b.add(kInvalidOrdinal, who(*f, std::move(params)));
    } else if (!g.ordinal && g.visible->empty() && !(g.cvd && cvd_hides_all(*g.cvd))) {
      b.add(kSeesNoGpu, who(*f, cvd_note_params(f->env)));
    } else {
      v.gpu = g.gpu();
    }
    per_rank.push_back({{"rank", f->placement.rank},
                        {"host", f->identity.hostname},
                        {"index", g.index_text},
                        {"choice", g.choice},
                        {"visible", g.visible ? nlohmann::json(g.visible->size()) : nlohmann::json()},
                        {"source", g.source},
                        {"gpu", v.gpu ? nlohmann::json(v.gpu->text()) : nlohmann::json()}});
    views.push_back(std::move(v));
  }
  b.evidence()["ranks"] = std::move(per_rank);
  // The GPUs a rank could not list: one finding per reason, naming the ranks and hosts it applies to.
  // When every such reason is the driver's absence and nothing else was found, the verdict follows
  // from driver.loaded.
  const bool clean_before = b.status() == Status::Pass;
  bool all_driver = !missing_by_reason.empty();
  for (const auto& [reason, m] : missing_by_reason) {
    all_driver = all_driver && m.shared.cause == "driver.loaded";
    nlohmann::json who = {{"who", part_if(false, "")}};  // alone, the rank needs no name
    if (ranks.size() > 1) {
      std::vector<int> numbers;
      std::vector<std::string> names;
      for (const RankFacts* f : m.ranks) {
        numbers.push_back(f->placement.rank);
        const std::string h = host_of(*f);
        if (std::find(names.begin(), names.end(), h) == names.end()) names.push_back(h);
      }
      std::sort(numbers.begin(), numbers.end());
      who = {
          {"who", template_param(std::string(numbers.size() == 1 ? "rank" : "ranks") + " {who_ranks} ({who_hosts}): ")},
          {"who_ranks", range_list(numbers)},
          {"who_hosts", join(names, ", ")}};
    }
    add_shared(b, kShared, m.shared, std::move(who));
  }

  // Per host: ranks sharing a GPU, and local ranks vs the GPUs visible to them.
  std::map<std::string, std::vector<const RankView*>> hosts;
  for (const RankView& v : views) hosts[host_key(*v.facts)].push_back(&v);
  for (const auto& [key, members] : hosts) {
    const std::string host = host_of(*members.front()->facts);
    std::map<std::string, std::vector<const RankView*>> by_gpu;
    std::map<std::string, BoundGpu> union_gpus;
    bool all_known = true;
    for (const RankView* v : members) {
      if (v->gpu) by_gpu[v->gpu->key()].push_back(v);
      if (v->gpus.visible) {
        for (const BoundGpu& g : *v->gpus.visible) union_gpus.emplace(g.key(), g);
      } else {
        all_known = false;
      }
    }
    for (const auto& [gkey, users] : by_gpu) {
      if (users.size() < 2) continue;
      std::vector<std::string> names;
      for (const RankView* u : users)
        names.push_back(std::to_string(u->facts->placement.rank) + " (" +
                        (u->gpus.visible && u->gpus.visible->size() == 1
                             ? (u->gpus.cvd ? "CUDA_VISIBLE_DEVICES=" + printable(*u->gpus.cvd) : "its only GPU")
                             : u->gpus.index_text) +
                        ")");
      b.add(kSharedGpu, {{"ranks", join(names, ", ")}, {"host", host}, {"gpu", users.front()->gpu->text()}});
    }
    if (!all_known || union_gpus.empty()) continue;
    // The host's local ranks: those gathered, or what the launcher (--ranks-per-node) claims when alone.
    std::size_t local = members.size();
    if (!gathered) local = static_cast<std::size_t>(std::max(1, members.front()->facts->placement.local_ranks));
    const std::size_t gpus = union_gpus.size();
    if (local > gpus) {
      b.add(kTooManyRanks, {{"host", host}, {"local", local}, {"gpus", gpus}});
    } else if (local < gpus && (gathered || local > 1)) {
      b.add(kIdleGpus, {{"host", host}, {"local", local}, {"gpus", gpus}, {"idle", gpus - local}});
    }
  }

  if (b.status() == Status::Pass) {
    if (views.size() == 1 && views.front().gpu) {
      b.add(kRankUsesGpu,
            who(*views.front().facts, {{"gpu", views.front().gpu->text()}, {"choice", views.front().gpus.choice}}));
    } else {
      b.add(kGpuPerRank, {{"rank_count", views.size()}, {"host_count", hosts.size()}});
    }
  }
  Verdict v = b.build();
  if (clean_before && all_driver) v.cause = "driver.loaded";
  return v;
}

constexpr std::string_view kExplain = R"(What it reads
  Every rank's GPUs as the CUDA driver lists them in that rank (CUDA_VISIBLE_DEVICES applied), else
  NVML's list filtered by the rank's CUDA_VISIBLE_DEVICES as the driver filters it; the rank's
  LOCAL_RANK (else the launcher's local rank); its host (hostname + boot id). The GPU a rank will use
  is the only GPU it sees when it sees exactly one (a per-rank CUDA_VISIBLE_DEVICES, as the wrapper
  `export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK` or `srun --gpus-per-task=1` makes it),
  else the one at index LOCAL_RANK among those it sees (torch.cuda.set_device(local_rank)). Any
  CUDA_VISIBLE_DEVICES that gives every rank a distinct GPU passes. The all_reduce of the job starts
  each rank's NCCL helper on that same GPU.

Failures
  FAIL     two ranks of one host use the same GPU (by UUID, else PCI bus id): NCCL aborts with
           "Duplicate GPU detected"; the ranks, host and GPU are named.
  FAIL     a rank sees several GPUs and LOCAL_RANK (or the local rank) is not below their number:
           "invalid device ordinal"; the rank is named with what it sees.
  FAIL     CUDA_VISIBLE_DEVICES has an invalid entry (not a number, out of range, an unknown or
           ambiguous UUID prefix, a repeat): the driver truncates the list there; rank and entry named.
  FAIL     CUDA_VISIBLE_DEVICES is empty, "none" or "NoDevFiles": the rank sees no GPU.
  FAIL     a rank sees no GPU at all, or LOCAL_RANK is not a number.
  FAIL     more local ranks on a host than GPUs visible to them (the union of their GPUs).
  FAIL     no NVIDIA driver, or the GPU list could not be read for a reason the job meets too.
  WARN     fewer local ranks than visible GPUs: GPUs stay idle.
  UNKNOWN  the GPU list was not probed (not permitted, not run).

Fix
  srun --gpus-per-task=1 …   |   export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK (per-rank wrapper)
  torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  (with every GPU visible to every rank)
  One rank per GPU: mpirun --map-by ppr:<GPUs>:node, srun --ntasks-per-node=<GPUs>.)";

}  // namespace

extern const CheckSpec kLaunchGpuBinding = {"launch.gpu_binding",
                                            Scope::Job,
                                            "every rank of a host has a GPU of its own that it can see",
                                            kExplain,
                                            kInJob,
                                            "an image build has no job to check",
                                            &run,
                                            "gpu_driver,gather",
                                            false,
                                            "driver.loaded",
                                            "one GPU of their own per rank",
                                            nullptr,
                                            kFindings};

}  // namespace launch_gpu_binding_check
}  // namespace preflight
