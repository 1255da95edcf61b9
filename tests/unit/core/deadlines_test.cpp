// SPDX-License-Identifier: MIT
// core/deadlines: every helper deadline is a stated share of --timeout with no fixed cap, cut only
// by what is left of the probe phase; the message of an expired one names it, its length, its
// share and --timeout.
#include "core/deadlines.hpp"

#include <gtest/gtest.h>

#include "probes/probe.hpp"

namespace preflight {
namespace core_deadlines_test {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr milliseconds kNoEnd = milliseconds::max();

TEST(Deadlines, HelperSharesAreStatedAndFitTheProbePhaseOneByOne) {
  EXPECT_DOUBLE_EQ(helper_share(Helper::GpuDriver), 0.40);
  EXPECT_DOUBLE_EQ(helper_share(Helper::GpuSmoke), 0.15);
  EXPECT_DOUBLE_EQ(helper_share(Helper::Nccl), 0.05);
  EXPECT_DOUBLE_EQ(helper_share(Helper::GpuP2p), 0.15);
  EXPECT_DOUBLE_EQ(helper_share(Helper::GpuHealth), 0.10);
  EXPECT_DOUBLE_EQ(helper_share(Helper::NameLookup), 0.10);
  EXPECT_DOUBLE_EQ(helper_share(Helper::Python), 0.10);
  for (Helper h : {Helper::GpuDriver, Helper::GpuSmoke, Helper::Nccl, Helper::GpuP2p, Helper::GpuHealth,
                   Helper::NameLookup, Helper::Python}) {
    EXPECT_LT(helper_share(h), PhaseShares::probe);
    EXPECT_FALSE(helper_name(h).empty());
  }
  EXPECT_DOUBLE_EQ(PhaseShares::probe, 0.50);
  EXPECT_LT(PhaseShares::init, PhaseShares::probe);
  EXPECT_LT(PhaseShares::barrier, PhaseShares::allreduce);
}

TEST(Deadlines, DriverHelperFollowsTimeoutWithoutACap) {
  // The old rule was min(10 s, 40% of what is left): 2 s at --timeout 10, still 10 s at 300.
  EXPECT_EQ(helper_deadline(Helper::GpuDriver, 10, kNoEnd).limit, 4000ms);
  EXPECT_EQ(helper_deadline(Helper::GpuDriver, 60, kNoEnd).limit, 24000ms);
  EXPECT_EQ(helper_deadline(Helper::GpuDriver, 300, kNoEnd).limit, 120000ms);
  EXPECT_EQ(helper_deadline(Helper::GpuDriver, 3600, kNoEnd).limit, 1440000ms);
  // With the probe phase's remainder in view (50% of --timeout, nothing spent yet) it is not cut.
  const HelperDeadline d = helper_deadline(Helper::GpuDriver, 300, 150000ms);
  EXPECT_EQ(d.limit, 120000ms);
  EXPECT_FALSE(d.cut);
  EXPECT_DOUBLE_EQ(d.seconds(), 120.0);
}

TEST(Deadlines, OtherHelpersTakeTheirShares) {
  EXPECT_EQ(helper_deadline(Helper::GpuSmoke, 300, kNoEnd).limit, 45000ms);
  EXPECT_EQ(helper_deadline(Helper::Nccl, 300, kNoEnd).limit, 15000ms);
  EXPECT_EQ(helper_deadline(Helper::GpuP2p, 300, kNoEnd).limit, 45000ms);
  EXPECT_EQ(helper_deadline(Helper::NameLookup, 60, kNoEnd).limit, 6000ms);
}

TEST(Deadlines, SmokeAndPeerCopiesGetTheMeasuredInitOnTop) {
  const HelperDeadline d = helper_deadline(Helper::GpuSmoke, 60, kNoEnd, 7.5);
  EXPECT_EQ(d.limit, 16500ms);
  EXPECT_DOUBLE_EQ(d.allowance_s, 7.5);
  EXPECT_TRUE(has(d.describe(), "plus the 7.5 s cuInit took in the driver helper")) << d.describe();
  EXPECT_EQ(helper_deadline(Helper::GpuP2p, 60, kNoEnd, -1).limit, 9000ms);  // no negative allowance
}

TEST(Deadlines, CutToWhatIsLeftOfTheProbePhase) {
  // 4 s left at --timeout 60: less the 5% reserve (3 s) leaves 1 s.
  HelperDeadline d = helper_deadline(Helper::GpuDriver, 60, 4000ms);
  EXPECT_TRUE(d.cut);
  EXPECT_EQ(d.limit, 1000ms);
  EXPECT_TRUE(has(d.describe(), "what was left of the probe phase")) << d.describe();
  EXPECT_TRUE(has(d.describe(), "--timeout 60 s")) << d.describe();
  // Never below 0.2 s, even with nothing left.
  d = helper_deadline(Helper::GpuDriver, 10, 0ms);
  EXPECT_EQ(d.limit, kHelperMin);
}

TEST(Deadlines, ExpiredMessageNamesTheDeadlineItsLengthAndTimeout) {
  const HelperDeadline d = helper_deadline(Helper::GpuDriver, 10, kNoEnd);
  const std::string m = d.expired(4.01);
  EXPECT_TRUE(has(m, "the GPU driver helper (NVML, cuInit, device query)")) << m;
  EXPECT_TRUE(has(m, "its deadline of 4.0 s (40% of --timeout 10 s)")) << m;
  EXPECT_TRUE(has(m, "killed after 4.0 s")) << m;
  EXPECT_TRUE(has(m, "raise --timeout")) << m;
  EXPECT_TRUE(has(m, "--timeout 40 gives it 16.0 s")) << m;
  EXPECT_FALSE(has(m, "crash")) << m;
}

TEST(Deadlines, ACutDeadlineIsPreflightsBudgetAndNamesTheTimeoutThatFits) {
  // A 12 s cuInit at --timeout 60: 25 s of the 30 s probe phase gone when the health helper starts.
  const HelperDeadline d = helper_deadline(Helper::GpuHealth, 60, 5000ms, 12.0);
  EXPECT_TRUE(d.cut);
  EXPECT_EQ(d.limit, 2000ms);
  EXPECT_DOUBLE_EQ(d.own_s, 18.0);
  EXPECT_DOUBLE_EQ(d.used_s, 25.0);
  EXPECT_EQ(d.expiry_code(), ProbeErrc::OutOfBudget);
  // (25 + 12) / (0.50 - 0.05 - 0.10) = 105.7: at --timeout 106 the phase holds its whole deadline.
  EXPECT_DOUBLE_EQ(d.timeout_that_fits(), 106.0);
  const HelperDeadline at_fit = helper_deadline(Helper::GpuHealth, 106, std::chrono::milliseconds(53000 - 25000), 12.0);
  EXPECT_FALSE(at_fit.cut) << at_fit.describe();
  const std::string m = d.expired(2.0);
  EXPECT_TRUE(has(m, "the GPU health helper (NVML health, load) got only what was left of the probe phase, 2.0 s"))
      << m;
  EXPECT_TRUE(has(m, "less than its own deadline of 18.0 s (10% of --timeout plus the 12.0 s cuInit took")) << m;
  EXPECT_TRUE(has(m, "preflight's own budget ran out, which says nothing about the GPU")) << m;
  EXPECT_TRUE(has(m, "--timeout 106 gives it its whole deadline")) << m;
  // With its whole own deadline, an expiry is the operation's: Timeout.
  EXPECT_EQ(helper_deadline(Helper::GpuHealth, 60, kNoEnd, 12.0).expiry_code(), ProbeErrc::Timeout);
  EXPECT_EQ(std::string(to_string(ProbeErrc::OutOfBudget)), "out_of_budget");
  EXPECT_EQ(probe_errc_from_string("out_of_budget"), ProbeErrc::OutOfBudget);
}

TEST(Deadlines, ProbeContextUsesTheRunsTimeout) {
  const FileSystem fs("");
  const EnvSnapshot env{};
  Options o;
  o.timeout_s = 300;
  const ProbeContext unbounded(fs, env, o);
  EXPECT_EQ(unbounded.helper_deadline(Helper::GpuDriver).limit, 120000ms);
  const ProbeContext bounded(fs, env, o, std::chrono::steady_clock::now() + 150s);
  const HelperDeadline d = bounded.helper_deadline(Helper::GpuDriver);
  EXPECT_EQ(d.limit, 120000ms);
  EXPECT_FALSE(d.cut);
  o.timeout_s = 10;
  const ProbeContext short_run(fs, env, o, std::chrono::steady_clock::now() + 5s);
  EXPECT_EQ(short_run.helper_deadline(Helper::GpuDriver).limit, 4000ms);
}

TEST(Deadlines, NcclHelperAbortsItselfAtEightyPercent) {
  EXPECT_EQ(nccl_own_deadline(10s), 8000ms);
  EXPECT_EQ(nccl_own_deadline(600s), 480s);
  EXPECT_EQ(nccl_own_deadline(500ms), 300ms);  // the abort keeps at least 0.2 s
  EXPECT_EQ(nccl_own_deadline(250ms), 100ms);
}

}  // namespace
}  // namespace core_deadlines_test
}  // namespace preflight
