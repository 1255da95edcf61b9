// SPDX-License-Identifier: MIT
// comm.allreduce on hand-built jobs and node runs: every status, with the measured numbers.
#include <gtest/gtest.h>

#include "core/launch.hpp"
#include "job_fixture.hpp"

namespace preflight {
namespace checks_comm_allreduce_test {
namespace {

using job_fixture::judge_job;
using job_fixture::lose;

const CheckSpec& spec() { return *find_check("comm.allreduce"); }

void expect(const Verdict& v, Status s, const std::string& summary_has, const std::string& remedy_has = {}) {
  EXPECT_EQ(v.status, s) << v.summary << " / " << v.remedy;
  EXPECT_NE(v.summary.find(summary_has), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find(remedy_has), std::string::npos) << v.remedy;
}

// 16 ranks on 2 hosts over NCCL: 32 MiB, best of 5.
JobFacts nccl_job() {
  JobFacts j = job_fixture::job(2, 8);
  CommResult& c = j.allreduce;
  c.transport = "nccl";
  c.bytes = 32u << 20;
  c.ranks = 16;
  c.repeats = 5;
  c.seconds = 0.0005;
  c.algbw_gbps = 67.11;
  c.busbw_gbps = 125.83;
  c.deadline_s = 10;
  return j;
}

Options floor_at(double gbps) {
  Options o;
  o.min_busbw_gbps = gbps;
  return o;
}

// The node profile: one process, an NCCL all_reduce across its 8 GPUs.
JobFacts node_run() {
  JobFacts j;
  j.source = "none";
  j.world_size = 1;
  j.ranks.push_back(gpu_fixture::healthy(8));
  CommResult& c = j.allreduce;
  c.attempted = c.completed = true;
  c.transport = "nccl";
  c.bytes = 32u << 20;
  c.ranks = 8;
  c.repeats = 5;
  c.seconds = 0.00015;
  c.algbw_gbps = 223.7;
  c.busbw_gbps = 391.5;
  return j;
}

TEST(CommAllreduce, PassWithTheNumbers) {
  const Verdict v = judge_job(spec(), nccl_job());
  expect(v, Status::Pass,
         "the all_reduce was correct on every participant: algbw 67.11 GB/s, busbw 125.83 GB/s for 32 MiB across 16 "
         "GPUs over "
         "nccl (best of 5, 500 µs)");
  for (const char* key : {"bytes", "ranks", "algbw_gbps", "busbw_gbps", "seconds", "transport", "repeats"}) {
    EXPECT_TRUE(v.evidence.contains(key)) << key;
  }
  EXPECT_EQ(v.evidence["bytes"], 32u << 20);
  EXPECT_EQ(v.finding.code, "comm.allreduce/correct");
  EXPECT_EQ(v.finding.params["busbw"], "125.83");
  EXPECT_EQ(v.finding.params["participants"], "16 GPUs");
  EXPECT_EQ(v.finding.params["repeats"], 5);
  EXPECT_FALSE(v.finding.params.contains("floor"));
  const Verdict floored = judge_job(spec(), nccl_job(), floor_at(100));
  expect(floored, Status::Pass, "(≥ --min-busbw 100 GB/s)");
  EXPECT_EQ(floored.finding.params["floor"], "100");
}

TEST(CommAllreduce, TimesAreForPeople) {
  JobFacts j = nccl_job();
  j.allreduce.seconds = 9.92;
  expect(judge_job(spec(), j), Status::Pass, "(best of 5, 9.9 s)");  // not "9.92e+03 ms"
}

TEST(CommAllreduce, BelowTheFloorFails) {
  const Verdict v = judge_job(spec(), nccl_job(), floor_at(300));
  expect(v, Status::Fail,
         "all_reduce busbw is below --min-busbw 300 GB/s: algbw 67.11 GB/s, busbw 125.83 GB/s for 32 MiB across 16 "
         "GPUs over nccl "
         "(best of 5",
         "`mpirun -np 16 all_reduce_perf -b 33554432 -e 33554432 -c 1 -n 5 -g 1`");
  EXPECT_EQ(v.evidence["min_busbw_gbps"], 300.0);
  EXPECT_EQ(v.finding.code, "comm.allreduce/busbw-low");
  EXPECT_EQ(v.finding.params["floor"], "300");
  EXPECT_EQ(v.finding.params["busbw"], "125.83");
  EXPECT_EQ(v.finding.params["algbw"], "67.11");
  EXPECT_EQ(v.finding.params["command"], "mpirun -np 16 all_reduce_perf -b 33554432 -e 33554432 -c 1 -n 5 -g 1");
}

TEST(CommAllreduce, TheNcclTestsCommandMatchesWhatWasMeasured) {
  // The node profile measured all 8 GPUs in one process: nccl-tests with -g 8, not -g 1.
  const Verdict v = judge_job(spec(), node_run(), floor_at(500), Profile::Node);
  expect(v, Status::Fail, "across 8 GPUs over nccl", "`all_reduce_perf -b 33554432 -e 33554432 -c 1 -n 5 -g 8`");
  EXPECT_EQ(v.remedy.find("-g 1"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.remedy.find("mpirun"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.finding.code, "comm.allreduce/busbw-low");
  EXPECT_EQ(v.finding.params["command"], "all_reduce_perf -b 33554432 -e 33554432 -c 1 -n 5 -g 8");
}

TEST(CommAllreduce, TheSizeMeasuredIsStated) {
  JobFacts j = nccl_job();
  j.allreduce.bytes = 16;
  Options o;
  o.allreduce_bytes = 16;
  Verdict v = judge_job(spec(), j, o);
  expect(v, Status::Pass, "for 16 B across 16 GPUs");
  EXPECT_EQ(v.evidence["bytes"], 16);
  EXPECT_EQ(v.evidence["requested_bytes"], 16);
  // Were a transport ever to measure another size than asked, the summary says both.
  j.allreduce.bytes = 1u << 20;
  o.allreduce_bytes = 32u << 20;
  v = judge_job(spec(), j, o);
  expect(v, Status::Pass, "for 1 MiB (--allreduce-bytes asked for 32 MiB) across 16 GPUs");
  EXPECT_EQ(v.evidence["requested_bytes"], 32u << 20);
  // Or than its default, when none was asked for.
  v = judge_job(spec(), j);
  expect(v, Status::Pass, "for 1 MiB (the default over nccl is 32 MiB) across 16 GPUs");
  EXPECT_EQ(v.evidence["requested_bytes"], 32u << 20);
}

TEST(CommAllreduce, TheDefaultSizeIsTheTransports) {
  const Options o;
  EXPECT_FALSE(o.allreduce_bytes.has_value());
  EXPECT_EQ(o.allreduce_bytes_for("nccl"), 32u << 20);
  EXPECT_EQ(o.allreduce_bytes_for("mpi"), 1u << 20);
  Options asked;
  asked.allreduce_bytes = 24;
  EXPECT_EQ(asked.allreduce_bytes_for("nccl"), 24u);
  EXPECT_EQ(asked.allreduce_bytes_for("mpi"), 24u);
}

TEST(CommAllreduce, UnconnectedRanksTellTheStoryOfLaunchRanks) {
  // srun without --mpi=pmix: SLURM_NTASKS=4, but preflight ran as a single process.
  RankFacts f = gpu_fixture::healthy(8);
  f.placement.world_size = 4;
  f.placement.launcher = "slurm";
  const Verdict v = judge_job(spec(), job_fixture::single(f));
  expect(v, Status::Unknown,
         "the all_reduce was not run: the launcher (slurm) claims 4 ranks, but preflight ran as a single "
         "process",
         "srun --mpi=pmix");
  EXPECT_EQ(v.summary.find("no launcher"), std::string::npos) << v.summary;
  EXPECT_EQ(v.finding.code, "comm.allreduce/not-connected");
  EXPECT_EQ(v.finding.params["launcher"], "slurm");
  EXPECT_EQ(v.finding.params["world"], 4);
  const Verdict barrier = judge_job(*find_check("comm.barrier"), job_fixture::single(f));
  expect(barrier, Status::Unknown, "the barrier was not run: the launcher (slurm) claims 4 ranks", "srun --mpi=pmix");
  EXPECT_EQ(barrier.summary.find("no launcher"), std::string::npos) << barrier.summary;
  EXPECT_EQ(barrier.finding.code, "comm.barrier/not-connected");
  EXPECT_EQ(barrier.finding.params["launcher"], "slurm");
  EXPECT_EQ(barrier.finding.params["world"], 4);
}

TEST(CommAllreduce, MpiWorldOfOneUnderALargerLauncherIsUnknown) {
  JobFacts j = job_fixture::job(1, 1);
  j.ranks[0].env =
      EnvSnapshot({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}});
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Unknown, "the all_reduce was not run: MPI started as a world of 1 while SLURM_NTASKS=8 (slurm)",
         "srun --mpi=pmix");
  EXPECT_EQ(v.finding.code, "comm.allreduce/mpi-world-of-one");
  EXPECT_EQ(v.finding.params["variable"], "SLURM_NTASKS");
  EXPECT_EQ(v.finding.params["size"], 8);
  EXPECT_EQ(v.finding.params["launcher"], "slurm");
}

// OMPI_COMM_WORLD_* left in a plain shell (a saved environment sourced again): no mpirun started the
// process (no PMIx variables), so there is no job. launch.ranks SKIPs, and the collectives SKIP with
// it, with their reason, never UNKNOWN "see launch.ranks".
TEST(CommAllreduce, OpenMpiVariablesLeftInAShellAreOneProcessAlone) {
  RankFacts f = gpu_fixture::healthy(8);
  f.env = EnvSnapshot({{"OMPI_COMM_WORLD_RANK", "0"},
                       {"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  f.placement = placement_from(detect_launchers(f.env), Options());
  ASSERT_EQ(f.placement.world_size, 1);
  const JobFacts alone = job_fixture::single(f);
  const Verdict v = judge_job(spec(), alone, {}, Profile::Node);
  expect(v, Status::Skip, "no all_reduce was run: a single process: no launcher started other ranks");
  EXPECT_EQ(v.finding.code, "comm.allreduce/not-run");
  const Verdict barrier = judge_job(*find_check("comm.barrier"), alone, {}, Profile::Node);
  EXPECT_EQ(barrier.status, Status::Skip) << barrier.summary;
  const Verdict ranks = judge_job(*find_check("launch.ranks"), alone, {}, Profile::Node);
  EXPECT_EQ(ranks.status, Status::Skip) << ranks.summary;

  // MPI initialised anyway (--mpi on) as a world of 1: the variables still claim no job.
  JobFacts mpi = job_fixture::job(1, 1);
  mpi.ranks[0].env = f.env;
  for (const char* id : {"comm.allreduce", "comm.barrier", "launch.ranks"}) {
    const Verdict w = judge_job(*find_check(id), mpi, {}, Profile::Node);
    EXPECT_NE(w.status, Status::Unknown) << id << ": " << w.summary;
  }
  // With mpirun's PMIx variables they are a launch: MPI a world of 1 under it (an mpirun of another
  // MPI) is the story of launch.ranks, which tells it in the node profile too (not SKIP), so that
  // comm.allreduce's "see launch.ranks" leads somewhere. (comm.barrier is made for jobs only.)
  mpi.ranks[0].env = EnvSnapshot({{"OMPI_COMM_WORLD_RANK", "0"},
                                  {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"PMIX_RANK", "0"},
                                  {"PMIX_NAMESPACE", "prterun-host-1@1"}});
  for (const char* id : {"comm.allreduce", "launch.ranks"}) {
    const Verdict w = judge_job(*find_check(id), mpi, {}, Profile::Node);
    EXPECT_EQ(w.status, Status::Unknown) << id << ": " << w.summary;
    EXPECT_TRUE(w.finding.code.ends_with("/mpi-world-of-one")) << id << ": " << w.finding.code;
  }
}

TEST(CommAllreduce, MpiTransportSaysItMeasuredHostMemory) {
  JobFacts j = nccl_job();
  j.allreduce.transport = "mpi";
  j.allreduce.busbw_gbps = 2.1;
  j.allreduce.algbw_gbps = 1.12;
  expect(judge_job(spec(), j), Status::Pass, "across 16 ranks over mpi");
  expect(judge_job(spec(), j), Status::Pass,
         "measured over MPI in host memory (a CPU-only node): this is the hosts' network and memory, not a GPU fabric");
  EXPECT_EQ(judge_job(spec(), j).finding.code, "comm.allreduce/correct");
  EXPECT_EQ(judge_job(spec(), j).finding.params["participants"], "16 ranks");
  // A GPU-fabric floor does not apply to host memory: that part is skipped with the reason, never failed.
  const Verdict v = judge_job(spec(), j, floor_at(150));
  expect(v, Status::Pass,
         "; --min-busbw 150 GB/s: SKIP, a floor for a GPU fabric does not apply to MPI in host memory");
  EXPECT_EQ(v.finding.code, "comm.allreduce/correct-floor-not-for-mpi");
  EXPECT_EQ(v.finding.params["floor"], "150");
  EXPECT_EQ(v.finding.params["busbw"], judge_job(spec(), j).finding.params["busbw"]);
  EXPECT_EQ(v.evidence["min_busbw_skipped"], "the all_reduce ran over MPI in host memory (no rank has a GPU)");
  j.allreduce.repeats = 0;
  expect(judge_job(spec(), j, floor_at(150)), Status::Pass, "--min-busbw 150 GB/s: SKIP");
}

TEST(CommAllreduce, FloorWithoutMeasurementIsUnknown) {
  JobFacts j = nccl_job();
  j.allreduce.repeats = 0;
  j.allreduce.busbw_gbps = 0;
  const Verdict v = judge_job(spec(), j, floor_at(100));
  expect(v, Status::Unknown, "its bandwidth was not measured (0 timed repeats)");
  EXPECT_EQ(v.finding.code, "comm.allreduce/busbw-unmeasured");
  EXPECT_EQ(v.finding.params["repeats"], 0);
  EXPECT_EQ(v.finding.params["floor"], "100");
}

TEST(CommAllreduce, WrongResultFailsNamingRanks) {
  JobFacts j = nccl_job();
  j.allreduce.wrong = {9};
  j.allreduce.errors = {"rank 9 (gpu-b): element 1048576 is 15, expected 16"};
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "the all_reduce result was wrong on 1 of 16 participants: rank 9 (gpu-b, pid 1009, last phase report) (rank 9 "
         "(gpu-b): "
         "element 1048576 is 15, expected 16) over nccl",
         "NCCL_P2P_DISABLE=1");
  EXPECT_EQ(v.finding.code, "comm.allreduce/wrong-result-nccl");
  EXPECT_EQ(v.finding.params["count"], 1);
  EXPECT_EQ(v.finding.params["ranks"], 16);
  EXPECT_EQ(v.finding.params["who"], "rank 9 (gpu-b, pid 1009, last phase report)");
  EXPECT_EQ(v.finding.params["transport"], "nccl");
  JobFacts m = nccl_job();
  m.allreduce.transport = "mpi";
  m.allreduce.wrong = {1};
  const Verdict w = judge_job(spec(), m);
  expect(w, Status::Fail, "wrong on 1 of 16", "MPI delivered wrong sums");
  EXPECT_EQ(w.finding.code, "comm.allreduce/wrong-result-mpi");
  EXPECT_EQ(w.finding.params["who"], "rank 1 (gpu-a, pid 1001, last phase report)");
  EXPECT_FALSE(w.finding.params.contains("error_list"));
  EXPECT_EQ(w.finding.params["wrong"], nlohmann::json({1}));
  EXPECT_EQ(w.finding.params["transport"], "mpi");
}

TEST(CommAllreduce, WrongOnAGpuInTheNodeProfile) {
  JobFacts j = node_run();
  j.allreduce.wrong = {3};
  j.allreduce.errors = {"GPU 3: element 7 is 0, expected 36"};
  const Verdict v = judge_job(spec(), j, {}, Profile::Node);
  expect(v, Status::Fail, "wrong on 1 of 8 participants: GPU 3 (GPU 3: element 7 is 0, expected 36)");
  EXPECT_EQ(v.finding.code, "comm.allreduce/wrong-result-nccl");
  EXPECT_EQ(v.finding.params["who"], "GPU 3");
  EXPECT_EQ(v.finding.params["error_list"], "GPU 3: element 7 is 0, expected 36");
}

TEST(CommAllreduce, ExpiredNamesMissingRanks) {
  JobFacts j = nccl_job();
  j.allreduce.completed = false;
  j.allreduce.expired = true;
  j.allreduce.missing = {12};
  j.status[12].last_phase = Phase::Allreduce;
  j.status[12].silent_s = 6.1;
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "the all_reduce did not complete within 10 s over nccl: 1 of 16 ranks did not finish: rank 12 (gpu-b, pid "
         "1012, last "
         "phase allreduce, silent 6.1 s)",
         "rank 12 on gpu-b stopped in the allreduce");
  EXPECT_NE(v.remedy.find("NCCL_DEBUG=INFO"), std::string::npos);
  EXPECT_EQ(v.finding.code, "comm.allreduce/expired");
  EXPECT_EQ(v.finding.params["waited"], "10 s");
  EXPECT_EQ(v.finding.params["count"], 1);
  EXPECT_EQ(v.finding.params["world"], 16);
  EXPECT_EQ(v.finding.params["named"], "rank 12 (gpu-b, pid 1012, last phase allreduce, silent 6.1 s)");
  EXPECT_EQ(v.cause, "");
}

TEST(CommAllreduce, ExpiredWithEveryoneAlive) {
  JobFacts j = nccl_job();
  j.allreduce.completed = false;
  j.allreduce.expired = true;
  j.allreduce.missing = {8};
  j.status[8].last_phase = Phase::Allreduce;
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "every rank reached it and is alive", "a firewall between the hosts");
  EXPECT_EQ(v.finding.code, "comm.allreduce/fabric");
  EXPECT_EQ(v.finding.params["alive"], "rank 8 (gpu-b, pid 1008, last phase allreduce)");
  EXPECT_EQ(v.finding.params["transport"], "nccl");
  EXPECT_NE(v.remedy.find("NCCL_DEBUG_SUBSYS=INIT,NET"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.cause, "net.socket_ifname,net.reachability");
}

TEST(CommAllreduce, ExpiredWithoutNamedRanks) {
  JobFacts j = nccl_job();
  j.allreduce.completed = false;
  j.allreduce.expired = true;
  j.allreduce.errors = {"rank 0 (gpu-a): ncclCommWatchdog: timeout"};
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "the all_reduce did not complete within 10 s over nccl (no rank was named as missing) (rank 0 (gpu-a): "
         "ncclCommWatchdog: timeout)",
         "See the errors in the detail. Rerun the job's first collective with NCCL_DEBUG=INFO");
  EXPECT_EQ(v.finding.code, "comm.allreduce/expired-unnamed");
  EXPECT_EQ(v.finding.params["waited"], "10 s");
  EXPECT_EQ(v.finding.params["error_list"], "rank 0 (gpu-a): ncclCommWatchdog: timeout");
  EXPECT_EQ(v.cause, "net.socket_ifname,net.reachability");
  // Over MPI the remedy does not send the reader to NCCL_DEBUG.
  j.allreduce.transport = "mpi";
  const Verdict m = judge_job(spec(), j);
  EXPECT_EQ(m.finding.code, "comm.allreduce/expired-unnamed");
  EXPECT_EQ(m.remedy, "See the errors in the detail.");
  EXPECT_FALSE(m.finding.params.contains("nccl_debug"));  // spliced into the fix: empty over MPI
}

TEST(CommAllreduce, ErrorFails) {
  JobFacts j = nccl_job();
  j.allreduce.completed = false;
  j.allreduce.note = "ncclCommInitRank";
  j.allreduce.errors = {"rank 5 (gpu-a): ncclSystemError: socket connect to 192.0.2.2 failed"};
  expect(judge_job(spec(), j), Status::Fail,
         "the all_reduce over nccl failed: ncclCommInitRank; rank 5 (gpu-a): ncclSystemError: socket connect to "
         "192.0.2.2 failed",
         "NCCL_DEBUG=INFO");
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.finding.code, "comm.allreduce/error-nccl");
  EXPECT_EQ(v.finding.params["transport"], "nccl");
  EXPECT_EQ(v.finding.params["error"],
            "ncclCommInitRank; rank 5 (gpu-a): ncclSystemError: socket connect to 192.0.2.2 failed");
  EXPECT_EQ(v.cause, "nccl.library,net.socket_ifname");
}

TEST(CommAllreduce, MpiErrorFails) {
  JobFacts j = nccl_job();
  j.allreduce.transport = "mpi";
  j.allreduce.completed = false;
  j.allreduce.note = "MPI_Allreduce: MPI_ERR_TRUNCATE: message truncated";
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "the all_reduce over mpi failed: MPI_Allreduce: MPI_ERR_TRUNCATE: message truncated",
         "Fix the MPI error quoted; check that every rank runs the same MPI build.");
  EXPECT_EQ(v.finding.code, "comm.allreduce/error-mpi");
  EXPECT_EQ(v.finding.params["transport"], "mpi");
  EXPECT_EQ(v.finding.params["error"], "MPI_Allreduce: MPI_ERR_TRUNCATE: message truncated");
  EXPECT_EQ(v.cause, "nccl.library,net.socket_ifname");
  // Without a message at all.
  j.allreduce.note.clear();
  EXPECT_EQ(judge_job(spec(), j).finding.params["error"], "no error message");
}

TEST(CommAllreduce, ARankThatEndedIsTheStory) {
  // Rank 0's liveness watch saw rank 12's host stop answering during the all_reduce.
  JobFacts j = nccl_job();
  j.allreduce.completed = false;
  j.status[12].last_phase = Phase::Allreduce;
  j.status[12].lost = "unreachable";
  j.status[12].lost_at_s = 4.0;
  Verdict v = judge_job(spec(), j);
  expect(
      v, Status::Fail,
      "the all_reduce over nccl could not complete: rank 12 (gpu-b, pid 1012, last phase allreduce, its host stopped "
      "answering at 4.0 s)",
      "rank 12 on gpu-b stopped acknowledging rank 0's TCP connection in the allreduce");
  EXPECT_EQ(v.finding.code, "comm.allreduce/ranks-lost");
  EXPECT_EQ(v.finding.params["transport"], "nccl");
  EXPECT_EQ(v.finding.params["lost"],
            "rank 12 (gpu-b, pid 1012, last phase allreduce, its host stopped answering at 4.0 s)");
  // Lost before the all_reduce could run.
  j.allreduce = {};
  j.status[12].last_phase = Phase::Barrier;
  v = judge_job(spec(), j);
  expect(
      v, Status::Fail,
      "the all_reduce was not run: rank 12 (gpu-b, pid 1012, last phase barrier, its host stopped answering at 4.0 s)",
      "in the barrier");
  EXPECT_EQ(v.finding.code, "comm.allreduce/ranks-lost-before");
  EXPECT_EQ(v.finding.params["lost"],
            "rank 12 (gpu-b, pid 1012, last phase barrier, its host stopped answering at 4.0 s)");
}

TEST(CommAllreduce, NotRunBecauseRanksWereMissing) {
  JobFacts j = nccl_job();
  lose(j, 15, Phase::Gather);
  j.status[15].silent_s = 3;
  j.allreduce = {};
  j.allreduce.note = "the gather expired";
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "the all_reduce was not run: 1 of 16 ranks did not arrive earlier: rank 15 (gpu-b",
         "stopped sending its facts to rank 0");
  EXPECT_EQ(v.finding.code, "comm.allreduce/ranks-missing");
  EXPECT_EQ(v.finding.params["count"], 1);
  EXPECT_EQ(v.finding.params["world"], 16);
  EXPECT_EQ(v.finding.params["named"], "rank 15 (gpu-b, pid 1015, last phase gather, silent 3.0 s)");
  EXPECT_EQ(v.finding.params["reason"], "the gather expired");
}

TEST(CommAllreduce, NodeProfile) {
  expect(judge_job(spec(), node_run(), {}, Profile::Node), Status::Pass, "across 8 GPUs over nccl");
  JobFacts none = node_run();
  none.allreduce = {};
  none.allreduce.note = "no GPU: CUDA reports 0 devices";
  const Verdict skipped = judge_job(spec(), none, {}, Profile::Node);
  expect(skipped, Status::Skip, "no all_reduce was run: no GPU: CUDA reports 0 devices");
  EXPECT_EQ(skipped.finding.code, "comm.allreduce/not-run");
  EXPECT_EQ(skipped.finding.params["reason"], "no GPU: CUDA reports 0 devices");
  JobFacts one = node_run();
  one.allreduce.ranks = 1;
  one.allreduce.busbw_gbps = 0;
  const Verdict alone = judge_job(spec(), one, floor_at(100), Profile::Node);
  expect(alone, Status::Pass, "correct on a single participant over nccl (no bandwidth between peers to measure)");
  EXPECT_EQ(alone.finding.code, "comm.allreduce/correct-alone");
}

TEST(CommAllreduce, SkipForMergeAndNoJob) {
  JobFacts m = nccl_job();
  m.source = "merge";
  expect(judge_job(spec(), m), Status::Skip, "the all_reduce runs only in a live job");
  EXPECT_EQ(judge_job(spec(), m).finding.code, "comm.allreduce/merged");
  const RankFacts f;
  const Options o;
  const Verdict none = run_check(spec(), CheckContext{f, o, Profile::Node, nullptr, nullptr});
  expect(none, Status::Skip, "no all_reduce was run");
  EXPECT_EQ(none.finding.code, "comm.allreduce/not-gathered");
}

TEST(CommAllreduce, NodeProfileHangSpeaksOfGpusAndHelpers) {
  // Every helper of the node's 8 GPUs hung and aborted its communicator: no launcher, no ranks of
  // a world of 1, and the time it really ran (not a deadline longer than the run).
  JobFacts j = node_run();
  CommResult& c = j.allreduce;
  c.completed = false;
  c.expired = true;
  c.seconds = 4.2;
  c.deadline_s = 55;
  c.missing = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int g = 0; g < 8; ++g) {
    c.errors.push_back("rank " + std::to_string(g) + " (GPU " + std::to_string(g) +
                       "): allreduce: did not finish within 4.0 s [communicator aborted]");
  }
  Verdict v = judge_job(spec(), j, {}, Profile::Node);
  expect(v, Status::Fail,
         "the NCCL all_reduce across the node's 8 GPUs (one contained helper per GPU) did not finish: "
         "stopped after 4.2 s; the helpers of GPUs 0–7 hung (8 of 8): every communicator was aborted",
         "topo.p2p");
  // The eight helpers' identical errors are said once, naming them all.
  EXPECT_TRUE(v.summary.find("(GPUs 0–7's helpers: allreduce: did not finish within 4.0 s [communicator aborted])") !=
              std::string::npos)
      << v.summary;
  for (const char* wrong : {"of 1 ranks", "launcher", "MPI can reach", "55"}) {
    EXPECT_EQ(v.summary.find(wrong), std::string::npos) << wrong << ": " << v.summary;
    EXPECT_EQ(v.remedy.find(wrong), std::string::npos) << wrong << ": " << v.remedy;
  }
  EXPECT_NE(v.remedy.find("NCCL_P2P_DISABLE=1"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.finding.code, "comm.allreduce/node-hang");
  EXPECT_EQ(v.finding.params["ranks"], 8);
  EXPECT_EQ(v.finding.params["time"], "4.2 s");
  EXPECT_NE(
      v.summary.find("; the helpers of GPUs 0–7 hung (8 of 8): every communicator was aborted after its deadline"),
      std::string::npos)
      << v.summary;
  EXPECT_EQ(v.finding.params["hung_gpus"], "GPUs 0–7");
  EXPECT_EQ(v.finding.params["hung_count"], 8);
  // One GPU's helper hung: that GPU is named.
  c.missing = {5};
  c.errors = {"rank 5 (GPU 5): allreduce: did not finish within 4.0 s"};
  v = judge_job(spec(), j, {}, Profile::Node);
  expect(v, Status::Fail, "the helper of GPU 5 hung (1 of 8)");
  EXPECT_EQ(v.summary.find("every communicator"), std::string::npos) << v.summary;
  EXPECT_EQ(v.finding.code, "comm.allreduce/node-hang");
  EXPECT_EQ(v.finding.params["hung_gpus"], "GPU 5");
  EXPECT_EQ(v.finding.params["hung_count"], 1);
  EXPECT_EQ(v.finding.params["error_list"], "GPU 5's helper: allreduce: did not finish within 4.0 s");
  EXPECT_NE(v.summary.find(" (GPU 5's helper: allreduce: did not finish within 4.0 s)"), std::string::npos)
      << v.summary;
  // An error (no hang) names the GPU's helper too.
  c.expired = false;
  c.missing.clear();
  c.errors = {"rank 2 (GPU 2): init: ncclCommInitRank: unhandled system error"};
  c.note = c.errors.front();
  v = judge_job(spec(), j, {}, Profile::Node);
  expect(v, Status::Fail, "GPU 2's helper: init: ncclCommInitRank: unhandled system error");
  EXPECT_EQ(v.summary.find("rank 2"), std::string::npos) << v.summary;
  EXPECT_EQ(v.finding.code, "comm.allreduce/error-nccl");
  EXPECT_EQ(v.finding.params["error"], "GPU 2's helper: init: ncclCommInitRank: unhandled system error");
  // Every helper failing alike (a runtime the driver is too old for): one sentence, every GPU named.
  c.errors.clear();
  for (int g = 0; g < 8; ++g) {
    c.errors.push_back("rank " + std::to_string(g) + " (GPU " + std::to_string(g) +
                       "): init: ncclCommInitRankConfig: ncclUnhandledCudaError: Cuda failure 'CUDA driver version is "
                       "insufficient for CUDA runtime version'");
  }
  c.errors.push_back("rank 5 (GPU 5): verify: element 3 of 8 is 1, expected 2");
  c.note = c.errors.front() + " (and 8 more)";
  v = judge_job(spec(), j, {}, Profile::Node);
  expect(
      v, Status::Fail,
      "the all_reduce over nccl failed: GPUs 0–7's helpers: init: ncclCommInitRankConfig: ncclUnhandledCudaError: "
      "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'; GPU 5's helper: verify: element 3");
  EXPECT_EQ(v.summary.find("CUDA driver version", v.summary.find("CUDA driver version") + 1), std::string::npos)
      << v.summary;
  EXPECT_EQ(v.summary.find("more"), std::string::npos) << v.summary;
}

TEST(CommAllreduce, NcclThatCannotRunIsNeverAnMpiPass) {
  // GPUs exist but a rank has no GPU of its own, or NCCL cannot be loaded: FAIL with the reason,
  // in the job and in the node profile (where it was a SKIP).
  JobFacts j = nccl_job();
  CommResult& c = j.allreduce;
  c = CommResult{};
  c.attempted = true;
  c.blocked = true;
  c.transport = "nccl";
  c.note =
      "the NCCL all_reduce across the job's GPUs cannot run: rank 1 (gpu-a) has no GPU to use: local rank 1 but "
      "it sees 0 GPUs (see launch.gpu_binding, gpu.count and nccl.library)";
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "rank 1 (gpu-a) has no GPU to use", "launch.gpu_binding");
  EXPECT_EQ(v.finding.code, "comm.allreduce/nccl-blocked");
  EXPECT_EQ(v.finding.params["reason"], c.note);
  EXPECT_EQ(v.cause, "launch.gpu_binding,nccl.library,driver.loaded");
  JobFacts n = node_run();
  n.allreduce = CommResult{};
  n.allreduce.blocked = true;
  n.allreduce.transport = "nccl";
  n.allreduce.note = "the NCCL all_reduce across the node's 8 GPUs cannot run: NCCL cannot be loaded here";
  expect(judge_job(spec(), n, {}, Profile::Node), Status::Fail, "NCCL cannot be loaded here", "nccl.library");
  EXPECT_EQ(judge_job(spec(), n, {}, Profile::Node).finding.code, "comm.allreduce/nccl-blocked");
  n.allreduce.note.clear();
  EXPECT_EQ(judge_job(spec(), n, {}, Profile::Node).summary, "the NCCL all_reduce could not run");
}

TEST(CommAllreduce, NcclNotFoundOutInTimeIsUnknownNeverFail) {
  // The NCCL probe ran out of preflight's budget: the all_reduce was not run, and nothing says
  // NCCL or a GPU is at fault.
  JobFacts n = node_run();
  n.allreduce = CommResult{};
  n.allreduce.blocked = true;
  n.allreduce.undetermined = true;
  n.allreduce.transport = "nccl";
  n.allreduce.note =
      "the NCCL all_reduce across the node's 8 GPUs was not run: whether NCCL loads here was not found out in time "
      "(preflight-gpu-probe nccl: preflight's own budget ran out; see nccl.library)";
  const Verdict v = judge_job(spec(), n, {}, Profile::Node);
  expect(v, Status::Unknown, "was not found out in time", "--timeout");
  EXPECT_EQ(v.finding.code, "comm.allreduce/nccl-undetermined");
  EXPECT_EQ(v.cause, "launch.gpu_binding,nccl.library,driver.loaded");
}

}  // namespace
}  // namespace checks_comm_allreduce_test
}  // namespace preflight
