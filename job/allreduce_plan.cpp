// SPDX-License-Identifier: MIT
#include "job/allreduce_plan.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "core/gpu_binding.hpp"
#include "job/nccl_allreduce.hpp"
#include "job/run.hpp"
#include "transport/reach.hpp"

namespace preflight {
namespace {

/// "ADDR:PORT" with a port free right now on `address` (NCCL's root binds it moments later).
std::optional<std::string> free_root(const std::string& address, std::string& error) {
  ReachListener probe;
  if (!probe.listen(address, error)) return std::nullopt;
  const int port = probe.port();
  probe.close();
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

AllreducePlan none(std::string error) {
  AllreducePlan p;
  p.mode = AllreducePlan::Mode::None;
  p.error = std::move(error);
  return p;
}

}  // namespace

bool undetermined(const ProbeError* error) {
  return error != nullptr && (error->code == ProbeErrc::Timeout || error->code == ProbeErrc::OutOfBudget);
}

NcclBlock why_no_nccl(const std::vector<RankFacts>& ranks) {
  NcclBlock block;
  for (const RankFacts& f : ranks) {
    const auto* devices = f.gpu.driver.cuda_devices.value();
    const auto* nvml = f.gpu.driver.nvml_gpus.value();
    block.any_gpu = block.any_gpu || (devices != nullptr && !devices->empty()) || (nvml != nullptr && !nvml->empty());
  }
  std::map<std::string, int> user_of;  // host + GPU -> the rank that uses it
  for (const RankFacts& f : ranks) {
    const std::string who = "rank " + std::to_string(f.placement.rank) + " (" + f.identity.hostname + ")";
    const RankGpus g = rank_gpus(f);
    if (const std::optional<BoundGpu> gpu = g.gpu()) {
      const auto [it, fresh] = user_of.emplace(host_key(f) + "\n" + gpu->key(), f.placement.rank);
      if (!fresh) {
        block.why = who + " and rank " + std::to_string(it->second) + " use the same GPU " + gpu->text() +
                    " (NCCL refuses: \"Duplicate GPU detected\")";
        return block;
      }
    }
    if (!g.ordinal) {
      const auto* devices = f.gpu.driver.cuda_devices.value();
      block.undetermined = g.why_none.empty() && undetermined(f.gpu.driver.cuda_devices.error());
      block.why = who + " has no GPU to use: " +
                  (!g.why_none.empty()  ? g.why_none
                   : devices == nullptr ? "no CUDA device (" + f.gpu.driver.cuda_devices.why() + ")"
                                        : std::string("no CUDA device"));
      return block;
    }
    if (!f.gpu.nccl.ok()) {
      block.undetermined = undetermined(f.gpu.nccl.error());
      block.why = who + " cannot load NCCL (" + f.gpu.nccl.why() + ")";
      return block;
    }
  }
  return block;
}

std::string nccl_library(const Options& options, const RankFacts& facts) {
  if (!options.nccl_lib.empty()) return options.nccl_lib;
  const NcclLibrary* lib = facts.gpu.nccl.value();
  return lib != nullptr ? lib->path : std::string();
}

AllreducePlan plan_allreduce(const Options& options, Profile profile, const JobFacts& job, const RankFacts& own,
                             TimePoint deadline) {
  // Not selected (--only/--skip): no rank moves any data; rank 0 decides for all, so that ranks
  // started with other options still take the same collectives.
  if (!selected(options, "comm.allreduce")) return AllreducePlan{AllreducePlan::Mode::Skipped, 0, {}, {}, {}, {}};
  // The size asked for, on either transport (the command line refuses sizes they cannot run).
  AllreducePlan mpi{AllreducePlan::Mode::Mpi, options.allreduce_bytes_for("mpi"), {}, {}, {}, {}};
  const NcclBlock block = why_no_nccl(job.ranks);
  const std::string& why_not = block.why;
  const bool any_gpu = block.any_gpu;
  if (profile == Profile::Image) {
    mpi.why = "image profile";
    return mpi;
  }
  if (!why_not.empty() && !any_gpu) {
    mpi.why = "no rank has a GPU: " + why_not;
    return mpi;
  }
  if (!why_not.empty()) {
    AllreducePlan plan =
        none(std::string("the NCCL all_reduce across the job's GPUs ") +
             (block.undetermined ? "was not run: it was not found out in time whether it can: " : "cannot run: ") +
             why_not + " (see launch.gpu_binding, gpu.count and nccl.library)");
    plan.undetermined = block.undetermined;
    return plan;
  }
  if (!job.reach_target) return none("rank 0 has no bootstrap address for NCCL's root: " + job.reach_note);
  std::string error;
  const std::optional<std::string> root = free_root(job.reach_target->address, error);
  if (!root) return none(error);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  const Probed<std::string> id =
      nccl_unique_id(nccl_library(options, own),
                     std::clamp(left / 4, std::chrono::milliseconds(200), std::chrono::milliseconds(10000)), *root);
  if (!id.ok()) return none("ncclGetUniqueId: " + id.why());
  return AllreducePlan{AllreducePlan::Mode::Nccl, options.allreduce_bytes_for("nccl"), *id.value(), *root, {}, {}};
}

}  // namespace preflight
