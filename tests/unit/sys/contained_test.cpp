// SPDX-License-Identifier: MIT
// sys/contained.hpp: every outcome of a contained helper, provoked with tests/helpers/fake_helper.
#include "sys/contained.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include "test_paths.hpp"

namespace preflight {
namespace sys_contained_test {
namespace {

using namespace std::chrono_literals;

ContainedRequest fake(std::vector<std::string> args, std::chrono::milliseconds deadline = 10s) {
  ContainedRequest r;
  r.executable = preflight::test_paths::fake_helper();
  r.args = std::move(args);
  r.deadline = deadline;
  return r;
}

int count_open_fds() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n;
}

void expect_reaped(const ContainedResult& r) {
  ASSERT_GT(r.pid, 0);
  errno = 0;
  EXPECT_EQ(::waitpid(static_cast<pid_t>(r.pid), nullptr, WNOHANG), -1) << "helper left unreaped";
  EXPECT_EQ(errno, ECHILD);
}

/// Dead: no such process, or a zombie waiting for init (it was reparented; reaping is not ours).
bool process_dead(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const std::size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

TEST(Contained, OkPrintsJson) {
  const ContainedResult r = run_contained(fake({"ok"}));
  EXPECT_EQ(r.outcome, ContainedOutcome::Exited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.clean());
  EXPECT_EQ(r.describe(), "exited with status 0");
  expect_reaped(r);
  const ContainedJson j = parse_contained_json(r);
  ASSERT_TRUE(j.ok()) << j.error;
  EXPECT_EQ(j.value.at("helper"), "fake");
  EXPECT_EQ(j.value.at("gpus").size(), 2u);
}

TEST(Contained, EchoLargeStdinWithoutDeadlock) {
  // 4 MiB is far more than a pipe buffer each way: stdin must be written while stdout is read.
  ContainedRequest req = fake({"echo"});
  req.max_output = 8u << 20;
  req.stdin_data.resize(4u << 20);
  for (std::size_t i = 0; i < req.stdin_data.size(); ++i) req.stdin_data[i] = static_cast<char>('a' + i % 26);
  const ContainedResult r = run_contained(req);
  EXPECT_TRUE(r.clean()) << r.describe();
  EXPECT_EQ(r.out, req.stdin_data);
}

TEST(Contained, StdinToHelperThatDoesNotReadIsNotFatal) {
  // The helper exits without reading: our write gets EPIPE (SIGPIPE must not kill the test).
  ContainedRequest req = fake({"ok"});
  req.stdin_data.assign(2u << 20, 'z');
  const ContainedResult r = run_contained(req);
  EXPECT_TRUE(r.clean()) << r.describe();
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
}

TEST(Contained, Segv) {
  const ContainedResult r = run_contained(fake({"segv"}));
  EXPECT_EQ(r.outcome, ContainedOutcome::Signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.signal_name, "SIGSEGV");
  EXPECT_TRUE(r.describe().starts_with("crashed with SIGSEGV after ")) << r.describe();
  EXPECT_TRUE(r.describe().ends_with(" s")) << r.describe();
  EXPECT_EQ(r.to_probe_error().code, ProbeErrc::Crashed);
  expect_reaped(r);
  const ContainedJson j = parse_contained_json(r);
  EXPECT_FALSE(j.ok());
  EXPECT_TRUE(j.error.starts_with("crashed with SIGSEGV")) << j.error;
}

TEST(Contained, Abort) {
  const ContainedResult r = run_contained(fake({"abort"}));
  EXPECT_EQ(r.outcome, ContainedOutcome::Signaled);
  EXPECT_EQ(r.signal_name, "SIGABRT");
  expect_reaped(r);
}

TEST(Contained, ExitStatus) {
  const ContainedResult r = run_contained(fake({"exit", "3"}));
  EXPECT_EQ(r.outcome, ContainedOutcome::Exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.clean());
  EXPECT_EQ(r.describe(), "exited with status 3");
  EXPECT_EQ(r.stderr_tail(), "fake helper: exiting with status 3 as asked");
  EXPECT_EQ(r.to_probe_error().code, ProbeErrc::ApiError);
  EXPECT_EQ(r.to_probe_error().detail, "exited with status 3: fake helper: exiting with status 3 as asked");
  const ContainedJson j = parse_contained_json(r);
  EXPECT_EQ(j.error, "exited with status 3: fake helper: exiting with status 3 as asked");
}

// Inherited from a parent that ignores SIGCHLD (SIG_IGN survives exec), or set with SA_NOCLDWAIT:
// the kernel would reap the helper itself and its exit status would be lost.
TEST(Contained, AnIgnoredSigchldDoesNotLoseTheHelpersExitStatus) {
  struct sigaction saved {};
  ASSERT_EQ(::sigaction(SIGCHLD, nullptr, &saved), 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, nullptr), 0);
  const ContainedResult ignored = run_contained(fake({"exit", "3"}));
  struct sigaction no_wait {};
  no_wait.sa_handler = SIG_DFL;
  no_wait.sa_flags = SA_NOCLDWAIT;
  ASSERT_EQ(::sigaction(SIGCHLD, &no_wait, nullptr), 0);
  const ContainedResult not_waited = run_contained(fake({"segv"}));
  struct sigaction after {};
  ::sigaction(SIGCHLD, nullptr, &after);
  ::sigaction(SIGCHLD, &saved, nullptr);

  EXPECT_EQ(ignored.outcome, ContainedOutcome::Exited);
  EXPECT_EQ(ignored.exit_code, 3);
  EXPECT_EQ(ignored.describe(), "exited with status 3");
  EXPECT_EQ(not_waited.outcome, ContainedOutcome::Signaled);
  EXPECT_EQ(not_waited.signal, SIGSEGV);
  EXPECT_EQ(after.sa_flags & SA_NOCLDWAIT, 0);
}

TEST(Contained, HangIsKilledAtDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const ContainedResult r = run_contained(fake({"hang"}, 500ms));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.outcome, ContainedOutcome::TimedOut);
  EXPECT_EQ(r.describe(), "did not finish within 0.5 s (killed)");
  EXPECT_EQ(r.to_probe_error().code, ProbeErrc::Timeout);
  EXPECT_GE(r.elapsed_s, 0.49);
  EXPECT_LT(took, 2.0);
  EXPECT_TRUE(r.reaped);
  expect_reaped(r);
}

// The caller stops a helper whose work became pointless: a byte on its cancel descriptor kills the
// process group at once (grandchildren too), long before the deadline; a helper that has already
// ended keeps its own outcome.
TEST(Contained, ACancelledHelperIsKilledAtOnce) {
  int cancel[2];
  ASSERT_EQ(::pipe2(cancel, O_CLOEXEC), 0);
  ContainedRequest req = fake({"hang-child"}, 30s);
  req.cancel_fd = cancel[0];
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    const char byte = 1;
    EXPECT_EQ(::write(cancel[1], &byte, 1), 1);
  });
  const auto start = std::chrono::steady_clock::now();
  const ContainedResult r = run_contained(req);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  canceller.join();
  EXPECT_EQ(r.outcome, ContainedOutcome::Cancelled);
  EXPECT_STREQ(to_string(r.outcome), "cancelled");
  EXPECT_TRUE(r.describe().starts_with("stopped by preflight after ")) << r.describe();
  EXPECT_EQ(r.to_probe_error().code, ProbeErrc::NotProbed);
  EXPECT_LT(took, 10.0);  // not the 30 s deadline
  expect_reaped(r);
  const auto grandchild = nlohmann::json::parse(r.out).at("grandchild").get<pid_t>();
  bool dead = false;
  for (int i = 0; i < 200 && !dead; ++i) {
    dead = process_dead(grandchild);
    if (!dead) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(dead) << "grandchild " << grandchild << " survived the cancel";

  // Already raised before the start: the helper is stopped as soon as it runs. Without a cancel
  // descriptor a helper keeps its own status.
  const ContainedResult late = run_contained(req);
  EXPECT_EQ(late.outcome, ContainedOutcome::Cancelled);
  req.args = {"exit", "3"};
  req.cancel_fd = -1;
  const ContainedResult done = run_contained(req);
  EXPECT_EQ(done.outcome, ContainedOutcome::Exited);
  EXPECT_EQ(done.exit_code, 3);
  ::close(cancel[0]);
  ::close(cancel[1]);
}

TEST(Contained, KillTakesGrandchildren) {
  const ContainedResult r = run_contained(fake({"hang-child"}, 500ms));
  EXPECT_EQ(r.outcome, ContainedOutcome::TimedOut);
  expect_reaped(r);
  const nlohmann::json doc = nlohmann::json::parse(r.out);  // written before it hung
  const auto grandchild = doc.at("grandchild").get<pid_t>();
  ASSERT_GT(grandchild, 0);
  bool dead = false;
  for (int i = 0; i < 200 && !dead; ++i) {
    dead = process_dead(grandchild);
    if (!dead) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(dead) << "grandchild " << grandchild << " survived the kill";
}

TEST(Contained, ClosedPipesButAliveStillTimesOut) {
  const auto start = std::chrono::steady_clock::now();
  const ContainedResult r = run_contained(fake({"close-stdout-then-hang"}, 500ms));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.outcome, ContainedOutcome::TimedOut);
  EXPECT_LT(took, 2.0);
  expect_reaped(r);
}

TEST(Contained, AQuietChildIsWaitedForWithoutWakingToAsk) {
  // The child closes its pipes and exits after 400 ms: only its exit can end the wait. Where the
  // kernel has pidfds the waiting thread sleeps until then (a handful of context switches); the
  // fallback looks every 10 ms (about 40).
#ifdef SYS_pidfd_open
  const long probe = ::syscall(SYS_pidfd_open, ::getpid(), 0);
  if (probe < 0) GTEST_SKIP() << "no pidfd_open here (" << std::strerror(errno) << "): the wait ticks every 10 ms";
  ::close(static_cast<int>(probe));
#else
  GTEST_SKIP() << "no SYS_pidfd_open in these headers";
#endif
  rusage before{}, after{};
  ASSERT_EQ(::getrusage(RUSAGE_THREAD, &before), 0);
  const ContainedResult r = run_contained(fake({"quiet-exit", "400"}, 10s));
  ASSERT_EQ(::getrusage(RUSAGE_THREAD, &after), 0);
  EXPECT_EQ(r.outcome, ContainedOutcome::Exited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(r.elapsed_s, 0.39);
  EXPECT_LT(r.elapsed_s, 5.0);  // noticed at its exit, not at the deadline
  expect_reaped(r);
  EXPECT_LT(after.ru_nvcsw - before.ru_nvcsw, 15) << "the wait woke " << (after.ru_nvcsw - before.ru_nvcsw) << " times";
}

TEST(Contained, SpawnFailureForMissingExecutable) {
  ContainedRequest req;
  req.executable = "/nonexistent/preflight-helper";
  const ContainedResult r = run_contained(req);
  EXPECT_EQ(r.outcome, ContainedOutcome::SpawnFailed);
  EXPECT_EQ(r.spawn_errno, ENOENT);
  EXPECT_EQ(r.describe(), "could not start: No such file or directory");
  EXPECT_EQ(r.to_probe_error().code, ProbeErrc::NotFound);
  EXPECT_EQ(parse_contained_json(r).error, "could not start: No such file or directory");
}

TEST(Contained, FloodIsCappedAndKilled) {
  ContainedRequest req = fake({"flood"});
  req.max_output = 1u << 20;
  const ContainedResult r = run_contained(req);
  EXPECT_EQ(r.outcome, ContainedOutcome::OutputTooLarge);
  EXPECT_EQ(r.out.size(), 1u << 20);
  EXPECT_TRUE(r.describe().starts_with("wrote more than 1 MiB on its output (killed after ")) << r.describe();
  expect_reaped(r);
  EXPECT_FALSE(parse_contained_json(r).ok());
}

TEST(Contained, EnvironmentIsInheritedAndOverridden) {
  ::setenv("PREFLIGHT_CONTAINED_TEST_VAR", "inherited", 1);
  EXPECT_EQ(run_contained(fake({"env", "PREFLIGHT_CONTAINED_TEST_VAR"})).out, "inherited");
  ContainedRequest req = fake({"env", "PREFLIGHT_CONTAINED_TEST_VAR"});
  req.extra_env = {"PREFLIGHT_CONTAINED_TEST_VAR=over=ridden"};
  EXPECT_EQ(run_contained(req).out, "over=ridden");
  req.extra_env = {"PREFLIGHT_CONTAINED_TEST_VAR"};
  EXPECT_EQ(run_contained(req).out, "<unset>");
  req = fake({"env", "PREFLIGHT_CONTAINED_NEW"});
  req.extra_env = {"PREFLIGHT_CONTAINED_NEW=added"};
  EXPECT_EQ(run_contained(req).out, "added");
  ::unsetenv("PREFLIGHT_CONTAINED_TEST_VAR");
}

TEST(Contained, NoFdLeak) {
  const int before = count_open_fds();
  ASSERT_GT(before, 0);
  for (const char* mode : {"ok", "segv", "garbage"}) run_contained(fake({mode}));
  run_contained(fake({"hang-child"}, 200ms));
  ContainedRequest flood = fake({"flood"});
  flood.max_output = 64u << 10;
  run_contained(flood);
  ContainedRequest missing;
  missing.executable = "/nonexistent/helper";
  run_contained(missing);
  EXPECT_EQ(count_open_fds(), before);
}

TEST(Contained, HelperSeesOnlyItsStdio) {
  // A descriptor we opened without O_CLOEXEC must not reach the helper (closefrom 3).
  const int low = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(low, 0);
  const int fd = ::fcntl(low, F_DUPFD, 100);  // well above what `ls` itself opens
  ::close(low);
  ASSERT_GE(fd, 100);
  ContainedRequest req;
  req.executable = "/bin/sh";
  req.args = {"-c", "ls /proc/self/fd"};
  const ContainedResult r = run_contained(req);
  ::close(fd);
  ASSERT_TRUE(r.clean()) << r.describe();
  EXPECT_EQ(r.out.find(std::to_string(fd) + "\n"), std::string::npos) << r.out;
}

TEST(Contained, ParseGarbage) {
  const ContainedResult r = run_contained(fake({"garbage"}));
  ASSERT_TRUE(r.clean()) << r.describe();
  const ContainedJson j = parse_contained_json(r);
  EXPECT_FALSE(j.ok());
  EXPECT_TRUE(j.error.starts_with("garbage on the helper's pipe: '\\x7FELF\\x02")) << j.error;
  EXPECT_EQ(j.error.find('\x1b'), std::string::npos);
}

TEST(Contained, ParseEmptyAndTruncated) {
  ContainedResult r;
  r.outcome = ContainedOutcome::Exited;
  r.exit_code = 0;
  EXPECT_TRUE(parse_contained_json(r).error.starts_with("nothing on the helper's pipe"))
      << parse_contained_json(r).error;
  r.out = "{\"gpus\": [0, 1";
  const ContainedJson truncated = parse_contained_json(r);
  EXPECT_EQ(truncated.error,
            "garbage on the helper's pipe: '{\"gpus\": [0, 1' (truncated: the document stops after 14 bytes)");
  r.out = "{} trailing";
  EXPECT_TRUE(parse_contained_json(r).error.starts_with("garbage on the helper's pipe: "))
      << parse_contained_json(r).error;
}

TEST(Contained, SignalNames) {
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGBUS), "SIGBUS");
  EXPECT_EQ(signal_name(99), "signal 99");
}

class HelperPath : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = std::filesystem::temp_directory_path() / ("preflight-helper-path-" + std::to_string(::getpid()) + "-" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(m_root);
    std::filesystem::create_directories(m_root / "bin");
    std::filesystem::create_directories(m_root / "libexec" / "preflight");
  }
  void TearDown() override { std::filesystem::remove_all(m_root); }
  void make_exec(const std::filesystem::path& p) {
    std::ofstream(p) << "#!/bin/sh\n";
    std::filesystem::permissions(p, std::filesystem::perms::owner_all);
  }
  std::string exe() const { return (m_root / "bin" / "preflight").string(); }
  std::filesystem::path m_root;
};

TEST_F(HelperPath, NextToBinaryFirst) {
  make_exec(m_root / "bin" / "preflight-gpu-helper");
  make_exec(m_root / "libexec" / "preflight" / "preflight-gpu-helper");
  EXPECT_EQ(helper_path("preflight-gpu-helper", exe(), ""), (m_root / "bin" / "preflight-gpu-helper").string());
}

TEST_F(HelperPath, ThenLibexec) {
  make_exec(m_root / "libexec" / "preflight" / "preflight-gpu-helper");
  EXPECT_EQ(helper_path("preflight-gpu-helper", exe(), ""),
            (m_root / "libexec" / "preflight" / "preflight-gpu-helper").string());
}

TEST_F(HelperPath, MissingNamesThePathNextToBinary) {
  EXPECT_EQ(helper_path("preflight-gpu-helper", exe(), ""), (m_root / "bin" / "preflight-gpu-helper").string());
}

TEST_F(HelperPath, NotExecutableIsSkipped) {
  std::ofstream(m_root / "bin" / "preflight-gpu-helper") << "data";
  std::filesystem::permissions(m_root / "bin" / "preflight-gpu-helper", std::filesystem::perms::owner_read);
  make_exec(m_root / "libexec" / "preflight" / "preflight-gpu-helper");
  EXPECT_EQ(helper_path("preflight-gpu-helper", exe(), ""),
            (m_root / "libexec" / "preflight" / "preflight-gpu-helper").string());
}

TEST_F(HelperPath, OverrideWins) {
  make_exec(m_root / "bin" / "preflight-gpu-helper");
  EXPECT_EQ(helper_path("preflight-gpu-helper", exe(), "/opt/helpers/"), "/opt/helpers/preflight-gpu-helper");
}

TEST_F(HelperPath, RunningBinaryAndEnvironment) {
  // The unit-test binary's own directory, then PREFLIGHT_HELPER_DIR.
  const char* saved = std::getenv("PREFLIGHT_HELPER_DIR");
  const std::string saved_value = saved != nullptr ? saved : "";
  ::unsetenv("PREFLIGHT_HELPER_DIR");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  EXPECT_EQ(helper_path("no-such-helper"), (std::filesystem::path(self).parent_path() / "no-such-helper").string());
  ::setenv("PREFLIGHT_HELPER_DIR", m_root.c_str(), 1);
  EXPECT_EQ(helper_path("x"), (m_root / "x").string());
  if (saved != nullptr) {
    ::setenv("PREFLIGHT_HELPER_DIR", saved_value.c_str(), 1);
  } else {
    ::unsetenv("PREFLIGHT_HELPER_DIR");
  }
}

}  // namespace
}  // namespace sys_contained_test
}  // namespace preflight
