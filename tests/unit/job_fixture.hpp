// SPDX-License-Identifier: MIT
// Hand-built jobs for the tests of the job-scope checks: N ranks spread over hosts, each rank's
// facts a healthy GPU node's (gpu_facts_fixture.hpp), every rank delivered and at the report phase.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "checks/check.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight::job_fixture {

/// One rank's row of the job's table, on `host`: heard from (pid 1000 + rank, last seen in the
/// probe phase) or never heard from.
inline RankStatus status_row(int rank, bool heard, std::string host) {
  RankStatus s;
  s.rank = rank;
  s.heard = heard;
  s.host = std::move(host);
  s.pid = heard ? 1000 + rank : 0;
  s.last_phase = Phase::Probe;
  return s;
}

/// `ranks_per_host` ranks on each of `hosts` hosts ("gpu-a", "gpu-b", ...), each a copy of `base`
/// placed as Open MPI places it: ranks in host order, each host with its own boot id, MPI's view in
/// placement.mpi, every rank delivered and at the report phase.
inline JobFacts job_from(const RankFacts& base, int hosts, int ranks_per_host) {
  JobFacts j;
  j.source = "mpi";
  j.world_size = hosts * ranks_per_host;
  for (int h = 0; h < hosts; ++h) {
    for (int l = 0; l < ranks_per_host; ++l) {
      RankFacts f = base;
      const int rank = h * ranks_per_host + l;
      f.identity.hostname = std::string("gpu-") + static_cast<char>('a' + h);
      f.identity.boot_id = "boot-" + std::to_string(h);
      f.identity.pid = 1000 + rank;
      f.placement.rank = rank;
      f.placement.world_size = j.world_size;
      f.placement.local_rank = l;
      f.placement.local_ranks = ranks_per_host;
      f.placement.nodes = hosts;
      f.placement.launcher = "openmpi";
      f.placement.mpi =
          MpiView{rank, j.world_size, l, ranks_per_host, hosts, false, "Open MPI v4.1.4", {}, "pmix_local_peers"};
      RankStatus s;
      s.rank = rank;
      s.host = f.identity.hostname;
      s.pid = f.identity.pid;
      s.last_phase = Phase::Report;
      s.heard = true;
      s.delivered = true;
      j.status.push_back(s);
      j.ranks.push_back(std::move(f));
    }
  }
  j.barrier.attempted = j.barrier.completed = true;
  j.barrier.transport = "mpi";
  j.allreduce.attempted = j.allreduce.completed = true;
  j.allreduce.transport = "mpi";
  j.allreduce.ranks = j.world_size;
  return j;
}

/// job_from() of a healthy GPU node's facts (gpu_facts_fixture.hpp), each host with its own
/// /dev/shm device of 64 GiB.
inline JobFacts job(int hosts, int ranks_per_host, int gpus_per_host = 8) {
  RankFacts base = gpu_fixture::healthy(gpus_per_host);
  base.identity.kernel = "6.1.0-28-amd64";
  JobFacts j = job_from(base, hosts, ranks_per_host);
  for (RankFacts& f : j.ranks) {
    FsUsage shm;
    shm.is_tmpfs = true;
    shm.total_bytes = 64ull << 30;
    shm.free_bytes = shm.total_bytes;
    shm.st_dev = 0x1a + static_cast<std::uint64_t>(f.identity.hostname.back() - 'a');
    f.shm.usage = Probed<FsUsage>::ok(shm, "statfs /dev/shm");
  }
  return j;
}

/// A single process without a launcher's gather: the job holds only this rank; world_size is
/// what the launcher claims.
inline JobFacts single(const RankFacts& f) { return single_rank_job(f); }

/// Judges a job-scope check over `j` as rank 0 does.
inline Verdict judge_job(const CheckSpec& spec, const JobFacts& j, const Options& o = {}, Profile p = Profile::Job) {
  static const RankFacts kNone;
  const CheckContext ctx{j.ranks.empty() ? kNone : j.ranks.front(), o, p, nullptr, &j};
  return run_check(spec, ctx);
}

/// Rank `rank` never delivered: stuck in `phase`.
inline void lose(JobFacts& j, int rank, Phase phase) {
  for (RankStatus& s : j.status) {
    if (s.rank == rank) {
      s.delivered = false;
      s.last_phase = phase;
    }
  }
  std::erase_if(j.ranks, [rank](const RankFacts& f) { return f.placement.rank == rank; });
}

}  // namespace preflight::job_fixture
