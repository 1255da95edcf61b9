// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "checks/check.hpp"

namespace preflight {
namespace checks_host_limits_test {
namespace {

constexpr std::uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
const std::optional<std::uint64_t> kUnlimited;

Probed<Rlimit> limit(std::optional<std::uint64_t> soft, std::optional<std::uint64_t> hard) {
  return Probed<Rlimit>::ok(Rlimit{soft, hard}, "/proc/self/limits");
}

// A healthy rank on an IB node: every finding PASS.
LimitsFacts healthy() {
  LimitsFacts f;
  f.memlock = limit(kUnlimited, kUnlimited);
  f.nofile = limit(1048576, 1048576);
  f.core = limit(kUnlimited, kUnlimited);
  f.cap_ipc_lock = Probed<bool>::ok(false, "/proc/self/status");
  f.core_pattern = Probed<std::string>::ok("|/lib/systemd/systemd-coredump %P", "/proc/sys/kernel/core_pattern");
  f.rdma_devices = Probed<std::vector<std::string>>::ok({"mlx5_0"}, "/sys/class/infiniband");
  return f;
}

Verdict check(const LimitsFacts& limits, Profile profile = Profile::Job) {
  RankFacts facts;
  facts.limits = limits;
  const Options options;
  const CheckSpec* spec = find_check("host.limits");
  EXPECT_NE(spec, nullptr);
  return run_check(*spec, CheckContext{facts, options, profile});
}

void expect(const Verdict& v, Status status, const std::string& summary_has, const std::string& remedy_has = {}) {
  EXPECT_EQ(v.status, status) << v.summary;
  EXPECT_NE(v.summary.find(summary_has), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find(remedy_has), std::string::npos) << v.remedy;
}

TEST(HostLimits, HealthyPasses) {
  const Verdict v = check(healthy());
  expect(v, Status::Pass, "RLIMIT_MEMLOCK is unlimited (hard unlimited)");
  EXPECT_TRUE(v.remedy.empty());
  EXPECT_EQ(v.evidence["memlock"]["soft"], "unlimited");
  EXPECT_EQ(v.evidence["nofile"]["hard"], 1048576);
  EXPECT_EQ(v.evidence["rdma_devices"][0], "mlx5_0");
  EXPECT_EQ(v.evidence["cap_ipc_lock"], false);
  EXPECT_EQ(v.evidence["memlock_min_bytes"], kGiB);
}

TEST(HostLimits, LowMemlockWithRdmaFails) {
  LimitsFacts f = healthy();
  f.memlock = limit(64 * kKiB, 64 * kKiB);
  const Verdict v = check(f);
  expect(v, Status::Fail,
         "RLIMIT_MEMLOCK is 64 KiB (hard 64 KiB) without CAP_IPC_LOCK, and RDMA devices are present (mlx5_0)",
         "--ulimit memlock=-1");
  EXPECT_EQ(v.finding.code, "host.limits/memlock-low");
  EXPECT_EQ(v.finding.params["devices"], "mlx5_0");
  EXPECT_NE(v.summary.find("couldn't lock memory"), std::string::npos);
  EXPECT_NE(v.remedy.find("PropagateResourceLimitsExcept=MEMLOCK"), std::string::npos);
  EXPECT_EQ(v.evidence["memlock"]["soft"], 64 * kKiB);
}

TEST(HostLimits, SoftLimitCountsNotHard) {
  LimitsFacts f = healthy();
  f.memlock = limit(8 * kMiB, kUnlimited);
  expect(check(f), Status::Fail, "RLIMIT_MEMLOCK is 8 MiB (hard unlimited)", "ulimit -l unlimited");
}

TEST(HostLimits, OneGibMemlockIsEnough) {
  LimitsFacts f = healthy();
  f.memlock = limit(kGiB, kGiB);
  expect(check(f), Status::Pass, "RLIMIT_MEMLOCK is 1 GiB");
}

TEST(HostLimits, CapIpcLockLiftsTheLimit) {
  LimitsFacts f = healthy();
  f.memlock = limit(64 * kKiB, 64 * kKiB);
  f.cap_ipc_lock = Probed<bool>::ok(true, "/proc/self/status");
  expect(check(f), Status::Pass, "lifted by CAP_IPC_LOCK");
}

TEST(HostLimits, LowMemlockWithoutRdmaPasses) {
  LimitsFacts f = healthy();
  f.memlock = limit(64 * kKiB, 64 * kKiB);
  f.rdma_devices = Probed<std::vector<std::string>>::ok({}, "/sys/class/infiniband");
  expect(check(f), Status::Pass, "no RDMA devices are visible");
}

TEST(HostLimits, LowMemlockUnknownWhenRdmaOrCapUnreadable) {
  LimitsFacts f = healthy();
  f.memlock = limit(64 * kKiB, 64 * kKiB);
  f.rdma_devices = Probed<std::vector<std::string>>::error(ProbeErrc::PermissionDenied, "permission denied",
                                                           "/sys/class/infiniband");
  expect(check(f), Status::Unknown, "could not list RDMA devices: /sys/class/infiniband: permission denied");
  EXPECT_EQ(check(f).finding.code, "host.limits/rdma-devices-unreadable");

  f = healthy();
  f.memlock = limit(64 * kKiB, 64 * kKiB);
  f.cap_ipc_lock = Probed<bool>::error(ProbeErrc::ParseError, "no 'CapEff:' line", "/proc/self/status");
  expect(check(f), Status::Unknown, "CAP_IPC_LOCK could not be read: /proc/self/status: no 'CapEff:' line");
  EXPECT_EQ(check(f).finding.code, "host.limits/cap-ipc-lock-unreadable");
}

TEST(HostLimits, NofileHardLimit) {
  LimitsFacts f = healthy();
  f.nofile = limit(1024, 20000);
  expect(check(f), Status::Warn, "RLIMIT_NOFILE hard limit is 20000 (soft 1024), below 65536",
         "--ulimit nofile=1048576:1048576");
  EXPECT_EQ(check(f).finding.code, "host.limits/nofile-low");
  f.nofile = limit(1024, 1024);
  const Verdict v = check(f);
  expect(v, Status::Fail, "RLIMIT_NOFILE hard limit is 1024 (soft 1024), below 4096", "at least 65536");
  EXPECT_EQ(v.evidence["nofile"]["hard"], 1024);
  EXPECT_EQ(v.finding.code, "host.limits/nofile-too-low");
  f.nofile = limit(1024, 65536);
  expect(check(f), Status::Pass, "RLIMIT_NOFILE hard limit is 65536");
}

TEST(HostLimits, CoreDumpsOff) {
  LimitsFacts f = healthy();
  f.core = limit(0, kUnlimited);
  // A site's choice: noted in the summary and the evidence, not a WARN that --strict fails on.
  Verdict v = check(f);
  expect(v, Status::Pass, "RLIMIT_CORE is 0 B (hard unlimited): core dumps are off (often a site's choice");
  EXPECT_NE(v.summary.find("`ulimit -c unlimited` in the job script"), std::string::npos) << v.summary;
  EXPECT_EQ(v.evidence["core_dumps_off"], true);
  f.core = limit(0, 0);
  v = check(f);
  expect(v, Status::Pass, "core dumps are off", "");
  EXPECT_NE(v.summary.find("raise the hard limit"), std::string::npos) << v.summary;
}

TEST(HostLimits, UnlimitedCoresToPlainFiles) {
  LimitsFacts f = healthy();
  f.core_pattern = Probed<std::string>::ok("/var/crash/core.%e.%p", "/proc/sys/kernel/core_pattern");
  expect(check(f), Status::Warn, "cores are written as plain files (core_pattern '/var/crash/core.%e.%p')",
         "ulimit -c <bytes>");
  EXPECT_EQ(check(f).finding.code, "host.limits/core-files-unbounded");
  f.core = limit(4 * kGiB, kUnlimited);  // capped: fine
  expect(check(f), Status::Pass, "RLIMIT_CORE is 4 GiB");
}

TEST(HostLimits, FindingsCombineWorstFirst) {
  LimitsFacts f = healthy();
  f.memlock = limit(64 * kKiB, 64 * kKiB);
  f.nofile = limit(1024, 20000);
  f.core = limit(0, 0);
  const Verdict v = check(f);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_NE(v.remedy.find("memlock=-1"), std::string::npos);
  EXPECT_NE(v.remedy.find("nofile=1048576"), std::string::npos);
  // Core dumps off is a note, not a finding with a fix.
  EXPECT_EQ(v.remedy.find("ulimit -c"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.evidence["core_dumps_off"], true);
}

TEST(HostLimits, UnreadableLimitsAreUnknown) {
  LimitsFacts f = healthy();
  f.memlock = f.nofile = f.core =
      Probed<Rlimit>::error(ProbeErrc::ParseError, "no 'Max locked memory' line", "/proc/self/limits");
  expect(check(f), Status::Unknown, "could not read the resource limits (/proc/self/limits): /proc/self/limits: no");

  f = healthy();
  f.nofile = Probed<Rlimit>::error(ProbeErrc::ParseError, "unexpected 'Max open files' line", "/proc/self/limits");
  expect(check(f), Status::Unknown, "could not read RLIMIT_NOFILE");

  expect(check(LimitsFacts()), Status::Unknown, "not probed");  // nobody probed: fail closed
}

TEST(HostLimits, TwoUnreadableLimitsEachNameTheirOwn) {
  // One finding twice with different parameters: each is said with its own values.
  LimitsFacts f = healthy();
  f.nofile = Probed<Rlimit>::error(ProbeErrc::ParseError, "no 'Max open files' line", "/proc/self/limits");
  f.core = Probed<Rlimit>::error(ProbeErrc::ParseError, "no 'Max core file size' line", "/proc/self/limits");
  const Verdict v = check(f);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_NE(v.summary.find("could not read RLIMIT_NOFILE: /proc/self/limits: no 'Max open files' line"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.summary.find("could not read RLIMIT_CORE: /proc/self/limits: no 'Max core file size' line"),
            std::string::npos)
      << v.summary;
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "host.limits/limit-unreadable");
  EXPECT_EQ(v.findings[1].params["limit"], "RLIMIT_CORE");
  EXPECT_TRUE(v.finding.code.empty()) << "the joined template cannot stand for both";
}

TEST(HostLimits, SkippedInImageProfile) {
  LimitsFacts f = healthy();
  f.memlock = limit(64 * kKiB, 64 * kKiB);
  expect(check(f, Profile::Image), Status::Skip, "build container");
  expect(check(f, Profile::Node), Status::Fail, "RLIMIT_MEMLOCK");
}

}  // namespace
}  // namespace checks_host_limits_test
}  // namespace preflight
