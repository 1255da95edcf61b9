// SPDX-License-Identifier: MIT
// Golden files of the text report (tests/golden/*.txt): the checks judge recorded facts — a real
// node without a GPU driver, a fake 8-GPU node — and jobs built from them, then the report is
// rendered and compared byte for byte. PREFLIGHT_UPDATE_GOLDEN=1 rewrites the files (review the
// diff). Every golden report is also held to the reading rules: no sentence of 40 characters or
// more printed more than twice, no summary longer than about 200 characters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "core/text.hpp"
#include "job/job_report.hpp"
#include "job/run.hpp"
#include "job_fixture.hpp"
#include "report/report.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace report_report_golden_test {
namespace {

const std::string kFixtures = preflight::test_paths::fixtures_dir() + "/report/";
const std::string kGolden = preflight::test_paths::source_dir() + "/tests/golden/";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Rank 0's facts of a recorded `preflight --json` report.
RankFacts recorded(const std::string& name) {
  const nlohmann::json doc = nlohmann::json::parse(slurp(kFixtures + name));
  return doc.at("ranks").at(0).at("facts").get<RankFacts>();
}

/// What differs from run to run is pinned: the version, the duration.
std::string rendered(Report report, const Options& o) {
  report.version = "1.0.0";
  report.duration_ms = 1234;
  return render_text(report, o, false);
}

Report node_report(const RankFacts& f, const Options& o) {
  return assemble_report(o, Profile::Node, single_rank_job(f), judge_rank(o, Profile::Node, f, true, nullptr), nullptr);
}

/// job_fixture::job_from() of `base`, with Open MPI's variables and `env` in every rank's
/// environment, every rank's reach test to rank 0 done, and an MPI all_reduce measured.
JobFacts job_of(const RankFacts& base, int hosts, int per_host, const std::map<std::string, std::string>& env) {
  JobFacts j = job_fixture::job_from(base, hosts, per_host);
  for (RankFacts& f : j.ranks) {
    const int rank = f.placement.rank;
    f.identity.pid = 4000 + rank;
    std::map<std::string, std::string> vars = base.env.all();
    vars["OMPI_COMM_WORLD_RANK"] = std::to_string(rank);
    vars["OMPI_COMM_WORLD_SIZE"] = std::to_string(j.world_size);
    vars["OMPI_COMM_WORLD_LOCAL_RANK"] = std::to_string(f.placement.local_rank);
    vars["OMPI_COMM_WORLD_LOCAL_SIZE"] = std::to_string(per_host);
    vars["OMPI_COMM_WORLD_NODE_RANK"] = std::to_string(rank / per_host);
    vars["PMIX_RANK"] = std::to_string(rank);
    for (const auto& [k, v] : env) vars[k] = v;
    f.env = EnvSnapshot(vars);
    ReachResult reach;
    reach.attempted = reach.ok = true;
    reach.target = "192.0.2.2:41234";
    reach.ms = 0.4;
    f.net.reach = reach;
  }
  for (RankStatus& s : j.status) s.pid = 4000 + s.rank;
  j.reach_target = ReachTarget{"eth0", "192.0.2.2", 41234};
  j.barrier.seconds = 0.002;
  j.allreduce.bytes = 1 << 20;
  j.allreduce.repeats = 5;
  j.allreduce.seconds = 0.01;
  j.allreduce.algbw_gbps = 2.1;
  j.allreduce.busbw_gbps = 3.9;
  j.allreduce.note = "MPI all_reduce of 1048576 bytes of int64 in host memory (no GPU)";
  return j;
}

Report job_report(JobFacts j, const Options& o) {
  std::vector<CheckResult> per_rank;
  for (const RankFacts& f : j.ranks) {
    for (CheckResult& r : judge_rank(o, Profile::Job, f, f.placement.local_rank == 0, nullptr))
      per_rank.push_back(std::move(r));
  }
  return assemble_report(o, Profile::Job, std::move(j), std::move(per_rank), nullptr);
}

/// The sentences of a report (split at ". ", "; ", ": " and line ends), trimmed.
std::vector<std::string> sentences(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  const auto flush = [&] {
    const std::string_view t = trim(current);
    if (!t.empty()) out.emplace_back(t);
    current.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool ends = c == '\n' || ((c == '.' || c == ';') && i + 1 < text.size() && text[i + 1] == ' ');
    if (ends) {
      if (c != '\n') current += c;
      flush();
    } else {
      current += c;
    }
  }
  flush();
  return out;
}

/// Fails when a sentence of 40 characters or more appears more than twice.
void expect_said_at_most_twice(const std::string& text, const std::string& name) {
  std::map<std::string, int> seen;
  for (const std::string& s : sentences(text)) {
    if (s.size() >= 40) ++seen[s];
  }
  for (const auto& [sentence, times] : seen) {
    EXPECT_LE(times, 2) << name << ": printed " << times << " times: " << sentence;
  }
}

void expect_golden(const std::string& name, const std::string& text) {
  const std::string path = kGolden + name + ".txt";
  const char* update = std::getenv("PREFLIGHT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << text;
  }
  EXPECT_EQ(slurp(path), text) << "golden file " << path
                               << " differs (PREFLIGHT_UPDATE_GOLDEN=1 rewrites it); the report now:\n"
                               << text;
  expect_said_at_most_twice(text, name);
}

void expect_short_summaries(const Report& report) {
  for (const CheckResult& r : report.results) {
    if (r.verdict.status == Status::Pass || r.verdict.status == Status::Skip) continue;
    EXPECT_LE(r.verdict.summary.size(), 260u) << r.id << ": " << r.verdict.summary;
  }
}

TEST(GoldenText, ANodeWithoutADriver) {
  const Options o;
  const Report report = node_report(recorded("no-driver-node.json"), o);
  const std::string text = rendered(report, o);
  expect_golden("no-driver-node", text);
  expect_short_summaries(report);
  // The report stays short by folding, not by a count of checks: the driver's dependants have no
  // row of their own (they are named under driver.loaded), the job-only SKIPs share one row, and
  // the whole is at most a row per check less the 9 the fold saves, two lines per fix and the
  // frame's 7 (header, blanks, heading, the fold's "then:", the count line): an unfolded report is
  // longer.
  for (const char* folded : {"cuda.smoke", "gpu.count", "gpu.clocks", "topo.p2p", "cuda.runtime", "nccl.library"}) {
    for (const char* status : {"PASS", "WARN", "FAIL", "SKIP", "UNKNOWN"}) {
      EXPECT_EQ(text.find("\n  " + std::string(status) + std::string(9 - std::strlen(status), ' ') + folded + " "),
                std::string::npos)
          << folded << " has a row of its own:\n"
          << text;
    }
  }
  EXPECT_NE(text.find("SKIP     launch.ranks, launch.gpu_binding, net.reachability"), std::string::npos) << text;
  const std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  std::size_t fixes = 0;  // the numbered items of WHAT TO FIX FIRST
  for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) {
    const std::string item = "\n  " + std::to_string(fixes + 1) + ". ";
    if (text.compare(at, item.size(), item) == 0) ++fixes;
  }
  EXPECT_GE(fixes, 2u) << text;
  EXPECT_LE(lines, all_checks().size() - 9 + 2 * fixes + 7) << text;
  EXPECT_EQ(text.find("libcuda.so.1: libcuda.so.1"), std::string::npos) << text;
  // The counts are checks: they sum to the checks run.
  const Counts c = count(report);
  int sum = 0;
  for (Status s : kStatuses) sum += c.of(s);
  EXPECT_EQ(sum, static_cast<int>(all_checks().size()));
}

TEST(GoldenText, AHealthyFakeEightGpuNode) {
  const Options o;
  const Report report = node_report(recorded("fake-8gpu-node.json"), o);
  expect_golden("fake-8gpu-node", rendered(report, o));
  expect_short_summaries(report);
}

TEST(GoldenText, SixteenRanksThatAllClaimRankZero) {
  const Options o;
  const Report report = job_report(job_of(recorded("fake-8gpu-node.json"), 2, 8, {{"RANK", "0"}}), o);
  const std::string text = rendered(report, o);
  expect_golden("job-16-rank0", text);
  expect_short_summaries(report);
  std::size_t rows = 0;
  for (const CheckResult& r : report.results) rows += r.id == "launch.env" ? 1 : 0;
  EXPECT_EQ(rows, 1u);
}

TEST(GoldenText, AJobWhereOneHostHasASmallDevShm) {
  const Options o;
  JobFacts j = job_of(recorded("fake-8gpu-node.json"), 2, 8, {});
  for (RankFacts& f : j.ranks) {
    if (f.identity.hostname != "gpu-b") continue;
    FsUsage shm = f.shm.usage.ok() ? *f.shm.usage.value() : FsUsage{};
    shm.is_tmpfs = true;
    shm.total_bytes = 64ull << 20;
    shm.free_bytes = 64ull << 20;
    shm.st_dev = 0x99;
    f.shm.usage = Probed<FsUsage>::ok(shm, "statfs /dev/shm");
  }
  const Report report = job_report(std::move(j), o);
  expect_golden("job-small-shm", rendered(report, o));
  expect_short_summaries(report);
}

TEST(GoldenText, ARunWhoseDeadlineExpired) {
  const Options o;
  RankFacts f = recorded("fake-8gpu-node.json");
  f.shm.usage =
      Probed<FsUsage>::error(ProbeErrc::Timeout, "probe 'shm' did not finish within 6.0 s", "statfs /dev/shm");
  Report report = node_report(f, o);
  report.deadline_expired = true;
  report.incidents = {"probe 'shm' did not finish within 6.0 s (a hung statfs of /dev/shm: a stale mount?)"};
  const std::string text = rendered(report, o);
  expect_golden("deadline", text);
  EXPECT_NE(text.find("\nDEADLINE: "), std::string::npos) << text;
}

}  // namespace
}  // namespace report_report_golden_test
}  // namespace preflight
