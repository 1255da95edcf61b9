// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "job_fixture.hpp"

namespace preflight {
namespace checks_launch_ranks_test {
namespace {

using gpu_fixture::has;
using job_fixture::judge_job;

const CheckSpec& spec() { return *find_check("launch.ranks"); }

TEST(LaunchRanks, PassOnAWholeEvenWorld) {
  Options o;
  o.expect_world_size = 16;
  o.expect_nodes = 2;
  const Verdict v = judge_job(spec(), job_fixture::job(2, 8), o);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "16 ranks on 2 nodes, 8 per node, each rank delivered once (mpi)")) << v.summary;
  EXPECT_EQ(v.evidence["nodes"], 2);
  EXPECT_EQ(v.evidence["hosts"][1]["host"], "gpu-b");
}

TEST(LaunchRanks, WorldSizeAgainstExpectation) {
  Options o;
  o.expect_world_size = 32;
  const Verdict v = judge_job(spec(), job_fixture::job(2, 8), o);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/world-size-mismatch");
  EXPECT_EQ(v.finding.params["world"], 16);
  EXPECT_EQ(v.finding.params["expected_world_size"], 32);
  EXPECT_EQ(v.finding.params["source"], "mpi");
  EXPECT_TRUE(has(v.summary, "world size 16 (mpi), --expect-world-size 32")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "mpirun -np 32")) << v.remedy;
}

TEST(LaunchRanks, NodesAgainstExpectation) {
  Options o;
  o.expect_nodes = 4;
  const Verdict v = judge_job(spec(), job_fixture::job(2, 8), o);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/nodes-mismatch");
  EXPECT_EQ(v.finding.params["nodes"], 2);
  EXPECT_EQ(v.finding.params["expected_nodes"], 4);
  EXPECT_EQ(v.finding.params["hosts"], "gpu-a, gpu-b");
  EXPECT_TRUE(has(v.summary, "2 nodes (gpu-a, gpu-b), --expect-nodes 4")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "srun --nodes=4")) << v.remedy;
}

TEST(LaunchRanks, ANodeIsHostnameAndBootId) {
  // Two containers with one hostname on two machines are two nodes; one hostname rebooted is not merged.
  JobFacts j = job_fixture::job(2, 2);
  for (RankFacts& f : j.ranks) f.identity.hostname = "worker";
  Options o;
  o.expect_nodes = 1;
  const Verdict v = judge_job(spec(), j, o);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/nodes-mismatch");
  EXPECT_EQ(v.finding.params["hosts"], "worker, worker");
}

TEST(LaunchRanks, MissingRanksAreNamedWithHostPidAndPhase) {
  JobFacts j = job_fixture::job(2, 4);
  job_fixture::lose(j, 6, Phase::Probe);
  j.status[6].silent_s = 6.2;
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/ranks-missing");
  EXPECT_EQ(v.finding.params["count"], 1);
  EXPECT_EQ(v.finding.params["world"], 8);
  EXPECT_EQ(v.finding.params["named"], "rank 6 (gpu-b, pid 1006, last phase probe, silent 6.2 s)");
  EXPECT_TRUE(
      has(v.summary, "1 rank of 8 did not deliver facts: rank 6 (gpu-b, pid 1006, last phase probe, silent 6.2 s)"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "dmesg")) << v.remedy;
  EXPECT_EQ(v.evidence["undelivered"][0], 6);
  // Uneven counts caused by the missing rank are not reported as a placement problem.
  EXPECT_FALSE(has(v.summary, "uneven")) << v.summary;
}

// A process died and the launcher ended the job (its SIGTERM reached rank 0) before the others
// delivered: the launcher's end is the story, with its world, never "a world of 1".
TEST(LaunchRanks, RanksCutShortByTheLaunchersEndSayTheLauncherEndedTheJob) {
  JobFacts j = job_fixture::job(1, 4);
  for (int r = 1; r < 4; ++r) {
    job_fixture::lose(j, r, Phase::Probe);
    j.status[static_cast<std::size_t>(r)].heard = false;
    j.status[static_cast<std::size_t>(r)].host.clear();
  }
  j.launcher_ended_s = 0.7;
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/launcher-ended");
  EXPECT_EQ(v.finding.params["world"], 4);
  EXPECT_EQ(v.finding.params["count"], 3);
  EXPECT_TRUE(has(v.summary,
                  "the launcher (openmpi) ended the job 700 ms after the start, before 3 ranks of its 4 "
                  "delivered facts: rank 1 (never heard from)"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "Process name")) << v.remedy;
  EXPECT_EQ(v.evidence["launcher_ended_s"], 0.7);
  // Without the launcher's end the same ranks are missing, not ended by it.
  j.launcher_ended_s.reset();
  EXPECT_EQ(judge_job(spec(), j).finding.code, "launch.ranks/ranks-missing");
}

TEST(LaunchRanks, ManyMissingRanksAreCounted) {
  JobFacts j = job_fixture::job(2, 8);
  for (int r = 4; r < 16; ++r) job_fixture::lose(j, r, Phase::Probe);
  j.status[10].heard = false;
  j.status[10].host.clear();  // a live run knows no host for a rank it never heard from
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/ranks-missing");
  EXPECT_EQ(v.finding.params["count"], 12);
  EXPECT_EQ(v.finding.params["world"], 16);
  EXPECT_TRUE(has(v.summary, "12 ranks of 16 did not deliver facts")) << v.summary;
  EXPECT_TRUE(has(v.summary, "and 4 more")) << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 10 (never heard from)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "rank 4 (gpu-a, pid 1004, last phase probe)")) << v.summary;
}

TEST(LaunchRanks, RanksThatEndedAreNamedApartFromThoseOnTheirWay) {
  // Rank 6's process ended (rank 0's liveness watch saw it); rank 7 was still on its way.
  JobFacts j = job_fixture::job(2, 4);
  job_fixture::lose(j, 6, Phase::Probe);
  job_fixture::lose(j, 7, Phase::Probe);
  j.status[6].lost = "ended";
  j.status[6].lost_at_s = 3.0;
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/ranks-ended");
  EXPECT_EQ(v.finding.params["count"], 1);
  EXPECT_EQ(v.finding.params["world"], 8);
  EXPECT_EQ(v.finding.params["named"], "rank 6 (gpu-b, pid 1006, last phase probe, its process ended at 3.0 s)");
  EXPECT_TRUE(has(v.summary, "1 rank of 8 ended before delivering facts: rank 6 (gpu-b")) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "; 1 rank was still on the way when the report was made "
                  "(rank 7 (gpu-b, pid 1007, last phase probe))"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "rank 6 on gpu-b ended in the probe")) << v.remedy;
  EXPECT_TRUE(v.remedy.ends_with(".")) << v.remedy;
  EXPECT_EQ(v.findings.size(), 1u);  // rank 7 is said with rank 6, not as a finding of its own
}

TEST(LaunchRanks, RanksThatNeverStartedAreNamedApartFromThoseThatWaited) {
  // The PMIx join before MPI_Init: ranks 2 and 3 never started (the host the launcher placed them
  // on is known); rank 1 started and waited at the join (heard, last phase init). Only rank 0's
  // facts are there.
  JobFacts j = job_fixture::job(2, 2);
  for (int r = 1; r < 4; ++r) job_fixture::lose(j, r, Phase::Init);
  for (int r = 2; r < 4; ++r) j.status[static_cast<std::size_t>(r)].heard = false;
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/ranks-never-started");
  EXPECT_EQ(v.finding.params["count"], 2);
  EXPECT_EQ(v.finding.params["world"], 4);
  EXPECT_TRUE(has(v.summary,
                  "2 ranks of 4 never started: rank 2 (never heard from; placed on gpu-b); rank 3 (never heard from; "
                  "placed on gpu-b)"))
      << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "1 rank started and waited for them, so their facts were not gathered: rank 1 (gpu-a, pid 1001, last "
                  "phase init)"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "the launcher could not start the process there")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "only slow to start (still booting, mounting its file systems) needs a larger --timeout"))
      << v.remedy;
  EXPECT_FALSE(has(v.remedy, "SIGSTOP")) << v.remedy;
}

TEST(LaunchRanks, RanksHeardOnlyAtTheStartAreStillMissingFacts) {
  // Every missing rank was heard at the join and none is known to have never started: their facts
  // are still missing, which is never a PASS.
  JobFacts j = job_fixture::job(1, 3);
  for (int r = 1; r < 3; ++r) job_fixture::lose(j, r, Phase::Init);
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/ranks-missing");
  EXPECT_EQ(v.finding.params["count"], 2);
  EXPECT_FALSE(v.finding.params.contains("waited_ranks"));
  EXPECT_TRUE(has(v.summary, "2 ranks of 3 did not deliver facts: rank 1 (gpu-a, pid 1001, last phase init)"))
      << v.summary;
  EXPECT_FALSE(has(v.summary, "never started")) << v.summary;
}

TEST(LaunchRanks, DuplicateRanksFail) {
  JobFacts j = job_fixture::job(1, 4);
  j.ranks[3].placement.rank = 2;  // two processes claim rank 2
  j.ranks[3].identity.pid = 4242;
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/duplicate-rank");
  EXPECT_EQ(v.finding.params["rank"], 2);
  EXPECT_EQ(v.finding.params["times"], 2);
  EXPECT_TRUE(has(v.summary, "rank 2 was delivered 2 times (gpu-a pid 1002, gpu-a pid 4242)")) << v.summary;
}

TEST(LaunchRanks, RanksOutsideTheWorldFail) {
  JobFacts j = job_fixture::job(1, 2);
  j.ranks[1].placement.rank = 7;
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/outside-world");
  EXPECT_EQ(v.finding.params["ranks"], "7");
  EXPECT_EQ(v.finding.params["world"], 2);
  EXPECT_TRUE(has(v.summary, "rank(s) 7 outside the world of 2")) << v.summary;
}

TEST(LaunchRanks, UnevenRanksPerNodeWarns) {
  JobFacts j = job_fixture::job(3, 4);
  // Move gpu-c's first rank onto gpu-a: gpu-a 5, gpu-b 4, gpu-c 3.
  j.ranks[8].identity.hostname = "gpu-a";
  j.ranks[8].identity.boot_id = "boot-0";
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.ranks/uneven-ranks");
  EXPECT_EQ(v.finding.params["counts"], "gpu-c: 3 ranks; gpu-b: 4 ranks; gpu-a: 5 ranks");
  EXPECT_TRUE(has(v.summary, "uneven ranks per node: gpu-c: 3 ranks; gpu-b: 4 ranks; gpu-a: 5 ranks")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--ntasks-per-node")) << v.remedy;
}

TEST(LaunchRanks, UngatheredWorldIsUnknown) {
  RankFacts f = gpu_fixture::healthy();
  f.identity.hostname = "gpu-a";
  f.placement.launcher = "slurm";
  f.placement.world_size = 16;
  f.placement.rank = 3;
  const Verdict v = judge_job(spec(), job_fixture::single(f));
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.finding.code, "launch.ranks/not-gathered");
  EXPECT_EQ(v.finding.params["launcher"], "slurm");
  EXPECT_EQ(v.finding.params["world"], 16);
  EXPECT_TRUE(has(v.summary, "the launcher (slurm) claims a world of 16 ranks, but preflight ran as a single process"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "srun without --mpi=pmix")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "srun --mpi=pmix")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "preflight merge")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "`mpirun -np 16 …` of the MPI preflight was built with")) << v.remedy;
}

TEST(LaunchRanks, MpiWorldOfOneUnderALargerLauncherIsUnknown) {
  JobFacts j = job_fixture::job(1, 1);
  j.ranks[0].env =
      EnvSnapshot({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}});
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.ranks/mpi-world-of-one");
  EXPECT_EQ(v.finding.params["variable"], "SLURM_NTASKS");
  EXPECT_EQ(v.finding.params["size"], 8);
  EXPECT_EQ(v.finding.params["launcher"], "slurm");
  EXPECT_TRUE(has(v.summary, "MPI started as a world of 1 while SLURM_NTASKS=8 (slurm)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "srun --mpi=pmix")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "or the mpirun of the MPI preflight was built with")) << v.remedy;
  j.ranks[0].env = EnvSnapshot({});  // mpirun -np 1: a world of one, nothing claims more
  EXPECT_EQ(judge_job(spec(), j).status, Status::Pass);
}

TEST(LaunchRanks, AloneWithoutExpectationsSkips) {
  RankFacts f = gpu_fixture::healthy();
  const Verdict v = judge_job(spec(), job_fixture::single(f));
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_EQ(v.finding.code, "launch.ranks/single-process");
  EXPECT_TRUE(v.remedy.empty()) << v.remedy;
  EXPECT_TRUE(has(v.summary, "single process")) << v.summary;
  // nullptr job: the same one-rank world.
  const Options o;
  EXPECT_EQ(run_check(spec(), CheckContext{f, o, Profile::Job}).status, Status::Skip);
}

TEST(LaunchRanks, AloneAgainstExpectations) {
  RankFacts f = gpu_fixture::healthy();
  f.identity.hostname = "gpu-a";
  Options o;
  o.expect_world_size = 1;
  o.expect_nodes = 1;
  EXPECT_EQ(judge_job(spec(), job_fixture::single(f), o).status, Status::Pass);
  o.expect_world_size = 8;
  const Verdict v = judge_job(spec(), job_fixture::single(f), o);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.ranks/world-size-mismatch");
  EXPECT_EQ(v.finding.params["source"], "a single process");
  EXPECT_TRUE(has(v.summary, "world size 1 (a single process), --expect-world-size 8")) << v.summary;
}

TEST(LaunchRanks, AloneInTheNodeProfileJudgesTheExpectations) {
  // `preflight --expect-world-size 4` on one process (profile node): a world of 1 is a FAIL.
  RankFacts f = gpu_fixture::healthy();
  Options o;
  o.expect_world_size = 4;
  const Verdict v = run_check(spec(), CheckContext{f, o, Profile::Node});
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "--expect-world-size 4")) << v.summary;
  o.expect_world_size.reset();
  o.expect_nodes = 2;
  EXPECT_EQ(run_check(spec(), CheckContext{f, o, Profile::Node}).status, Status::Fail);
  o.expect_nodes = 1;
  o.expect_world_size = 1;
  EXPECT_EQ(run_check(spec(), CheckContext{f, o, Profile::Node}).status, Status::Pass);
}

TEST(LaunchRanks, SkippedInImageProfileAndExplained) {
  const Verdict v = judge_job(spec(), job_fixture::job(1, 2), {}, Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
  const std::string explain(spec().explain);
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN", "SKIP"}) {
    EXPECT_TRUE(has(explain, part)) << part;
  }
}

TEST(LaunchRanks, SkippedInNodeProfileSaysThereIsNoJob) {
  const Verdict v = judge_job(spec(), job_fixture::job(1, 2), {}, Profile::Node);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_TRUE(has(v.summary, "no job to check: preflight runs alone (profile node)")) << v.summary;
  EXPECT_FALSE(has(v.summary, "image build")) << v.summary;
}

}  // namespace
}  // namespace checks_launch_ranks_test
}  // namespace preflight
