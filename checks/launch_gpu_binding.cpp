// SPDX-License-Identifier: MIT
// launch.gpu_binding (job): every rank of a host will use a GPU of its own. The GPU a rank uses is
// chosen as the frameworks choose it (core/gpu_binding.hpp): the only GPU it sees (a per-rank
// CUDA_VISIBLE_DEVICES or the scheduler's binding), else the device at index LOCAL_RANK (else the
// launcher's local rank) among the GPUs visible to it — CUDA's list when the driver probe ran,
// else NVML's list filtered by CUDA_VISIBLE_DEVICES the way the driver filters it.
#include <algorithm>
#include <map>

#include "checks/check.hpp"
#include "checks/gpu_common.hpp"
#include "core/gpu_binding.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

constexpr std::string_view kNeedsGpu = "the job needs a GPU";
constexpr const char* kBindRemedy =
    "Give every local rank its own GPU: with Slurm `srun --gpus-per-task=1` (or `--gpu-bind=single:1`), with "
    "mpirun a per-rank wrapper `export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK`, and in the training "
    "script `torch.cuda.set_device(local_rank)` with LOCAL_RANK set per rank (torchrun sets it).";

struct RankView {
  const RankFacts* facts = nullptr;
  RankGpus gpus;
  std::optional<BoundGpu> gpu;  // the GPU it will use
};

std::string who(const RankFacts& f) {
  return "rank " + std::to_string(f.placement.rank) + " (" + (f.identity.hostname.empty() ? "?" : f.identity.hostname) + ")";
}

std::string cvd_text(const RankFacts& f) {
  const auto cvd = f.env.get("CUDA_VISIBLE_DEVICES");
  return cvd ? " (CUDA_VISIBLE_DEVICES=" + printable(*cvd) + ")" : std::string();
}

/// Findings about the rank's CUDA_VISIBLE_DEVICES and LOCAL_RANK; the verdict that says why its
/// GPUs are not known, when they are not.
std::optional<Verdict> judge_view(RankView& v, VerdictBuilder& b) {
  const RankFacts& f = *v.facts;
  const DriverFacts& d = f.gpu.driver;
  const RankGpus& g = v.gpus;
  if (g.bad_local_rank) {
    b.add(Status::Fail, who(f) + ": LOCAL_RANK='" + printable(*g.bad_local_rank) + "' is not a device index",
          "Unset LOCAL_RANK or let the launcher set it (torchrun does; under mpirun use $OMPI_COMM_WORLD_LOCAL_RANK).");
  }
  if (g.cvd && cvd_hides_all(*g.cvd)) {
    b.add(Status::Fail,
          who(f) + ": CUDA_VISIBLE_DEVICES='" + printable(*g.cvd) + "' hides every GPU: the rank will see no GPU",
          "Unset CUDA_VISIBLE_DEVICES or list the rank's GPU in it (`nvidia-smi -L`); with Slurm request GPUs "
          "(`srun --gpus-per-task=1`): NoDevFiles/none means the scheduler or container gave the job none.");
  } else if (g.parsed && g.parsed->invalid) {
    const std::size_t n = d.nvml_gpus.value() != nullptr ? d.nvml_gpus.value()->size() : 0;
    b.add(Status::Fail,
          who(f) + ": CUDA_VISIBLE_DEVICES=" + printable(*g.cvd) + " has an invalid entry " + *g.parsed->invalid +
              " at position " + std::to_string(g.parsed->position) +
              ": the driver stops reading the list there, so only " +
              std::to_string(g.parsed->visible.size()) + " GPU(s) are visible",
          "Fix CUDA_VISIBLE_DEVICES: list valid indices (0.." + std::to_string(static_cast<long>(n) - 1) +
              ") or full GPU UUIDs from `nvidia-smi -L`, each once, separated by commas without a space; or let the "
              "scheduler set it (`srun --gpus-per-task=1`).");
  }
  if (g.visible) return std::nullopt;

  if (std::optional<Verdict> none = no_driver_verdict(d, kNeedsGpu)) return none;
  const ProbeError& err = d.cuda_devices.error() != nullptr ? *d.cuda_devices.error()
                                                            : ProbeError{ProbeErrc::NotProbed, "no GPU list"};
  return missing_gpu_fact(err, d.cuda_devices.source(), "the visible GPUs",
                          job_meets_it(err.code) ? kNeedsGpu : std::string_view{});
}

Verdict run(const CheckContext& ctx) {
  const std::vector<const RankFacts*> ranks = job_ranks(ctx);
  const bool gathered = ctx.job != nullptr && ctx.job->source != "none";
  VerdictBuilder b;
  nlohmann::json per_rank = nlohmann::json::array();
  std::vector<RankView> views;
  struct Missing {
    Status status = Status::Unknown;
    std::vector<const RankFacts*> ranks;
    std::string cause;
  };
  std::map<std::pair<std::string, std::string>, Missing> missing_by_text;
  for (const RankFacts* f : ranks) {
    RankView v;
    v.facts = f;
    v.gpus = rank_gpus(*f);
    const RankGpus& g = v.gpus;
    if (std::optional<Verdict> missing = judge_view(v, b)) {
      Missing& m = missing_by_text[{missing->summary, missing->remedy}];
      m.status = missing->status;
      m.ranks.push_back(f);
      m.cause = missing->cause;
    } else if (!g.ordinal && !g.visible->empty() && !g.bad_local_rank) {
      b.add(Status::Fail,
            who(*f) + ": " + g.index_text + " but it sees " + std::to_string(g.visible->size()) + " GPU(s)" +
                cvd_text(*f) +
                ": torch.cuda.set_device(" + std::to_string(g.index) + ") fails with \"invalid device ordinal\"",
            kBindRemedy);
    } else if (!g.ordinal && g.visible->empty() && !(g.cvd && cvd_hides_all(*g.cvd))) {
      b.add(Status::Fail, who(*f) + ": it sees no GPU" + cvd_text(*f) + "; " + std::string(kNeedsGpu),
            "See gpu.count on its host: give the rank a GPU (the container's --gpus, the scheduler's GPU request, "
            "a valid CUDA_VISIBLE_DEVICES).");
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
  bool all_driver = !missing_by_text.empty();
  for (const auto& [text, m] : missing_by_text) {
    all_driver = all_driver && m.cause == "driver.loaded";
    if (ranks.size() == 1) {
      b.add(m.status, text.first, text.second);
      continue;
    }
    std::vector<int> numbers;
    std::vector<std::string> names;
    for (const RankFacts* f : m.ranks) {
      numbers.push_back(f->placement.rank);
      const std::string h = f->identity.hostname.empty() ? "?" : f->identity.hostname;
      if (std::find(names.begin(), names.end(), h) == names.end()) names.push_back(h);
    }
    std::sort(numbers.begin(), numbers.end());
    b.add(m.status, (numbers.size() == 1 ? "rank " : "ranks ") + range_list(numbers) + " (" + join(names, ", ") + "): " + text.first,
          text.second);
  }

  // Per host: ranks sharing a GPU, and local ranks vs the GPUs visible to them.
  std::map<std::string, std::vector<const RankView*>> hosts;
  for (const RankView& v : views) hosts[host_key(*v.facts)].push_back(&v);
  for (const auto& [key, members] : hosts) {
    const std::string host = members.front()->facts->identity.hostname.empty() ? "?" : members.front()->facts->identity.hostname;
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
      for (const RankView* u : users) names.push_back(std::to_string(u->facts->placement.rank) + " (" +
                        (u->gpus.visible && u->gpus.visible->size() == 1
                             ? (u->gpus.cvd ? "CUDA_VISIBLE_DEVICES=" + printable(*u->gpus.cvd) : "its only GPU")
                             : u->gpus.index_text) + ")");
      b.add(Status::Fail,
            "ranks " + join(names, ", ") + " on " + host + " all use GPU " + users.front()->gpu->text() +
                ": NCCL fails with \"Duplicate GPU detected\" (and without NCCL they share one GPU's memory)",
            kBindRemedy);
    }
    if (!all_known || union_gpus.empty()) continue;
    // The host's local ranks: those gathered, or what the launcher (--ranks-per-node) claims when alone.
    std::size_t local = members.size();
    if (!gathered) local = static_cast<std::size_t>(std::max(1, members.front()->facts->placement.local_ranks));
    const std::size_t gpus = union_gpus.size();
    if (local > gpus) {
      b.add(Status::Fail,
            host + ": " + std::to_string(local) + " local ranks but only " + std::to_string(gpus) +
                " GPU(s) visible to them: ranks must share GPUs",
            "Start at most " + std::to_string(gpus) + " ranks per node (`--map-by ppr:" + std::to_string(gpus) +
                ":node`, `srun --ntasks-per-node=" + std::to_string(gpus) + "`), or make more GPUs visible.");
    } else if (local < gpus && (gathered || local > 1)) {
      b.add(Status::Warn,
            host + ": " + std::to_string(local) + " local rank(s) for " + std::to_string(gpus) + " visible GPUs: " +
                std::to_string(gpus - local) + " GPU(s) stay idle",
            "Start one rank per GPU (`--map-by ppr:" + std::to_string(gpus) + ":node`, `srun --ntasks-per-node=" +
                std::to_string(gpus) + "`), or restrict CUDA_VISIBLE_DEVICES to the GPUs the job should use.");
    }
  }

  if (b.status() == Status::Pass) {
    if (views.size() == 1 && views.front().gpu) {
      b.note(who(*views.front().facts) + " uses GPU " + views.front().gpu->text() + " (" + views.front().gpus.choice +
             ")");
    } else {
      b.note(std::to_string(views.size()) + " ranks on " + std::to_string(hosts.size()) +
             " host(s), each with a GPU of its own");
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

extern const CheckSpec kLaunchGpuBinding = {
    "launch.gpu_binding", Scope::Job, "every rank of a host has a GPU of its own that it can see", kExplain,
    kInJob, "an image build has no job to check", &run, "gpu_driver,gather", false, "driver.loaded", "one GPU of their own per rank"};

}  // namespace preflight
