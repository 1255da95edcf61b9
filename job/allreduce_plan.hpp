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

/// Why the NCCL all_reduce cannot run across `ranks` (empty: it can): two ranks on one GPU, a rank
/// without a GPU to use, a rank that cannot load NCCL. `any_gpu`: whether any rank sees a GPU.
std::string why_no_nccl(const std::vector<RankFacts>& ranks, bool& any_gpu);

/// The libnccl a rank's all_reduce loads: --nccl-lib, else the one its facts say the job loads.
std::string nccl_library(const Options& options, const RankFacts& facts);

/// Rank 0's plan for the job whose facts it gathered (`job.ranks`, `job.reach_target`), made by
/// `deadline` (the NCCL unique id is made in a contained helper, own = rank 0's facts).
AllreducePlan plan_allreduce(const Options& options, Profile profile, const JobFacts& job, const RankFacts& own,
                             TimePoint deadline);

}  // namespace preflight
