// SPDX-License-Identifier: MIT
// gpu.count: the GPUs this node's ranks can use (CUDA's view, which honours CUDA_VISIBLE_DEVICES)
// against --expect-gpus and the local ranks, and GPUs NVML sees that CUDA does not.
#include <algorithm>
#include <array>
#include <map>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_common.hpp"
#include "core/gpu_binding.hpp"
#include "core/text.hpp"

namespace preflight {
namespace gpu_count_check {
namespace {

constexpr std::string_view kNeedsGpu = "the job needs a GPU";

std::string gpus(std::size_t n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

std::string nvml_name(const NvmlGpu& g) {
  return "GPU " + std::to_string(g.index) + " (" + (g.pci_bus_id.empty() ? g.uuid : g.pci_bus_id) + ")";
}

/// "N × LABEL" for each distinct label of the devices, in order of first appearance; devices for
/// which `label` is empty are left out.
template <class Label>
std::string counted(const std::vector<CudaDevice>& devs, Label label) {
  std::vector<std::pair<std::string, int>> counts;
  for (const CudaDevice& c : devs) {
    const std::string l = label(c);
    if (l.empty()) continue;
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& p) { return p.first == l; });
    if (it == counts.end()) {
      counts.emplace_back(l, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<std::string> parts;
  for (const auto& [name, n] : counts) parts.push_back(std::to_string(n) + " × " + name);
  return join(parts, ", ");
}

/// "8 × NVIDIA H100 80GB HBM3" or "2 × A, 1 × B".
std::string models(const std::vector<CudaDevice>& devs) {
  return counted(devs, [](const CudaDevice& c) { return c.name.empty() ? std::string("unnamed") : c.name; });
}

/// "model, memory size and compute capability" (what differs among the devices read), or "".
std::string how_gpus_differ(const std::vector<CudaDevice>& devs) {
  std::vector<std::string> differ;
  const auto varies = [&devs](auto key) {
    std::vector<decltype(key(devs.front()))> seen;
    for (const CudaDevice& d : devs) {
      if (!d.error.empty() || d.name.empty()) continue;  // not read: judged elsewhere (gpu-read-error)
      if (std::find(seen.begin(), seen.end(), key(d)) == seen.end()) seen.push_back(key(d));
    }
    return seen.size() > 1;
  };
  if (devs.size() < 2) return {};
  // MIG instances differ by design (their profiles); the MIG finding speaks of them.
  if (std::any_of(devs.begin(), devs.end(),
                  [](const CudaDevice& d) { return d.name.find(" MIG ") != std::string::npos; }))
    return {};
  if (varies([](const CudaDevice& d) { return d.name; })) differ.emplace_back("model");
  // A few MiB apart is one model's variation (ECC on or off, reserved memory): 5% is another size.
  std::uint64_t low = 0, high = 0;
  for (const CudaDevice& d : devs) {
    if (!d.error.empty() || d.memory_total == 0) continue;
    low = low == 0 ? d.memory_total : std::min(low, d.memory_total);
    high = std::max(high, d.memory_total);
  }
  if (low > 0 && high > low + low / 20) differ.emplace_back("memory size");
  if (varies([](const CudaDevice& d) { return d.cc_major * 10 + d.cc_minor; }))
    differ.emplace_back("compute capability");
  if (differ.size() == 3) return differ[0] + ", " + differ[1] + " and " + differ[2];
  return join(differ, " and ");
}

/// "4 × NVIDIA H100 80GB HBM3 (CC 9.0, 80 GiB), 4 × Tesla V100-SXM2-32GB (CC 7.0, 32 GiB)".
std::string models_in_detail(const std::vector<CudaDevice>& devs) {
  return counted(devs, [](const CudaDevice& d) {
    if (!d.error.empty()) return std::string();
    return (d.name.empty() ? std::string("unnamed") : printable(d.name, 64)) + " (CC " + std::to_string(d.cc_major) +
           "." + std::to_string(d.cc_minor) + ", " + std::to_string((d.memory_total + (1ULL << 29)) >> 30) + " GiB)";
  });
}

std::string rank_name(const RankFacts& f) { return "rank " + std::to_string(f.placement.rank); }

/// {cvd}: " (CUDA_VISIBLE_DEVICES={cvd_value})" when the ranks share one value, " (per-rank
/// CUDA_VISIBLE_DEVICES: {cvd_per_rank})" when they differ, "" when none sets it.
nlohmann::json cvd_params(const std::vector<const RankFacts*>& host) {
  std::vector<std::string> values;
  bool any = false;
  for (const RankFacts* f : host) {
    const auto cvd = f->env.get("CUDA_VISIBLE_DEVICES");
    any = any || cvd.has_value();
    values.push_back(cvd ? "'" + printable(*cvd) + "'" : std::string("unset"));
  }
  if (!any) return {{"cvd", part_if(false, "")}};
  const bool same =
      std::all_of(values.begin(), values.end(), [&](const std::string& v) { return v == values.front(); });
  if (same) {
    const std::string raw = *host.front()->env.get("CUDA_VISIBLE_DEVICES");
    if (trim(raw).empty()) return {{"cvd", template_param(" (CUDA_VISIBLE_DEVICES='')")}, {"cvd_value", raw}};
    return {{"cvd", template_param(" (CUDA_VISIBLE_DEVICES={cvd_value})")}, {"cvd_value", printable(raw)}};
  }
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < host.size() && i < 8; ++i) parts.push_back(rank_name(*host[i]) + " " + values[i]);
  if (host.size() > 8) parts.push_back("…");
  return {{"cvd", template_param(" (per-rank CUDA_VISIBLE_DEVICES: {cvd_per_rank})")},
          {"cvd_per_rank", join(parts, ", ")}};
}

/// `params` with the node's CUDA_VISIBLE_DEVICES ({cvd}, cvd_params) and {counted}: " to the node's
/// {rank_count} ranks" when the node's ranks are judged together, else "".
nlohmann::json with_node(nlohmann::json params, const nlohmann::json& cvd, std::size_t ranks) {
  params.update(cvd);
  params["counted"] = part_if(ranks > 1, " to the node's {rank_count} ranks");
  if (ranks > 1) params["rank_count"] = ranks;
  return params;
}

// {ranks}: "rank 2: " (the ranks whose value it is) when the node's ranks are judged together, else "".
constexpr FindingSpec kCvdHidesAll = {
    "gpu.count/cvd-hides-all", Status::Fail,
    "{ranks}CUDA_VISIBLE_DEVICES='{value}' hides every GPU: the job will see no GPU (NVML sees {nvml_gpus}); the job "
    "needs a GPU",
    "Unset CUDA_VISIBLE_DEVICES or list the GPUs the job should use (`nvidia-smi -L`); 'NoDevFiles' or "
    "'none' come from a scheduler or container runtime that gave the job no GPU: request GPUs "
    "(Slurm --gpus / --gres, `docker run --gpus all`)."};
constexpr FindingSpec kCvdInvalidEntry = {
    "gpu.count/cvd-invalid-entry", Status::Fail,
    "{ranks}CUDA_VISIBLE_DEVICES={value} has an invalid entry {entry} at position {position}: the driver stops reading "
    "the list there, so only {listed} {verb} visible and the rest of the list is ignored",
    "Fix CUDA_VISIBLE_DEVICES: list valid indices (0..{last_index}) or full GPU UUIDs from `nvidia-smi -L`, each "
    "once, separated by commas; or let the scheduler set it (`srun --gpus-per-task=1`)."};
constexpr FindingSpec kRankSeesNoGpu = {
    "gpu.count/rank-sees-no-gpu", Status::Fail, "rank {rank} sees no GPU{cvd}; the job needs a GPU",
    "Give every rank a GPU: a per-rank CUDA_VISIBLE_DEVICES that names a valid GPU, or the scheduler's "
    "per-task GPU binding (`srun --gpus-per-task=1`)."};
// {counted}: " to the node's {rank_count} ranks" or ""; {cvd}: " (CUDA_VISIBLE_DEVICES={cvd_value})" or "";
// {nvml}: "; NVML sees {nvml_gpus}", or "".
constexpr FindingSpec kNoGpuVisible = {
    "gpu.count/no-gpu-visible", Status::Fail, "no GPU visible to CUDA{counted}{cvd}{nvml}; the job needs a GPU",
    "Give the job GPUs: `docker run --gpus all …`, the scheduler's GPU request (Slurm --gpus / --gres), "
    "and check that this user can open /dev/nvidia* (`ls -l /dev/nvidia*`)."};
constexpr FindingSpec kCvdSelectsNoGpu = {
    "gpu.count/cvd-selects-no-gpu", Status::Fail, "no GPU visible to CUDA{counted}{cvd}{nvml}; the job needs a GPU",
    "CUDA_VISIBLE_DEVICES={value} selects no usable GPU: unset it or list valid indices/UUIDs (`nvidia-smi -L`)."};
constexpr FindingSpec kFewerThanExpected = {
    "gpu.count/fewer-than-expected", Status::Fail,
    "{visible} visible to CUDA{counted}{cvd}, --expect-gpus {expect}{nvml}",
    "Find the missing GPUs: `nvidia-smi -L` (absent there too: `dmesg | grep -i -e NVRM -e Xid`, a GPU "
    "fallen off the bus needs a reset or repair), CUDA_VISIBLE_DEVICES, the container's --gpus, the "
    "scheduler's GPU request; or correct --expect-gpus."};
constexpr FindingSpec kMoreThanExpected = {
    "gpu.count/more-than-expected", Status::Fail,
    "{visible} visible to CUDA{counted}{cvd}, --expect-gpus {expect}{nvml}",
    "More GPUs than expected: restrict them with CUDA_VISIBLE_DEVICES or the scheduler's GPU request, "
    "or correct --expect-gpus."};
constexpr FindingSpec kMoreRanksThanGpus = {
    "gpu.count/more-ranks-than-gpus", Status::Fail,
    "{local_ranks} local ranks but {visible} visible{cvd}: ranks would share a GPU or fail to get one",
    "Start at most {at_most} per node (`mpirun --map-by ppr:{visible_count}:node`, "
    "`srun --ntasks-per-node={visible_count}`), or make more GPUs visible to each node's ranks."};
constexpr FindingSpec kHiddenByCvd = {
    "gpu.count/hidden-by-cvd", Status::Warn,
    "NVML sees {nvml_gpus}, CUDA {visible_count}: {hidden} {hidden_verb} not visible to CUDA ({hidden_by})",
    "If the job should use them, unset CUDA_VISIBLE_DEVICES or list them in it (the scheduler sets it from its GPU "
    "request: ask for more GPUs){expect_hint}"};
constexpr FindingSpec kHiddenFromCuda = {
    "gpu.count/hidden-from-cuda", Status::Warn,
    "NVML sees {nvml_gpus}, CUDA {visible_count}: {hidden} {hidden_verb} not visible to CUDA (not through "
    "CUDA_VISIBLE_DEVICES: check /dev/nvidia* permissions and the container's device cgroup)",
    "Check `ls -l /dev/nvidia*` (each GPU's node readable and writable by this user), the container's device list "
    "(`--gpus all`, NVIDIA_VISIBLE_DEVICES), and `nvidia-smi -q -d MIG`."};
constexpr FindingSpec kMigMode = {
    "gpu.count/mig-mode", Status::Warn,
    "MIG mode is on for {mig_gpus}: CUDA sees its MIG instances, not the whole GPU, and NCCL cannot use P2P/NVLink "
    "between MIG instances",
    "Disable MIG on training nodes (`nvidia-smi -i <gpu> -mig 0` as root, then reset the GPU), or "
    "select MIG instances by their MIG-… UUIDs in CUDA_VISIBLE_DEVICES."};
constexpr FindingSpec kVisible = {"gpu.count/visible", Status::Pass,
                                  "{visible} visible to CUDA{counted} ({models}){cvd}{as_expected}{nvml}; {locals}",
                                  ""};

constexpr FindingSpec kGpuLost = {"gpu.count/gpu-lost", Status::Fail, kLostGpuMessage, kLostGpuRemedy};
constexpr FindingSpec kGpuReadError = {"gpu.count/gpu-read-error", Status::Unknown, kGpuReadErrorMessage,
                                       kGpuReadErrorFix};
constexpr FindingSpec kCudaDeviceError = {"gpu.count/cuda-device-error", Status::Unknown,
                                          "CUDA could not read {devices}; the rest is judged", kGpuReadErrorFix};

// Different GPUs in one node: the job runs at the slowest GPU's speed and the smallest one's memory,
// and there is no P2P between GPUs of different generations.
constexpr FindingSpec kMixedGpus = {
    "gpu.count/mixed-gpus", Status::Warn,
    "the node's GPUs differ ({differ}): {models}; a job runs at the slowest GPU's speed and within the smallest "
    "one's memory, and GPUs of different generations have no P2P between them",
    "Give the job GPUs of one model (CUDA_VISIBLE_DEVICES, or the scheduler's GPU type: --gres=gpu:TYPE:N), or set "
    "--expect-gpus to the ones it should use."};

// The GPU checks' shared findings; {who} names the rank where the node has several.
constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("gpu.count", "{who}")};
constexpr auto kFindings = with_shared(
    kShared, std::array{kCvdHidesAll, kCvdInvalidEntry, kRankSeesNoGpu, kNoGpuVisible, kCvdSelectsNoGpu,
                        kFewerThanExpected, kMoreThanExpected, kMoreRanksThanGpus, kHiddenByCvd, kHiddenFromCuda,
                        kMigMode, kGpuLost, kGpuReadError, kCudaDeviceError, kMixedGpus, kVisible});

Verdict run(const CheckContext& ctx) {
  const DriverFacts& d = ctx.facts.gpu.driver;
  if (std::optional<GpuShared> none = no_driver(d, kNeedsGpu)) {
    none->params["who"] = part_if(false, "");
    return shared_verdict(kShared, *none);
  }

  // The node's ranks (rank 0 judges a gathered job's node with all of them): the GPUs the node's
  // job uses are the union of what each rank sees.
  const std::vector<const RankFacts*> host = node_ranks(ctx);
  const bool several = host.size() > 1;
  const std::optional<std::string> cvd = ctx.facts.env.get("CUDA_VISIBLE_DEVICES");
  const int local_ranks = several ? static_cast<int>(host.size()) : std::max(1, ctx.facts.placement.local_ranks);
  VerdictBuilder b;
  b.evidence()["local_ranks"] = local_ranks;
  b.evidence()["expect_gpus"] = ctx.options.expect_gpus ? nlohmann::json(*ctx.options.expect_gpus) : nlohmann::json();
  b.evidence()["CUDA_VISIBLE_DEVICES"] = cvd ? nlohmann::json(*cvd) : nlohmann::json();
  if (several) {
    nlohmann::json per = nlohmann::json::object();
    for (const RankFacts* f : host) {
      const auto v = f->env.get("CUDA_VISIBLE_DEVICES");
      per[std::to_string(f->placement.rank)] = v ? nlohmann::json(*v) : nlohmann::json();
    }
    b.evidence()["CUDA_VISIBLE_DEVICES_per_rank"] = std::move(per);
  }

  std::vector<CudaDevice> seen_union;   // the node's GPUs the ranks see, by UUID, first appearance first
  std::vector<const RankFacts*> blind;  // ranks that see no GPU
  for (const RankFacts* f : host) {
    const DriverFacts& rd = f->gpu.driver;
    const std::vector<CudaDevice>* cuda = rd.cuda_devices.value();
    if (cuda == nullptr) {
      const ProbeError& err = *rd.cuda_devices.error();
      if (!no_device_error(err)) {
        GpuShared missing = missing_gpu_fact(err, rd.cuda_devices.source(), "the CUDA devices", kNeedsGpu);
        missing.params["who"] = part_if(several, "rank {who_rank}: ");
        if (several) missing.params["who_rank"] = f->placement.rank;
        missing.evidence.update(b.evidence());
        return shared_verdict(kShared, missing);
      }
      blind.push_back(f);
      continue;
    }
    if (cuda->empty()) blind.push_back(f);
    for (const CudaDevice& c : *cuda) {
      const bool known = std::any_of(seen_union.begin(), seen_union.end(), [&](const CudaDevice& u) {
        return !c.uuid.empty() && !u.uuid.empty() ? uuid_key(c.uuid) == uuid_key(u.uuid)
                                                  : bus_key(c.pci_bus_id) == bus_key(u.pci_bus_id);
      });
      if (!known) seen_union.push_back(c);
    }
  }
  const std::vector<CudaDevice>* cuda = &seen_union;
  b.evidence()["cuda_devices"] = *cuda;
  const std::vector<NvmlGpu>* nvml = d.nvml_gpus.value();
  if (nvml != nullptr) {
    nlohmann::json list = nlohmann::json::array();
    for (const NvmlGpu& g : *nvml) {
      list.push_back({{"index", g.index},
                      {"name", g.name},
                      {"uuid", g.uuid},
                      {"pci_bus_id", g.pci_bus_id},
                      {"mig_enabled", g.mig_enabled},
                      {"lost", g.lost},
                      {"error", g.error}});
    }
    b.evidence()["nvml_gpus"] = std::move(list);
  } else {
    b.evidence()["nvml_error"] = d.nvml_gpus.why();
  }

  const std::size_t visible = cuda->size();
  const nlohmann::json cvd_part = cvd_params(host);
  const bool by_cvd = cvd_part.contains("cvd_value") || cvd_part.contains("cvd_per_rank");

  // CUDA_VISIBLE_DEVICES as the driver reads it: an invalid entry ends the list there, and an
  // empty / none / NoDevFiles value hides every GPU. Found here for every profile (this check sees
  // the node's environment), with the ranks whose value it is.
  bool hidden_by_value = false;  // the value hides every GPU: said once, not again as "no GPU visible"
  if (nvml != nullptr) {
    std::map<std::string, std::vector<int>> invalid_by_value;
    for (const RankFacts* f : host) {
      const auto v = f->env.get("CUDA_VISIBLE_DEVICES");
      if (!v) continue;
      const CvdParse parsed = apply_cvd(*v, *nvml);
      if (parsed.invalid || parsed.no_gpu) invalid_by_value[*v].push_back(f->placement.rank);
    }
    for (const auto& [value, ranks] : invalid_by_value) {
      const CvdParse parsed = apply_cvd(value, *nvml);
      nlohmann::json whose = {
          {"ranks", part_if(several, std::string(ranks.size() == 1 ? "rank" : "ranks") + " {value_ranks}: ")}};
      if (several) whose["value_ranks"] = range_list(ranks);
      if (parsed.no_gpu) {
        hidden_by_value = hidden_by_value || !several;
        whose.update({{"value", printable(value)}, {"nvml_gpus", gpus(nvml->size())}});
        b.add(kCvdHidesAll, std::move(whose));
        continue;
      }
      whose.update({{"value", printable(value)},
                    {"entry", *parsed.invalid},
                    {"position", parsed.position},
                    {"listed", gpus(parsed.visible.size())},
                    {"verb", parsed.visible.size() == 1 ? "is" : "are"},
                    {"last_index", static_cast<long>(nvml->size()) - 1}});
      b.add(kCvdInvalidEntry, std::move(whose));
    }
  }
  if (several && visible > 0) {
    for (const RankFacts* f : blind) {
      nlohmann::json params = cvd_params({f});
      params["rank"] = f->placement.rank;
      b.add(kRankSeesNoGpu, std::move(params));
    }
  }

  // A lost GPU, or one NVML answered an error for, is named with its cause; the others are judged.
  if (nvml != nullptr) {
    const std::vector<std::string> lost = lost_nvml_gpus(*nvml);
    if (!lost.empty()) b.add(kGpuLost, {{"gpus", join(lost, "; ")}});
    std::vector<std::string> unread;
    for (const NvmlGpu& g : *nvml) {
      if (g.lost.empty() && !g.error.empty()) unread.push_back(nvml_gpu_text(g) + ": " + g.error);
    }
    if (!unread.empty()) b.add(kGpuReadError, {{"gpus", join(unread, "; ")}});
  }
  {
    std::vector<std::string> unread;
    for (const CudaDevice& c : *cuda) {
      if (!c.error.empty()) unread.push_back("device " + std::to_string(c.ordinal) + ": " + c.error);
    }
    if (!unread.empty()) b.add(kCudaDeviceError, {{"devices", join(unread, "; ")}});
  }

  // GPUs NVML sees that CUDA does not (a lost GPU is said above, with its cause).
  std::vector<const NvmlGpu*> hidden, mig;
  if (nvml != nullptr) {
    for (const NvmlGpu& g : *nvml) {
      const bool seen = std::any_of(cuda->begin(), cuda->end(), [&](const CudaDevice& c) { return same_gpu(g, c); });
      if (g.mig_enabled.value_or(false)) mig.push_back(&g);
      if (!seen && g.lost.empty()) hidden.push_back(&g);
    }
  }

  if (visible == 0 && hidden_by_value) {
    // said above
  } else if (visible == 0) {
    nlohmann::json params =
        with_node({{"nvml", part_if(nvml != nullptr, "; NVML sees {nvml_gpus}")}}, cvd_part, host.size());
    if (nvml != nullptr) params["nvml_gpus"] = gpus(nvml->size());
    if (cvd) params["value"] = *cvd;
    b.add(cvd ? kCvdSelectsNoGpu : kNoGpuVisible, std::move(params));
  } else {
    if (ctx.options.expect_gpus && static_cast<std::size_t>(*ctx.options.expect_gpus) != visible) {
      const int expect = *ctx.options.expect_gpus;
      nlohmann::json params = with_node({{"visible", gpus(visible)},
                                         {"expect", expect},
                                         {"nvml", part_if(nvml != nullptr, " (NVML sees {nvml_count})")}},
                                        cvd_part, host.size());
      if (nvml != nullptr) params["nvml_count"] = nvml->size();
      b.add(static_cast<std::size_t>(expect) > visible ? kFewerThanExpected : kMoreThanExpected, std::move(params));
    }
    if (static_cast<std::size_t>(local_ranks) > visible) {
      nlohmann::json params = {{"local_ranks", local_ranks},
                               {"visible", gpus(visible)},
                               {"at_most", std::to_string(visible) + (visible == 1 ? " rank" : " ranks")},
                               {"visible_count", visible}};
      params.update(cvd_part);
      b.add(kMoreRanksThanGpus, std::move(params));
    }
  }

  if (!hidden.empty()) {
    std::vector<std::string> names;
    bool all_mig = true;
    for (const NvmlGpu* g : hidden) {
      names.push_back(nvml_name(*g));
      all_mig = all_mig && g->mig_enabled.value_or(false);
    }
    b.evidence()["hidden_from_cuda"] = names;
    // All hidden GPUs in MIG mode: CUDA sees their instances instead; the MIG finding below says so.
    if (!all_mig) {
      const bool intended = ctx.options.expect_gpus && static_cast<std::size_t>(*ctx.options.expect_gpus) == visible;
      std::string why =
          "not through CUDA_VISIBLE_DEVICES: check /dev/nvidia* permissions and the container's device cgroup";
      if (by_cvd)
        why = several ? "the ranks' CUDA_VISIBLE_DEVICES hide them" : "CUDA_VISIBLE_DEVICES=" + *cvd + " hides them";
      if (intended) {
        b.note(gpus(hidden.size()) + " NVML sees are hidden from CUDA (" + why + "), as --expect-gpus says");
      } else {
        nlohmann::json params = {{"nvml_gpus", gpus(nvml->size())},
                                 {"visible_count", visible},
                                 {"hidden", join(names, ", ")},
                                 {"hidden_verb", hidden.size() == 1 ? "is" : "are"}};
        if (by_cvd) {
          params["hidden_by"] = why;
          // --expect-gpus only says the hiding is intended; it cannot fix more ranks than GPUs.
          params["expect_hint"] = template_param(static_cast<std::size_t>(local_ranks) > visible
                                                     ? std::string(".")
                                                     : "; otherwise state --expect-gpus {visible_count}.");
        }
        b.add(by_cvd ? kHiddenByCvd : kHiddenFromCuda, std::move(params));
      }
    }
  }
  if (!mig.empty()) {
    std::vector<std::string> names;
    for (const NvmlGpu* g : mig) names.push_back(nvml_name(*g));
    b.add(kMigMode, {{"mig_gpus", join(names, ", ")}});
  }

  if (const std::string differ = how_gpus_differ(*cuda); !differ.empty()) {
    b.add(kMixedGpus, {{"differ", differ}, {"models", models_in_detail(*cuda)}});
  }

  if (b.status() == Status::Pass) {
    nlohmann::json params =
        with_node({{"visible", gpus(visible)},
                   {"models", models(*cuda)},
                   {"as_expected", part_if(ctx.options.expect_gpus.has_value(), ", as --expect-gpus says")},
                   {"locals", std::to_string(local_ranks) + (local_ranks == 1 ? " local rank" : " local ranks")}},
                  cvd_part, host.size());
    if (nvml != nullptr) {
      params["nvml"] = part_if(hidden.empty(), "; NVML sees the same {nvml_count}");
      params["nvml_count"] = nvml->size();
    } else {
      params["nvml"] = template_param("; NVML's view not available ({nvml_error})");
      params["nvml_error"] = d.nvml_gpus.why();
    }
    b.add(kVisible, std::move(params));
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  From the contained GPU helper: the devices the CUDA driver API enumerates in a process with the
  job's environment (this honours CUDA_VISIBLE_DEVICES), and every GPU NVML sees on the node
  (index, UUID, PCI bus id, MIG mode), joined by UUID (by PCI bus id where a UUID is missing).
  Also --expect-gpus, the node's local rank count, and CUDA_VISIBLE_DEVICES. In a job, rank 0
  judges each node once with every rank of that node: the node's GPUs are the union (by UUID) of
  the GPUs each rank sees, so a per-rank CUDA_VISIBLE_DEVICES ($OMPI_COMM_WORLD_LOCAL_RANK, Slurm's
  --gpus-per-task) counts every rank's GPU, not local rank 0's alone. This check owns
  CUDA_VISIBLE_DEVICES as the driver reads it in every profile (it sees the node's environment);
  launch.gpu_binding names the rank whose value it is in a job.

Failures
  FAIL     no GPU visible to CUDA, or no driver at all (node and job profiles: the job needs a GPU).
  FAIL     CUDA_VISIBLE_DEVICES is empty, "none" or "NoDevFiles": the job will see no GPU.
  FAIL     CUDA_VISIBLE_DEVICES has an invalid entry (not a number, out of range, an unknown or
           ambiguous UUID prefix, a repeat): the driver stops reading the list there ("0,1,99":
           only GPUs 0 and 1 are visible), so the job silently gets fewer GPUs.
  FAIL     the number of GPUs CUDA sees differs from --expect-gpus ("4 GPUs visible to CUDA,
           --expect-gpus 8").
  FAIL     more local ranks than visible GPUs ("8 local ranks but 4 GPUs visible"): ranks would
           share a GPU (NCCL refuses or hangs) or fail to get one.
  FAIL     in a job, a rank of the node sees no GPU while the others do.
  FAIL     CUDA could not enumerate devices: the helper crashed, hung or the driver returned an error.
  FAIL     a GPU NVML lists is lost or needs a reset (NVML_ERROR_GPU_IS_LOST / RESET_REQUIRED),
           named with its bus id and the call that answered it; the other GPUs are judged as usual.
  UNKNOWN  NVML or CUDA answered an error for one GPU (named, with the call); the other GPUs are
           judged as usual.
  WARN     NVML sees GPUs that CUDA does not: hidden by CUDA_VISIBLE_DEVICES, by MIG mode (CUDA sees
           MIG instances), or by /dev/nvidia* permissions or the container's device cgroup. Not a
           warning when --expect-gpus equals the visible count (the hiding is intended).
  WARN     MIG mode is on: NCCL has no P2P/NVLink between MIG instances.
  WARN     the GPUs CUDA sees differ in model, memory size (by more than 5%) or compute capability
           (4 × H100 80 GB beside 4 × V100 32 GB): the job runs at the slowest GPU's speed and within
           the smallest one's memory, and GPUs of different generations have no P2P between them.
  UNKNOWN  the devices were not enumerated (the helper did not run).
  SKIP     in the image profile: an image build has no GPU.

Fix
  `nvidia-smi -L` lists what the driver sees; CUDA_VISIBLE_DEVICES, `docker run --gpus`, the
  scheduler's GPU request (Slurm --gpus/--gres) and `ls -l /dev/nvidia*` decide what the job sees;
  run at most as many ranks per node as GPUs. --expect-gpus only says that hidden GPUs are hidden on
  purpose: it is not offered as a fix when there are more local ranks than visible GPUs.)EXPLAIN";

}  // namespace

extern const CheckSpec kGpuCount = {
    "gpu.count",
    Scope::Node,
    "GPUs visible to CUDA vs --expect-gpus and local ranks; GPUs NVML sees but CUDA does not",
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

}  // namespace gpu_count_check
}  // namespace preflight
