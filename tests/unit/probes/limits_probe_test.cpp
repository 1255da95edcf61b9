// SPDX-License-Identifier: MIT
#include "probes/limits_probe.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

#include "checks/check.hpp"
#include "probes/fake_os.hpp"
#include "probes/probe.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace probes_limits_probe_test {
namespace {

// /proc/self/limits as Linux 6.1 prints it (fixed-width columns, trailing spaces).
constexpr const char* kLiveFormat =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max stack size            8388608              unlimited            bytes     \n"
    "Max core file size        0                    unlimited            bytes     \n"
    "Max open files            20000                20000                files     \n"
    "Max locked memory         8388608              8388608              bytes     \n"
    "Max nice priority         0                    0                    \n";

TEST(LimitsParse, RealFormat) {
  const auto memlock = parse_limit_row(kLiveFormat, "Max locked memory", "bytes", "limits");
  ASSERT_TRUE(memlock.ok()) << memlock.why();
  EXPECT_EQ(memlock.value()->soft, 8388608u);
  EXPECT_EQ(memlock.value()->hard, 8388608u);
  EXPECT_EQ(memlock.source(), "limits");

  const auto core = parse_limit_row(kLiveFormat, "Max core file size", "bytes", "limits");
  ASSERT_TRUE(core.ok());
  EXPECT_EQ(core.value()->soft, 0u);
  EXPECT_FALSE(core.value()->hard);  // unlimited

  const auto nofile = parse_limit_row(kLiveFormat, "Max open files", "files", "limits");
  ASSERT_TRUE(nofile.ok());
  EXPECT_EQ(nofile.value()->hard, 20000u);
}

TEST(LimitsParse, GarbageIsAParseError) {
  const struct {
    const char* text;
    const char* detail;
  } cases[] = {
      {"", "no 'Max locked memory' line"},
      {"Max locked memory         lots                 8388608              bytes\n", "unexpected 'Max locked memory'"},
      {"Max locked memory         65536                65536\n", "unexpected"},
      {"Max locked memory         65536                65536                pages\n", "want soft, hard, bytes"},
      {"Max locked memory         -1                   65536                bytes\n", "unexpected"},
      {"Max locked memory         1 2 3 bytes\n", "unexpected"},
  };
  for (const auto& c : cases) {
    const auto p = parse_limit_row(c.text, "Max locked memory", "bytes", "/proc/self/limits");
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.error()->code, ProbeErrc::ParseError);
    EXPECT_NE(p.why().find(c.detail), std::string::npos) << p.why();
  }
}

TEST(LimitsParse, CapIpcLock) {
  EXPECT_TRUE(*parse_cap_ipc_lock("Name:\tx\nCapEff:\t000001fffeffffff\n", "s").value());
  EXPECT_FALSE(*parse_cap_ipc_lock("CapEff:\t00000000a80425fb\n", "s").value());  // Docker's default set
  EXPECT_TRUE(*parse_cap_ipc_lock("CapEff:\t0000000000004000", "s").value());
  EXPECT_FALSE(parse_cap_ipc_lock("CapPrm:\t0000000000004000\n", "s").ok());
  EXPECT_FALSE(parse_cap_ipc_lock("CapEff:\tzz\n", "s").ok());
  EXPECT_FALSE(parse_cap_ipc_lock("CapEff:\t\n", "s").ok());
  EXPECT_FALSE(parse_cap_ipc_lock("CapEff:\t00000000000000000\n", "s").ok());  // 17 digits
}

LimitsFacts probe_fixture(const std::string& name) {
  const FileSystem fs(preflight::test_paths::fixtures_dir() + "/limits/" + name);
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  probe_limits(ProbeContext{fs, env, options}, facts);
  return facts.limits;
}

TEST(LimitsProbe, DockerRdmaFixture) {
  const LimitsFacts f = probe_fixture("docker-rdma");
  ASSERT_TRUE(f.memlock.ok()) << f.memlock.why();
  EXPECT_EQ(f.memlock.value()->soft, 65536u);
  EXPECT_EQ(f.nofile.value()->hard, 1024u);
  EXPECT_EQ(f.core.value()->hard, 0u);
  ASSERT_TRUE(f.cap_ipc_lock.ok());
  EXPECT_FALSE(*f.cap_ipc_lock.value());
  ASSERT_TRUE(f.rdma_devices.ok());
  EXPECT_EQ(*f.rdma_devices.value(), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  ASSERT_TRUE(f.core_pattern.ok());
  EXPECT_EQ(f.core_pattern.value()->substr(0, 27), "|/usr/share/apport/apport -");
}

TEST(LimitsProbe, TunedFixture) {
  const LimitsFacts f = probe_fixture("tuned");
  ASSERT_TRUE(f.memlock.ok());
  EXPECT_FALSE(f.memlock.value()->soft);
  EXPECT_FALSE(f.core.value()->soft);
  EXPECT_EQ(f.nofile.value()->hard, 1048576u);
  EXPECT_TRUE(*f.cap_ipc_lock.value());
  ASSERT_TRUE(f.rdma_devices.ok());  // no /sys/class/infiniband: no RDMA driver, not an error
  EXPECT_TRUE(f.rdma_devices.value()->empty());
}

TEST(LimitsProbe, GarbageFixture) {
  const LimitsFacts f = probe_fixture("garbage");
  EXPECT_EQ(f.memlock.error()->code, ProbeErrc::ParseError);
  EXPECT_EQ(f.nofile.error()->code, ProbeErrc::ParseError);
  EXPECT_EQ(f.cap_ipc_lock.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(f.core_pattern.error()->code, ProbeErrc::NotFound);
}

TEST(LimitsProbe, MissingLimitsFile) {
  const LimitsFacts f = probe_fixture("does-not-exist");
  EXPECT_EQ(f.memlock.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(f.core.source(), "/proc/self/limits");
}

TEST(LimitsProbe, LiveSystem) {
  const FileSystem fs;
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  probe_limits(ProbeContext{fs, env, options}, facts);
  EXPECT_TRUE(facts.limits.memlock.ok()) << facts.limits.memlock.why();
  EXPECT_TRUE(facts.limits.nofile.ok());
  EXPECT_TRUE(facts.limits.core.ok());
  EXPECT_TRUE(facts.limits.cap_ipc_lock.ok());
  EXPECT_TRUE(facts.limits.rdma_devices.ok()) << facts.limits.rdma_devices.why();
  // The live limits come from the system calls, not from /proc/self/limits.
  EXPECT_EQ(facts.limits.nofile.source(), "getrlimit(RLIMIT_NOFILE)");
  EXPECT_EQ(facts.limits.memlock.source(), "getrlimit(RLIMIT_MEMLOCK)");
  EXPECT_EQ(facts.limits.core.source(), "getrlimit(RLIMIT_CORE)");
  EXPECT_EQ(facts.limits.cap_ipc_lock.source(), "capget(CAP_IPC_LOCK)");
  rlimit r{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &r), 0);
  const auto side = [](rlim_t v) {
    return v == RLIM_INFINITY ? std::optional<std::uint64_t>() : std::optional<std::uint64_t>(v);
  };
  EXPECT_EQ(facts.limits.nofile.value()->soft, side(r.rlim_cur));
  EXPECT_EQ(facts.limits.nofile.value()->hard, side(r.rlim_max));
}

// A rank whose descriptors ran out (the very limit host.limits judges) is judged too: with every
// descriptor below a lowered soft RLIMIT_NOFILE taken, /proc/self/limits cannot be opened (EMFILE),
// and getrlimit(2) still answers.
// Not under a sanitizer: UBSan's vptr check opens a pipe to test that a vtable is readable, and
// out of descriptors it reports every virtual call it has not cached as "invalid vptr".
TEST(LimitsProbe, AProcessOutOfDescriptorsIsStillJudged) {
#ifdef PREFLIGHT_SANITIZED_BUILD
  GTEST_SKIP() << "a sanitizer's runtime needs descriptors of its own (the normal build runs this test)";
#endif
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  constexpr rlim_t kLow = 64;
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < kLow) GTEST_SKIP() << "hard RLIMIT_NOFILE below 64";
  const FileSystem fs;
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  rlimit low = before;
  low.rlim_cur = kLow;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> held;
  int open_errno = 0;
  for (;;) {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      open_errno = errno;
      break;
    }
    held.push_back(fd);
  }
  const bool file_readable = fs.read("/proc/self/limits").ok();
  probe_limits(ProbeContext{fs, env, options}, facts);
  for (const int fd : held) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);

  ASSERT_EQ(open_errno, EMFILE);
  EXPECT_FALSE(file_readable) << "/proc/self/limits could still be opened: the descriptors were not exhausted";
  ASSERT_TRUE(facts.limits.nofile.ok()) << facts.limits.nofile.why();
  EXPECT_EQ(facts.limits.nofile.value()->soft, kLow);
  EXPECT_TRUE(facts.limits.memlock.ok()) << facts.limits.memlock.why();
  EXPECT_TRUE(facts.limits.core.ok()) << facts.limits.core.why();
  EXPECT_TRUE(facts.limits.cap_ipc_lock.ok()) << facts.limits.cap_ipc_lock.why();
  // host.limits judges the limits it was given, never "could not read the resource limits".
  const Verdict v = run_check(*find_check("host.limits"), CheckContext{facts, options, Profile::Node});
  EXPECT_EQ(v.evidence["nofile"]["soft"], kLow) << v.summary;
  for (const Finding& f : v.findings) {
    EXPECT_NE(f.code, "host.limits/limit-unreadable") << v.summary;
    EXPECT_NE(f.code, "host.limits/facts-unreadable") << v.summary;
  }
}

TEST(LimitsProbe, TheSystemCallsAnswerWithoutReadingTheLimitsFile) {
  // An Os that answers (the live system's getrlimit/capget) is asked, and the files are not: a tree
  // whose /proc/self/limits is garbage does not matter, as a process out of descriptors cannot
  // open its own /proc/self/limits.
  const FileSystem fs(preflight::test_paths::fixtures_dir() + "/limits/garbage");
  const EnvSnapshot env;
  const Options options;
  FakeOs os;
  os.limits = ProcessLimits{Probed<Rlimit>::ok(Rlimit{65536, 65536}, "getrlimit(RLIMIT_MEMLOCK)"),
                            Probed<Rlimit>::ok(Rlimit{12, 12}, "getrlimit(RLIMIT_NOFILE)"),
                            Probed<Rlimit>::ok(Rlimit{0, std::nullopt}, "getrlimit(RLIMIT_CORE)"),
                            Probed<bool>::ok(true, "capget(CAP_IPC_LOCK)")};
  RankFacts facts;
  probe_limits(ProbeContext{fs, env, options, os}, facts);
  ASSERT_TRUE(facts.limits.nofile.ok()) << facts.limits.nofile.why();
  EXPECT_EQ(facts.limits.nofile.value()->hard, 12u);
  EXPECT_EQ(facts.limits.nofile.source(), "getrlimit(RLIMIT_NOFILE)");
  EXPECT_EQ(facts.limits.memlock.value()->soft, 65536u);
  EXPECT_FALSE(facts.limits.core.value()->hard);
  EXPECT_TRUE(*facts.limits.cap_ipc_lock.value());

  // Without such calls (a --sysroot tree's Os) the tree's files say it.
  os.limits.reset();
  RankFacts from_files;
  probe_limits(ProbeContext{fs, env, options, os}, from_files);
  EXPECT_EQ(from_files.limits.nofile.error()->code, ProbeErrc::ParseError);
  EXPECT_EQ(from_files.limits.nofile.source(), "/proc/self/limits");
}

}  // namespace
}  // namespace probes_limits_probe_test
}  // namespace preflight
