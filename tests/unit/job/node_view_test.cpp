// SPDX-License-Identifier: MIT
// The node-scope checks that judge a node from every rank's view (CheckSpec::node_view): in a
// gathered job, rank 0 replaces what local rank 0 judged alone with a verdict over every rank of
// its host. The per-rank wrapper `export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK` on an
// 8-GPU node is the case: local rank 0 alone sees one GPU for four local ranks.
#include <gtest/gtest.h>

#include "job/job_report.hpp"
#include "job_fixture.hpp"

namespace preflight {
namespace job_node_view_test {
namespace {

using gpu_fixture::has;

JobFacts per_rank_wrapper_job() {
  JobFacts j = job_fixture::job(1, 4);
  for (RankFacts& f : j.ranks) {
    const int l = f.placement.local_rank;
    std::vector<CudaDevice>& cuda = *f.gpu.driver.cuda_devices.value();
    CudaDevice mine = cuda[static_cast<std::size_t>(l)];
    mine.ordinal = 0;
    cuda = {mine};
    f.env = EnvSnapshot(std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", std::to_string(l)}});
  }
  return j;
}

const CheckResult* find(const Report& r, const std::string& id) {
  for (const CheckResult& c : r.results) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

TEST(NodeView, RankZeroJudgesTheNodeWithEveryRanksView) {
  const JobFacts j = per_rank_wrapper_job();
  Options o;
  o.expect_gpus = 4;
  o.only = {"gpu.count", "gpu.busy", "launch.gpu_binding"};
  // What each rank judged itself: node-scope checks on local rank 0 only.
  std::vector<CheckResult> per_rank;
  for (const RankFacts& f : j.ranks) {
    for (CheckResult& r : judge_rank(o, Profile::Job, f, f.placement.local_rank == 0, nullptr)) {
      per_rank.push_back(std::move(r));
    }
  }
  const CheckResult* alone = nullptr;
  for (const CheckResult& r : per_rank) {
    if (r.id == "gpu.count") alone = &r;
  }
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(alone->verdict.status, Status::Fail);  // local rank 0 alone: 4 local ranks but 1 GPU
  EXPECT_TRUE(has(alone->verdict.summary, "4 local ranks but 1 GPU visible")) << alone->verdict.summary;

  const Report report = assemble_report(o, Profile::Job, j, per_rank, nullptr);
  const CheckResult* count = find(report, "gpu.count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->verdict.status, Status::Pass) << count->verdict.summary;
  EXPECT_TRUE(has(count->verdict.summary, "4 GPUs visible to CUDA to the node's 4 ranks")) << count->verdict.summary;
  EXPECT_EQ(count->ranks, (std::vector<int>{0, 1, 2, 3}));
  const CheckResult* binding = find(report, "launch.gpu_binding");
  ASSERT_NE(binding, nullptr);
  EXPECT_EQ(binding->verdict.status, Status::Pass) << binding->verdict.summary;
  const CheckResult* busy = find(report, "gpu.busy");
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(busy->verdict.status, Status::Pass) << busy->verdict.summary;
  EXPECT_TRUE(has(busy->verdict.summary, "the 4 GPUs this job will use")) << busy->verdict.summary;
}

TEST(NodeView, SingleRankHostsKeepTheirOwnVerdicts) {
  // One rank per host: nothing to widen, the rank's own verdict stands.
  JobFacts j = job_fixture::job(2, 1);
  Options o;
  o.only = {"gpu.count"};
  std::vector<CheckResult> per_rank;
  for (const RankFacts& f : j.ranks) {
    for (CheckResult& r : judge_rank(o, Profile::Job, f, true, nullptr)) per_rank.push_back(std::move(r));
  }
  const Report report = assemble_report(o, Profile::Job, j, per_rank, nullptr);
  std::size_t n = 0;
  for (const CheckResult& r : report.results) n += r.id == "gpu.count" ? 1 : 0;
  EXPECT_GE(n, 1u);
  const CheckResult* count = find(report, "gpu.count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->verdict.status, Status::Pass) << count->verdict.summary;
}

}  // namespace
}  // namespace job_node_view_test
}  // namespace preflight
