// SPDX-License-Identifier: MIT
// The phases' deadlines as points in time (job/phase_deadlines.hpp): their shares of --timeout,
// the grace of the ranks that wait on rank 0, and how a message names a deadline.
#include <gtest/gtest.h>

#include "job/phase_deadlines.hpp"

namespace preflight {
namespace job_phase_deadlines_test {
namespace {

using Clock = std::chrono::steady_clock;
double at(const PhaseDeadlines& d, Clock::time_point t) { return std::chrono::duration<double>(t - d.start).count(); }

TEST(PhaseDeadlines, EveryPhaseEndsAtItsShareOfTheTimeout) {
  const PhaseDeadlines d = PhaseDeadlines::from(Clock::now(), 60);
  EXPECT_NEAR(at(d, d.init), 18, 1e-6);
  EXPECT_NEAR(at(d, d.probe), 30, 1e-6);
  EXPECT_NEAR(at(d, d.reach), 33, 1e-6);
  EXPECT_NEAR(at(d, d.gather), 39, 1e-6);
  EXPECT_NEAR(at(d, d.barrier), 45, 1e-6);
  EXPECT_NEAR(at(d, d.allreduce), 54, 1e-6);
  EXPECT_NEAR(at(d, d.end), 60, 1e-6);
  EXPECT_LT(d.init, d.probe);
  EXPECT_LT(d.allreduce, d.end);
}

TEST(PhaseDeadlines, OnlyTheRanksThatWaitOnRankZeroGetTheGraceAndItIsNeverUnderTwoSeconds) {
  const PhaseDeadlines long_run = PhaseDeadlines::from(Clock::now(), 120);
  EXPECT_NEAR(std::chrono::duration<double>(long_run.grace_for(false)).count(), 12, 1e-6);
  EXPECT_EQ(long_run.grace_for(true), Clock::duration::zero());
  const PhaseDeadlines short_run = PhaseDeadlines::from(Clock::now(), 5);
  EXPECT_NEAR(std::chrono::duration<double>(short_run.grace_for(false)).count(), 2, 1e-6);
}

TEST(PhaseDeadlines, ADeadlineIsNamedFromTheStart) {
  const PhaseDeadlines d = PhaseDeadlines::from(Clock::now(), 10);
  EXPECT_EQ(d.describe(d.barrier), "7.5 s of the start");
  EXPECT_EQ(d.describe(d.gather), "6.5 s of the start");
}

}  // namespace
}  // namespace job_phase_deadlines_test
}  // namespace preflight
