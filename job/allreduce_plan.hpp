// SPDX-License-Identifier: MIT
// Rank 0's choice of the job's all_reduce (job/phases.hpp's AllreducePlan): NCCL across the ranks'
// GPUs when every rank has a GPU of its own and a loadable libnccl; MPI in host memory only where
// no rank's node has a GPU at all (a CPU-only job, or the image profile); with GPUs present, an
// all_reduce that cannot run over NCCL is a plan of Mode::None with its reason, never a substitute.
#pragma once

#include <string>
#include <vector>

#include "core/facts.hpp"
#include "core/job.hpp"
#include "core/options.hpp"
#include "job/phases.hpp"

namespace preflight {

/// Why the NCCL all_reduce cannot run across some ranks.
struct NcclBlock {
  std::string why;            // empty: it can run; else two ranks on one GPU, a rank without a GPU
                              // to use, a rank that cannot load NCCL
  bool any_gpu = false;       // whether any rank sees a GPU
  bool undetermined = false;  // `why` is a fact not found out in time (a probe's deadline), not a fault
};
NcclBlock why_no_nccl(const std::vector<RankFacts>& ranks);

/// Whether a probe's error says only that the fact was not found out in time: its own deadline
/// (a hung probe's facts included) or preflight's budget. Such a fact blocks a test, it faults nothing.
bool undetermined(const ProbeError* error);

/// The libnccl a rank's all_reduce loads: --nccl-lib, else the one its facts say the job loads.
std::string nccl_library(const Options& options, const RankFacts& facts);

/// Rank 0's plan for the job whose facts it gathered (`job.ranks`, `job.reach_target`), made by
/// `deadline` (the NCCL unique id is made in a contained helper, own = rank 0's facts).
AllreducePlan plan_allreduce(const Options& options, Profile profile, const JobFacts& job, const RankFacts& own,
                             TimePoint deadline);

}  // namespace preflight
