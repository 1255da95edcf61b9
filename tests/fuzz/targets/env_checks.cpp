// SPDX-License-Identifier: MIT
// The whole environment as the checks read it (env.nccl with the catalog's grammars, launch.env,
// cuda.*, shm.capacity, net.* with NCCL_SOCKET_IFNAME/NCCL_IB_HCA/NCCL_COMM_ID,
// NVIDIA_REQUIRE_CUDA, CUDA_VISIBLE_DEVICES, ...): every check over a healthy two-rank job whose
// ranks carry the input as their environment. Input: "NAME=value" lines.
#include "fuzz_checks.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const JobFacts base = job_fixture::job(1, 2);
  JobFacts job = base;
  const EnvSnapshot env(fuzz::env_lines(fuzz::text(data, size)));
  for (RankFacts& f : job.ranks) f.env = env;
  fuzz::run_all_checks(job, Options{}, nullptr, size);
  return 0;
}
