// SPDX-License-Identifier: MIT
// Exit codes (README.md#exit-codes), verdict folding, --only/--skip selection, and both renderers.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "job/run.hpp"
#include "report/report.hpp"

namespace preflight {
namespace report_report_test {
namespace {

Report report_with(std::initializer_list<Status> statuses) {
  Report r;
  r.version = "0.1.0";
  int n = 0;
  for (Status s : statuses) {
    CheckResult c;
    c.id = "area.check" + std::to_string(n++);
    c.area = "area";
    c.verdict.status = s;
    c.verdict.summary = "summary <&> \"quoted\"";
    c.verdict.remedy = s == Status::Pass ? "" : "do the thing";
    r.results.push_back(c);
  }
  r.ranks.emplace_back();
  return r;
}

TEST(ExitCode, FollowsTheContract) {
  EXPECT_EQ(exit_code(report_with({Status::Pass, Status::Skip}), false), 0);
  EXPECT_EQ(exit_code(report_with({Status::Pass, Status::Warn}), false), 0);
  EXPECT_EQ(exit_code(report_with({Status::Pass, Status::Warn}), true), 1);
  EXPECT_EQ(exit_code(report_with({Status::Unknown, Status::Warn}), false), 3);
  EXPECT_EQ(exit_code(report_with({Status::Unknown, Status::Fail}), false), 1);
  Report expired = report_with({Status::Pass});
  expired.deadline_expired = true;
  EXPECT_EQ(exit_code(expired, false), 4);
  EXPECT_EQ(exit_code(report_with({}), false), 0);
}

TEST(ExitCode, StrictCountsAWarnAsAFailAndNothingElse) {
  for (Status s : kStatuses) {
    EXPECT_EQ(counted_as(s, false), s) << to_string(s);
    EXPECT_EQ(counted_as(s, true), s == Status::Warn ? Status::Fail : s) << to_string(s);
  }
  // An UNKNOWN beside a WARN: exit 3 without --strict, 1 with it (the WARN is a FAIL).
  EXPECT_EQ(exit_code(report_with({Status::Warn, Status::Unknown}), true), 1);
}

TEST(ExitCode, OverallStatusIgnoresSkipAndHonoursStrict) {
  EXPECT_EQ(overall(report_with({Status::Pass, Status::Skip}), false), Status::Pass);
  EXPECT_EQ(overall(report_with({Status::Warn}), false), Status::Warn);
  EXPECT_EQ(overall(report_with({Status::Warn}), true), Status::Fail);
  EXPECT_EQ(overall(report_with({Status::Unknown, Status::Warn}), false), Status::Unknown);
}

TEST(VerdictBuilder, WorstStatusWinsAndKeepsEveryRemedy) {
  VerdictBuilder b;
  b.note("fine thing");
  b.add(Status::Warn, "slow thing", "fix slow");
  b.add(Status::Fail, "broken thing", "fix broken");
  b.add(Status::Fail, "other broken thing", "fix broken");
  const Verdict v = b.build();
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.summary, "broken thing; other broken thing; also WARN: slow thing");  // every printed fix's problem
  EXPECT_EQ(v.remedy, "fix broken fix slow");
  VerdictBuilder only_notes;  // a lesser finding without a fix is not repeated
  only_notes.add(Status::Warn, "w", "fix w");
  only_notes.add(Status::Skip, "s");
  EXPECT_EQ(only_notes.build().summary, "w");
}

TEST(Selection, OnlyAndSkipGlobs) {
  Options o;
  EXPECT_TRUE(selected(o, "net.ib"));
  o.only = {"net.*", "shm.capacity"};
  EXPECT_TRUE(selected(o, "net.ib"));
  EXPECT_TRUE(selected(o, "shm.capacity"));
  EXPECT_FALSE(selected(o, "host.memory"));
  o.skip = {"net.ib"};
  EXPECT_FALSE(selected(o, "net.ib"));
  EXPECT_TRUE(selected(o, "net.master"));
}

TEST(Probed, WhySaysTheSourceOnce) {
  // dlerror() names the library itself: "libcuda.so.1: libcuda.so.1: cannot open …" said it twice.
  const auto missing =
      Probed<int>::error(ProbeErrc::LibraryMissing,
                         "libcuda.so.1: cannot open shared object file: No such file or directory", "libcuda.so.1");
  EXPECT_EQ(missing.why(), "libcuda.so.1: cannot open shared object file: No such file or directory");
  EXPECT_EQ(Probed<int>::error(ProbeErrc::NotFound, "no such file", "/proc/x").why(), "/proc/x: no such file");
  EXPECT_EQ(Probed<int>::error(ProbeErrc::NotFound, "libcuda.so.10 is older", "libcuda.so.1").why(),
            "libcuda.so.1: libcuda.so.10 is older");  // a longer name is another name
  EXPECT_EQ(Probed<int>::error(ProbeErrc::NotFound, "gone", "").why(), "gone");
}

TEST(Render, TextHasAlignedRowsRemediesAndASummaryLine) {
  const Report r = report_with({Status::Pass, Status::Fail, Status::Warn});
  Options o;
  const std::string text = render_text(r, o, false);
  EXPECT_NE(text.find("  FAIL     area.check1  summary"), std::string::npos) << text;
  EXPECT_NE(text.find("  PASS     area.check0  summary"), std::string::npos) << text;
  // The fix of what is listed under WHAT TO FIX FIRST is printed there, once.
  EXPECT_NE(text.find("WHAT TO FIX FIRST\n  1. FAIL area.check1: summary"), std::string::npos) << text;
  EXPECT_GT(text.find("fix: do the thing"), text.find("WHAT TO FIX FIRST")) << text;
  EXPECT_NE(text.find("fix: do the thing"), std::string::npos);
  EXPECT_NE(text.find("FAIL: 1 PASS · 1 WARN · 1 FAIL · 0 SKIP · 0 UNKNOWN"), std::string::npos) << text;
  EXPECT_EQ(text.find("\033["), std::string::npos);
  EXPECT_NE(render_text(r, o, true).find("\033["), std::string::npos);
}

TEST(Render, TextEscapesControlBytesFromEveryString) {
  // A merge file or another rank can carry any bytes: none of them may reach the terminal raw.
  Report r = report_with({Status::Warn});
  CheckResult& c = r.results.front();
  c.id = "env.nccl\x1b[2J";
  c.verdict.summary = "NCCL_\x1b]0;owned\x07X is set";
  c.verdict.remedy =
      "unset \xc2\x9b"
      "31m NCCL_X \xe2\x80\xae";
  c.verdict.evidence = {{"NAME\x1b[1m", "value\r"}, {"table", {{"a\x1b", "b"}}}};
  c.hosts = {"gpu\x1b[0m-a"};
  c.ranks = {1};
  r.world_size = 2;
  r.notes = {"note \x1b[31m"};
  r.incidents = {"rank 1 \x08\x08"};
  r.ranks.front().identity.hostname = "host\x1b]2;x\x07";
  Options o;
  o.verbose = true;
  const std::string text = render_text(r, o, false);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x08'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;      // C1 CSI
  EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos) << text;  // right-to-left override
  EXPECT_NE(text.find("env.nccl\\x1B[2J"), std::string::npos) << text;
  EXPECT_NE(text.find("NAME\\x1B[1m=value\\x0D"), std::string::npos) << text;
  EXPECT_NE(text.find("\\u{202E}"), std::string::npos) << text;
  EXPECT_NE(text.find("on rank 1 (gpu\\x1B[0m-a)"), std::string::npos) << text;
  // Colour is the renderer's own: still there with --color always, around escaped text.
  const std::string colored = render_text(r, o, true);
  EXPECT_NE(colored.find("\033[33m"), std::string::npos);
  EXPECT_EQ(colored.find("\x1b[2J"), std::string::npos);
}

TEST(Render, TheHeadlineIsTheOverallStatus) {
  Options o;
  Report unknown = report_with({Status::Pass, Status::Unknown});
  EXPECT_NE(render_text(unknown, o, false).find("\nUNKNOWN: 1 PASS · 0 WARN · 0 FAIL · 0 SKIP · 1 UNKNOWN"),
            std::string::npos);
  Report expired = report_with({Status::Pass, Status::Unknown});
  expired.deadline_expired = true;
  const std::string text = render_text(expired, o, false);
  EXPECT_NE(text.find("\nDEADLINE: 1 PASS · 0 WARN · 0 FAIL"), std::string::npos) << text;
  EXPECT_EQ(text.find("\nFAIL: "), std::string::npos) << text;
  Report warned = report_with({Status::Pass, Status::Warn});
  EXPECT_NE(render_text(warned, o, false).find("\nWARN: 1 PASS · 1 WARN"), std::string::npos);
  o.strict = true;
  EXPECT_NE(render_text(warned, o, false)
                .find("\nFAIL: 1 PASS · 1 WARN · 0 FAIL · 0 SKIP · 0 UNKNOWN · 0.00 s · strict (WARN counts as FAIL)"),
            std::string::npos);
}

TEST(Counts, EachCheckOnceByItsWorstStatus) {
  // launch.env FAIL on rank 1, PASS on ranks 0, 2, 3; host.limits PASS: two checks, one of each.
  Report r;
  r.world_size = 4;
  r.ranks.emplace_back();
  for (const auto& [id, status, ranks] :
       std::vector<std::tuple<std::string, Status, std::vector<int>>>{{"launch.env", Status::Fail, {1}},
                                                                      {"launch.env", Status::Pass, {0, 2, 3}},
                                                                      {"host.limits", Status::Pass, {0, 1, 2, 3}}}) {
    CheckResult c;
    c.id = id;
    c.area = id.substr(0, id.find('.'));
    c.verdict.status = status;
    c.verdict.summary = "s";
    c.ranks = ranks;
    r.results.push_back(c);
  }
  const Counts checks = count(r);
  EXPECT_EQ(checks.of(Status::Fail), 1);
  EXPECT_EQ(checks.of(Status::Pass), 1);
  const Counts rows = count_instances(r);
  EXPECT_EQ(rows.of(Status::Pass), 2);
  EXPECT_EQ(rows.of(Status::Fail), 1);
  Options o;
  EXPECT_NE(render_text(r, o, false).find("\nFAIL: 1 PASS · 0 WARN · 1 FAIL · 0 SKIP · 0 UNKNOWN"), std::string::npos);
  const auto doc = nlohmann::json::parse(render_json(r, o));
  int sum = 0;
  for (const auto& [status, n] : doc["summary"]["counts"].items()) sum += n.get<int>();
  EXPECT_EQ(sum, 2);  // the number of checks run
  EXPECT_EQ(doc["summary"]["instance_counts"]["PASS"], 2);
  EXPECT_NE(render_prometheus(r, o).find("preflight_checks{host=\"\",status=\"PASS\"} 1"), std::string::npos)
      << render_prometheus(r, o);
}

TEST(Render, JsonCarriesTheContractFields) {
  Report r = report_with({Status::Fail, Status::Pass});
  r.ranks.front().env.set("WEIRD", std::string("\xff\xfe bytes", 8));  // invalid UTF-8 must not throw
  Options o;
  const auto doc = nlohmann::json::parse(render_json(r, o));
  EXPECT_EQ(doc["schema"], "preflight/v1");
  EXPECT_EQ(doc["summary"]["status"], "FAIL");
  EXPECT_EQ(doc["summary"]["exit_code"], 1);
  EXPECT_EQ(doc["summary"]["counts"]["FAIL"], 1);
  EXPECT_EQ(doc["checks"][0]["summary"], "summary <&> \"quoted\"");
  EXPECT_EQ(doc["ranks"].size(), 1u);
  EXPECT_TRUE(doc["ranks"][0]["facts"].contains("shm"));
}

TEST(Facts, RoundTripThroughJson) {
  RankFacts f;
  f.identity.hostname = "gpu-a";
  f.placement.local_ranks = 8;
  f.placement.nodes = 2;
  FsUsage u;
  u.total_bytes = 64u << 20;
  f.shm.usage = Probed<FsUsage>::ok(u, "statfs");
  f.shm.alloc = Probed<ShmAllocTest>::error(ProbeErrc::Timeout, "did not finish", "fallocate");
  const RankFacts back = nlohmann::json(f).get<RankFacts>();
  EXPECT_EQ(back.identity.hostname, "gpu-a");
  EXPECT_EQ(back.placement.nodes, 2);
  ASSERT_TRUE(back.shm.usage.ok());
  EXPECT_EQ(back.shm.usage.value()->total_bytes, 64u << 20);
  ASSERT_FALSE(back.shm.alloc.ok());
  EXPECT_EQ(back.shm.alloc.error()->code, ProbeErrc::Timeout);
  EXPECT_FALSE(back.shm.mount.ok());  // never probed stays "not probed"
  EXPECT_EQ(back.shm.mount.error()->code, ProbeErrc::NotProbed);
}

}  // namespace
}  // namespace report_report_test
}  // namespace preflight
