// SPDX-License-Identifier: MIT
// launch.gpu_binding (job): every rank of a host will use a GPU of its own. The GPU a rank uses is
// chosen as the frameworks choose it: the device at index LOCAL_RANK (else the launcher's local rank)
// among the GPUs visible to the rank — CUDA's list when the driver probe ran, else NVML's list
// filtered by CUDA_VISIBLE_DEVICES the way the driver filters it.
#include <algorithm>
#include <map>

#include "checks/check.hpp"
#include "checks/gpu_common.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

constexpr std::string_view kNeedsGpu = "the job needs a GPU";
constexpr const char* kBindRemedy =
    "Give every local rank its own GPU: with Slurm `srun --gpus-per-task=1` (or `--gpu-bind=single:1`), with "
    "mpirun a per-rank wrapper `export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK`, and in the training "
    "script `torch.cuda.set_device(local_rank)` with LOCAL_RANK set per rank (torchrun sets it).";

struct Gpu {
  std::string uuid;
  std::string bus;
  std::string key() const { return uuid.empty() ? "bus:" + bus_key(bus) : uuid_key(uuid); }
  std::string text() const {
    if (uuid.empty()) return "bus " + bus;
    return uuid + (bus.empty() ? std::string() : " (bus " + bus + ")");
  }
};

/// CUDA_VISIBLE_DEVICES applied to NVML's list as the driver applies it: comma-separated ordinals or
/// GPU-<uuid prefix> entries (white space around an entry ignored), empty means none; the list ends
/// at the first invalid entry (not a number, out of range, an unknown or ambiguous prefix, a repeat).
struct CvdParse {
  std::vector<std::size_t> visible;  // indices into the NVML list
  std::optional<std::string> invalid;  // the first invalid entry and why
  std::size_t position = 0;            // its 1-based position
  bool unverifiable = false;           // MIG-… entries: not in NVML's GPU list
};

CvdParse apply_cvd(std::string_view cvd, const std::vector<NvmlGpu>& nvml) {
  CvdParse out;
  if (trim(cvd).empty()) return out;
  std::size_t pos = 0;
  for (std::string_view raw : split(cvd, ',')) {
    ++pos;
    const std::string_view entry = trim(raw);
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::size_t chosen = kNone;
    std::string why;
    if (entry.starts_with("MIG-")) {
      out.unverifiable = true;
      return out;
    }
    if (entry.size() > 4 && entry.starts_with("GPU-")) {
      const std::string want = to_lower(entry);
      int matches = 0;
      for (std::size_t i = 0; i < nvml.size(); ++i) {
        if (to_lower(nvml[i].uuid).starts_with(want)) {
          chosen = i;
          ++matches;
        }
      }
      if (matches == 0) why = "no GPU has that UUID";
      if (matches > 1) {
        chosen = kNone;
        why = "the UUID prefix matches " + std::to_string(matches) + " GPUs";
      }
    } else if (const auto n = parse_int(entry); n && *n >= 0) {
      if (static_cast<std::uint64_t>(*n) < nvml.size()) {
        chosen = static_cast<std::size_t>(*n);
      } else {
        why = "the node has " + std::to_string(nvml.size()) + " GPUs (0.." + std::to_string(static_cast<long>(nvml.size()) - 1) + ")";
      }
    } else {
      why = "not an index or a GPU-/MIG- UUID";
    }
    if (chosen != kNone && std::find(out.visible.begin(), out.visible.end(), chosen) != out.visible.end()) {
      chosen = kNone;
      why = "it repeats an earlier entry";
    }
    if (chosen == kNone) {
      out.invalid = "'" + printable(entry) + "' (" + why + ")";
      out.position = pos;
      return out;
    }
    out.visible.push_back(chosen);
  }
  return out;
}

struct RankView {
  const RankFacts* facts = nullptr;
  std::optional<std::vector<Gpu>> visible;  // nullopt: not known
  std::string source;
  int index = 0;             // LOCAL_RANK or the local rank
  std::string index_text;    // "LOCAL_RANK=3" / "local rank 3"
  std::optional<Gpu> gpu;    // the GPU it will use
};

std::string who(const RankFacts& f) {
  return "rank " + std::to_string(f.placement.rank) + " (" + (f.identity.hostname.empty() ? "?" : f.identity.hostname) + ")";
}
std::string host_key(const RankFacts& f) { return f.identity.hostname + "\n" + f.identity.boot_id; }

std::string cvd_text(const RankFacts& f) {
  const auto cvd = f.env.get("CUDA_VISIBLE_DEVICES");
  return cvd ? " (CUDA_VISIBLE_DEVICES=" + printable(*cvd) + ")" : std::string();
}

/// The rank's visible GPUs, or the verdict that says why they are not known.
std::optional<Verdict> visible_gpus(RankView& v, VerdictBuilder& b) {
  const RankFacts& f = *v.facts;
  const DriverFacts& d = f.gpu.driver;
  const auto cvd = f.env.get("CUDA_VISIBLE_DEVICES");
  const std::vector<NvmlGpu>* nvml = d.nvml_gpus.value();
  std::optional<CvdParse> parsed;
  if (cvd && nvml != nullptr) parsed = apply_cvd(*cvd, *nvml);

  if (const std::vector<CudaDevice>* cuda = d.cuda_devices.value()) {
    std::vector<Gpu> list;
    for (const CudaDevice& c : *cuda) list.push_back(Gpu{c.uuid, c.pci_bus_id});
    v.visible = std::move(list);
    v.source = d.cuda_devices.source().empty() ? "CUDA" : d.cuda_devices.source();
  } else if (const ProbeError* err = d.cuda_devices.error();
             err != nullptr && err->code == ProbeErrc::ApiError &&
             (err->detail.find("NO_DEVICE") != std::string::npos || err->detail.find("(100)") != std::string::npos)) {
    v.visible = std::vector<Gpu>{};
    v.source = "CUDA: " + err->detail;
  } else if (nvml != nullptr && (!parsed || !parsed->unverifiable)) {
    std::vector<Gpu> list;
    if (parsed) {
      for (std::size_t i : parsed->visible) list.push_back(Gpu{(*nvml)[i].uuid, (*nvml)[i].pci_bus_id});
    } else {
      for (const NvmlGpu& g : *nvml) list.push_back(Gpu{g.uuid, g.pci_bus_id});
    }
    v.visible = std::move(list);
    v.source = cvd ? "NVML + CUDA_VISIBLE_DEVICES" : "NVML";
  }

  if (parsed && parsed->invalid) {
    b.add(Status::Fail,
          who(f) + ": CUDA_VISIBLE_DEVICES=" + printable(*cvd) + " has an invalid entry " + *parsed->invalid +
              " at position " + std::to_string(parsed->position) + ": the driver stops reading the list there, so only " +
              std::to_string(parsed->visible.size()) + " GPU(s) are visible",
          "Fix CUDA_VISIBLE_DEVICES: list valid indices (0.." + std::to_string(static_cast<long>(nvml->size()) - 1) +
              ") or full GPU UUIDs from `nvidia-smi -L`, each once, separated by commas without a space; or let the "
              "scheduler set it (`srun --gpus-per-task=1`).");
  }
  if (v.visible) return std::nullopt;

  if (std::optional<Verdict> none = no_driver_verdict(d, kNeedsGpu)) return none;
  const ProbeError& err = d.cuda_devices.error() != nullptr ? *d.cuda_devices.error()
                                                            : ProbeError{ProbeErrc::NotProbed, "no GPU list"};
  return missing_gpu_fact(err, d.cuda_devices.source(), "the visible GPUs",
                          job_meets_it(err.code) ? kNeedsGpu : std::string_view{});
}

void choose_index(RankView& v, VerdictBuilder& b) {
  const RankFacts& f = *v.facts;
  v.index = f.placement.local_rank;
  v.index_text = "local rank " + std::to_string(v.index);
  if (const auto lr = f.env.get("LOCAL_RANK")) {
    if (const auto n = parse_int(*lr); n && *n >= 0 && *n <= 1'000'000) {
      v.index = static_cast<int>(*n);
      v.index_text = "LOCAL_RANK=" + std::to_string(v.index);
    } else {
      b.add(Status::Fail, who(f) + ": LOCAL_RANK='" + printable(*lr) + "' is not a device index",
            "Unset LOCAL_RANK or let the launcher set it (torchrun does; under mpirun use $OMPI_COMM_WORLD_LOCAL_RANK).");
    }
  }
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
  };
  std::map<std::pair<std::string, std::string>, Missing> missing_by_text;
  for (const RankFacts* f : ranks) {
    RankView v;
    v.facts = f;
    choose_index(v, b);
    if (std::optional<Verdict> missing = visible_gpus(v, b)) {
      Missing& m = missing_by_text[{missing->summary, missing->remedy}];
      m.status = missing->status;
      m.ranks.push_back(f);
    } else if (v.index >= static_cast<int>(v.visible->size())) {
      b.add(Status::Fail,
            who(*f) + ": " + v.index_text + " but it sees " + std::to_string(v.visible->size()) + " GPU(s)" + cvd_text(*f) +
                ": torch.cuda.set_device(" + std::to_string(v.index) + ") fails with \"invalid device ordinal\"",
            v.visible->size() == 1
                ? "Each rank sees one GPU (the scheduler bound it): select device 0 (`torch.cuda.set_device(0)`), not "
                  "LOCAL_RANK; or stop restricting CUDA_VISIBLE_DEVICES per rank."
                : std::string(kBindRemedy));
    } else {
      v.gpu = (*v.visible)[static_cast<std::size_t>(v.index)];
    }
    per_rank.push_back({{"rank", f->placement.rank},
                        {"host", f->identity.hostname},
                        {"index", v.index_text},
                        {"visible", v.visible ? nlohmann::json(v.visible->size()) : nlohmann::json()},
                        {"source", v.source},
                        {"gpu", v.gpu ? nlohmann::json(v.gpu->text()) : nlohmann::json()}});
    views.push_back(std::move(v));
  }
  b.evidence()["ranks"] = std::move(per_rank);
  // The GPUs a rank could not list: one finding per reason, naming the ranks and hosts it applies to.
  for (const auto& [text, m] : missing_by_text) {
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
    std::map<std::string, Gpu> union_gpus;
    bool all_known = true;
    for (const RankView* v : members) {
      if (v->gpu) by_gpu[v->gpu->key()].push_back(v);
      if (v->visible) {
        for (const Gpu& g : *v->visible) union_gpus.emplace(g.key(), g);
      } else {
        all_known = false;
      }
    }
    for (const auto& [gkey, users] : by_gpu) {
      if (users.size() < 2) continue;
      std::vector<std::string> names;
      for (const RankView* u : users) names.push_back(std::to_string(u->facts->placement.rank) + " (" + u->index_text + ")");
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
      b.note(who(*views.front().facts) + " uses GPU " + views.front().gpu->text() + " (" + views.front().index_text + " of " +
             std::to_string(views.front().visible->size()) + " visible)");
    } else {
      b.note(std::to_string(views.size()) + " ranks on " + std::to_string(hosts.size()) +
             " host(s), each with a GPU of its own");
    }
  }
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  Every rank's GPUs as the CUDA driver lists them in that rank (CUDA_VISIBLE_DEVICES applied), else
  NVML's list filtered by the rank's CUDA_VISIBLE_DEVICES as the driver filters it; the rank's
  LOCAL_RANK (else the launcher's local rank); its host (hostname + boot id). The GPU a rank will use
  is the one at index LOCAL_RANK among those it sees (torch.cuda.set_device(local_rank)).

Failures
  FAIL     two ranks of one host use the same GPU (by UUID, else PCI bus id): NCCL aborts with
           "Duplicate GPU detected"; the ranks, host and GPU are named.
  FAIL     LOCAL_RANK (or the local rank) is not below the number of GPUs the rank sees:
           "invalid device ordinal".
  FAIL     CUDA_VISIBLE_DEVICES has an invalid entry (not a number, out of range, an unknown or
           ambiguous UUID prefix, a repeat): the driver truncates the list there.
  FAIL     more local ranks on a host than GPUs visible to them.
  FAIL     no NVIDIA driver, or the GPU list could not be read for a reason the job meets too.
  WARN     fewer local ranks than visible GPUs: GPUs stay idle.
  UNKNOWN  the GPU list was not probed (not permitted, not run).

Fix
  srun --gpus-per-task=1 …   |   export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK (per-rank wrapper)
  torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
  One rank per GPU: mpirun --map-by ppr:<GPUs>:node, srun --ntasks-per-node=<GPUs>.)";

}  // namespace

extern const CheckSpec kLaunchGpuBinding = {
    "launch.gpu_binding", Scope::Job, "every rank of a host has a GPU of its own that it can see", kExplain,
    kInJob, "an image build has no job to check", &run, "gpu_driver,gather"};

}  // namespace preflight
