// SPDX-License-Identifier: MIT
#include "dist/pmix_join.hpp"

#include <gtest/gtest.h>

namespace preflight {
namespace {

RankStatus rank(int r, bool heard, std::string host) {
  RankStatus s;
  s.rank = r;
  s.heard = heard;
  s.host = std::move(host);
  return s;
}

TEST(PmixJoin, TheIncidentNamesTheRanksThatNeverStartedByHost) {
  JoinOutcome o;
  o.state = JoinOutcome::State::Incomplete;
  o.size = 6;
  o.reporter = true;
  o.ranks = {rank(0, true, "node1"), rank(1, true, "node1"), rank(2, false, "node2"),
             rank(3, false, "node2"), rank(4, false, ""),     rank(5, true, "node3")};
  const std::string text = describe_unjoined(o, 3.0);
  EXPECT_NE(text.find("init: 3 of 6 ranks never started"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks 2, 3 on node2"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 4 (the launcher did not say on which host)"), std::string::npos) << text;
  EXPECT_NE(text.find("within 3.0 s of the start, while the other 3 waited"), std::string::npos) << text;
}

TEST(PmixJoin, ManyRanksOnOneHostAreCounted) {
  JoinOutcome o;
  o.size = 40;
  for (int r = 0; r < 40; ++r) o.ranks.push_back(rank(r, r < 20, r < 20 ? "a" : "b"));
  const std::string text = describe_unjoined(o, 30.0);
  EXPECT_NE(text.find("ranks 20, 21, 22, 23, 24, 25, 26, 27, … (20 in all) on b"), std::string::npos) << text;
}

TEST(PmixJoin, WithoutAPmixServerTheJoinIsNotUsed) {
  // No PMIX_NAMESPACE/PMIX_RANK: MPI_Init runs under its watchdog alone, nothing is waited for.
  const EnvSnapshot env{{"OMPI_COMM_WORLD_SIZE", "2"}};
  const auto start = Clock::now();
  const JoinOutcome o = pmix_join(env, start + std::chrono::seconds(5), start + std::chrono::seconds(6), start + std::chrono::seconds(7));
  EXPECT_EQ(o.state, JoinOutcome::State::NotUsed);
  EXPECT_FALSE(o.why.empty());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.0);
}

}  // namespace
}  // namespace preflight
