// SPDX-License-Identifier: MIT
// The phases of a job run (job/phases.hpp) in a fake world of N ranks (fake_world.hpp): what rank 0
// sees when a rank is silent, slow, dead or claims another rank's number, without MPI.
#include <gtest/gtest.h>

#include <chrono>

#include "job/allreduce_plan.hpp"
#include "job/fake_world.hpp"
#include "job/phases.hpp"
#include "transport/payload.hpp"

namespace preflight {
namespace job_phases_test {
namespace {

using testing::FakeWorld;
using testing::in;
using namespace std::chrono_literals;
using Behaviour = FakeWorld::Behaviour;

double seconds_since(TimePoint t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// What a rank sends in the gather: its facts and one verdict, under the number it believes is its own.
std::string payload_of(Transport& t) {
  RankPayload p;
  p.rank = t.rank();
  p.facts.placement.rank = t.rank();
  p.facts.identity.hostname = "host-of-" + std::to_string(t.rank());
  CheckResult r;
  r.id = "host.limits";
  r.ranks = {t.rank()};
  p.results.push_back(r);
  return encode_payload(p);
}

/// Every rank announces `phase`, then runs the gather; rank 0's outcome and its statuses.
struct GatherAtRoot {
  GatherOutcome outcome;
  std::vector<RankStatus> status;
};
std::vector<std::optional<GatherAtRoot>> gather(FakeWorld& world, TimePoint deadline) {
  return world.run<GatherAtRoot>([&](Transport& t) {
    t.announce(Phase::Gather);
    GatherAtRoot at;
    if (t.view().rank == 0) at.status = t.statuses();
    RankFacts own;
    own.placement.rank = t.rank();
    at.outcome = gather_phase(t, t.view().rank == 0 ? std::string() : payload_of(t), own, {}, at.status, deadline);
    return at;
  });
}

TEST(JobPhases, TheGatherBringsEveryRanksFactsToRankZeroInRankOrder) {
  FakeWorld world(4);
  const auto got = gather(world, in(5000ms));
  ASSERT_TRUE(got[0].has_value());
  const GatherOutcome& root = got[0]->outcome;
  ASSERT_EQ(root.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(root.ranks[static_cast<std::size_t>(r)].placement.rank, r);
  EXPECT_EQ(root.results.size(), 3u);  // the other ranks' verdicts (rank 0 passed none of its own)
  EXPECT_TRUE(root.lost.empty());
  for (const RankStatus& s : got[0]->status) EXPECT_TRUE(s.delivered) << "rank " << s.rank;
  for (int r = 1; r < 4; ++r) EXPECT_TRUE(got[static_cast<std::size_t>(r)]->outcome.sent);
}

TEST(JobPhases, AGatherWithASilentRankEndsAtItsDeadlineNamingIt) {
  FakeWorld world(4);
  world.set(2, {Behaviour::Silent});
  const TimePoint t0 = Clock::now();
  const auto got = gather(world, in(300ms));
  EXPECT_GE(seconds_since(t0), 0.25);
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_FALSE(got[2].has_value());
  const GatherAtRoot& root = *got[0];
  EXPECT_EQ(root.outcome.lost, std::vector<int>{2});
  EXPECT_EQ(root.outcome.ranks.size(), 3u);
  EXPECT_FALSE(root.status[2].delivered);
  EXPECT_TRUE(root.status[2].payload_error.empty());
  EXPECT_EQ(ranks_behind(world.transport(0).statuses(), Phase::Gather), std::vector<int>{2});  // never heard from
}

TEST(JobPhases, ALyingRanksPayloadIsAnErrorNamingItNotALoss) {
  FakeWorld world(4);
  world.set(3, {Behaviour::Lying, 0ms, 1});  // rank 3 believes it is rank 1
  const auto got = gather(world, in(5000ms));
  const GatherAtRoot& root = *got[0];
  EXPECT_TRUE(root.outcome.lost.empty());
  EXPECT_FALSE(root.status[3].delivered);
  EXPECT_NE(root.status[3].payload_error.find("rank"), std::string::npos) << root.status[3].payload_error;
  ASSERT_EQ(root.outcome.ranks.size(), 3u);
  EXPECT_EQ(root.outcome.ranks.back().placement.rank, 2);
}

TEST(JobPhases, AnOversizedPayloadArrivesAsItsSize) {
  FakeWorld world(2);
  const auto got = world.run<GatherAtRoot>([&](Transport& t) {
    GatherAtRoot at;
    if (t.rank() == 0) at.status = t.statuses();
    at.outcome = gather_phase(t, std::string(kMaxPayloadBytes + 1, 'x'), RankFacts{}, {}, at.status, in(5000ms));
    return at;
  });
  const std::string& error = got[0]->status[1].payload_error;
  EXPECT_NE(error.find(std::to_string(kMaxPayloadBytes + 1) + " bytes, over the limit"), std::string::npos) << error;
}

std::vector<std::optional<BarrierOutcome>> barrier(FakeWorld& world, TimePoint deadline) {
  return world.run<BarrierOutcome>([&](Transport& t) {
    t.announce(Phase::Barrier);
    return barrier_phase(t, deadline);
  });
}

TEST(JobPhases, ABarrierWaitsForASlowRankWithinItsDeadline) {
  FakeWorld world(4);
  world.set(1, {Behaviour::Slow, 100ms});
  const auto got = barrier(world, in(5000ms));
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(got[static_cast<std::size_t>(r)]->completed) << "rank " << r;
  EXPECT_GE(got[0]->seconds, 0.09);
}

TEST(JobPhases, ABarrierWithASilentRankExpiresAndRankZeroSeesWhoDidNotArrive) {
  FakeWorld world(4);
  world.set(3, {Behaviour::Silent});
  const auto got = barrier(world, in(300ms));
  ASSERT_TRUE(got[0].has_value());
  EXPECT_FALSE(got[0]->completed);
  EXPECT_TRUE(got[0]->peer_error.empty());  // it ran out of time: nobody said why
  EXPECT_GE(got[0]->seconds, 0.25);
  EXPECT_EQ(ranks_behind(world.transport(0).statuses(), Phase::Barrier), std::vector<int>{3});
}

TEST(JobPhases, ABarrierFailsAtOnceWhenARanksProcessEnded) {
  FakeWorld world(4);
  world.set(2, {Behaviour::Dead});
  const auto got = barrier(world, in(5000ms));
  ASSERT_TRUE(got[0].has_value());
  EXPECT_FALSE(got[0]->completed);
  EXPECT_NE(got[0]->peer_error.find("rank 2"), std::string::npos) << got[0]->peer_error;
  EXPECT_LT(got[0]->seconds, 2.0);  // not the deadline: the peer's end was seen
  EXPECT_EQ(ranks_behind(world.transport(0).statuses(), Phase::Barrier), std::vector<int>{2});
}

std::vector<std::optional<NcclRankOutcome>> mpi_allreduce(FakeWorld& world, TimePoint deadline) {
  return world.run<NcclRankOutcome>([&](Transport& t) { return mpi_allreduce_round(t, 4096, deadline, 2); });
}

TEST(JobPhases, TheMpiAllreduceIsExactOnEveryRank) {
  FakeWorld world(4);
  const auto got = mpi_allreduce(world, in(5000ms));
  for (int r = 0; r < 4; ++r) {
    const NcclRankOutcome& o = *got[static_cast<std::size_t>(r)];
    EXPECT_TRUE(o.ok) << o.error;
    EXPECT_EQ(o.rank, r);
    EXPECT_EQ(o.bytes, 4096u);
    EXPECT_EQ(o.repeats, 2);
    EXPECT_FALSE(o.wrong);
  }
}

TEST(JobPhases, TheAllreduceSelfCheckCatchesTwoRanksWithOneNumber) {
  FakeWorld world(4);
  world.set(3, {Behaviour::Lying, 0ms, 1});  // ranks 1 and 3 both say 1: the sum of rank numbers is 4, not 6
  const auto got = mpi_allreduce(world, in(5000ms));
  for (int r = 0; r < 4; ++r) {
    const NcclRankOutcome& o = *got[static_cast<std::size_t>(r)];
    EXPECT_FALSE(o.ok);
    EXPECT_TRUE(o.wrong);
    EXPECT_EQ(o.step, "verify");
    EXPECT_EQ(o.wrong_index, 1);
    EXPECT_EQ(o.wrong_value, 4);
    EXPECT_EQ(o.expected_value, 6);
    EXPECT_NE(o.error.find("rank count/sum self-check"), std::string::npos) << o.error;
  }
}

TEST(JobPhases, AnMpiAllreduceWithASilentRankExpiresOnTheOthers) {
  FakeWorld world(3);
  world.set(1, {Behaviour::Silent});
  const auto got = mpi_allreduce(world, in(300ms));
  for (int r : {0, 2}) {
    const NcclRankOutcome& o = *got[static_cast<std::size_t>(r)];
    EXPECT_FALSE(o.ok);
    EXPECT_TRUE(o.expired);
    EXPECT_EQ(o.step, "allreduce");
  }
}

TEST(JobPhases, AnMpiAllreduceWithADeadRankSaysWhichEnded) {
  FakeWorld world(3);
  world.set(2, {Behaviour::Dead});
  const auto got = mpi_allreduce(world, in(5000ms));
  EXPECT_NE(got[0]->error.find("rank 2's process ended"), std::string::npos) << got[0]->error;
}

TEST(JobPhases, AllreduceRecordsHaveOneSizeAndSurviveTheTrip) {
  NcclRankOutcome o;
  o.ok = false;
  o.step = "init";
  o.error = std::string(10000, 'e');  // cut to fit
  o.busbw_gbps = 12.5;
  const std::string record = to_record(o);
  EXPECT_EQ(record.size(), kAllreduceRecordBytes);
  const NcclRankOutcome back = from_record(record, 7);
  EXPECT_EQ(back.rank, 7);
  EXPECT_EQ(back.step, "init");
  EXPECT_EQ(back.error.size(), 1000u);
  EXPECT_DOUBLE_EQ(back.busbw_gbps, 12.5);
  const NcclRankOutcome garbage = from_record(std::string(kAllreduceRecordBytes, 'Z'), 2);
  EXPECT_EQ(garbage.step, "gather");
  EXPECT_NE(garbage.error.find("did not parse"), std::string::npos);
}

TEST(JobPhases, ThePlanIsTypedOnBothSidesOfTheWire) {
  const AllreducePlan nccl{AllreducePlan::Mode::Nccl, 1 << 20, "abcd", "192.0.2.1:40000", {}, {}};
  const AllreducePlan back = decode_plan(encode_plan(nccl));
  EXPECT_EQ(back.mode, AllreducePlan::Mode::Nccl);
  EXPECT_EQ(back.bytes, 1u << 20);
  EXPECT_EQ(back.id, "abcd");
  EXPECT_EQ(back.root, "192.0.2.1:40000");
  EXPECT_EQ(decode_plan(encode_plan({AllreducePlan::Mode::Skipped, 0, {}, {}, {}, {}})).mode,
            AllreducePlan::Mode::Skipped);
  const AllreducePlan mpi = decode_plan(encode_plan({AllreducePlan::Mode::Mpi, 64, {}, {}, "image profile", {}}));
  EXPECT_EQ(mpi.mode, AllreducePlan::Mode::Mpi);
  EXPECT_EQ(mpi.why, "image profile");
  const AllreducePlan none = decode_plan(encode_plan({AllreducePlan::Mode::None, 0, {}, {}, {}, "no root"}));
  EXPECT_EQ(none.mode, AllreducePlan::Mode::None);
  EXPECT_EQ(none.error, "no root");
  // What is not a plan is no plan, with the reason: never a default mode.
  EXPECT_EQ(decode_plan("").mode, AllreducePlan::Mode::None);
  EXPECT_NE(decode_plan("").error.find("not one"), std::string::npos);
  const AllreducePlan odd = decode_plan(R"({"mode":"ucc","bytes":8})");
  EXPECT_EQ(odd.mode, AllreducePlan::Mode::None);
  EXPECT_NE(odd.error.find("ucc"), std::string::npos);
}

TEST(JobPhases, ThePlanRecordsAndDecisionTravelAsInAJob) {
  // Rank 0 plans, every rank runs its round and returns its record, rank 0 reads them all.
  FakeWorld world(3);
  const TimePoint deadline = in(5000ms);
  const auto got = world.run<std::vector<NcclRankOutcome>>([&](Transport& t) {
    const std::string text = t.rank() == 0 ? encode_plan({AllreducePlan::Mode::Mpi, 256, {}, {}, "no GPU", {}}) : "";
    const AllreducePlan plan = decode_plan(t.broadcast(text, deadline).value_or(""));
    const NcclRankOutcome mine = mpi_allreduce_round(t, plan.bytes, deadline, 1);
    const auto records = t.gather(to_record(mine), deadline);
    std::vector<NcclRankOutcome> out;
    for (std::size_t r = 0; records && r < records->size(); ++r)
      out.push_back(from_record((*records)[r], static_cast<int>(r)));
    return out;
  });
  ASSERT_EQ(got[0]->size(), 3u);
  for (const NcclRankOutcome& o : *got[0]) EXPECT_TRUE(o.ok) << o.rank << ": " << o.error;
  EXPECT_TRUE(got[1]->empty());  // only rank 0 collects
}

TEST(JobPhases, ANodesLeaderReachesTheRanksOfItsOwnHostOnly) {
  FakeWorld world(4, 2);  // node1: ranks 0, 1; node2: ranks 2, 3
  const auto got = world.run<std::string>([&](Transport& t) {
    const std::string mine = "facts of rank " + std::to_string(t.rank());
    return t.node_broadcast(t.view().local_rank == 0 ? mine : "", in(5000ms)).value_or("none");
  });
  EXPECT_EQ(*got[1], "facts of rank 0");
  EXPECT_EQ(*got[3], "facts of rank 2");
}

TEST(JobPhases, WithoutGpusTheJobsAllreduceIsMpiAndSaysWhy) {
  std::vector<RankFacts> ranks(2);
  ranks[1].placement.rank = 1;
  const NcclBlock block = why_no_nccl(ranks);
  const std::string& why = block.why;
  EXPECT_FALSE(block.any_gpu);
  EXPECT_FALSE(block.undetermined);
  EXPECT_NE(why.find("rank 0 ("), std::string::npos) << why;
  EXPECT_NE(why.find("has no GPU to use"), std::string::npos) << why;
  JobFacts job;
  job.ranks = ranks;
  const AllreducePlan plan = plan_allreduce(Options{}, Profile::Job, job, ranks[0], in(5000ms));
  EXPECT_EQ(plan.mode, AllreducePlan::Mode::Mpi);
  EXPECT_NE(plan.why.find("no rank has a GPU"), std::string::npos) << plan.why;
  Options skip;
  skip.skip = {"comm.allreduce"};
  EXPECT_EQ(plan_allreduce(skip, Profile::Job, job, ranks[0], in(5000ms)).mode, AllreducePlan::Mode::Skipped);
  EXPECT_EQ(plan_allreduce(Options{}, Profile::Image, job, ranks[0], in(5000ms)).why, "image profile");
}

TEST(JobPhases, NcclProbeOutOfTimeMakesAnUndeterminedPlanNotAFault) {
  // Every rank binds a GPU of its own, but rank 1's NCCL probe ran out of its deadline (or of
  // preflight's budget): the plan says the all_reduce was not run, and that this is undetermined.
  std::vector<RankFacts> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r].placement.rank = r;
    ranks[r].placement.local_rank = r;
    ranks[r].identity.hostname = "gpu-a";
    std::vector<CudaDevice> devices(2);
    devices[0].pci_bus_id = "0000:10:00.0";
    devices[1].ordinal = 1;
    devices[1].pci_bus_id = "0000:20:00.0";
    ranks[r].gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::ok(devices, "cuDeviceGet");
    ranks[r].gpu.nccl = Probed<NcclLibrary>::ok(NcclLibrary{}, "ncclGetVersion");
  }
  for (const ProbeErrc code : {ProbeErrc::OutOfBudget, ProbeErrc::Timeout}) {
    ranks[1].gpu.nccl = Probed<NcclLibrary>::error(code, "preflight-gpu-probe nccl: stopped", "helper");
    const NcclBlock block = why_no_nccl(ranks);
    EXPECT_TRUE(block.undetermined) << block.why;
    EXPECT_NE(block.why.find("rank 1 (gpu-a) cannot load NCCL"), std::string::npos) << block.why;
    JobFacts job;
    job.ranks = ranks;
    const AllreducePlan plan = plan_allreduce(Options{}, Profile::Job, job, ranks[0], in(5000ms));
    EXPECT_EQ(plan.mode, AllreducePlan::Mode::None);
    EXPECT_TRUE(plan.undetermined);
    EXPECT_NE(plan.error.find("was not run: it was not found out in time"), std::string::npos) << plan.error;
    const AllreducePlan wire = decode_plan(encode_plan(plan));
    EXPECT_TRUE(wire.undetermined);
    EXPECT_EQ(wire.error, plan.error);
  }
  // A library that is missing is a fault, not an open question.
  ranks[1].gpu.nccl = Probed<NcclLibrary>::error(ProbeErrc::LibraryMissing, "libnccl.so.2: cannot open", "dlopen");
  const NcclBlock missing = why_no_nccl(ranks);
  EXPECT_FALSE(missing.undetermined);
  EXPECT_NE(missing.why.find("cannot load NCCL"), std::string::npos) << missing.why;
  JobFacts job;
  job.ranks = ranks;
  const AllreducePlan plan = plan_allreduce(Options{}, Profile::Job, job, ranks[0], in(5000ms));
  EXPECT_FALSE(plan.undetermined);
  EXPECT_FALSE(decode_plan(encode_plan(plan)).undetermined);
  EXPECT_NE(plan.error.find("cannot run: rank 1"), std::string::npos) << plan.error;
}

}  // namespace
}  // namespace job_phases_test
}  // namespace preflight
