// SPDX-License-Identifier: MIT
// The fast reader of merge's result files (parse_result_file_fast, over simdjson) reads every file
// it accepts exactly as the reference reader (nlohmann::json) does — real reports of a node
// without a driver, a fake 8-GPU node and a 16-rank job, indented and compact — and leaves to the
// reference what it does not decide: numbers of the wrong kind or out of range, files the
// reference refuses. Whatever it leaves, parse_result_file() answers as the reference does.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/merge.hpp"
#include "cli/result_file_json.hpp"
#include "job/job_report.hpp"
#include "job/run.hpp"
#include "job_fixture.hpp"
#include "report/report.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace cli_merge_fast_test {
namespace {

using nlohmann::json;
using testing::result_file_json;

RankFacts recorded(const std::string& name) {
  std::ifstream in(test_paths::fixtures_dir() + "/report/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return json::parse(s.str()).at("ranks").at(0).at("facts").get<RankFacts>();
}

std::string node_json(const std::string& fixture, JsonLayout layout = JsonLayout::Indented) {
  const Options o;
  const RankFacts f = recorded(fixture);
  const Report r =
      assemble_report(o, Profile::Node, single_rank_job(f), judge_rank(o, Profile::Node, f, true, nullptr), nullptr);
  return render_json(r, o, layout);
}

/// A 16-rank job of the fake 8-GPU node's facts on two hosts, with -v: one result per rank.
std::string job_json() {
  Options o;
  o.verbose = true;
  JobFacts job = job_fixture::job_from(recorded("fake-8gpu-node.json"), 2, 8);
  std::vector<CheckResult> per_rank;
  for (const RankFacts& f : job.ranks) {
    for (CheckResult& r : judge_rank(o, Profile::Job, f, f.placement.local_rank == 0, nullptr)) {
      per_rank.push_back(std::move(r));
    }
  }
  return render_json(assemble_report(o, Profile::Job, std::move(job), std::move(per_rank), nullptr), o,
                     JsonLayout::Compact);
}

/// parse_result_file(text) and the reference: the same refusal, or the same file.
void expect_as_reference(const std::string& text) {
  std::string refused;
  ResultFile reference;
  try {
    reference = parse_result_file_reference("a.json", text);
  } catch (const UsageError& e) {
    refused = e.what();
  }
  try {
    const ResultFile read = parse_result_file("a.json", text);
    EXPECT_EQ(refused, "") << "the reference refuses it, parse_result_file reads it";
    EXPECT_EQ(result_file_json(read), result_file_json(reference));
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), refused);
  }
}

/// The fast reader reads `text`, as the reference does.
void expect_fast(const std::string& text) {
  const std::optional<ResultFile> fast = parse_result_file_fast("a.json", text);
  ASSERT_TRUE(fast.has_value()) << "the fast reader left it to the reference";
  EXPECT_EQ(result_file_json(*fast), result_file_json(parse_result_file_reference("a.json", text)));
  EXPECT_FALSE(fast->ranks.empty());
}

/// The fast reader leaves `text` to the reference, and parse_result_file answers as it does.
void expect_left(const std::string& text) {
  EXPECT_FALSE(parse_result_file_fast("a.json", text).has_value());
  expect_as_reference(text);
}

class FastResultReader : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fast_result_reader()) GTEST_SKIP() << "built without simdjson: merge reads through nlohmann::json only";
  }
};

TEST_F(FastResultReader, ReadsRealReportsAsTheReferenceDoes) {
  expect_fast(node_json("no-driver-node.json"));
  expect_fast(node_json("fake-8gpu-node.json"));
  expect_fast(node_json("fake-8gpu-node.json", JsonLayout::Compact));
  const std::string job = job_json();
  expect_fast(job);
  const ResultFile file = *parse_result_file_fast("a.json", job);
  EXPECT_EQ(file.ranks.size(), 16u);
  EXPECT_EQ(file.world_size, 16);
  bool coded = false;
  for (const CheckResult& r : file.results) coded = coded || !r.verdict.findings.empty();
  EXPECT_TRUE(coded) << "no result with findings: the comparison would not cover them";
}

TEST_F(FastResultReader, ReadsOddButValidContentAsTheReferenceDoes) {
  json doc = json::parse(node_json("fake-8gpu-node.json"));
  // members no field reads, at the top, in the facts and in a check
  doc["written_by"] = {{"tool", "a newer preflight"}, {"list", {1, -2, 0.5, nullptr, true}}};
  doc["ranks"][0]["facts"]["future_fact"] = {{"nested", {{"deep", {1, 2, 3}}}}, {"ratio", 0.25}};
  json& check = doc["checks"][0];
  check["future_member"] = "x";
  // evidence of every kind of value: negative, unsigned past int64, floats, unicode, nesting
  check["evidence"] = {{"negative", -7},
                       {"huge", 18446744073709551615ull},
                       {"float", 1.5e-7},
                       {"text", "μ→✓"},
                       {"nested", {{"a", {json::array(), json::object()}}}},
                       {"null", nullptr},
                       {"bool", false}};
  check["finding"] = json::object();  // a finding with nothing in it still takes the verdict's status
  check["findings"] = {{{"code", "x/y"}, {"params", {{"n", 3}}}},
                       {{"no", "code"}},
                       5,
                       {{"code", "x/z"}, {"status", "WARN"}, {"params", "not an object"}}};
  check["seconds"] = -3;
  check["cause"] = 7;
  doc["incidents"] = {"rank 3 was slow", 42};
  doc["summary"]["exit_code"] = 4;
  expect_fast(doc.dump());
  expect_fast(doc.dump(1));
  const ResultFile file = *parse_result_file_fast("a.json", doc.dump());
  EXPECT_TRUE(file.deadline_expired);
  EXPECT_EQ(file.incidents.size(), 1u);
}

TEST_F(FastResultReader, ARepeatedKeyIsTheLastAsInTheReference) {
  const std::string text = node_json("fake-8gpu-node.json", JsonLayout::Compact);
  const std::string id = "\"id\":\"shm.capacity\",";
  const std::size_t at = text.find(id);
  ASSERT_NE(at, std::string::npos);
  std::string twice = text;
  twice.insert(at + id.size(), "\"status\":\"FAIL\",\"title\":\"first\",");  // the real ones come later
  expect_fast(twice);
  std::string facts = text;
  const std::string pid = "\"pid\":";
  facts.insert(facts.find(pid), "\"pid\":1,");
  expect_fast(facts);
}

TEST_F(FastResultReader, LeavesWhatItDoesNotDecideToTheReference) {
  const json doc = json::parse(node_json("fake-8gpu-node.json"));
  const auto with = [&doc](const json::json_pointer& where, const json& value) {
    json d = doc;
    d[where] = value;
    return d.dump();
  };
  // read by the reference, otherwise than a strict reader would: a float or a bool in an integer
  // field (truncated, 1), a number past the field's range (wrapped)
  expect_left(with("/ranks/0/facts/identity/pid"_json_pointer, 7.9));
  expect_left(with("/ranks/0/facts/identity/pid"_json_pointer, true));
  expect_left(with("/ranks/0/facts/identity/pid"_json_pointer, 4294967296ll));
  expect_left(with("/checks/0/ranks"_json_pointer, {0.0}));
  // refused by the reference: a float out of range anywhere in the facts, read or not
  expect_left(with("/ranks/0/facts/probe_seconds/identity"_json_pointer, 1e9));
  expect_left(with("/ranks/0/facts/unknown"_json_pointer, {{"x", -5.5}}));
  // refused: values of the wrong type, another schema, another major version, no facts
  expect_left(with("/ranks/0/facts/identity/hostname"_json_pointer, 5));
  expect_left(with("/ranks/0/facts/shm"_json_pointer, "not an object"));
  expect_left(with("/checks/0/status"_json_pointer, "BROKEN"));
  expect_left(with("/checks/0/evidence"_json_pointer, {1, 2}));
  expect_left(with("/checks/0/ranks"_json_pointer, {99}));
  expect_left(with("/schema"_json_pointer, "preflight/v2"));
  expect_left(with("/tool/version"_json_pointer, "99.0.0"));
  expect_left(with("/ranks"_json_pointer, json::array()));
  expect_left(with("/world/size"_json_pointer, 0));
  // not JSON, or cut short
  const std::string text = doc.dump();
  expect_left(text.substr(0, text.size() / 2));
  expect_left("[1, 2]");
  expect_left("");
}

}  // namespace
}  // namespace cli_merge_fast_test
}  // namespace preflight
