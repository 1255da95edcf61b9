// SPDX-License-Identifier: MIT
// Findings as data and the report's folding: coded findings group across ranks whatever their
// parameters, consequences fold under their cause (and keep their status), launch.env's "every
// rank claims RANK=0" is one job-level finding, the check table's causes name real checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "core/text.hpp"
#include "job/job_report.hpp"
#include "job/run.hpp"
#include "job_fixture.hpp"
#include "report/report.hpp"

namespace preflight {
namespace report_report_fold_test {
namespace {

using gpu_fixture::has;

CheckResult result(const std::string& id, Verdict v, std::vector<int> ranks, std::vector<std::string> hosts,
                   Scope scope = Scope::Rank) {
  CheckResult r;
  r.id = id;
  r.area = id.substr(0, id.find('.'));
  r.scope = scope;
  r.verdict = std::move(v);
  r.ranks = std::move(ranks);
  r.hosts = std::move(hosts);
  return r;
}

TEST(Finding, TemplatesRenderTheirParametersAndLeaveOtherBracesAlone) {
  EXPECT_EQ(render_template("RANK={claimed} but MPI's rank is {mpi}", {{"claimed", 0}, {"mpi", 3}}),
            "RANK=0 but MPI's rank is 3");
  EXPECT_EQ(render_template("{host} has {x} and {unknown} {", {{"host", "gpu-a"}, {"x", 1.5}}),
            "gpu-a has 1.5 and {unknown} {");
  EXPECT_EQ(render_template("no params {here}", nlohmann::json::object()), "no params {here}");
  const Verdict v = Verdict::coded(Status::Fail, "a.b/c", "GPU {gpu} is lost", "reset GPU {gpu}", {{"gpu", 3}});
  EXPECT_EQ(v.summary, "GPU 3 is lost");
  EXPECT_EQ(v.remedy, "reset GPU 3");
  EXPECT_EQ(v.finding.code, "a.b/c");
  EXPECT_EQ(v.finding.message, "GPU {gpu} is lost");
}

// A text built from a finding's parameters outside Verdict::of (a check that quotes another's fix)
// renders their template parameters in place, never their JSON.
TEST(Finding, RenderingATemplateParameterDirectlyRendersItsTemplate) {
  const nlohmann::json params = {{"note", template_param(" (any CUDA {major}.x build runs on {driver})")},
                                 {"major", 12},
                                 {"driver", "driver 550"},
                                 {"none", template_param("")},
                                 {"self", template_param("[{self}]")}};
  EXPECT_EQ(render_template("use CUDA <= 12.4{note}{none}.", params),
            "use CUDA <= 12.4 (any CUDA 12.x build runs on driver 550).");
  EXPECT_EQ(render_template("{self}", params), "[[[{self}]]]");  // a template naming itself stops
}

TEST(Finding, ATemplateParameterIsWrittenIntoTheTemplatesBeforeRendering) {
  const nlohmann::json rank3 = {
      {"binding", template_param("bind local rank {local_rank} to GPU {gpu}")}, {"local_rank", 3}, {"gpu", 3}};
  EXPECT_EQ(splice_template_params("fix: {binding}.", rank3), "fix: bind local rank {local_rank} to GPU {gpu}.");
  EXPECT_EQ(splice_template_params("no slot {gpu}", rank3), "no slot {gpu}");
  const Verdict v3 =
      Verdict::coded(Status::Warn, "a.b/far", "rank {local_rank} is far from GPU {gpu}", "{binding}", rank3);
  EXPECT_EQ(v3.remedy, "bind local rank 3 to GPU 3");
  // Another rank, same binding template: the same finding (the report groups them into one row).
  nlohmann::json rank5 = rank3;
  rank5["local_rank"] = 5;
  rank5["gpu"] = 5;
  VerdictBuilder b;
  b.add(FindingSpec{"a.b/far", Status::Warn, "rank {local_rank} is far from GPU {gpu}", "{binding}"}, rank5);
  const Verdict v5 = b.build();
  EXPECT_EQ(v5.remedy, "bind local rank 5 to GPU 5");
  EXPECT_EQ(v5.finding.fix, v3.finding.fix);
  EXPECT_EQ(v5.finding.fix, "bind local rank {local_rank} to GPU {gpu}");
  // Its text is in the templates; the params keep the values only (no collision between findings).
  EXPECT_FALSE(v5.finding.params.contains("binding"));
  EXPECT_EQ(v5.finding.params, (nlohmann::json{{"local_rank", 5}, {"gpu", 5}}));
  // An empty template removes its slot.
  const Verdict tail = Verdict::coded(Status::Warn, "a.b/t", "m", "do this.{tail}", {{"tail", template_param("")}});
  EXPECT_EQ(tail.remedy, "do this.");
}

TEST(Finding, TheBuilderKeepsTheCodeOfTheDecidingFinding) {
  VerdictBuilder b;
  b.note("fine");
  b.add(Status::Fail, "x.y/bad", "bad {n}", "fix {n}", {{"n", 7}});
  b.add(Status::Warn, "meh", "do it");
  const Verdict v = b.build();
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "x.y/bad");
  EXPECT_EQ(v.summary, "bad 7; also WARN: meh");
  EXPECT_EQ(v.remedy, "fix 7 do it");
  EXPECT_EQ(v.finding.message, "bad {n}; also WARN: meh");
  // Plain text only: no code, grouped by text.
  VerdictBuilder plain;
  plain.add(Status::Fail, "broken", "fix");
  EXPECT_TRUE(plain.build().finding.code.empty());
}

TEST(Grouping, OneCodedFindingOnManyRanksIsOneRowWithEachRanksValues) {
  std::vector<CheckResult> results;
  for (int rank = 1; rank < 16; ++rank) {
    results.push_back(result("launch.env",
                             Verdict::coded(Status::Fail, "launch.env/x", "RANK={claimed} but MPI's rank is {mpi}",
                                            "remove RANK", {{"claimed", 0}, {"mpi", rank}}),
                             {rank}, {rank < 8 ? "gpu-a" : "gpu-b"}));
  }
  results.push_back(result("launch.env", Verdict::pass("fine"), {0}, {"gpu-a"}));
  const std::vector<CheckResult> grouped = group_results(results);
  ASSERT_EQ(grouped.size(), 2u);
  EXPECT_EQ(grouped[0].verdict.status, Status::Fail);
  EXPECT_EQ(grouped[0].verdict.summary, "RANK=0 but MPI's rank is 1–15");
  EXPECT_EQ(grouped[0].ranks.size(), 15u);
  EXPECT_EQ(grouped[0].hosts, (std::vector<std::string>{"gpu-a", "gpu-b"}));
  ASSERT_TRUE(grouped[0].verdict.evidence.contains("per_rank"));
  EXPECT_EQ(grouped[0].verdict.evidence["per_rank"]["rank 9"]["mpi"], 9);
  EXPECT_FALSE(grouped[0].verdict.evidence["per_rank"]["rank 9"].contains("claimed"));  // the same everywhere
  // Another code, or the same code with other words, is another finding.
  results.push_back(result("launch.env", Verdict::coded(Status::Fail, "launch.env/y", "other {mpi}", "x", {{"mpi", 1}}),
                           {16}, {"gpu-b"}));
  EXPECT_EQ(group_results(results).size(), 3u);
}

TEST(Grouping, StringParametersAreListedShortly) {
  std::vector<CheckResult> results;
  int rank = 0;
  for (const char* host : {"n1", "n2", "n3", "n4", "n5"}) {
    results.push_back(result("shm.capacity",
                             Verdict::coded(Status::Fail, "shm.capacity/small", "{host}: /dev/shm is {mib} MiB",
                                            "grow it", {{"host", host}, {"mib", 64}}),
                             {rank++}, {host}, Scope::Node));
  }
  const std::vector<CheckResult> grouped = group_results(results);
  ASSERT_EQ(grouped.size(), 1u);
  EXPECT_EQ(grouped[0].verdict.summary, "n1, n2, n3 and 2 more: /dev/shm is 64 MiB");
  EXPECT_EQ(grouped[0].verdict.evidence["per_host"]["n4"]["host"], "n4");
}

TEST(Causes, AreKeptOnlyWhereTheCauseIsWrongOnTheSameRanks) {
  std::vector<CheckResult> results = {
      result("driver.loaded", Verdict::fail("no driver", "install it"), {0, 1}, {"a"}, Scope::Node),
      result("driver.loaded", Verdict::pass("550"), {2, 3}, {"b"}, Scope::Node),
      result("cuda.smoke", Verdict::fail("no GPU", "install it").because("driver.loaded"), {0}, {"a"}),
      result("cuda.smoke", Verdict::fail("no GPU", "install it").because("driver.loaded"), {2}, {"b"}),
      // Not declared among gpu.count's causes: dropped.
      result("gpu.count", Verdict::fail("x", "y").because("host.limits"), {0}, {"a"}, Scope::Node),
      result("host.limits", Verdict::warn("core", "ulimit"), {0}, {"a"}, Scope::Node),
      // Candidates in order: the first that is wrong here.
      result("comm.allreduce", Verdict::fail("blocked", "fix").because("launch.gpu_binding,nccl.library,driver.loaded"),
             {0, 1, 2, 3}, {"a", "b"}, Scope::Job),
  };
  settle_causes(results);
  EXPECT_EQ(results[2].verdict.cause, "driver.loaded");
  EXPECT_EQ(results[3].verdict.cause, "");  // the driver is fine on host b: cuda.smoke stands alone there
  EXPECT_EQ(results[4].verdict.cause, "");
  EXPECT_EQ(results[6].verdict.cause, "driver.loaded");
  EXPECT_EQ(results[2].verdict.status, Status::Fail);  // a consequence keeps its status
}

TEST(Causes, EveryDeclaredCauseAndEveryCheckIdIsReal) {
  std::set<std::string> ids;
  const std::regex id_form("^[a-z0-9_]+\\.[a-z0-9_]+$");
  for (const CheckSpec* spec : all_checks()) {
    ASSERT_NE(spec, nullptr);
    EXPECT_TRUE(std::regex_match(std::string(spec->id), id_form)) << spec->id;
    EXPECT_TRUE(ids.insert(std::string(spec->id)).second) << "duplicate id " << spec->id;
    EXPECT_NE(spec->run, nullptr) << spec->id;
  }
  for (const CheckSpec* spec : all_checks()) {
    for (std::string_view cause : split(spec->causes, ',')) {
      cause = trim(cause);
      if (cause.empty()) continue;
      const std::string_view check = cause.substr(0, cause.find('/'));
      EXPECT_TRUE(ids.count(std::string(check))) << spec->id << " names an unknown cause " << cause;
      EXPECT_NE(check, spec->id) << spec->id << " names itself";
      if (check.size() == cause.size() || !ids.count(std::string(check))) continue;
      const CheckSpec* of = find_check(check);
      EXPECT_TRUE(
          std::any_of(of->findings.begin(), of->findings.end(), [&](const FindingSpec& f) { return f.code == cause; }))
          << spec->id << " names a finding " << check << " does not have: " << cause;
    }
  }
}

// A cause declared by its findings folds a result only where the cause's result holds one of them:
// the all_reduce that NCCL could not run is not folded under a release's known-issue WARN.
TEST(Causes, DeclaredFindingsDecideTheFold) {
  const auto nccl = [](const char* code, Status s) {
    return Verdict::coded(s, code, "nccl says", "fix nccl", nlohmann::json::object());
  };
  std::vector<CheckResult> results = {
      result("nccl.library", nccl("nccl.library/known-issue", Status::Warn), {0}, {"a"}, Scope::Node),
      result("nccl.library", nccl("nccl.library/missing-symbols", Status::Fail), {1}, {"b"}, Scope::Node),
      result("comm.allreduce", Verdict::fail("blocked", "fix").because("launch.gpu_binding,nccl.library"), {0}, {"a"},
             Scope::Job),
      result("comm.allreduce", Verdict::fail("blocked", "fix").because("launch.gpu_binding,nccl.library"), {1}, {"b"},
             Scope::Job),
      // A verdict may name the finding itself: only that one explains it.
      result("comm.allreduce", Verdict::fail("blocked", "fix").because("nccl.library/not-found"), {1}, {"b"},
             Scope::Job),
      result("comm.allreduce", Verdict::fail("blocked", "fix").because("nccl.library/missing-symbols"), {1}, {"b"},
             Scope::Job),
  };
  settle_causes(results);
  EXPECT_EQ(results[2].verdict.cause, "");  // a WARN about a known issue does not stop the all_reduce
  EXPECT_EQ(results[3].verdict.cause, "nccl.library");
  EXPECT_EQ(results[4].verdict.cause, "");
  EXPECT_EQ(results[5].verdict.cause, "nccl.library");
}

/// Every rank of a 2×8 job judged as the job does, then assembled.
Report judged_job(JobFacts j, const Options& o = {}) {
  std::vector<CheckResult> per_rank;
  for (const RankFacts& f : j.ranks) {
    for (CheckResult& r : judge_rank(o, Profile::Job, f, f.placement.local_rank == 0, nullptr))
      per_rank.push_back(std::move(r));
  }
  return assemble_report(o, Profile::Job, std::move(j), std::move(per_rank), nullptr);
}

JobFacts with_env(JobFacts j, const std::map<std::string, std::string>& extra) {
  for (RankFacts& f : j.ranks) {
    std::map<std::string, std::string> env = {
        {"OMPI_COMM_WORLD_RANK", std::to_string(f.placement.rank)},
        {"OMPI_COMM_WORLD_SIZE", std::to_string(j.world_size)},
        {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(f.placement.local_rank)},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"},
        {"PMIX_RANK", std::to_string(f.placement.rank)},  // as mpirun gives every process it starts
        {"PMIX_NAMESPACE", "prterun-gpu-a-1@1"},
    };
    for (const auto& [k, v] : extra) env[k] = v;
    f.env = EnvSnapshot(env);
  }
  return j;
}

TEST(LaunchEnvJob, TheSameRankOnEveryRankIsOneJobFindingRankZeroIncluded) {
  Options o;
  o.only = {"launch.env"};
  // `mpirun -x RANK=0 -x WORLD_SIZE=16 -x MASTER_ADDR -x MASTER_PORT`: only RANK is wrong, on ranks 1..15.
  const Report report =
      judged_job(with_env(job_fixture::job(2, 8),
                          {{"RANK", "0"}, {"WORLD_SIZE", "16"}, {"MASTER_ADDR", "gpu-a"}, {"MASTER_PORT", "29500"}}),
                 o);
  ASSERT_EQ(report.results.size(), 1u);
  const CheckResult& r = report.results.front();
  EXPECT_EQ(r.verdict.status, Status::Fail);
  EXPECT_EQ(r.scope, Scope::Job);
  EXPECT_EQ(r.ranks.size(), 16u);
  EXPECT_EQ(r.verdict.finding.code, "launch.env/same-rank-on-every-rank");
  EXPECT_TRUE(has(r.verdict.summary, "every rank claims RANK=0")) << r.verdict.summary;
  EXPECT_TRUE(has(r.verdict.summary, "16 ranks")) << r.verdict.summary;
  EXPECT_EQ(r.verdict.evidence["per_rank"].size(), 15u);  // what ranks 1..15 said on their own
  const std::string text = render_text(report, o, false);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 9) << text;
}

TEST(LaunchEnvJob, RanksThatDifferAreJudgedPerRankAndGroupByCode) {
  Options o;
  o.only = {"launch.env"};
  JobFacts j = with_env(job_fixture::job(2, 8), {});
  for (RankFacts& f : j.ranks) {  // an off-by-one wrapper: RANK = MPI rank + 1
    std::map<std::string, std::string> env = f.env.all();
    env["RANK"] = std::to_string(f.placement.rank + 1);
    f.env = EnvSnapshot(env);
  }
  const Report report = judged_job(std::move(j), o);
  ASSERT_EQ(report.results.size(), 1u) << render_text(report, o, false);
  const CheckResult& r = report.results.front();
  EXPECT_EQ(r.scope, Scope::Rank);
  EXPECT_EQ(r.ranks.size(), 16u);
  EXPECT_TRUE(has(r.verdict.summary, "RANK=1–16 but MPI's rank is 0–15")) << r.verdict.summary;
}

TEST(LaunchEnvJob, StaleSlurmVariablesTheSameEverywhereAreNoJobFinding) {
  Options o;
  o.only = {"launch.env"};
  const Report report = judged_job(
      with_env(job_fixture::job(2, 8), {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", "42"}}), o);
  for (const CheckResult& r : report.results) {
    EXPECT_NE(r.verdict.finding.code, "launch.env/same-rank-on-every-rank") << r.verdict.summary;
    EXPECT_NE(r.verdict.status, Status::Fail) << r.verdict.summary;
  }
}

TEST(TextReport, ConsequencesFoldUnderTheirCauseWhoseFixIsPrintedOnce) {
  RankFacts f = gpu_fixture::no_driver();
  f.identity.hostname = "node1";
  Options o;
  o.only = {"driver.loaded", "cuda.smoke", "gpu.count", "gpu.busy", "topo.p2p"};
  Report report =
      assemble_report(o, Profile::Node, single_rank_job(f), judge_rank(o, Profile::Node, f, true, nullptr), nullptr);
  std::size_t consequences = 0;
  for (const CheckResult& r : report.results) {
    EXPECT_EQ(r.verdict.status, Status::Fail) << r.id;  // each keeps its own status
    if (r.id != "driver.loaded") {
      EXPECT_EQ(r.verdict.cause, "driver.loaded") << r.id;
      ++consequences;
    }
  }
  EXPECT_EQ(consequences, 4u);
  const std::string text = render_text(report, o, false);
  EXPECT_TRUE(has(text, "FAIL    cuda.smoke, gpu.count, gpu.busy, topo.p2p  need the driver (see driver.loaded)"))
      << text;
  std::size_t fixes = 0;
  for (std::size_t at = text.find("Install the NVIDIA driver"); at != std::string::npos;
       at = text.find("Install the NVIDIA driver", at + 1)) {
    ++fixes;
  }
  EXPECT_EQ(fixes, 1u) << text;
  EXPECT_TRUE(has(text, "then: cuda.smoke, gpu.count, gpu.busy, topo.p2p")) << text;
  EXPECT_TRUE(has(text, "\nFAIL: 0 PASS · 0 WARN · 5 FAIL")) << text;
  // JSON and JUnit carry the cause.
  const nlohmann::json doc = nlohmann::json::parse(render_json(report, o));
  for (const nlohmann::json& c : doc["checks"]) {
    if (c["id"] != "driver.loaded") {
      EXPECT_EQ(c["cause"], "driver.loaded") << c["id"];
    }
  }
  EXPECT_TRUE(has(render_junit(report, o), "(follows from driver.loaded)"));
  // With the driver there, nothing follows from it.
  RankFacts ok = gpu_fixture::healthy(8);
  Report fine =
      assemble_report(o, Profile::Node, single_rank_job(ok), judge_rank(o, Profile::Node, ok, true, nullptr), nullptr);
  for (const CheckResult& r : fine.results) EXPECT_EQ(r.verdict.cause, "") << r.id;
}

TEST(TextReport, AFixSharedByChecksWhoseCauseWasNotSelectedIsPrintedOnce) {
  // --only cuda.smoke,gpu.count,gpu.busy on a node without a driver: driver.loaded is not there to
  // fold them under, and each carries the driver's fix.
  RankFacts f = gpu_fixture::no_driver();
  Options o;
  o.only = {"cuda.smoke", "gpu.count", "gpu.busy"};
  const Report report =
      assemble_report(o, Profile::Node, single_rank_job(f), judge_rank(o, Profile::Node, f, true, nullptr), nullptr);
  for (const CheckResult& r : report.results) EXPECT_EQ(r.verdict.cause, "") << r.id;
  const std::string text = render_text(report, o, false);
  EXPECT_EQ(text.find("Install the NVIDIA driver"), text.rfind("Install the NVIDIA driver")) << text;
  EXPECT_TRUE(has(text, "fix: the same as 1.")) << text;
}

TEST(TextReport, ChecksThatSayTheSameThingShareARowAndTheHeadlineIsTheOverallStatus) {
  Report r;
  r.version = "1";
  r.ranks.emplace_back();
  for (const char* id : {"comm.barrier", "comm.allreduce", "cluster.consistency"}) {
    r.results.push_back(result(id, Verdict::skip("no job to check"), {0}, {"h"}, Scope::Job));
  }
  r.results.push_back(
      result("host.limits", Verdict::unknown("could not read limits", "run as the job's user"), {0}, {"h"}));
  const std::string text = render_text(r, Options{}, false);
  EXPECT_TRUE(has(text, "SKIP     comm.barrier, comm.allreduce, cluster.consistency  no job to check\n")) << text;
  EXPECT_TRUE(has(text, "\nUNKNOWN: 0 PASS · 0 WARN · 0 FAIL · 3 SKIP · 1 UNKNOWN")) << text;
}

}  // namespace
}  // namespace report_report_fold_test
}  // namespace preflight
