// SPDX-License-Identifier: MIT
// comm.barrier on hand-built jobs: every status, and the ranks named with host, pid and phase.
#include <gtest/gtest.h>

#include "job_fixture.hpp"

namespace preflight {
namespace checks_comm_barrier_test {
namespace {

using job_fixture::judge_job;
using job_fixture::lose;

const CheckSpec& spec() { return *find_check("comm.barrier"); }

void expect(const Verdict& v, Status s, const std::string& summary_has, const std::string& remedy_has = {}) {
  EXPECT_EQ(v.status, s) << v.summary << " / " << v.remedy;
  EXPECT_NE(v.summary.find(summary_has), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find(remedy_has), std::string::npos) << v.remedy;
}

RankStatus& status(JobFacts& j, int rank) { return j.status[static_cast<std::size_t>(rank)]; }

TEST(CommBarrier, PassWithTheTime) {
  JobFacts j = job_fixture::job(2, 4);
  j.barrier.seconds = 0.0042;
  j.barrier.deadline_s = 10;
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Pass, "a barrier across 8 ranks completed in 4.2 ms (deadline 10 s)");
  EXPECT_EQ(v.finding.code, "comm.barrier/completed");
  EXPECT_EQ(v.finding.params["world"], 8);
  EXPECT_EQ(v.finding.params["time"], "4.2 ms");
  EXPECT_EQ(v.evidence["transport"], "mpi");
  j.barrier.seconds = 4.36e-05;  // a time for people, not "4.36e-05 s"
  expect(judge_job(spec(), j), Status::Pass, "completed in 44 µs (deadline 10 s)");
}

TEST(CommBarrier, ExpiredNamesStuckRanksFirst) {
  JobFacts j = job_fixture::job(2, 4);
  j.barrier.completed = false;
  j.barrier.expired = true;
  j.barrier.deadline_s = 5;
  j.barrier.missing = {2, 6};
  status(j, 2).last_phase = Phase::Barrier;  // alive, waiting
  status(j, 2).silent_s = 0.3;
  status(j, 6).last_phase = Phase::Probe;  // stuck in a probe
  status(j, 6).silent_s = 7.5;
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "the barrier did not complete within 5 s: 2 of 8 ranks did not arrive: rank 6 (gpu-b, pid 1006, last phase "
         "probe, "
         "silent 7.5 s); alive and waiting: rank 2 (gpu-a, pid 1002, last phase barrier)",
         "rank 6 on gpu-b stopped while probing the node");
  EXPECT_EQ(v.finding.code, "comm.barrier/expired");
  EXPECT_EQ(v.finding.params["waited"], "5 s");
  EXPECT_EQ(v.finding.params["count"], 2);
  EXPECT_EQ(v.finding.params["world"], 8);
  EXPECT_EQ(v.finding.params["named"], "rank 6 (gpu-b, pid 1006, last phase probe, silent 7.5 s)");
  EXPECT_EQ(v.finding.params["waiting"], "rank 2 (gpu-a, pid 1002, last phase barrier)");
  EXPECT_NE(v.remedy.find("gdb -p 1006"), std::string::npos) << v.remedy;
  EXPECT_NE(v.remedy.find("NCCL_DEBUG=INFO"), std::string::npos) << v.remedy;
  EXPECT_NE(v.remedy.find("py-spy dump"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.evidence["stuck"], nlohmann::json({6}));
  EXPECT_EQ(v.evidence["missing"][1]["last_phase"], "probe");
}

TEST(CommBarrier, ExpiredWithSilentRankInTheBarrier) {
  JobFacts j = job_fixture::job(2, 2);
  j.barrier.completed = false;
  j.barrier.expired = true;
  j.barrier.deadline_s = 5;
  j.barrier.missing = {3};
  status(j, 3).last_phase = Phase::Barrier;
  status(j, 3).silent_s = 4.0;  // reached the barrier, then went silent (SIGSTOP)
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "rank 3 (gpu-b, pid 1003, last phase barrier, silent 4.0 s)",
         "rank 3 on gpu-b stopped in the barrier");
  EXPECT_EQ(v.finding.code, "comm.barrier/expired");
  EXPECT_FALSE(v.finding.params.contains("waiting"));
}

TEST(CommBarrier, ExpiredWithEveryRankAliveBlamesTheFabric) {
  JobFacts j = job_fixture::job(2, 2);
  j.barrier.completed = false;
  j.barrier.expired = true;
  j.barrier.deadline_s = 5;
  j.barrier.missing = {2, 3};
  for (int r : {2, 3}) status(j, r).last_phase = Phase::Barrier;
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "every rank arrived and is alive (waiting: rank 2 (gpu-b, pid 1002, last phase barrier); rank 3 (gpu-b, pid "
         "1003, "
         "last phase barrier)): the fabric between ranks (MPI's transport), not a stuck rank",
         "btl_tcp_if_include");
  EXPECT_EQ(v.finding.code, "comm.barrier/fabric");
  EXPECT_EQ(v.finding.params["waited"], "5 s");
}

TEST(CommBarrier, InterruptedByTheLauncherDoesNotBlameTheFabric) {
  // A host died: the launcher ended the job before the deadline, while every rank was still
  // heard from recently. The verdict points at the launcher's message, not at the network.
  JobFacts j = job_fixture::job(2, 2);
  j.barrier.completed = false;
  j.barrier.expired = true;
  j.barrier.interrupted = true;
  j.barrier.seconds = 2.7;
  j.barrier.deadline_s = 5;
  j.barrier.missing = {2, 3};
  for (int r : {2, 3}) status(j, r).last_phase = Phase::Barrier;
  status(j, 1).silent_s = 0.1;
  status(j, 2).silent_s = 0.2;
  status(j, 3).silent_s = 0.9;
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "the barrier was interrupted after 2.7 s: the launcher ended the job",
         "ORTE has lost communication");
  EXPECT_EQ(v.summary.find("fabric"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("(last heard: gpu-b 900 ms ago, gpu-a 100 ms ago)"), std::string::npos) << v.summary;
  EXPECT_EQ(v.finding.code, "comm.barrier/interrupted");
  EXPECT_EQ(v.finding.params["time"], "2.7 s");
  EXPECT_EQ(v.finding.params["last_heard"], "gpu-b 900 ms ago, gpu-a 100 ms ago");
  EXPECT_DOUBLE_EQ(v.finding.params["silent_s"]["gpu-b"].get<double>(), 0.9);
}

TEST(CommBarrier, NotRunBecauseRanksWereMissing) {
  JobFacts j = job_fixture::job(2, 2);
  lose(j, 3, Phase::Probe);
  status(j, 3).silent_s = 9;
  j.barrier = {};
  j.barrier.note = "the gather expired";
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "the barrier was not run: 1 of 4 ranks did not arrive earlier: rank 3 (gpu-b, pid 1003, last phase probe, "
         "silent 9.0 s) "
         "(the gather expired)",
         "gdb -p 1003");
  EXPECT_EQ(v.finding.code, "comm.barrier/ranks-missing");
  EXPECT_EQ(v.finding.params["count"], 1);
  EXPECT_EQ(v.finding.params["world"], 4);
  EXPECT_EQ(v.finding.params["named"], "rank 3 (gpu-b, pid 1003, last phase probe, silent 9.0 s)");
  EXPECT_EQ(v.finding.params["reason"], "the gather expired");
}

TEST(CommBarrier, NeverHeardRank) {
  JobFacts j = job_fixture::job(1, 2);
  lose(j, 1, Phase::Init);
  status(j, 1).heard = false;
  status(j, 1).host.clear();
  j.barrier = {};
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "rank 1 (never heard from)", "was never heard from: check that the launcher started it");
  EXPECT_EQ(v.finding.code, "comm.barrier/ranks-missing");
  EXPECT_EQ(v.finding.params["named"], "rank 1 (never heard from)");
}

TEST(CommBarrier, ARankThatNeverStartedIsNamedWithTheHostItWasPlacedOn) {
  JobFacts j = job_fixture::job(1, 2);
  lose(j, 1, Phase::Init);
  status(j, 1).heard = false;
  status(j, 1).host = "gpu-z";  // the launcher's placement (the PMIx join)
  j.barrier = {};
  j.barrier.missing = {1};
  j.barrier.note = "not run: rank 1 (never heard from; placed on gpu-z) never started";
  expect(judge_job(spec(), j), Status::Fail, "rank 1 (never heard from; placed on gpu-z)",
         "rank 1 (placed on gpu-z) was never heard from");
}

TEST(CommBarrier, NotRunForAnotherReasonIsUnknown) {
  JobFacts j = job_fixture::job(1, 2);
  j.barrier = {};
  j.barrier.note = "the run's --timeout was spent before the barrier";
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Unknown, "the barrier was not run: the run's --timeout was spent before the barrier");
  EXPECT_EQ(v.finding.code, "comm.barrier/not-run");
  EXPECT_EQ(v.finding.params["reason"], "the run's --timeout was spent before the barrier");
}

TEST(CommBarrier, ErrorFails) {
  JobFacts j = job_fixture::job(2, 1);
  j.barrier.completed = false;
  j.barrier.note = "MPI_Ibarrier: MPI_ERR_OTHER: unknown error";
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "the barrier across 2 ranks failed: MPI_Ibarrier: MPI_ERR_OTHER: unknown error",
         "same MPI build");
  EXPECT_EQ(v.finding.code, "comm.barrier/error");
  EXPECT_EQ(v.finding.params["world"], 2);
  EXPECT_EQ(v.finding.params["reason"], "MPI_Ibarrier: MPI_ERR_OTHER: unknown error");
  EXPECT_FALSE(v.finding.params.contains("named"));
}

TEST(CommBarrier, SkipForOneProcessAndForMerge) {
  JobFacts one;
  expect(judge_job(spec(), one, {}, Profile::Job), Status::Skip, "a single process");
  EXPECT_EQ(judge_job(spec(), one, {}, Profile::Job).finding.code, "comm.barrier/single-process");
  const RankFacts f;
  const Options o;
  const Verdict alone = run_check(spec(), CheckContext{f, o, Profile::Job, nullptr, nullptr});
  expect(alone, Status::Skip, "a single process");
  EXPECT_EQ(alone.finding.code, "comm.barrier/single-process");
  JobFacts m = job_fixture::job(2, 2);
  m.source = "merge";
  const Verdict merged = judge_job(spec(), m);
  expect(merged, Status::Skip, "the barrier runs only in a live job");
  EXPECT_EQ(merged.finding.code, "comm.barrier/merged");
}

TEST(CommBarrier, ARankThatEndedIsTheStory) {
  // Rank 0's liveness watch saw rank 3's process end while the barrier waited.
  JobFacts j = job_fixture::job(2, 2);
  j.barrier.completed = false;
  status(j, 3).last_phase = Phase::Barrier;
  status(j, 3).lost = "ended";
  status(j, 3).lost_at_s = 3.1;
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "the barrier could not complete: rank 3 (gpu-b, pid 1003, last phase barrier, its process ended at 3.1 s)",
         "rank 3 on gpu-b ended in the barrier (its connection to rank 0 closed");
  EXPECT_EQ(v.finding.code, "comm.barrier/ranks-lost");
  EXPECT_EQ(v.finding.params["lost"], "rank 3 (gpu-b, pid 1003, last phase barrier, its process ended at 3.1 s)");
  EXPECT_EQ(v.remedy.back(), '.');
}

TEST(CommBarrier, AHostThatWentBeforeTheBarrierIsNamed) {
  // Every rank of gpu-b ended in the probe phase: the barrier was never run.
  JobFacts j = job_fixture::job(2, 2);
  for (int r : {2, 3}) {
    lose(j, r, Phase::Probe);
    status(j, r).lost = "ended";
    status(j, r).lost_at_s = 3.1;
  }
  j.barrier = {};
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "the barrier was not run: every process of gpu-b ended (ranks 2, 3) at 3.1 s: the host went down or its "
         "processes were killed, in phase probe",
         "rank 2 on gpu-b ended in the probe");
  EXPECT_EQ(v.finding.code, "comm.barrier/ranks-lost-before");
  EXPECT_EQ(v.finding.params["lost"],
            "every process of gpu-b ended (ranks 2, 3) at 3.1 s: the host went down or its processes were killed, in "
            "phase probe");
  // What the fix names, as data: each rank with its host, pid, last phase and what the watch saw.
  const nlohmann::json& named = v.finding.params["look_at_ranks"];
  ASSERT_EQ(named.size(), 2u) << named.dump();
  EXPECT_EQ(named[0]["rank"], 2);
  EXPECT_EQ(named[0]["host"], "gpu-b");
  EXPECT_EQ(named[0]["phase"], "probe");
  EXPECT_EQ(named[0]["lost"], "ended");
  EXPECT_EQ(named[1]["rank"], 3);
  EXPECT_FALSE(v.finding.params.contains("look_at"));  // its words are in the fix
  EXPECT_NE(v.finding.fix.find("rank 2 on gpu-b ended in the probe"), std::string::npos) << v.finding.fix;
}

TEST(CommBarrier, MpiWorldOfOneUnderALargerLauncherIsUnknown) {
  // MPI did not connect to srun: each process became its own world of 1 while SLURM_NTASKS=8.
  JobFacts j = job_fixture::job(1, 1);
  j.ranks[0].env =
      EnvSnapshot({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}});
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Unknown,
         "the barrier was not run: MPI started as a world of 1 while SLURM_NTASKS=8 (slurm): the ranks were not "
         "connected to each other (e.g. srun without --mpi=pmix); see launch.ranks",
         "srun --mpi=pmix");
  EXPECT_EQ(v.finding.code, "comm.barrier/mpi-world-of-one");
  EXPECT_EQ(v.finding.params["variable"], "SLURM_NTASKS");
  EXPECT_EQ(v.finding.params["size"], 8);
  EXPECT_EQ(v.finding.params["launcher"], "slurm");
}

}  // namespace
}  // namespace checks_comm_barrier_test
}  // namespace preflight
