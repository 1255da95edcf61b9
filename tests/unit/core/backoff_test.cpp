// SPDX-License-Identifier: MIT
#include "core/backoff.hpp"

#include <gtest/gtest.h>

namespace preflight {
namespace core_backoff_test {
namespace {

using us = std::chrono::microseconds;

TEST(Backoff, EagerPollsThenDoublingToTheCeiling) {
  Backoff b(3, us(50), us(400));
  EXPECT_EQ(b.next(), us(0));
  EXPECT_EQ(b.next(), us(0));
  EXPECT_EQ(b.next(), us(0));
  EXPECT_EQ(b.next(), us(50));
  EXPECT_EQ(b.next(), us(100));
  EXPECT_EQ(b.next(), us(200));
  EXPECT_EQ(b.next(), us(400));
  EXPECT_EQ(b.next(), us(400));  // stays at the ceiling
  EXPECT_EQ(b.polls(), 8u);
}

TEST(Backoff, NeverWaitsPastTheDeadline) {
  Backoff b(0, us(1000), us(8000));
  EXPECT_EQ(b.next(us(300)), us(300));
  EXPECT_EQ(b.next(us(5000)), us(2000));
  EXPECT_EQ(b.next(us(0)), us(0));
  EXPECT_EQ(b.next(us(-20)), us(0));  // past the deadline: no wait, the caller's test ends the loop
  EXPECT_EQ(b.next(), us(8000));      // the doubling went on meanwhile
}

TEST(Backoff, ACeilingBelowTheFirstWaitIsTheFirstWait) {
  Backoff b(0, us(500), us(100));
  EXPECT_EQ(b.ceiling(), us(500));
  EXPECT_EQ(b.next(), us(500));
  EXPECT_EQ(b.next(), us(500));
}

TEST(Backoff, ThePollLoopsWaitAtMostTwoMilliseconds) {
  Backoff b = poll_backoff();
  us longest{0};
  unsigned waits = 0;
  for (int i = 0; i < 1000; ++i) {
    const us w = b.next();
    longest = std::max(longest, w);
    waits += w.count() > 0 ? 1 : 0;
  }
  EXPECT_EQ(longest, std::chrono::milliseconds(2));
  EXPECT_EQ(waits, 1000u - 64u);
}

}  // namespace
}  // namespace core_backoff_test
}  // namespace preflight
