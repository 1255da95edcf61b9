// SPDX-License-Identifier: MIT
// Inputs the fuzz targets (tests/fuzz) found to crash, exhaust memory or break a parser's promise,
// pinned so the fixes stay.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "cli/cli.hpp"
#include "cli/merge.hpp"
#include "core/json_util.hpp"
#include "core/launch.hpp"
#include "test_paths.hpp"
#include "transport/payload.hpp"

namespace preflight {
namespace core_fuzz_regressions_test {
namespace {

std::string repeated(const std::string& item, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + item;
  return out;
}

TEST(FuzzRegressions, TasksPerNodeThatExpandsToGigabytesIsMalformed) {
  // fuzz_launch_env: 400 entries of "1(x1000000)" (4.4 KB; an environment value may hold 128 KiB)
  // expanded to 400 million numbers before the fix.
  EXPECT_FALSE(parse_tasks_per_node(repeated("1(x1000000)", 400)).has_value());
  EXPECT_FALSE(parse_tasks_per_node("1(x1000000),2").has_value());
  const auto one_million = parse_tasks_per_node("8(x999999),4");
  ASSERT_TRUE(one_million.has_value());
  EXPECT_EQ(one_million->size(), kMaxTasksPerNodeEntries);
  EXPECT_EQ(one_million->back(), 4);
  const LaunchView view = detect_launchers(EnvSnapshot(
      {{"SLURM_PROCID", "0"}, {"SLURM_NODEID", "0"}, {"SLURM_TASKS_PER_NODE", repeated("1(x1000000)", 400)}}));
  ASSERT_FALSE(view.launchers.empty());
  EXPECT_FALSE(view.launchers.front().errors.empty());
}

std::string merge_refusal(const std::string& text) {
  try {
    parse_result_file("node-a.json", text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(FuzzRegressions, ResultFileWithANumberBeyondDoubleIsRefusedByName) {
  // fuzz_merge_json: nlohmann::json throws out_of_range (406), not parse_error, for a number no
  // double holds; it escaped merge as an internal error (exit 5) instead of a refused file (exit 2).
  EXPECT_EQ(merge_refusal("11e309\"").rfind("node-a.json: not valid JSON", 0), 0u) << merge_refusal("11e309\"");
  EXPECT_EQ(merge_refusal("{\"schema\": \"preflight/v1\", \"world\": {\"size\": 1e400}}")
                .rfind("node-a.json: not valid JSON", 0),
            0u);
}

TEST(FuzzRegressions, FloatInAnIntegerFieldOfAResultFileIsRefused) {
  // fuzz_merge_json: a 123-digit "cc_major" is read as a double and cast to int by nlohmann::json
  // (undefined behaviour; INT_MIN without sanitizers). Such a file is refused by name and place.
  std::ifstream in(preflight::test_paths::source_dir() + "/tests/fuzz/known/merge_json-float-to-int.json");
  ASSERT_TRUE(in.good());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string why = merge_refusal(text);
  EXPECT_EQ(why.rfind("node-a.json: ", 0), 0u) << why;
  EXPECT_NE(why.find("has a number out of range at /gpu/"), std::string::npos) << why;
}

TEST(FuzzRegressions, FloatOutOfRangeNamesWhereItIs) {
  EXPECT_EQ(float_out_of_range(nlohmann::json::parse(R"({"a": {"b": [1, 2.5, 1e10]}, "c": 3})")), "/a/b/2");
  EXPECT_EQ(float_out_of_range(nlohmann::json::parse(R"({"x/y": {"~": -7.0}})")), "/x~1y/~0");
  EXPECT_EQ(float_out_of_range(nlohmann::json::parse(R"({"seconds": 0.25, "gbps": 812.5, "n": 99999999999})")),
            std::nullopt);  // integers of any size are nlohmann's to check; small floats are facts
  EXPECT_EQ(float_out_of_range(nlohmann::json(std::nan(""))), "/");
  EXPECT_EQ(float_out_of_range(nlohmann::json(-0.5)), std::nullopt);
}

TEST(FuzzRegressions, PayloadWithAFloatOutOfRangeInItsFactsIsRefused) {
  RankPayload p;
  p.rank = 3;
  p.facts.probe_seconds["gpu_driver"] = 1e300;  // CBOR carries what JSON text would round off
  const DecodedPayload decoded = decode_payload(encode_payload(p), 3);
  EXPECT_FALSE(decoded.payload.has_value());
  EXPECT_NE(decoded.error.find("number out of range in its facts at /probe_seconds/gpu_driver"), std::string::npos)
      << decoded.error;
  p.facts.probe_seconds["gpu_driver"] = 0.5;
  EXPECT_TRUE(decode_payload(encode_payload(p), 3).payload.has_value());
}

TEST(FuzzRegressions, ConfigKeyHoldingBoostsPlaceholderIsAUsageError) {
  // fuzz_config_file: Boost.Program_options' what() replaced "%canonical_option%" in its message
  // with the option's name until none was left; an unknown key holding that text never finished.
  // The file is now read by preflight's own reader, which quotes nothing of it.
  char path[] = "/tmp/preflight-fuzz-config.XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "x'%canonical_option%'y = 1\n";
  std::string message;
  try {
    parse_cli({"preflight", "--config", path});
  } catch (const UsageError& e) {
    message = e.what();
  }
  std::remove(path);
  // It finishes, and names the line and the kind of token, never the file's text.
  EXPECT_NE(message.find("line 1: an unknown option name"), std::string::npos) << message;
  EXPECT_EQ(message.find("canonical_option"), std::string::npos) << message;
}

}  // namespace
}  // namespace core_fuzz_regressions_test
}  // namespace preflight
