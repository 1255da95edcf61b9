// SPDX-License-Identifier: MIT
// `preflight merge`: bad result files are refused naming the file and the fault, separate runs are
// renumbered, per-rank files keep their ranks, and a merged 16-rank job groups its verdicts
// ("FAIL on 8/16 ranks: gpu-b ranks 8–15"). The per-rank file writer.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "cli/cli.hpp"
#include "cli/merge.hpp"
#include "job/job_report.hpp"
#include "job_fixture.hpp"
#include "sys/bounded_read.hpp"

namespace preflight {
namespace cli_merge_test {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "merge_test.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    m_path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (fs::path(m_path) / name).string(); }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

CheckResult result(const std::string& id, Scope scope, Status s, const std::string& summary, const RankFacts& f) {
  CheckResult r;
  r.id = id;
  r.area = id.substr(0, id.find('.'));
  r.title = id;
  r.scope = scope;
  r.verdict.status = s;
  r.verdict.summary = summary;
  r.verdict.remedy = s == Status::Pass ? "" : "docker run --shm-size=8g …";
  r.hosts = {f.identity.hostname};
  r.ranks = {f.placement.rank};
  return r;
}

/// This build's version, as every report it writes carries it.
std::string our_version() {
  Options none;
  none.only = {"none"};
  return assemble_report(none, Profile::Job, single_rank_job(RankFacts{}), {}, nullptr).version;
}

/// The report one rank writes with --json-per-rank: its facts and what it judged.
Report rank_report(const RankFacts& f, int world, std::vector<CheckResult> results) {
  Report r;
  r.version = our_version();
  r.profile = Profile::Job;
  r.world_size = world;
  r.launcher = "openmpi";
  r.results = std::move(results);
  r.ranks = {f};
  return r;
}

/// A single-node run's JSON (rank 0 of a world of 1) on `host`.
std::string node_run(const std::string& host, Status shm = Status::Pass) {
  RankFacts f = job_fixture::job(1, 1).ranks.front();
  f.identity.hostname = host;
  f.placement.world_size = 1;
  Report r = rank_report(f, 1,
                         {result("shm.capacity", Scope::Node, shm, "/dev/shm is 64 GiB", f),
                          result("host.limits", Scope::Rank, Status::Pass, "limits fine", f)});
  return render_json(r, Options{});
}

std::string refusal(const std::string& text, const std::string& path = "node-a.json") {
  try {
    parse_result_file(path, text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(MergeInput, AGoodFileIsRead) {
  const ResultFile f = parse_result_file("node-a.json", node_run("gpu-a"));
  ASSERT_EQ(f.ranks.size(), 1u);
  EXPECT_EQ(f.ranks[0].identity.hostname, "gpu-a");
  EXPECT_EQ(f.results.size(), 2u);
  EXPECT_EQ(f.world_size, 1);
  EXPECT_FALSE(f.deadline_expired);
}

TEST(MergeInput, CorruptTruncatedAndNonJsonFilesAreRefusedByName) {
  const std::string good = node_run("gpu-a");
  const std::string truncated = refusal(good.substr(0, good.size() / 2));
  EXPECT_NE(truncated.find("node-a.json: truncated"), std::string::npos) << truncated;
  std::string corrupt = good;
  corrupt[corrupt.size() / 3] = '\x01';
  EXPECT_NE(refusal(corrupt).find("node-a.json: byte " + std::to_string(corrupt.size() / 3) +
                                  ": not valid JSON (found a control byte)"),
            std::string::npos)
      << refusal(corrupt);
  EXPECT_NE(refusal("PFLT\x01"
                    "binary")
                .find("byte 0: not JSON"),
            std::string::npos);
  EXPECT_NE(refusal("").find("truncated"), std::string::npos) << refusal("");
  EXPECT_NE(refusal("[1,2]").find("the JSON is array, not an object"), std::string::npos) << refusal("[1,2]");
}

TEST(MergeInput, WrongSchemaOrMajorVersionIsRefused) {
  nlohmann::json doc = nlohmann::json::parse(node_run("gpu-a"));
  nlohmann::json other = doc;
  other["schema"] = "preflight/v2";
  EXPECT_NE(refusal(other.dump()).find("\"schema\" is not \"preflight/v1\""), std::string::npos)
      << refusal(other.dump());
  other = doc;
  other.erase("schema");
  EXPECT_NE(refusal(other.dump()).find("has no \"schema\""), std::string::npos) << refusal(other.dump());
  other = doc;
  other["tool"]["version"] = "7.0.0";
  EXPECT_NE(refusal(other.dump()).find("written by preflight 7.0.0, this is preflight"), std::string::npos)
      << refusal(other.dump());
  EXPECT_NE(refusal(other.dump()).find("major versions differ"), std::string::npos);
  other = doc;
  other["profile"] = "cluster";
  EXPECT_NE(refusal(other.dump()).find("none of node, job, image"), std::string::npos) << refusal(other.dump());
}

TEST(MergeInput, MismatchedOrMalformedContentIsRefused) {
  nlohmann::json doc = nlohmann::json::parse(node_run("gpu-a"));
  nlohmann::json other = doc;
  other["checks"][0]["ranks"] = {5};
  EXPECT_NE(refusal(other.dump()).find("names rank 5, whose facts the file does not hold"), std::string::npos)
      << refusal(other.dump());
  other = doc;
  other["ranks"] = nlohmann::json::array();
  EXPECT_NE(refusal(other.dump()).find("holds no rank's facts"), std::string::npos);
  other = doc;
  other["ranks"][0]["facts"]["identity"]["pid"] = "many";
  EXPECT_NE(refusal(other.dump()).find("ranks[0].facts (rank 0) is malformed"), std::string::npos)
      << refusal(other.dump());
  other = doc;
  other["ranks"][0]["rank"] = -3;
  EXPECT_NE(refusal(other.dump()).find("ranks[0].rank is -3"), std::string::npos) << refusal(other.dump());
  other = doc;
  other["checks"][0]["status"] = "MAYBE";
  EXPECT_NE(refusal(other.dump()).find("checks[0] is malformed: \"status\" is none of PASS, WARN, FAIL, SKIP, UNKNOWN"),
            std::string::npos)
      << refusal(other.dump());
  EXPECT_EQ(refusal(other.dump()).find("MAYBE"), std::string::npos) << "the file's value is not quoted";
  other = doc;
  other["ranks"].push_back(other["ranks"][0]);
  EXPECT_NE(refusal(other.dump()).find("rank 0 appears twice"), std::string::npos) << refusal(other.dump());
  other = doc;
  other["world"]["size"] = 1 << 30;
  EXPECT_NE(refusal(other.dump()).find("world.size is 1073741824, not a world size"), std::string::npos)
      << refusal(other.dump());
  // Values that are text are described, never quoted.
  other = doc;
  other["world"]["size"] = "ghp_SECRET";
  other["profile"] = "ghp_SECRET";
  EXPECT_EQ(refusal(other.dump()), "node-a.json: \"profile\" is string, none of node, job, image");
  other = doc;
  other["tool"]["version"] = "ghp_SECRET";
  EXPECT_NE(refusal(other.dump()).find("written by preflight (tool.version: no version number, 10 bytes)"),
            std::string::npos)
      << refusal(other.dump());
  other["tool"]["version"] = "99.1.0";
  EXPECT_NE(refusal(other.dump()).find("written by preflight 99.1.0, this is preflight"), std::string::npos);
  other = doc;
  other["world"]["size"] = "ghp_SECRET";
  EXPECT_EQ(refusal(other.dump()).find("ghp_SECRET"), std::string::npos) << refusal(other.dump());
  other = doc;
  other["checks"][0]["scope"] = "ghp_SECRET";
  EXPECT_EQ(refusal(other.dump()).find("ghp_SECRET"), std::string::npos) << refusal(other.dump());
  other = doc;
  other["checks"][0]["id"] = "ghp_SECRET";
  other["checks"][0]["ranks"] = {5};
  EXPECT_NE(refusal(other.dump()).find("(an unknown check id) names rank 5"), std::string::npos)
      << refusal(other.dump());
}

TEST(MergeInput, AFileThatIsNoResultIsNeverQuoted) {
  // merge may be pointed at anyone's file: the place and the kind of what was found, never the bytes.
  EXPECT_EQ(refusal("ghp_0123SECRET0123456789\n"), "node-a.json: byte 0: not JSON (expected '{', found a letter)");
  EXPECT_EQ(refusal("\n  root:$6$SECRETHASH:19000:0:99999:7:::\n"),
            "node-a.json: byte 3: not JSON (expected '{', found a letter)");
  EXPECT_EQ(refusal("{\"token\": GHP_0123SECRET}"), "node-a.json: byte 10: not valid JSON (found a letter)");
  EXPECT_EQ(refusal("{\"n\": 1e999, \"GHP_0123SECRET\": 1}"), "node-a.json: not valid JSON: a number no double holds");
  nlohmann::json doc = nlohmann::json::parse(node_run("gpu-a"));
  doc["schema"] = "GHP_0123SECRET";
  EXPECT_EQ(refusal(doc.dump()).find("GHP_0123SECRET"), std::string::npos) << refusal(doc.dump());
}

TEST(MergeInput, ADirectorysSymlinkThatLeavesItIsRefused) {
  TempDir dir;
  fs::create_directories(dir.file("ranks"));
  write(dir.file("secret"), "GHP_0123SECRET\n");
  write(dir.file("ranks/a.json"), node_run("gpu-a"));
  fs::create_symlink("a.json", dir.file("ranks/b.json"));  // stays inside: read
  const std::vector<ResultInput> inside = result_files({dir.file("ranks")});
  ASSERT_EQ(inside.size(), 2u);
  EXPECT_EQ(read_result_file(inside[1]).ranks.front().identity.hostname, "gpu-a");
  for (const std::string& target : {std::string("../secret"), dir.file("secret"), dir.file("ranks/a.json")}) {
    fs::remove(dir.file("ranks/b.json"));
    fs::create_symlink(target, dir.file("ranks/b.json"));  // leaves it, or absolute: refused
    const std::vector<ResultInput> listed = result_files({dir.file("ranks")});
    try {
      read_result_file(listed[1]);
      ADD_FAILURE() << target << " was read";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("GHP_0123SECRET"), std::string::npos) << what;
      const std::string expected =
          has_openat2() ? "a symbolic link that leads out of the directory (not followed): refused" : "a symbolic link";
      EXPECT_NE(what.find(dir.file("ranks/b.json") + ": " + expected), std::string::npos) << what;
    }
  }
  // A file named on the command line is read as named, a link included.
  EXPECT_EQ(read_result_file(dir.file("ranks/b.json")).ranks.front().identity.hostname, "gpu-a");
}

TEST(MergeInput, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  fs::create_directories(dir.file("ranks"));
  ASSERT_EQ(::mkfifo(dir.file("ranks/a.json").c_str(), 0600), 0);
  const std::vector<ResultInput> listed = result_files({dir.file("ranks")});
  ASSERT_EQ(listed.size(), 1u);
  for (const auto& attempt : {std::function<void()>([&] { read_result_file(listed[0]); }),
                              std::function<void()>([&] { read_result_file(dir.file("ranks/a.json")); })}) {
    try {
      attempt();
      ADD_FAILURE() << "a FIFO was read";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file (a FIFO)"), std::string::npos) << e.what();
    }
  }
}

TEST(MergeInput, OversizedMissingAndOddFilesAreRefusedBeforeReading) {
  TempDir dir;
  const std::string big = dir.file("big.json");
  write(big, "{");
  fs::resize_file(big, kMaxResultFileBytes + 1);  // sparse: nothing is written
  const auto what = [](const std::string& path) {
    try {
      read_result_file(path);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(what(big).find("big.json: is 64"), std::string::npos) << what(big);
  EXPECT_NE(what(big).find("over the 64 MiB a result file may have"), std::string::npos) << what(big);
  EXPECT_NE(what(dir.file("none.json")).find("none.json: cannot read: No such file"), std::string::npos);
  EXPECT_NE(what(dir.path()).find("not a regular file"), std::string::npos);
}

TEST(Merge, TheSameRankOfTheSameHostTwiceIsRefused) {
  std::vector<ResultFile> files{parse_result_file("a.json", node_run("gpu-a")),
                                parse_result_file("b.json", node_run("gpu-a"))};
  try {
    merge_files(std::move(files), Options{});
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "b.json: rank 0 of host gpu-a is also in a.json (the same result given twice)");
  }
}

TEST(Merge, SeparateSingleNodeRunsAreRenumberedInFileOrder) {
  std::vector<ResultFile> files{parse_result_file("c.json", node_run("gpu-c")),
                                parse_result_file("a.json", node_run("gpu-a", Status::Fail)),
                                parse_result_file("b.json", node_run("gpu-b"))};
  const MergedJob m = merge_files(std::move(files), Options{});
  EXPECT_EQ(m.job.source, "merge");
  EXPECT_EQ(m.job.world_size, 3);
  ASSERT_EQ(m.job.ranks.size(), 3u);
  EXPECT_EQ(m.job.ranks[0].identity.hostname, "gpu-c");
  EXPECT_EQ(m.job.ranks[1].identity.hostname, "gpu-a");
  EXPECT_EQ(m.job.ranks[1].placement.rank, 1);
  EXPECT_EQ(m.job.ranks[2].placement.world_size, 3);
  EXPECT_EQ(m.job.files, (std::vector<std::string>{"c.json", "a.json", "b.json"}));
  EXPECT_TRUE(m.job.undelivered().empty());
  for (const RankStatus& s : m.job.status) EXPECT_TRUE(s.delivered) << s.rank;
  // The results follow their facts: gpu-a's FAIL is rank 1's.
  bool found = false;
  for (const CheckResult& r : m.per_rank) {
    if (r.id == "shm.capacity" && r.verdict.status == Status::Fail) {
      found = true;
      EXPECT_EQ(r.ranks, std::vector<int>{1});
      EXPECT_EQ(r.hosts, std::vector<std::string>{"gpu-a"});
    }
  }
  EXPECT_TRUE(found);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("renumbered in the order the files were given (c.json holds rank 0, b.json rank 2)"),
            std::string::npos)
      << m.notes[0];
  EXPECT_EQ(m.profile, Profile::Job);
}

TEST(Merge, PerRankFilesKeepTheirRanksAndTheMissingOnesAreUndelivered) {
  const JobFacts fixture = job_fixture::job(1, 4);
  std::vector<ResultFile> files;
  for (int rank : {3, 0, 1}) {  // rank 2 wrote nothing
    const RankFacts& f = fixture.ranks[static_cast<std::size_t>(rank)];
    const Report r = rank_report(f, 4, {result("host.limits", Scope::Rank, Status::Pass, "fine", f)});
    files.push_back(parse_result_file("rank-" + std::to_string(rank) + ".json", render_json(r, Options{})));
  }
  const MergedJob m = merge_files(std::move(files), Options{});
  EXPECT_TRUE(m.notes.empty());
  EXPECT_EQ(m.job.world_size, 4);
  ASSERT_EQ(m.job.ranks.size(), 3u);
  EXPECT_EQ(m.job.ranks[0].placement.rank, 0);
  EXPECT_EQ(m.job.ranks[2].placement.rank, 3);
  EXPECT_EQ(m.job.undelivered(), std::vector<int>{2});
  EXPECT_EQ(m.job.files, (std::vector<std::string>{"rank-0.json", "rank-1.json", "rank-3.json"}));

  Options o;
  o.only = {"launch.ranks", "host.limits"};
  const Report report = assemble_report(o, m.profile, m.job, m.per_rank, nullptr);
  ASSERT_EQ(report.missing.size(), 1u);
  EXPECT_EQ(report.missing[0].rank, 2);
  EXPECT_EQ(report.source, "merge");
  const auto doc = nlohmann::json::parse(render_json(report, o));
  EXPECT_EQ(doc["world"]["source"], "merge");
  EXPECT_EQ(doc["job"]["missing"][0]["rank"], 2);
  EXPECT_EQ(doc["job"]["missing"][0]["delivered"], false);
  EXPECT_EQ(doc["job"]["reach_target"], nullptr);
  EXPECT_EQ(doc["job"]["barrier"]["attempted"], false);
  EXPECT_EQ(exit_code(report, false), 1);  // launch.ranks: rank 2 did not deliver
}

TEST(Merge, SixteenRanksOnTwoHostsGroupTheirVerdicts) {
  TempDir dir;
  const JobFacts fixture = job_fixture::job(2, 8);
  for (const RankFacts& f : fixture.ranks) {
    std::vector<CheckResult> results{result("host.limits", Scope::Rank, Status::Pass, "limits fine", f)};
    if (f.placement.local_rank == 0) {  // node-scope checks run on the first rank of each host
      const bool b = f.identity.hostname == "gpu-b";
      results.push_back(result("shm.capacity", Scope::Node, b ? Status::Fail : Status::Pass,
                               b ? "/dev/shm is 64 MiB; 8 local ranks need ≥ 1.1 GiB" : "/dev/shm is 64 GiB", f));
    }
    write_rank_json(dir.file("ranks"), rank_report(f, 16, std::move(results)), Options{});
  }
  Options o;
  o.only = {"shm.capacity", "host.limits", "launch.ranks"};
  // The directory stands for its 16 files, each counted as it is read (the progress line's count).
  EXPECT_EQ(result_files({dir.file("ranks")}).size(), 16u);
  std::atomic<int> read{0};
  const Report report = merge_report(o, {dir.file("ranks")}, nullptr, &read);
  EXPECT_EQ(read.load(), 16);
  EXPECT_EQ(report.world_size, 16);
  EXPECT_EQ(report.nodes, 2);
  EXPECT_EQ(report.source, "merge");
  const std::string text = render_text(report, o, false);
  EXPECT_NE(text.find("16 ranks on 2 nodes"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL     shm.capacity  on ranks 8–15 (gpu-b): /dev/shm is 64 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("PASS     shm.capacity  on ranks 0–7 (gpu-a): "), std::string::npos) << text;
  // On every rank, or for the job: the headline's "16 ranks on 2 nodes" says where.
  EXPECT_NE(text.find("PASS     host.limits   "), std::string::npos) << text;
  EXPECT_NE(text.find("PASS     launch.ranks  16 ranks on 2 nodes"), std::string::npos) << text;
  EXPECT_NE(text.find("NOTE merged 16 result files"), std::string::npos) << text;
  EXPECT_EQ(exit_code(report, false), 1);

  // -v: one line per rank for the per-rank results.
  o.verbose = true;
  const std::string verbose = render_text(merge_report(o, {dir.file("ranks")}, nullptr), o, false);
  EXPECT_NE(verbose.find("host.limits   on rank 0 (gpu-a): "), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("host.limits   on rank 15 (gpu-b): "), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("shm.capacity  on ranks 8–15 (gpu-b): "), std::string::npos) << verbose;

  // JSON: one item per group, "id" first.
  const std::string doc_text = render_json(report, o);
  const auto doc = nlohmann::json::parse(doc_text);
  EXPECT_EQ(doc["world"]["size"], 16);
  EXPECT_EQ(doc["ranks"].size(), 16u);
  std::size_t shm_items = 0;
  for (const auto& c : doc["checks"]) shm_items += c["id"] == "shm.capacity" ? 1 : 0;
  EXPECT_EQ(shm_items, 2u);
  EXPECT_EQ(doc_text.find("\"id\""), doc_text.find("{", doc_text.find("\"checks\"")) + 8) << "id first in a check item";
}

TEST(Merge, OnlyAndSkipSelectTheFilesResultsToo) {
  std::vector<std::string> paths;
  TempDir dir;
  for (const char* host : {"gpu-a", "gpu-b"}) {
    paths.push_back(dir.file(std::string(host) + ".json"));
    write(paths.back(), node_run(host, Status::Fail));
  }
  Options o;
  o.skip = {"shm.*", "launch.*", "comm.*", "cluster.*", "net.*"};
  const Report report = merge_report(o, paths, nullptr);
  for (const CheckResult& r : report.results) EXPECT_NE(r.id, "shm.capacity");
  EXPECT_EQ(report.world_size, 2);
}

TEST(Merge, AFileOfARunWhoseDeadlineExpiredKeepsExitCode4) {
  nlohmann::json doc = nlohmann::json::parse(node_run("gpu-a"));
  doc["summary"]["exit_code"] = 4;
  doc["incidents"] = {"probe 'shm' did not finish"};
  std::vector<ResultFile> files{parse_result_file("a.json", doc.dump())};
  const MergedJob m = merge_files(std::move(files), Options{});
  EXPECT_TRUE(m.deadline_expired);
  ASSERT_EQ(m.incidents.size(), 1u);
  EXPECT_EQ(m.incidents[0], "a.json: probe 'shm' did not finish");
}

TEST(WriteRankJson, CreatesTheDirectoryAndReplacesTheFileAtomically) {
  TempDir dir;
  const std::string out = dir.file("a/b");
  RankFacts f = job_fixture::job(1, 4).ranks[3];
  write_rank_json(out, rank_report(f, 4, {result("host.limits", Scope::Rank, Status::Pass, "first", f)}), Options{});
  write_rank_json(out, rank_report(f, 4, {result("host.limits", Scope::Rank, Status::Warn, "second", f)}), Options{});
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"preflight-rank-3.json"});  // no temporary file left behind
  const ResultFile back = read_result_file(out + "/preflight-rank-3.json");
  ASSERT_EQ(back.results.size(), 1u);
  EXPECT_EQ(back.results[0].verdict.summary, "second");
  // One line, for merge to read by the thousand (the same document as --json's indented one).
  std::ifstream in(out + "/preflight-rank-3.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text.substr(0, 200);
  EXPECT_EQ(text.back(), '\n');
  const Report report = rank_report(f, 4, {result("host.limits", Scope::Rank, Status::Warn, "second", f)});
  EXPECT_EQ(nlohmann::json::parse(text).dump(), nlohmann::json::parse(render_json(report, Options{})).dump());
  EXPECT_THROW(write_rank_json(out, Report{}, Options{}), std::invalid_argument);
  write(dir.file("file"), "x");
  EXPECT_THROW(write_rank_json(dir.file("file"), rank_report(f, 4, {}), Options{}), std::runtime_error);
}

TEST(CheckResultJson, RoundTripsInBothJsonTypesWithIdFirst) {
  RankFacts f;
  f.identity.hostname = "gpu-a";
  CheckResult r = result("shm.capacity", Scope::Node, Status::Fail, "small", f);
  r.verdict.evidence = {{"shm_bytes", 67108864}};
  const nlohmann::ordered_json ordered(r);
  EXPECT_EQ(ordered.begin().key(), "id");
  const CheckResult back = ordered.get<CheckResult>();
  EXPECT_EQ(back.verdict.evidence["shm_bytes"], 67108864);
  EXPECT_EQ(back.area, "shm");
  const CheckResult plain = nlohmann::json(r).get<CheckResult>();
  EXPECT_EQ(plain.hosts, r.hosts);
  nlohmann::json bad = nlohmann::json(r);
  bad["evidence"] = "text";
  EXPECT_THROW(bad.get<CheckResult>(), std::invalid_argument);
}

}  // namespace
}  // namespace cli_merge_test
}  // namespace preflight
