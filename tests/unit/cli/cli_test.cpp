// SPDX-License-Identifier: MIT
#include "cli/cli.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/text.hpp"

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
  const Cli c = parse({"run",
                       "--profile",
                       "image",
                       "--only",
                       "net.*,shm.*",
                       "--only",
                       "host.memory",
                       "--format",
                       "json",
                       "--timeout",
                       "12.5",
                       "--strict",
                       "--expect-gpus",
                       "8",
                       "--model-params",
                       "7B",
                       "--zero-stage",
                       "2",
                       "--ranks-per-node",
                       "8",
                       "--allreduce-bytes",
                       "64M",
                       "--target-gpu",
                       "8.0,9.0",
                       "-v"});
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
  EXPECT_EQ(c.options.allreduce_bytes, std::optional<std::uint64_t>(64ull << 20));
  EXPECT_EQ(c.options.target_gpus, (std::vector<std::string>{"8.0", "9.0"}));
}

TEST(Cli, InputPathsAreAbsoluteAndMustExist) {
  // A relative --site-packages, --nccl-lib, --cuda-runtime or --python is the working directory's;
  // under --sysroot the captured root's. Given but missing: a usage error (exit 2), never dropped.
  char tmpl[] = "/tmp/preflight-cli-paths-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  ASSERT_EQ(::mkdir((root + "/sites").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((root + "/sites/cpu").c_str(), 0755), 0);
  std::ofstream(root + "/libnccl.so.2") << "x";
  char old[4096];
  ASSERT_NE(::getcwd(old, sizeof old), nullptr);
  ASSERT_EQ(::chdir(root.c_str()), 0);
  const Cli c = parse({"--site-packages", "sites/cpu", "--site-packages", "./sites/../sites/cpu/", "--nccl-lib",
                       "./libnccl.so.2", "--cuda-runtime", "libcudart.so.12"});
  EXPECT_EQ(c.options.site_packages, (std::vector<std::string>{root + "/sites/cpu", root + "/sites/cpu/"}));
  EXPECT_EQ(c.options.nccl_lib, root + "/libnccl.so.2");
  EXPECT_EQ(c.options.cuda_runtimes, (std::vector<std::string>{"libcudart.so.12"}));  // a name dlopen searches
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--site-packages", "sites/gpu"}, {"--nccl-lib", "lib/libnccl.so.2"}, {"--cuda-runtime", "./none.so"}}) {
    try {
      parse(bad);
      ADD_FAILURE() << bad[0] << " " << bad[1] << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
    }
  }
  // Under --sysroot: from the captured root, whatever the working directory.
  const Cli under = parse({"--sysroot", root, "--site-packages", "sites/cpu"});
  EXPECT_EQ(under.options.site_packages, (std::vector<std::string>{"/sites/cpu"}));
  EXPECT_THROW(parse({"--sysroot", root, "--site-packages", "/opt/none"}), UsageError);
  ASSERT_EQ(::chdir(old), 0);
  std::remove((root + "/libnccl.so.2").c_str());
  ::rmdir((root + "/sites/cpu").c_str());
  ::rmdir((root + "/sites").c_str());
  ::rmdir(root.c_str());
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
  for (const auto& args : std::vector<std::vector<std::string>>{{"--format", "bogus"},
                                                                {"--timeout", "abc"},
                                                                {"--timeout", "0"},
                                                                {"--timeout", "nan"},
                                                                {"--zero-stage", "4"},
                                                                {"--zero-stage", "x"},
                                                                {"--expect-gpus", "-1"},
                                                                {"--ranks-per-node", "0"},
                                                                {"--model-params", "many"},
                                                                {"--model-params", "0"},
                                                                {"--allreduce-bytes", "1Q"},
                                                                {"--color", "blue"},
                                                                {"--profile", "cluster"},
                                                                {"--min-busbw", "-3"},
                                                                {"--no-such-option"},
                                                                {"--timeout"},
                                                                // an empty path is not "this machine"
                                                                {"--sysroot", ""},
                                                                {"--sysroot", " "},
                                                                {"--topology-xml", ""},
                                                                {"--matrix", ""},
                                                                {"--json-per-rank", ""},
                                                                {"--config", ""}}) {
    EXPECT_THROW(parse(args), UsageError) << args.front();
  }
}

std::string usage_error(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Cli, MergeTakesItsFilesInOrderWhereverTheOptionsAre) {
  using Files = std::vector<std::string>;
  EXPECT_EQ(parse({"merge", "a.json", "b.json", "c.json"}).args, (Files{"a.json", "b.json", "c.json"}));
  // The first of the trailing names is an option's value here, the others are files.
  const Cli out = parse({"merge", "--json", "out.json", "a.json", "b.json"});
  EXPECT_EQ(out.args, (Files{"a.json", "b.json"}));
  EXPECT_EQ(out.options.json_file, "out.json");
  EXPECT_EQ(parse({"merge", "a.json", "--strict", "b.json", "c.json"}).args, (Files{"a.json", "b.json", "c.json"}));
  EXPECT_EQ(parse({"merge", "a.json", "b.json", "--json", "out.json"}).args, (Files{"a.json", "b.json"}));
  EXPECT_EQ(parse({"merge", "--strict", "--", "-odd.json", "b.json"}).args, (Files{"-odd.json", "b.json"}));
  EXPECT_EQ(usage_error({"run", "--strict", "stray", "more"}), "unexpected argument 'stray'");
  // A shell glob of many files: every one, in order.
  std::vector<std::string> line = {"merge", "--format", "json"};
  Files many;
  for (int i = 0; i < 20000; ++i) many.push_back("r/preflight-rank-" + std::to_string(i) + ".json");
  line.insert(line.end(), many.begin(), many.end());
  EXPECT_EQ(parse(line).args, many);
}

TEST(Cli, ASelectionThatMatchesNoCheckIsAUsageError) {
  EXPECT_EQ(usage_error({"--only", "shm.capacty"}),
            "--only 'shm.capacty' matches no check (did you mean shm.capacity?)");
  EXPECT_NE(usage_error({"--only", "foo*"}).find("matches no check (check ids are AREA.NAME, areas "),
            std::string::npos);
  EXPECT_NE(usage_error({"--only", ""}).find("selects no check"), std::string::npos);
  EXPECT_NE(usage_error({"--only", " , "}).find("selects no check"), std::string::npos);
  EXPECT_NE(usage_error({"--skip", ""}).find("names no check"), std::string::npos);
  EXPECT_EQ(usage_error({"--skip", "nett.*"}).find("--skip 'nett.*' matches no check"), 0u);
  EXPECT_EQ(usage_error({"--only", "shm.capacity", "--skip", "shm.*"}),
            "--only 'shm.capacity' with --skip 'shm.*' selects no check");
  EXPECT_EQ(usage_error({"merge", "--only", "shm.capacty", "f.json"}).find("--only 'shm.capacty' matches no check"),
            0u);
  // Globs that match something, and --skip of part of --only, are fine.
  EXPECT_EQ(usage_error({"--only", "net.*,shm.capacity", "--skip", "net.ib"}), "no error");
  EXPECT_EQ(usage_error({"--only", "*"}), "no error");
  // list and explain take no selection to check.
  EXPECT_EQ(parse({"list", "--only", "nothing.here"}).command, Command::List);
}

TEST(Cli, AllreduceSizesTheTransportsCannotRunAreRefused) {
  // Never silently rounded (3 -> 16 B) or capped (100G -> 1 MiB): refused, with the limit and why.
  const std::string tiny = usage_error({"--allreduce-bytes", "3"});
  EXPECT_EQ(tiny.find("--allreduce-bytes '3': expected a multiple of 8 bytes from 16 B to 8 GiB: "), 0u) << tiny;
  EXPECT_NE(tiny.find("whole 8-byte integers"), std::string::npos) << tiny;
  EXPECT_NE(tiny.find("a send and a receive buffer"), std::string::npos) << tiny;
  EXPECT_EQ(usage_error({"--allreduce-bytes", "100G"}).find("--allreduce-bytes '100G': expected a multiple of 8 bytes"),
            0u);
  EXPECT_EQ(usage_error({"--allreduce-bytes", "20"}).find("--allreduce-bytes '20': expected"), 0u);
  EXPECT_EQ(usage_error({"--allreduce-bytes", "8"}).find("--allreduce-bytes '8': expected"), 0u);
  EXPECT_EQ(parse({"--allreduce-bytes", "16"}).options.allreduce_bytes, std::optional<std::uint64_t>(16));
  EXPECT_FALSE(parse({}).options.allreduce_bytes.has_value());  // the transport's default
  EXPECT_EQ(parse({"--allreduce-bytes", "8G"}).options.allreduce_bytes, std::optional<std::uint64_t>(8ull << 30));
}

TEST(Cli, ModelParallelDegrees) {
  const Cli c = parse({"--tensor-parallel", "8", "--pipeline-parallel", "16", "--expect-world-size", "1024"});
  EXPECT_EQ(c.options.tensor_parallel, 8);
  EXPECT_EQ(c.options.pipeline_parallel, 16);
  EXPECT_FALSE(parse({}).options.tensor_parallel.has_value());
  EXPECT_EQ(usage_error({"--tensor-parallel", "0"}), "--tensor-parallel '0': expected a whole number ≥ 1");
  EXPECT_EQ(usage_error({"--pipeline-parallel", "-2"}), "--pipeline-parallel '-2': expected a whole number ≥ 1");
  EXPECT_EQ(usage_error({"--tensor-parallel", "x"}), "--tensor-parallel 'x': expected a whole number ≥ 1");
  const std::string layout =
      usage_error({"--tensor-parallel", "8", "--pipeline-parallel", "16", "--expect-world-size", "1000"});
  EXPECT_EQ(layout.find("--tensor-parallel 8 × --pipeline-parallel 16 = 128 does not divide --expect-world-size 1000"),
            0u)
      << layout;
  // Without a known world size there is nothing to divide.
  EXPECT_EQ(usage_error({"--tensor-parallel", "8", "--pipeline-parallel", "3"}), "no error");
}

TEST(Cli, AnEmptyReportFileNameIsAUsageError) {
  EXPECT_EQ(usage_error({"--json", ""}), "--json '': expected a file name");
  EXPECT_EQ(usage_error({"--prom", " "}), "--prom '': expected a file name");
}

TEST(Cli, TimeoutHasAMaximum) {
  EXPECT_DOUBLE_EQ(parse({"--timeout", "86400"}).options.timeout_s, kMaxTimeoutSeconds);
  EXPECT_NE(usage_error({"--timeout", "1e12"}).find("up to 86400 (24 h)"), std::string::npos);
  EXPECT_NE(usage_error({"--timeout", "86400.5"}).find("up to 86400"), std::string::npos);
  EXPECT_NE(usage_error({"--timeout", "1e999"}).find("--timeout '1e999'"), std::string::npos);
}

std::string write_config(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "preflight-cli-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(Cli, ConfigValuesLoseMatchingQuotesAndABom) {
  const std::string path = write_config("quoted.ini",
                                        "\xEF\xBB\xBF# site\nonly = \"shm.capacity\"\nformat = 'json'\n"
                                        "json = \"/tmp/a b.json\"\nsysroot = \"/x'\n");
  const Cli c = parse({"--config", path});
  EXPECT_EQ(c.options.only, std::vector<std::string>{"shm.capacity"});
  EXPECT_EQ(c.options.format, Format::Json);
  EXPECT_EQ(c.options.json_file, "/tmp/a b.json");
  EXPECT_EQ(c.options.sysroot, "\"/x'");  // quotes that do not match stay
  std::remove(path.c_str());
  // A file's value is not quoted: its line and option are named, and the command line shows why.
  const std::string typo = write_config("typo.ini", "only = \"shm.capacty\"\n");
  EXPECT_EQ(usage_error({"--config", typo}),
            "--config '" + typo +
                "': line 1: the value of option 'only' is not accepted (the value is not shown: give it on the "
                "command line to see why)");
  EXPECT_NE(usage_error({"--only", "shm.capacty"}).find("did you mean shm.capacity?"), std::string::npos);
  std::remove(typo.c_str());
}

/// The message a config file holding `text` gets, which must name `expected` and never `secret`.
void expect_config_refused(const std::string& name, const std::string& text, const std::string& expected,
                           const std::string& secret) {
  const std::string path = write_config(name, text);
  const std::string message = usage_error({"--config", path});
  EXPECT_NE(message.find("--config '" + path + "': " + expected), std::string::npos) << message;
  EXPECT_EQ(message.find(secret), std::string::npos) << message;
  std::remove(path.c_str());
}

TEST(Cli, ConfigMessagesNameTheLineAndNeverQuoteTheFile) {
  expect_config_refused("shadow", "root:$6$SECRETHASH:19000:0:99999:7:::\n", "line 1: a line without '='",
                        "SECRETHASH");
  expect_config_refused("environ", std::string("GHP_0123SECRET=x\0PATH=/bin\0", 28), "line 1: a NUL byte",
                        "GHP_0123SECRET");
  expect_config_refused("dotenv", "# tokens\n\nGHP_0123SECRET = abc\n", "line 3: an unknown option name",
                        "GHP_0123SECRET");
  expect_config_refused("value", "timeout = 30\nformat = GHP_0123SECRET\n",
                        "line 2: the value of option 'format' is not accepted", "GHP_0123SECRET");
  expect_config_refused("bool", "strict = GHP_0123SECRET\n", "line 1: the value of option 'strict' is not accepted",
                        "GHP_0123SECRET");
  // (a value no path can hold: the file's name holds the pid)
  expect_config_refused("twice", "timeout = 30\ntimeout = 987654321\n", "line 2: option 'timeout' again", "987654321");
  expect_config_refused("section", "[GHP_0123SECRET]\n", "line 1: a section header", "GHP_0123SECRET");
  expect_config_refused("noname", "= GHP_0123SECRET\n", "line 1: no option name before '='", "GHP_0123SECRET");
  // The command line's own bad value is still quoted: it is the user's.
  const std::string good = write_config("good.ini", "timeout = 30\n");
  EXPECT_NE(usage_error({"--config", good, "--format", "bogus"}).find("--format 'bogus'"), std::string::npos);
  std::remove(good.c_str());
}

TEST(Cli, ConfigMustBeABoundedRegularFile) {
  const std::string fifo = ::testing::TempDir() + "preflight-cli-" + std::to_string(::getpid()) + "-fifo.ini";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(usage_error({"--config", fifo}), "--config '" + fifo + "': a FIFO, not a regular file: not a config file");
  std::remove(fifo.c_str());
  const std::string big = write_config("big.ini", "# " + std::string(1 << 20, 'x') + "\n");
  EXPECT_EQ(usage_error({"--config", big}), "--config '" + big + "': larger than 1 MiB: not a config file");
  std::remove(big.c_str());
  EXPECT_NE(usage_error({"--config", "/dev/null"}).find("a character device, not a regular file"), std::string::npos);
}

TEST(Cli, CheckpointDirIsRepeatableAndKeptAsGiven) {
  EXPECT_TRUE(parse({}).options.checkpoint_dirs.empty());  // host.disk: the current directory
  const Cli c = parse({"--checkpoint-dir", "/lustre/ckpt", "--checkpoint-dir", "runs/a,b", "--checkpoint-dir=/scratch/",
                       "--checkpoint-dir", "/lustre/ckpt"});
  // In the order given, each once; a comma is part of a path, not a list.
  EXPECT_EQ(c.options.checkpoint_dirs, (std::vector<std::string>{"/lustre/ckpt", "runs/a,b", "/scratch/"}));
  EXPECT_EQ(usage_error({"--checkpoint-dir", ""}),
            "--checkpoint-dir '': expected a directory (where the job writes its checkpoints)");
  EXPECT_THROW(parse({"--checkpoint-dir"}), UsageError);

  // From a config file, repeated; the command line wins over the file.
  const std::string path = write_config("ckpt.ini", "checkpoint-dir = /a\ncheckpoint-dir = \"/b c\"\n");
  EXPECT_EQ(parse({"--config", path}).options.checkpoint_dirs, (std::vector<std::string>{"/a", "/b c"}));
  EXPECT_EQ(parse({"--config", path, "--checkpoint-dir", "/z"}).options.checkpoint_dirs,
            std::vector<std::string>{"/z"});
  std::remove(path.c_str());
  // capture takes it too: it decides which directories the capture records.
  EXPECT_EQ(parse({"capture", "/tmp/x", "--checkpoint-dir", "/ckpt"}).options.checkpoint_dirs,
            std::vector<std::string>{"/ckpt"});
}

TEST(Cli, ConfigThatIsADirectoryIsAUsageError) {
  EXPECT_NE(usage_error({"--config", ::testing::TempDir()}).find("is a directory, not a file"), std::string::npos);
  EXPECT_NE(usage_error({"--config", "/nonexistent/preflight.ini"}).find("cannot read the file"), std::string::npos);
}

TEST(Cli, TargetGpuAcceptsTheSpellingsUsersType) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"9.0", "9.0"},        {"sm_90", "9.0"},    {"90", "9.0"},      {"9.0a", "9.0"},         {"sm_90a", "9.0"},
      {"compute_90", "9.0"}, {"SM_90", "9.0"},    {"10.0", "10.0"},   {"100", "10.0"},         {"sm_100", "10.0"},
      {"sm_100f", "10.0"},   {"sm_100a", "10.0"}, {"120", "12.0"},    {"12.1", "12.1"},        {"75", "7.5"},
      {"8.6+PTX", "8.6"},    {" 8.0 ", "8.0"},    {"sm_103", "10.3"}, {"compute_120a", "12.0"}};
  for (const auto& [text, cc] : cases) {
    EXPECT_EQ(parse_target_gpu(text).value_or("nullopt"), cc) << text;
    const Cli c = parse({"--profile", "image", "--target-gpu", text});
    EXPECT_EQ(c.options.target_gpus, std::vector<std::string>{cc}) << text;
    EXPECT_FALSE(c.options.target_cpu_only);
  }
  // Normalised, in order, without repeats.
  EXPECT_EQ(parse({"--target-gpu", "sm_90,9.0a,100", "--target-gpu", "8.0"}).options.target_gpus,
            (std::vector<std::string>{"9.0", "10.0", "8.0"}));
}

TEST(Cli, TargetGpuNoneIsACpuOnlyImage) {
  for (const char* none : {"none", "NONE", "None"}) {
    const Cli c = parse({"--profile", "image", "--target-gpu", none});
    EXPECT_TRUE(c.options.target_cpu_only) << none;
    EXPECT_TRUE(c.options.target_gpus.empty()) << none;
  }
  EXPECT_FALSE(parse({"--profile", "image"}).options.target_cpu_only);  // not given: unknown, not CPU-only
  for (const auto& args : std::vector<std::vector<std::string>>{{"--target-gpu", "none,9.0"},
                                                                {"--target-gpu", "9.0", "--target-gpu", "none"},
                                                                {"--target-gpu", "none,none"}}) {
    const std::string e = usage_error(args);
    EXPECT_TRUE(e.starts_with("--target-gpu none (a CPU-only image) cannot be combined")) << e;
  }
}

TEST(Cli, TargetGpuThatDoesNotParseIsAUsageError) {
  for (const char* bad : {"nine", "9", "9.", ".0", "9.00", "sm_9.0", "sm_", "1000", "0.5", "05", "sm_90x", "9.0b",
                          "-9.0", "9,0;", "ampere", "", ","}) {
    EXPECT_FALSE(parse_target_gpu(bad).has_value()) << bad;
    const std::string e = bad[0] == '-' ? usage_error({"--profile", "image", std::string("--target-gpu=") + bad})
                                        : usage_error({"--profile", "image", "--target-gpu", bad});
    EXPECT_TRUE(e.starts_with("--target-gpu '")) << bad << ": " << e;
    EXPECT_TRUE(e.find("9.0, sm_90, 90, 9.0a") != std::string::npos) << e;
    EXPECT_TRUE(e.find("none for a CPU-only image") != std::string::npos) << e;
  }
}

TEST(Cli, TargetDriverIsCheckedAtOptionParsing) {
  for (const char* good : {"535", "535.104", "535.104.05", "700", " 550.54.15 "}) {
    EXPECT_TRUE(is_target_driver(good)) << good;
    EXPECT_EQ(parse({"--profile", "image", "--target-driver", good}).options.target_driver, std::string(trim(good)));
  }
  for (const char* bad : {"abc", "", " ", "-535", "535.", ".535", "535..104", "535.104.05.1", "r535", "R535", "535a",
                          "0", "0.1", "5 35", "1e3", "9999999.1"}) {
    EXPECT_FALSE(is_target_driver(bad)) << bad;
    const std::string e = bad[0] == '-' ? usage_error({"--profile", "image", std::string("--target-driver=") + bad})
                                        : usage_error({"--profile", "image", "--target-driver", bad});
    EXPECT_TRUE(e.starts_with("--target-driver '")) << bad << ": " << e;
    EXPECT_TRUE(e.find("535, 535.104 or 535.104.05") != std::string::npos) << e;
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

// --python names the interpreter the job runs: resolved on PATH like the shell does, and refused
// at option parsing when it cannot run (a usage error, exit 2, not an UNKNOWN after every probe).
TEST(Cli, PythonIsAnExecutableResolvedOnPath) {
  EXPECT_EQ(parse({"--python", "sh"}).options.python.substr(0, 1), "/");  // found on PATH
  EXPECT_EQ(parse({"--python", "/bin/sh"}).options.python, "/bin/sh");
  EXPECT_NE(usage_error({"--python", "/nonexistent/bin/python3"}).find("--python '/nonexistent/bin/python3'"),
            std::string::npos);
  const std::string plain = ::testing::TempDir() + "cli_test_not_executable";
  std::ofstream(plain) << "#!/bin/sh\n";
  ::chmod(plain.c_str(), 0644);
  EXPECT_NE(usage_error({"--python", plain}).find("not executable"), std::string::npos);
  ::unlink(plain.c_str());
  EXPECT_NE(usage_error({"--python", "/"}).find("not executable"), std::string::npos);  // a directory
  EXPECT_NE(usage_error({"--python", "no-such-python-anywhere"}).find("not found on PATH"), std::string::npos);
  EXPECT_NE(usage_error({"--python", ""}).find("--python"), std::string::npos);
  // Under --sysroot it names a file of the captured tree, which is not run.
  EXPECT_EQ(parse({"--sysroot", "/tmp", "--python", "/opt/venv/bin/python"}).options.python, "/opt/venv/bin/python");
  EXPECT_NE(usage_error({"--sysroot", "/tmp", "--python", "python3"}).find("absolute"), std::string::npos);
}

}  // namespace
}  // namespace preflight
