// SPDX-License-Identifier: MIT
#include "launcher/cli.hpp"

#include <gtest/gtest.h>

namespace preflight {
namespace {

Cli parse(std::vector<std::string> args) {
  args.insert(args.begin(), "preflight");
  return parse_cli(args);
}

TEST(Cli, DefaultsToRun) {
  const Cli c = parse({});
  EXPECT_EQ(c.command, Command::Run);
  EXPECT_EQ(c.options.format, Format::Text);
  EXPECT_DOUBLE_EQ(c.options.timeout_s, 60.0);
  EXPECT_FALSE(c.options.profile.has_value());
}

TEST(Cli, ParsesEveryKindOfValue) {
  const Cli c = parse({"run", "--profile", "image", "--only", "net.*,shm.*", "--only", "host.memory", "--format", "json",
                       "--timeout", "12.5", "--strict", "--expect-gpus", "8", "--model-params", "7B", "--zero-stage", "2",
                       "--ranks-per-node", "8", "--allreduce-bytes", "64M", "--target-gpu", "8.0,9.0", "-v"});
  EXPECT_EQ(c.options.profile, Profile::Image);
  EXPECT_EQ(c.options.only, (std::vector<std::string>{"net.*", "shm.*", "host.memory"}));
  EXPECT_EQ(c.options.format, Format::Json);
  EXPECT_DOUBLE_EQ(c.options.timeout_s, 12.5);
  EXPECT_TRUE(c.options.strict);
  EXPECT_TRUE(c.options.verbose);
  EXPECT_EQ(c.options.expect_gpus, 8);
  EXPECT_EQ(c.options.model_params, 7'000'000'000ull);
  EXPECT_EQ(c.options.zero_stage, 2);
  EXPECT_EQ(c.options.ranks_per_node, 8);
  EXPECT_EQ(c.options.allreduce_bytes, 64ull << 20);
  EXPECT_EQ(c.options.target_gpus, (std::vector<std::string>{"8.0", "9.0"}));
}

TEST(Cli, CommandsAndTheirArguments) {
  EXPECT_EQ(parse({"list"}).command, Command::List);
  const Cli e = parse({"explain", "shm.capacity"});
  EXPECT_EQ(e.command, Command::Explain);
  EXPECT_EQ(e.args, std::vector<std::string>{"shm.capacity"});
  EXPECT_EQ(parse({"--version"}).command, Command::Version);
  EXPECT_EQ(parse({"--help"}).command, Command::Help);
  EXPECT_THROW(parse({"explain"}), UsageError);
  EXPECT_THROW(parse({"explain", "a", "b"}), UsageError);
  EXPECT_THROW(parse({"run", "stray"}), UsageError);
  EXPECT_THROW(parse({"merge-all"}), UsageError);
}

TEST(Cli, BadValuesAreUsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--format", "bogus"}, {"--timeout", "abc"}, {"--timeout", "0"}, {"--timeout", "nan"},
           {"--zero-stage", "4"}, {"--zero-stage", "x"}, {"--expect-gpus", "-1"}, {"--ranks-per-node", "0"},
           {"--model-params", "many"}, {"--model-params", "0"}, {"--allreduce-bytes", "1Q"}, {"--color", "blue"},
           {"--profile", "cluster"}, {"--min-busbw", "-3"}, {"--no-such-option"}, {"--timeout"}}) {
    EXPECT_THROW(parse(args), UsageError) << args.front();
  }
}

TEST(Cli, ParameterCounts) {
  EXPECT_EQ(parse_count("7B"), 7'000'000'000ull);
  EXPECT_EQ(parse_count("70e9"), 70'000'000'000ull);
  EXPECT_EQ(parse_count("1.5T"), 1'500'000'000'000ull);
  EXPECT_EQ(parse_count("125M"), 125'000'000ull);
  EXPECT_EQ(parse_count("12345"), 12345u);
  EXPECT_FALSE(parse_count("B"));
  EXPECT_FALSE(parse_count("-7B"));
  EXPECT_FALSE(parse_count("7 billion"));
}

}  // namespace
}  // namespace preflight

namespace preflight {
namespace {

std::string usage_error(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// --python names the interpreter the job runs: resolved on PATH like the shell does, and refused
// at option parsing when it cannot run (a usage error, exit 2, not an UNKNOWN after every probe).
TEST(Cli, PythonIsAnExecutableResolvedOnPath) {
  EXPECT_EQ(parse({"--python", "sh"}).options.python.substr(0, 1), "/");  // found on PATH
  EXPECT_EQ(parse({"--python", "/bin/sh"}).options.python, "/bin/sh");
  EXPECT_NE(usage_error({"--python", "/nonexistent/bin/python3"}).find("--python '/nonexistent/bin/python3'"),
            std::string::npos);
  EXPECT_NE(usage_error({"--python", "/etc/hostname"}).find("not executable"), std::string::npos);
  EXPECT_NE(usage_error({"--python", "/"}).find("not executable"), std::string::npos);  // a directory
  EXPECT_NE(usage_error({"--python", "no-such-python-anywhere"}).find("not found on PATH"), std::string::npos);
  EXPECT_NE(usage_error({"--python", ""}).find("--python"), std::string::npos);
  // Under --sysroot it names a file of the captured tree, which is not run.
  EXPECT_EQ(parse({"--sysroot", "/tmp", "--python", "/opt/venv/bin/python"}).options.python, "/opt/venv/bin/python");
  EXPECT_NE(usage_error({"--sysroot", "/tmp", "--python", "python3"}).find("absolute"), std::string::npos);
}

}  // namespace
}  // namespace preflight
