// SPDX-License-Identifier: MIT
// The machine-readable formats and the reader's view: JUnit XML validated against the repository's
// XSD with hostile strings everywhere, the Prometheus exposition format, the "what to fix first"
// list, the progress line, and --help's examples.
#include <gtest/gtest.h>
#include <libxml/parser.h>
#include <libxml/xmlschemas.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "cli/cli.hpp"
#include "cli/progress.hpp"
#include "core/text.hpp"
#include "job/job_report.hpp"
#include "report/report.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace report_formats_test {
namespace {

// Everything a summary can carry that XML and Prometheus must survive: markup, entities, quotes,
// backslashes, newlines, control bytes, an escape sequence, invalid UTF-8 (a lone continuation
// byte, an overlong "/", a UTF-16 surrogate, U+FFFE, a code point past U+10FFFF) and real UTF-8.
const std::string kHostile =
    std::string("<tag attr=\"x\">&amp; ]]> 'single' \"double\" \\back\\slash\nline2\t\x01\x1b[31m") +
    "\x80 \xC0\xAF \xED\xA0\x80 \xEF\xBF\xBE \xF4\x90\x80\x80 \xFF\xFE café → 8/16";

CheckResult result(const std::string& id, Status s, std::vector<std::string> hosts, double seconds = 0.25) {
  CheckResult r;
  r.id = id;
  r.area = id.substr(0, id.find('.'));
  r.verdict.status = s;
  r.verdict.summary = id + " " + to_string(s) + ": " + kHostile;
  r.verdict.remedy = s == Status::Pass || s == Status::Skip ? "" : "run `fix --now` " + kHostile;
  r.verdict.evidence = nlohmann::json{{"value", kHostile}, {"n", 3}};
  r.hosts = std::move(hosts);
  for (std::size_t i = 0; i < r.hosts.size(); ++i) r.ranks.push_back(static_cast<int>(i));
  r.seconds = seconds;
  return r;
}

Report hostile_report() {
  Report r;
  r.version = "0.1.0";
  r.profile = Profile::Job;
  r.world_size = 2;
  r.nodes = 2;
  r.launcher = "openmpi";
  r.duration_ms = 1234.5;
  r.results = {result("launch.env", Status::Pass, {"gpu-a", "gpu-b"}),
               result("shm.capacity", Status::Fail, {"gpu-b"}, 0.0123), result("host.memory", Status::Warn, {"gpu-a"}),
               result("topo.pcie_acs", Status::Unknown, {"gpu-a", std::string("gpu-\x01<b>&\xff")}),
               result("cuda.smoke", Status::Skip, {"gpu-a"})};
  r.ranks.emplace_back();
  r.ranks.back().identity.hostname = "gpu-a\"<&>";
  r.deadline_expired = true;
  r.incidents = {"barrier: " + kHostile};
  return r;
}

/// libxml2's error callbacks: the messages are collected into the std::string behind `ctx`.
[[gnu::format(printf, 2, 3)]] void collect(void* ctx, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  *static_cast<std::string*>(ctx) += buf;
}

/// Parses `xml` strictly (a non-well-formed document fails) and validates it against the XSD;
/// returns "" or libxml2's complaints.
std::string validate_junit(const std::string& xml) {
  std::string errors;
  xmlSetGenericErrorFunc(&errors, collect);
  std::unique_ptr<xmlDoc, void (*)(xmlDocPtr)> doc(
      xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "junit.xml", nullptr, XML_PARSE_NONET), xmlFreeDoc);
  if (!doc) {
    xmlSetGenericErrorFunc(nullptr, nullptr);
    return "not well-formed: " + errors;
  }
  const std::string xsd = preflight::test_paths::source_dir() + "/schema/junit.xsd";
  std::unique_ptr<xmlSchemaParserCtxt, void (*)(xmlSchemaParserCtxtPtr)> pctx(xmlSchemaNewParserCtxt(xsd.c_str()),
                                                                              xmlSchemaFreeParserCtxt);
  std::unique_ptr<xmlSchema, void (*)(xmlSchemaPtr)> schema(xmlSchemaParse(pctx.get()), xmlSchemaFree);
  if (!schema) {
    xmlSetGenericErrorFunc(nullptr, nullptr);
    return "the XSD does not parse: " + errors;
  }
  std::unique_ptr<xmlSchemaValidCtxt, void (*)(xmlSchemaValidCtxtPtr)> vctx(xmlSchemaNewValidCtxt(schema.get()),
                                                                            xmlSchemaFreeValidCtxt);
  xmlSchemaSetValidErrors(vctx.get(), collect, collect, &errors);
  const int rc = xmlSchemaValidateDoc(vctx.get(), doc.get());
  xmlSetGenericErrorFunc(nullptr, nullptr);
  return rc == 0 ? std::string() : "invalid (" + std::to_string(rc) + "): " + errors;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Junit, ValidatesAgainstTheXsdWithHostileStrings) {
  const Report report = hostile_report();
  const std::string xml = render_junit(report, Options{});
  EXPECT_EQ(validate_junit(xml), "") << xml;
  Options strict;
  strict.strict = true;
  EXPECT_EQ(validate_junit(render_junit(report, strict)), "");
  // The escapes are real: no raw markup from a summary, no raw control or invalid bytes.
  EXPECT_EQ(xml.find("<tag"), std::string::npos);
  EXPECT_NE(xml.find("&lt;tag attr=&quot;x&quot;&gt;&amp;amp;"), std::string::npos);
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  EXPECT_EQ(xml.find('\x1b'), std::string::npos);
  EXPECT_EQ(xml.find("\xED\xA0\x80"), std::string::npos);
  EXPECT_EQ(xml.find("\xEF\xBF\xBE"), std::string::npos);
  EXPECT_NE(xml.find("café → 8/16"), std::string::npos);  // real UTF-8 stays as it is
}

TEST(Junit, OneCasePerCheckAndHostWithCountsAndTimes) {
  const Report report = hostile_report();
  const std::string xml = render_junit(report, Options{});
  // 2 + 1 + 1 + 2 + 1 cases: a result judged on two hosts is two cases.
  EXPECT_EQ(occurrences(xml, "<testcase "), 7u);
  EXPECT_NE(xml.find("<testsuite name=\"preflight.job\" tests=\"7\" failures=\"3\" errors=\"1\" skipped=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("name=\"shm.capacity@gpu-b\" time=\"0.012\""), std::string::npos);
  EXPECT_NE(xml.find("name=\"launch.env@gpu-a\" time=\"0.250\""), std::string::npos);
  EXPECT_EQ(occurrences(xml, "<failure type=\"FAIL\""), 1u);
  EXPECT_EQ(occurrences(xml, "<failure type=\"UNKNOWN\""), 2u);
  EXPECT_EQ(occurrences(xml, "<skipped "), 1u);
  EXPECT_NE(xml.find("<system-err>barrier: "), std::string::npos);
  EXPECT_NE(xml.find("<property name=\"exit_code\" value=\"4\"/>"), std::string::npos);
  std::smatch m;
  EXPECT_TRUE(
      std::regex_search(xml, m, std::regex("timestamp=\"20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\"")));

  Options strict;
  strict.strict = true;
  const std::string s = render_junit(report, strict);
  EXPECT_EQ(occurrences(s, "<failure type=\"WARN\""), 1u);
  EXPECT_NE(s.find("failures=\"4\""), std::string::npos);
}

TEST(Junit, AnEmptyRunIsStillValid) {
  Report r;
  r.version = "0.1.0";
  EXPECT_EQ(validate_junit(render_junit(r, Options{})), "");
}

TEST(Timings, ACheckTakesTheTimeOfWhatItReads) {
  for (const CheckSpec* spec : all_checks()) EXPECT_FALSE(spec->reads.empty()) << spec->id << " names nothing it reads";
  RankFacts facts;
  facts.identity.hostname = "a";
  facts.probe_seconds = {{"shm", 0.5}, {"topology", 0.25}, {"net", 0.125}};
  Options only;
  only.only = {"shm.capacity", "net.gpu_nic_affinity", "host.limits"};
  const std::vector<CheckResult> mine = judge_rank(only, Profile::Node, facts, true, nullptr);
  ASSERT_EQ(mine.size(), 3u);
  std::map<std::string, double> seconds;
  for (const CheckResult& r : mine) seconds[r.id] = r.seconds;
  EXPECT_GE(seconds["shm.capacity"], 0.5);
  EXPECT_LT(seconds["shm.capacity"], 0.6);
  EXPECT_GE(seconds["net.gpu_nic_affinity"], 0.375);  // topology + net
  EXPECT_LT(seconds["host.limits"], 0.1);             // its probe was not timed: judging alone

  JobFacts job = single_rank_job(facts);
  job.phase_seconds = {{"barrier", 2.0}};
  Options barrier;
  barrier.only = {"comm.barrier"};
  const Report report = assemble_report(barrier, Profile::Job, job, {}, nullptr);
  ASSERT_EQ(report.results.size(), 1u);
  EXPECT_GE(report.results[0].seconds, 2.0);

  // Grouped results keep the slowest rank's time, and the JSON form carries it.
  CheckResult a = result("shm.capacity", Status::Pass, {"a"}, 0.5),
              b = result("shm.capacity", Status::Pass, {"b"}, 1.5);
  b.ranks = {1};
  const std::vector<CheckResult> grouped = group_results({a, b});
  ASSERT_EQ(grouped.size(), 1u);
  EXPECT_DOUBLE_EQ(grouped[0].seconds, 1.5);
  nlohmann::json j = grouped[0];
  EXPECT_DOUBLE_EQ(j.at("seconds").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j.get<CheckResult>().seconds, 1.5);
}

TEST(Prometheus, ExpositionFormatWithHostileLabels) {
  Report report = hostile_report();
  report.results[1].verdict.evidence = {
      {"total_bytes", 67108864}, {"free_bytes", 1024}, {"required_bytes", 2684354560ull}};
  report.allreduce.attempted = report.allreduce.completed = true;
  report.allreduce.transport = "nccl";
  report.allreduce.busbw_gbps = 187.5;
  report.allreduce.algbw_gbps = 100;
  report.allreduce.bytes = 33554432;
  report.allreduce.ranks = 16;
  report.barrier.attempted = true;
  report.barrier.seconds = 0.004;
  const std::string text = render_prometheus(report, Options{});
  // Every line: a comment (HELP/TYPE) or `name{label="escaped",...} number`.
  const std::regex sample(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^"\\\n])*",?)*\})? [-+]?([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?|Inf|NaN)$)");
  std::map<std::string, int> ones;
  std::istringstream in(text);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    ASSERT_TRUE(std::regex_match(line, sample)) << line;
    ++samples;
    if (line.rfind("preflight_check_status{", 0) == 0) {
      const std::string key = line.substr(0, line.find(",status="));
      ones[key] += line.back() == '1' ? 1 : 0;
    }
  }
  EXPECT_GT(samples, 30);
  EXPECT_EQ(ones.size(), 7u);  // one series set per check and host
  for (const auto& [key, n] : ones) EXPECT_EQ(n, 1) << key;
  EXPECT_NE(text.find("preflight_check_status{check=\"shm.capacity\",host=\"gpu-b\",status=\"FAIL\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("host=\"gpu-a\\\"<&>\""), std::string::npos);  // quote escaped
  EXPECT_NE(text.find("preflight_shm_bytes{host=\"gpu-b\",kind=\"total\"} 67108864"), std::string::npos);
  EXPECT_NE(text.find("preflight_shm_bytes{host=\"gpu-b\",kind=\"required\"} 2684354560"), std::string::npos);
  EXPECT_NE(text.find("preflight_allreduce_busbw_gbps{host=\"gpu-a\\\"<&>\",transport=\"nccl\"} 187.5"),
            std::string::npos);
  EXPECT_NE(text.find("preflight_allreduce_bytes{"), std::string::npos);
  EXPECT_NE(text.find("preflight_barrier_seconds{"), std::string::npos);
  EXPECT_NE(text.find("preflight_exit_code{host=\"gpu-a\\\"<&>\"} 4"), std::string::npos);
  EXPECT_NE(text.find("preflight_checks{host=\"gpu-a\\\"<&>\",status=\"UNKNOWN\"} 1"), std::string::npos);
  EXPECT_NE(text.find("preflight_check_duration_seconds{check=\"shm.capacity\",host=\"gpu-b\"} 0.0123"),
            std::string::npos);

  report.allreduce.completed = false;  // nothing measured: no bandwidth series at all
  EXPECT_EQ(render_prometheus(report, Options{}).find("preflight_allreduce_busbw_gbps"), std::string::npos);
}

TEST(FixFirst, FailThenUnknownThenWarnEachWithItsFix) {
  Report report = hostile_report();
  report.world_size = 1;
  report.deadline_expired = false;
  const std::string text = render_text(report, Options{}, false);
  const std::size_t list = text.find("WHAT TO FIX FIRST");
  ASSERT_NE(list, std::string::npos) << text;
  const std::size_t fail = text.find("1. FAIL shm.capacity", list);
  const std::size_t unknown = text.find("2. UNKNOWN topo.pcie_acs", list);
  const std::size_t warn = text.find("3. WARN host.memory", list);
  EXPECT_NE(fail, std::string::npos) << text.substr(list);
  EXPECT_LT(fail, unknown);
  EXPECT_LT(unknown, warn);
  EXPECT_NE(text.find("fix: run `fix --now`", fail), std::string::npos);
  EXPECT_EQ(text.find("4. ", list), std::string::npos);  // PASS and SKIP are not in it
  EXPECT_LT(list, text.rfind("UNKNOWN · "));             // before the summary line

  Options strict;
  strict.strict = true;
  const std::string s = render_text(report, strict, false);
  EXPECT_NE(s.find("2. WARN host.memory"), std::string::npos) << s;  // with --strict a WARN is a FAIL

  Report clean;
  clean.version = "0.1.0";
  clean.results = {result("launch.env", Status::Pass, {"a"}), result("cuda.smoke", Status::Skip, {"a"})};
  EXPECT_EQ(render_text(clean, Options{}, false).find("WHAT TO FIX FIRST"), std::string::npos);
}

TEST(FixFirst, ShowsTenAndCountsTheRest) {
  Report report;
  report.version = "0.1.0";
  for (int i = 0; i < 13; ++i) report.results.push_back(result("area.c" + std::to_string(i), Status::Fail, {"h"}));
  const std::string text = render_text(report, Options{}, false);
  EXPECT_NE(text.find("10. FAIL area.c9"), std::string::npos);
  EXPECT_EQ(text.find("11. FAIL"), std::string::npos);
  EXPECT_NE(text.find("… and 3 more"), std::string::npos);
}

TEST(Progress, TextNamesPhaseDetailRanksAndTime) {
  EXPECT_EQ(progress_text("gather", "", 12, 16, 3.44), "preflight: gather · 12/16 ranks reported · 3.4 s");
  EXPECT_EQ(progress_text("probe", "probe gpu_driver", 1, 1, 1.0), "preflight: probe (probe gpu_driver) · 1.0 s");
}

TEST(Progress, DrawsAfterASecondAndClearsOnStop) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    ProgressLine line(
        true, 4, [] { return 3; }, fds[1]);
    line.phase("barrier");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    line.stop();
  }
  ::close(fds[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  EXPECT_NE(got.find("\r\033[Kpreflight: barrier · 3/4 ranks reported · 1."), std::string::npos) << got;
  EXPECT_EQ(got.substr(got.size() - 4), "\r\033[K");  // cleared before the report prints
}

TEST(Progress, QuietPhasesAndDisabledLinesDrawNothing) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    ProgressLine off(
        false, 4, [] { return 1; }, fds[1]);
    off.phase("gather");
    ProgressLine quick(
        true, 4, [] { return 1; }, fds[1]);
    quick.phase("gather");
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // under a second: not worth a line
  }
  ::close(fds[1]);
  char buf[64];
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), 0);
  ::close(fds[0]);
}

TEST(Progress, WantedFollowsTheOptionAndTheTerminal) {
  Options o;
  const char* dumb[] = {"TERM=dumb", nullptr};
  const EnvSnapshot env_dumb = EnvSnapshot::capture(const_cast<char**>(dumb));
  o.progress = "always";
  EXPECT_TRUE(progress_wanted(o, env_dumb));
  o.progress = "never";
  EXPECT_FALSE(progress_wanted(o, EnvSnapshot{}));
  o.progress = "auto";
  EXPECT_FALSE(progress_wanted(o, env_dumb));
  EXPECT_EQ(progress_wanted(o, EnvSnapshot{}), ::isatty(STDERR_FILENO) == 1);
}

TEST(Help, EveryOptionHasAnExample) {
  const std::string help = help_text();
  const std::size_t examples = help.find("Examples");
  const std::size_t options = help.find("Options of `preflight run`");
  ASSERT_NE(examples, std::string::npos);
  ASSERT_LT(examples, options);
  const std::string example_text = help.substr(examples, options - examples);
  const std::regex option_re("\\n  --([a-z-]+)");
  const std::size_t general = help.find("\nGeneral", options);
  ASSERT_NE(general, std::string::npos);
  const std::string option_text = help.substr(options, general - options);
  int seen = 0;
  for (auto it = std::sregex_iterator(option_text.begin(), option_text.end(), option_re); it != std::sregex_iterator();
       ++it) {
    const std::string name = (*it)[1];
    ++seen;
    EXPECT_NE(example_text.find("--" + name + " "), std::string::npos) << "--" << name << " has no example";
  }
  EXPECT_GT(seen, 30);
}

TEST(Printable, OnlyWellFormedUtf8PassesThrough) {
  EXPECT_EQ(printable("café → ok", 100), "café → ok");
  EXPECT_EQ(printable("\xC0\xAF", 100), "\\xC0\\xAF");                    // overlong "/"
  EXPECT_EQ(printable("\xED\xA0\x80", 100), "\\xED\\xA0\\x80");           // UTF-16 surrogate
  EXPECT_EQ(printable("\xF4\x90\x80\x80", 100), "\\xF4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(printable("\xEF\xBF\xBE", 100), "\\xEF\\xBF\\xBE");           // U+FFFE
  EXPECT_EQ(printable("\xF0\x9F\x98\x80", 100), "\xF0\x9F\x98\x80");      // U+1F600
}

}  // namespace
}  // namespace report_formats_test
}  // namespace preflight
