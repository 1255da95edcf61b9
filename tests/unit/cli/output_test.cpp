// SPDX-License-Identifier: MIT
// Report files (cli/output.hpp): how each kind of path is written, and what is refused before
// anything is probed; the test faults seam (job/test_faults.hpp). The devices, FIFOs, full file
// systems and descriptors are run for real by tests/integration/outputs_test.sh.
#include "cli/output.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli.hpp"
#include "job/test_faults.hpp"

namespace preflight {
namespace cli_output_test {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("preflight-output-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string usage_error(const std::string& option, const std::string& path) {
  try {
    OutputTarget::check(option, path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(OutputTarget, ANewFileIsWrittenByRenameWithTheUmasksMode) {
  TempDir d;
  const OutputTarget t = OutputTarget::check("--json", d / "r.json");
  EXPECT_EQ(t.kind, OutputTarget::Kind::Replace);
  EXPECT_FALSE(t.exists);
  t.write("{}\n");
  EXPECT_EQ(slurp(d / "r.json"), "{}\n");
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat((d / "r.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  for (const auto& entry : fs::directory_iterator(d.path)) EXPECT_EQ(entry.path().filename(), "r.json");
}

TEST(OutputTarget, ARegularFileKeepsItsModeAndIsReplacedWhole) {
  TempDir d;
  const std::string path = d / "r.prom";
  std::ofstream(path) << "old\n";
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  const OutputTarget t = OutputTarget::check("--prom", path);
  EXPECT_EQ(t.kind, OutputTarget::Kind::Replace);
  t.write("new\n");
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0640u);
  EXPECT_NE(after.st_ino, before.st_ino);  // renamed over: a reader never sees half a file
  EXPECT_EQ(slurp(path), "new\n");
}

TEST(OutputTarget, ASymlinkIsFollowedAndStaysALink) {
  TempDir d;
  std::ofstream(d / "target.json") << "old";
  fs::create_symlink("target.json", d / "link.json");
  fs::create_symlink("link.json", d / "link2.json");
  const OutputTarget t = OutputTarget::check("--json", d / "link2.json");
  EXPECT_EQ(t.where.dir_path + "/" + t.where.name, d / "target.json");
  EXPECT_TRUE(t.where.via_link);
  t.write("new");
  EXPECT_TRUE(fs::is_symlink(d / "link.json"));
  EXPECT_TRUE(fs::is_symlink(d / "link2.json"));
  EXPECT_EQ(slurp(d / "target.json"), "new");
  fs::create_symlink("loop-b", d / "loop-a");
  fs::create_symlink("loop-a", d / "loop-b");
  EXPECT_NE(usage_error("--json", d / "loop-a").find("Too many levels of symbolic links"), std::string::npos);
}

TEST(OutputTarget, APlantedLinkOrFileInAStickyDirectoryIsRefusedAndNothingIsWritten) {
  if (::geteuid() != 0) GTEST_SKIP() << "planting as another user needs root";
  TempDir d;
  fs::create_directories(d.path / "tmp");
  ASSERT_EQ(::chmod((d / "tmp").c_str(), 01777), 0);
  std::ofstream(d / "victim") << "victim";
  fs::create_symlink(d / "victim", d / "tmp/evil.json");
  ASSERT_EQ(::lchown((d / "tmp/evil.json").c_str(), 65534, 65534), 0);
  const std::string why = usage_error("--json", d / "tmp/evil.json");
  EXPECT_NE(why.find("'" + (d / "tmp/evil.json") + "' is a symlink owned by uid 65534"), std::string::npos) << why;
  std::ofstream(d / "tmp/planted.json") << "planted";
  ASSERT_EQ(::chown((d / "tmp/planted.json").c_str(), 65534, 65534), 0);
  EXPECT_NE(usage_error("--prom", d / "tmp/planted.json").find("a file owned by uid 65534"), std::string::npos);
  EXPECT_EQ(slurp(d / "victim"), "victim");
  EXPECT_EQ(slurp(d / "tmp/planted.json"), "planted");

  // Another user's file reached through the caller's own link is written in place, never renamed over.
  std::ofstream(d / "theirs.json") << "old";
  ASSERT_EQ(::chown((d / "theirs.json").c_str(), 65534, 65534), 0);
  fs::create_symlink(d / "theirs.json", d / "mine.json");
  struct stat before {};
  ASSERT_EQ(::stat((d / "theirs.json").c_str(), &before), 0);
  const OutputTarget t = OutputTarget::check("--json", d / "mine.json");
  EXPECT_EQ(t.kind, OutputTarget::Kind::InPlace);
  t.write("new");
  struct stat after {};
  ASSERT_EQ(::stat((d / "theirs.json").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_uid, 65534u);
  EXPECT_EQ(slurp(d / "theirs.json"), "new");
}

TEST(OutputTarget, InADirectoryOthersMayChangeANewFileIsMadeAtItsOwnNameExclusively) {
  TempDir d;
  fs::create_directories(d.path / "open");
  ASSERT_EQ(::chmod((d / "open").c_str(), 0777), 0);  // writable by all, not sticky
  const OutputTarget fresh = OutputTarget::check("--json", d / "open/report.json");
  EXPECT_EQ(fresh.kind, OutputTarget::Kind::InPlace) << "no temporary name another user could swap";
  fresh.write("first");
  EXPECT_EQ(slurp(d / "open/report.json"), "first");
  EXPECT_EQ(std::distance(fs::directory_iterator(d.path / "open"), fs::directory_iterator()), 1) << "no temporary left";
  // A name that appeared between the check and the write is not written through.
  const OutputTarget late = OutputTarget::check("--json", d / "open/late.json");
  fs::create_symlink(d / "victim", d / "open/late.json");
  EXPECT_THROW(late.write("x"), OutputError);
  EXPECT_FALSE(fs::exists(d / "victim"));
  // An existing file there is rewritten in place, keeping its inode.
  struct stat before {};
  ASSERT_EQ(::stat((d / "open/report.json").c_str(), &before), 0);
  OutputTarget::check("--json", d / "open/report.json").write("second");
  struct stat after {};
  ASSERT_EQ(::stat((d / "open/report.json").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(slurp(d / "open/report.json"), "second");
  // In the caller's own directory, the usual temporary file and rename.
  EXPECT_EQ(OutputTarget::check("--json", d / "own.json").kind, OutputTarget::Kind::Replace);
}

TEST(EmitReport, AReportPathPlantedDuringTheRunIsAUsageErrorAndNothingIsWritten) {
  if (::geteuid() != 0) GTEST_SKIP() << "planting as another user needs root";
  TempDir d;
  fs::create_directories(d.path / "tmp");
  ASSERT_EQ(::chmod((d / "tmp").c_str(), 01777), 0);
  std::ofstream(d / "victim") << "victim";
  Options options;
  options.json_file = d / "tmp/report.json";
  check_report_files(options);                              // before the run: a new name, accepted
  fs::create_symlink(d / "victim", d / "tmp/report.json");  // planted while the run went on
  ASSERT_EQ(::lchown((d / "tmp/report.json").c_str(), 65534, 65534), 0);
  const EnvSnapshot env;
  EXPECT_EQ(emit_report(Report{}, options, env, 0), 2);
  EXPECT_EQ(slurp(d / "victim"), "victim");
}

TEST(OutputTarget, DevicesAndDescriptorsAreWrittenInPlace) {
  const OutputTarget null = OutputTarget::check("--json", "/dev/null");
  EXPECT_EQ(null.kind, OutputTarget::Kind::InPlace);
  null.write("discarded");
  EXPECT_EQ(fs::status("/dev/null").type(), fs::file_type::character);
  EXPECT_EQ(OutputTarget::check("--json", "/dev/stdout").kind, OutputTarget::Kind::Descriptor);
  EXPECT_EQ(OutputTarget::check("--json", "/dev/stderr").fd, 2);
  EXPECT_EQ(OutputTarget::check("--json", "/proc/self/fd/1").fd, 1);
  if (fs::exists("/dev/full")) {
    try {
      OutputTarget::check("--junit", "/dev/full").write("x");
      ADD_FAILURE() << "/dev/full took the report";
    } catch (const OutputError& e) {
      EXPECT_EQ(std::string(e.what()), "cannot write --junit '/dev/full': No space left on device");
    }
  }
}

TEST(OutputTarget, WhatCannotTakeAReportIsRefusedUpFront) {
  TempDir d;
  EXPECT_EQ(usage_error("--json", d.path.string()),
            "--json '" + d.path.string() + "': is a directory, not a file to write a report to");
  EXPECT_EQ(usage_error("--json", "/nonexistent/dir/r.json"),
            "--json '/nonexistent/dir/r.json': the directory '/nonexistent' does not exist");
  EXPECT_EQ(usage_error("--prom", ""), "--prom '': expected a file name");
  EXPECT_NE(usage_error("--json", "/dev/fd/987").find("descriptor 987 is not open"), std::string::npos);
  std::ofstream(d / "file") << "x";
  EXPECT_NE(usage_error("--json", d / "file/r.json").find("Not a directory"), std::string::npos);
  Options o;
  o.json_file = d / "same";
  o.junit_file = d / "same";
  EXPECT_THROW(check_report_files(o), UsageError);
  o.junit_file = "/dev/stdout";
  o.prom_file = "/dev/stdout";
  EXPECT_EQ(check_report_files(o).size(), 3u);  // two reports on one descriptor: appended, not overwritten
}

TEST(OutputTarget, WriteAllNamesAClosedPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  EXPECT_EQ(write_all(fds[1], "report"), EPIPE);  // not a SIGPIPE that ends the process
  ::close(fds[1]);
}

TEST(TestFaults, ThePreflightBinaryReadsNone) {
  // No reader is installed outside the preflight-faults test binary: the variables change nothing.
  EnvSnapshot env;
  env.set("PREFLIGHT_TEST_HANG_PROBE", "memory");
  env.set("PREFLIGHT_TEST_STOP", "0:probe");
  env.set("PREFLIGHT_TEST_BAD_PAYLOAD", "0:garbage");
  const TestFaults f = test_faults(env);
  EXPECT_EQ(f.hang_probe, "");
  EXPECT_EQ(f.stop_rank, -1);
  EXPECT_EQ(f.kill_rank, -1);
  EXPECT_EQ(f.bad_rank, -1);
}

}  // namespace
}  // namespace cli_output_test
}  // namespace preflight
