// SPDX-License-Identifier: MIT
// host.memory on hand-built facts: every status, and the numbers behind it.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "checks/specs.hpp"

namespace preflight {
namespace checks_host_memory_test {

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kB7 = 7'000'000'000;
constexpr std::uint64_t kB70 = 70'000'000'000;

RankFacts node(std::uint64_t total, std::uint64_t available, int local_ranks = 8, int world_size = 1) {
  RankFacts f;
  f.memory.meminfo = Probed<MemInfo>::ok({total, available, 0, 0}, "/proc/meminfo");
  f.memory.cgroup =
      Probed<CgroupMemory>::error(ProbeErrc::Unsupported, "no cgroup memory controller", "/proc/self/cgroup");
  f.placement.local_ranks = local_ranks;
  f.placement.world_size = world_size;
  return f;
}

Options model(std::uint64_t params, std::optional<int> stage, std::optional<int> world = std::nullopt) {
  Options o;
  o.model_params = params;
  o.zero_stage = stage;
  o.expect_world_size = world;
  return o;
}

Verdict check(const RankFacts& facts, const Options& options = {}, Profile profile = Profile::Node) {
  return run_check(kHostMemory, CheckContext{facts, options, profile});
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(HostMemory, PassesOnMemAvailableWithoutACgroup) {
  const Verdict v = check(node(64 * kGiB, 60 * kGiB));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.summary,
            "node has 60 GiB available (MemAvailable 60 GiB of 64 GiB); 8 local ranks × 4 GiB need 32 GiB "
            "(no --model-params: the checkpoint-save peak is not checked)");
  EXPECT_EQ(v.evidence["budget_bytes"], 60 * kGiB);
  EXPECT_EQ(v.evidence["need_bytes"], 32 * kGiB);
  EXPECT_EQ(v.evidence["cgroup_version"], 0);
  EXPECT_TRUE(v.evidence["model_params"].is_null());
  EXPECT_EQ(v.evidence["formula"], "8 × 4 GiB");
}

TEST(HostMemory, Fails7BZero0With8RanksOn64GiB) {
  const Verdict v = check(node(64 * kGiB, 62 * kGiB), model(kB7, 0));
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  // 8 × 4 GiB + rank 0 (the only data-parallel rank 0) × 7e9 × 14 B = 132359738368 B
  EXPECT_EQ(v.evidence["need_bytes"], 132359738368ull);
  EXPECT_EQ(v.evidence["budget_bytes"], 62 * kGiB);
  EXPECT_EQ(v.evidence["formula"], "8 × 4 GiB + 1 × 7B × (2 + 12) B");
  EXPECT_EQ(v.evidence["zero_stage"], 0);
  EXPECT_EQ(v.evidence["model_params"], kB7);
  EXPECT_EQ(v.evidence["model_state_savers"], 1);
  EXPECT_EQ(v.summary,
            "node has 62 GiB available (MemAvailable 62 GiB of 64 GiB); 8 local ranks saving a 7B-parameter ZeRO-0 "
            "checkpoint need ≈ 123.3 GiB (1 of them data-parallel rank 0, saving the model states of the whole model)");
  // Sharded over the 8 ranks the need is the same here: no ZeRO-3 advice that would not help.
  EXPECT_FALSE(contains(v.remedy, "ZeRO-3 needs")) << v.remedy;
  EXPECT_TRUE(contains(v.remedy, "Use nodes with more RAM: this one has 62 GiB available.")) << v.remedy;
  EXPECT_TRUE(contains(v.remedy, "--host-bytes-per-rank")) << v.remedy;
  EXPECT_EQ(v.finding.code, "host.memory/too-little");
  EXPECT_EQ(v.finding.params["budget"], "62 GiB available (MemAvailable 62 GiB of 64 GiB)");
  EXPECT_FALSE(v.finding.params.contains("sharded_need"));
  EXPECT_FALSE(v.finding.params.contains("fit_ranks"));  // not even one saving rank fits
  EXPECT_EQ(v.finding.params["available"], "62 GiB");
  EXPECT_EQ(v.finding.params["per_rank"], "4 GiB");
  // Without the advice that would not help, the fix's sentences are still joined by one space.
  EXPECT_EQ(v.remedy,
            "Use nodes with more RAM: this one has 62 GiB available. If a rank uses less than 4 GiB outside "
            "checkpoints, say so with --host-bytes-per-rank SIZE.");
}

TEST(HostMemory, Zero3PassesWhereZero2Fails) {
  const RankFacts facts = node(256 * kGiB, 200 * kGiB);
  const Verdict zero2 = check(facts, model(kB70, 2, 64));
  const Verdict zero3 = check(facts, model(kB70, 3, 64));
  EXPECT_EQ(zero2.status, Status::Fail) << zero2.summary;
  EXPECT_EQ(zero3.status, Status::Pass) << zero3.summary;
  EXPECT_EQ(zero2.evidence["need_bytes"], 279359738368ull);  // 8 × 4 GiB + 1 × 140e9 + 8 × 840e9/64
  EXPECT_EQ(zero3.evidence["need_bytes"], 156859738368ull);  // 8 × 4 GiB + 8 × 980e9/64
  EXPECT_EQ(zero2.evidence["formula"], "8 × 4 GiB + 1 × 70B × 2 B + 8 × 70B × 12/64 B");
  EXPECT_TRUE(contains(zero2.summary,
                       "8 local ranks saving a 70B-parameter ZeRO-2 checkpoint sharded 64 ways need ≈ 260.2 GiB"))
      << zero2.summary;
  EXPECT_TRUE(contains(zero2.remedy, "ZeRO-3 needs ≈ 146.1 GiB here")) << zero2.remedy;
  EXPECT_TRUE(contains(zero2.remedy, "SHARDED_STATE_DICT")) << zero2.remedy;
  EXPECT_TRUE(contains(zero2.remedy, "SHARDED_STATE_DICT. Run at most 1 rank per node (`srun --ntasks-per-node=1`"))
      << zero2.remedy;
  EXPECT_EQ(zero2.finding.code, "host.memory/too-little");
  EXPECT_EQ(zero3.finding.code, "host.memory/enough");
  EXPECT_EQ(zero3.evidence["formula"], "8 × 4 GiB + 8 × 70B × 14/64 B");
  EXPECT_EQ(zero3.evidence["model_state_savers"], 8);
}

TEST(HostMemory, ModelParallel405BIsJudgedByTheShardsItsRanksHold) {
  // 405B, ZeRO-1, 1024 ranks on 8-GPU nodes. Without model parallelism rank 0 saves the full bf16
  // weights (810 GB); every rank was once assumed to, ≈ 6 TiB.
  const RankFacts facts = node(512 * kGiB, 500 * kGiB);
  const Verdict flat = check(facts, model(405'000'000'000ull, 1, 1024));
  ASSERT_EQ(flat.status, Status::Fail) << flat.summary;
  EXPECT_EQ(flat.evidence["need_bytes"], 882328488368ull);  // 8 × 4 GiB + 810e9 + 8 × 4.86e12/1024
  EXPECT_TRUE(contains(flat.summary, "need ≈ 821.7 GiB (1 of them data-parallel rank 0")) << flat.summary;

  // Megatron-style TP 8 × PP 16 × DP 8: a node holds one tensor group; on replica 0's nodes all 8
  // ranks save their 1/128 of the weights, and every rank its 1/1024 of the optimizer state.
  Options o = model(405'000'000'000ull, 1, 1024);
  o.tensor_parallel = 8;
  o.pipeline_parallel = 16;
  const Verdict v = check(facts, o);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.evidence["need_bytes"], 122953488368ull);  // 8 × 4 GiB + 8 × (405e9/128 × 2 + 405e9 × 12/1024)
  EXPECT_EQ(v.evidence["tensor_parallel"], 8);
  EXPECT_EQ(v.evidence["pipeline_parallel"], 16);
  EXPECT_EQ(v.evidence["data_parallel"], 8);
  EXPECT_EQ(v.evidence["model_state_savers"], 8);
  EXPECT_EQ(v.evidence["formula"], "8 × 4 GiB + 8 × 405B/128 × 2 B + 8 × 405B × 12/1024 B");
  EXPECT_TRUE(
      contains(v.summary,
               "8 local ranks saving a 405B-parameter ZeRO-1 checkpoint with tensor-parallel 8 × pipeline-parallel 16 "
               "× data-parallel 8 sharded 1024 ways need ≈ 114.5 GiB (8 of them data-parallel rank 0, saving the "
               "model states of their 1/128 of the model)"))
      << v.summary;
}

TEST(HostMemory, SaversFollowMegatronRankOrder) {
  const RankFacts facts = node(4096 * kGiB, 4000 * kGiB);
  const auto savers = [&](int tp, int pp, int world) {
    Options o = model(kB70, 0, world);
    o.tensor_parallel = tp;
    o.pipeline_parallel = pp;
    return check(facts, o).evidence["model_state_savers"];
  };
  EXPECT_EQ(savers(1, 1, 64), 1);  // only rank 0
  EXPECT_EQ(savers(2, 1, 16), 2);  // ranks 0 and 1 (the tensor group of replica 0)
  EXPECT_EQ(savers(8, 1, 64), 8);  // the whole node is replica 0's tensor group
  EXPECT_EQ(savers(1, 8, 64), 1);  // pipeline stages are 8 ranks apart: one per node
  EXPECT_EQ(savers(4, 2, 64), 4);  // stage 0 on node 0, stage 1 on node 4: 4 each
  Options o = model(kB70, 0, 64);
  o.tensor_parallel = 8;
  // ZeRO-0 under TP 8: each of the 8 savers holds 70e9/8 × 14 B.
  EXPECT_EQ(check(facts, o).evidence["need_bytes"], 8 * 4 * kGiB + 8ull * 70'000'000'000ull / 8 * 14);
}

TEST(HostMemory, TensorTimesPipelineMustDivideTheWorld) {
  Options o = model(kB70, 1, 48);
  o.tensor_parallel = 8;
  o.pipeline_parallel = 4;
  const Verdict v = check(node(512 * kGiB, 500 * kGiB), o);
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.summary.find("--tensor-parallel 8 × --pipeline-parallel 4 = 32 does not divide the world size 48"), 0u)
      << v.summary;
  EXPECT_TRUE(contains(v.remedy, "a multiple of 32 ranks")) << v.remedy;
  EXPECT_TRUE(v.evidence["data_parallel"].is_null());
  EXPECT_EQ(v.finding.code, "host.memory/layout-undivided");
  EXPECT_EQ(v.finding.params["tp"], 8);
  EXPECT_EQ(v.finding.params["pp"], 4);
  EXPECT_EQ(v.finding.params["mp"], 32);
  EXPECT_EQ(v.finding.params["world_size"], 48);
}

TEST(HostMemory, AloneTheWorldHoldsOneModelReplica) {
  Options o = model(kB70, 1);
  o.tensor_parallel = 8;
  o.pipeline_parallel = 2;
  const Verdict v = check(node(512 * kGiB, 500 * kGiB), o);
  EXPECT_EQ(v.evidence["world_size"], 16);
  EXPECT_EQ(v.evidence["data_parallel"], 1);
  EXPECT_TRUE(contains(v.summary, "(world size 16 assumed: no --expect-world-size)")) << v.summary;
}

TEST(HostMemory, AHungProbeIsNamedAsAHang) {
  RankFacts facts = node(64 * kGiB, 60 * kGiB);
  facts.memory.meminfo = Probed<MemInfo>::error(ProbeErrc::Timeout,
                                                "probe 'memory' hung: it had not finished when the probe phase's "
                                                "deadline passed (after 500 ms of --timeout 1 s), "
                                                "and the probes after it did not run");
  const Verdict v = check(facts);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.summary.find("the node's available memory was not gathered: probe 'memory' hung: "), 0u) << v.summary;
  EXPECT_TRUE(contains(v.summary, "--timeout 1 s")) << v.summary;
  EXPECT_FALSE(contains(v.summary, "could not read")) << v.summary;
  EXPECT_FALSE(contains(v.remedy, "MemAvailable (Linux 3.14")) << v.remedy;  // not the unreadable-file fix
  EXPECT_TRUE(contains(v.remedy, "--timeout")) << v.remedy;
}

TEST(HostMemory, WorldSizeIsTheLargestOfLauncherExpectationAndLocalRanks) {
  // Alone with --ranks-per-node 8: the world still has 8 ranks to shard over.
  EXPECT_EQ(check(node(512 * kGiB, 500 * kGiB, 8, 1), model(kB7, 3)).evidence["world_size"], 8);
  EXPECT_EQ(check(node(512 * kGiB, 500 * kGiB, 8, 16), model(kB7, 3)).evidence["world_size"], 16);
  EXPECT_EQ(check(node(512 * kGiB, 500 * kGiB, 8, 16), model(kB7, 3, 32)).evidence["world_size"], 32);
}

TEST(HostMemory, ZeroStageDefaultsToZeroAndSaysSo) {
  const Verdict v = check(node(64 * kGiB, 62 * kGiB), model(kB7, std::nullopt));
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_TRUE(contains(v.summary, "(ZeRO-0 assumed: no --zero-stage)")) << v.summary;
  EXPECT_EQ(v.evidence["zero_stage"], 0);
}

TEST(HostMemory, CgroupLimitMinusWorkingSetIsTheBudget) {
  RankFacts facts = node(128 * kGiB, 120 * kGiB);
  CgroupMemory cg;
  cg.version = 2;
  cg.path = "/job.slice";
  cg.limit = 32 * kGiB;
  cg.usage = 2 * kGiB;
  cg.inactive_file = 1 * kGiB;  // page cache the kernel reclaims before it OOM-kills
  facts.memory.cgroup = Probed<CgroupMemory>::ok(cg, "/sys/fs/cgroup/job.slice");
  const Verdict v = check(facts);
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(
      v.summary,
      "node has 31 GiB available (MemAvailable 120 GiB of 128 GiB; cgroup /job.slice limit 32 GiB, 1 GiB in use); "
      "8 local ranks × 4 GiB need 32 GiB (no --model-params: the checkpoint-save peak is not checked)");
  EXPECT_EQ(v.evidence["budget_bytes"], 31 * kGiB);
  EXPECT_EQ(v.evidence["cgroup_limit"], 32 * kGiB);
  EXPECT_EQ(v.evidence["cgroup_path"], "/job.slice");
  // 1 GiB in use + 32 GiB × 1.1, rounded up to whole GiB.
  EXPECT_TRUE(
      contains(v.remedy, "Raise the memory limit of cgroup /job.slice to at least 37 GiB (docker run --memory="))
      << v.remedy;
  EXPECT_TRUE(contains(v.remedy, "Run at most 7 ranks per node")) << v.remedy;
  EXPECT_EQ(v.finding.code, "host.memory/too-little");
  EXPECT_EQ(v.finding.params["fit_ranks"], 7);
  EXPECT_EQ(v.finding.params["cgroup"], "/job.slice");
  EXPECT_EQ(v.finding.params["cgroup_limit_needed"], "37 GiB");
  EXPECT_TRUE(
      contains(v.remedy, "Run at most 7 ranks per node (`srun --ntasks-per-node=7`, `mpirun --map-by ppr:7:node`). "))
      << v.remedy;
}

TEST(HostMemory, UnlimitedCgroupLeavesMemAvailable) {
  RankFacts facts = node(64 * kGiB, 60 * kGiB);
  CgroupMemory cg;
  cg.version = 1;
  cg.path = "/user.slice";
  cg.usage = 50 * kGiB;
  facts.memory.cgroup = Probed<CgroupMemory>::ok(cg, "/sys/fs/cgroup/memory/user.slice");
  const Verdict v = check(facts);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.evidence["budget_bytes"], 60 * kGiB);
  EXPECT_EQ(v.evidence["cgroup_version"], 1);
  EXPECT_TRUE(v.evidence["cgroup_limit"].is_null());
}

TEST(HostMemory, WarnsWhenHeadroomIsUnderTenPercent) {
  const Verdict v = check(node(64 * kGiB, 34 * kGiB));  // need 32 GiB, 2 GiB spare < 3.2 GiB
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(contains(v.summary, "; only 2 GiB to spare (< 10%)")) << v.summary;
  EXPECT_FALSE(v.remedy.empty());
  EXPECT_EQ(v.finding.code, "host.memory/little-headroom");
  EXPECT_EQ(v.finding.params["spare"], "2 GiB");
}

TEST(HostMemory, WarnsWhenOtherProcessesHoldMostOfTheRam) {
  const Verdict v = check(node(512 * kGiB, 40 * kGiB, 1));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.summary, "only 40 GiB of 512 GiB RAM is available: other processes hold the rest");
  EXPECT_TRUE(contains(v.remedy, "ps -eo pid,rss,etime,cmd --sort=-rss")) << v.remedy;
  EXPECT_EQ(v.finding.code, "host.memory/ram-held-elsewhere");
  EXPECT_EQ(v.finding.params["available"], "40 GiB");
  EXPECT_EQ(v.finding.params["total"], "512 GiB");
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[1].code, "host.memory/enough");
}

TEST(HostMemory, AShortBudgetAndRamHeldElsewhereAreBothNamed) {
  const Verdict v = check(node(512 * kGiB, 20 * kGiB));  // 8 × 4 GiB need 32 GiB
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "host.memory/too-little");
  EXPECT_EQ(v.findings[1].code, "host.memory/ram-held-elsewhere");
  EXPECT_EQ(v.findings[1].params["available"], "20 GiB");
  EXPECT_TRUE(contains(v.summary, "; also WARN: only 20 GiB of 512 GiB RAM is available")) << v.summary;
}

TEST(HostMemory, UnknownWhenMeminfoWasNotProbed) {
  RankFacts facts = node(64 * kGiB, 60 * kGiB);
  facts.memory.meminfo = {};
  const Verdict v = check(facts);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(contains(v.summary, "not probed")) << v.summary;
}

TEST(HostMemory, UnknownWhenMeminfoIsGarbage) {
  RankFacts facts = node(64 * kGiB, 60 * kGiB);
  facts.memory.meminfo = Probed<MemInfo>::error(ProbeErrc::ParseError, "no MemAvailable line", "/proc/meminfo");
  const Verdict v = check(facts, model(kB70, 0));
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.summary, "could not read the node's available memory: /proc/meminfo: no MemAvailable line");
  EXPECT_TRUE(contains(v.remedy, "MemAvailable")) << v.remedy;
}

TEST(HostMemory, UnknownWhenTheCgroupFilesAreGarbageOrUnreadable) {
  RankFacts facts = node(64 * kGiB, 60 * kGiB);
  facts.memory.cgroup =
      Probed<CgroupMemory>::error(ProbeErrc::ParseError, "not a byte count: 'lots'", "/sys/fs/cgroup/memory.max");
  Verdict v = check(facts);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_EQ(v.summary, "could not read the cgroup memory limit: /sys/fs/cgroup/memory.max: not a byte count: 'lots'");

  facts.memory.cgroup = {};  // not probed
  EXPECT_EQ(check(facts).status, Status::Unknown);
}

TEST(HostMemory, SwapIsEvidenceNotBudget) {
  RankFacts facts = node(64 * kGiB, 30 * kGiB);
  facts.memory.meminfo.value()->swap_total = 64 * kGiB;
  facts.memory.meminfo.value()->swap_free = 64 * kGiB;
  const Verdict v = check(facts, model(kB7, 3));
  EXPECT_EQ(v.evidence["swap_total"], 64 * kGiB);
  EXPECT_EQ(v.evidence["swap_free"], 64 * kGiB);
  EXPECT_EQ(v.evidence["budget_bytes"], 30 * kGiB);
}

TEST(HostMemory, SkippedInTheImageProfile) {
  const Verdict v = check(node(64 * kGiB, 60 * kGiB), model(kB70, 0), Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_TRUE(contains(v.summary, "an image build's memory is not the job's")) << v.summary;
  EXPECT_EQ(check(node(64 * kGiB, 60 * kGiB), {}, Profile::Job).status, Status::Pass);
}

TEST(HostMemory, ExplainDocumentsTheModel) {
  const std::string explain(kHostMemory.explain);
  for (const char* part :
       {"2 B/param", "12 B/param", "P/(T×PP) × (2 + 12)", "L × P × 12/W", "L × P × 14/W", "default 4 GiB", "default 0",
        "10%", "Swap is not counted", "--tensor-parallel", "--pipeline-parallel", "save_non_zero_checkpoint",
        "save_zero_checkpoint", "megatron/training/checkpointing.py", "data-parallel rank 0"}) {
    EXPECT_TRUE(contains(explain, part)) << part;
  }
}

}  // namespace
}  // namespace checks_host_memory_test
}  // namespace preflight
