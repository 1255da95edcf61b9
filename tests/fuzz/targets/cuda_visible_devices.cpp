// SPDX-License-Identifier: MIT
// CUDA_VISIBLE_DEVICES as the driver applies it (checks/launch_gpu_binding.cpp apply_cvd, through
// the launch.gpu_binding check) and as the other GPU checks read it, on ranks of a node with 8 GPUs.
// Input: the value; each rank gets it, the second rank with LOCAL_RANK=1.
#include "fuzz_checks.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const JobFacts base = job_fixture::job(1, 2);
  static const CheckSpec* const binding = find_check("launch.gpu_binding");
  JobFacts job = base;
  const std::string value(fuzz::text(data, size));
  for (RankFacts& f : job.ranks) {
    f.env.set("CUDA_VISIBLE_DEVICES", value);
    f.env.set("LOCAL_RANK", std::to_string(f.placement.local_rank));
  }
  const Options options;
  const CheckContext ctx{job.ranks.front(), options, Profile::Job, nullptr, &job};
  const Verdict v = binding->run(ctx);
  FUZZ_CHECK(!v.summary.empty());
  for (const CheckSpec* spec : all_checks()) {
    if (spec->scope != Scope::Job && spec->area() == "gpu") {
      const CheckContext rank_ctx{job.ranks.front(), options, Profile::Node, nullptr, nullptr};
      (void)spec->run(rank_ctx);
    }
  }
  return 0;
}
