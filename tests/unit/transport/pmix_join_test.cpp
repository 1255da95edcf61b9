// SPDX-License-Identifier: MIT
#include "transport/pmix_join.hpp"

#include <gtest/gtest.h>

namespace preflight {
namespace transport_pmix_join_test {
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
  o.ranks = {rank(0, true, "node1"),  rank(1, true, "node1"), rank(2, false, "node2"),
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
  const JoinOutcome o =
      pmix_join(env, start + std::chrono::seconds(5), start + std::chrono::seconds(6), start + std::chrono::seconds(7));
  EXPECT_EQ(o.state, JoinOutcome::State::NotUsed);
  EXPECT_FALSE(o.why.empty());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.0);
}

TEST(PmixJoin, OnlyAWellFormedPmixClientEnvironmentReachesPmixInit) {
  const std::string uri = "prterun-vm-1234@0.0;tcp4://127.0.0.1:40000";
  EXPECT_EQ(pmix_client_environment(
                {{"PMIX_NAMESPACE", "prterun-vm-1234@1"}, {"PMIX_RANK", "3"}, {"PMIX_SERVER_URI41", uri}}),
            "");
  EXPECT_EQ(
      pmix_client_environment({{"PMIX_NAMESPACE", "slurm.pmix.77.0"}, {"PMIX_RANK", "0"}, {"PMIX_SERVER_URI2", uri}}),
      "");
  // No server to connect to: stale variables in a login shell, or a fuzzer's.
  EXPECT_NE(pmix_client_environment({{"PMIX_NAMESPACE", "ns"}, {"PMIX_RANK", "0"}}), "");
  EXPECT_NE(pmix_client_environment({{"PMIX_NAMESPACE", "ns"}, {"PMIX_RANK", "0"}, {"PMIX_SERVER_URI4", ""}}), "");
  // Garbage that libpmix's client does not survive.
  for (const char* rank : {"", "-1", "x", "3 ", "99999999999", "\xff"}) {
    EXPECT_EQ(pmix_client_environment({{"PMIX_NAMESPACE", "ns"}, {"PMIX_RANK", rank}, {"PMIX_SERVER_URI41", uri}}),
              "PMIX_RANK is not a rank number")
        << rank;
  }
  for (const std::string& ns : {std::string(), std::string("a b"), std::string("\x1b[31m"), std::string(300, 'n')}) {
    EXPECT_NE(pmix_client_environment({{"PMIX_NAMESPACE", ns}, {"PMIX_RANK", "0"}, {"PMIX_SERVER_URI41", uri}})
                  .find("PMIX_NAMESPACE"),
              std::string::npos)
        << ns;
  }
}

TEST(PmixJoin, GarbagePmixVariablesAreNotJoined) {
  const EnvSnapshot env{{"PMIX_NAMESPACE", "\x01\xfe"}, {"PMIX_RANK", "\x02"}, {"PMIX_SERVER_URI41", "\x03"}};
  const auto start = Clock::now();
  const JoinOutcome o =
      pmix_join(env, start + std::chrono::seconds(5), start + std::chrono::seconds(6), start + std::chrono::seconds(7));
  EXPECT_EQ(o.state, JoinOutcome::State::NotUsed);
  EXPECT_NE(o.why.find("PMIX_NAMESPACE"), std::string::npos) << o.why;
}

TEST(PmixJoin, LocalPeersAreTheLaunchersRanksOfThisNode) {
  EXPECT_EQ(parse_local_peers("0,1,2,3", 2, 16), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_local_peers("12,4,8", 8, 16), (std::vector<int>{4, 8, 12}));  // round-robin placement, any order
  EXPECT_EQ(parse_local_peers("5", 5, 6), (std::vector<int>{5}));
  EXPECT_EQ(parse_local_peers(" 0, 1 ", 1, 2), (std::vector<int>{0, 1}));
}

TEST(PmixJoin, LocalPeersNotOfThisWorldAreLeftToMpi) {
  EXPECT_TRUE(parse_local_peers("", 0, 4).empty());     // the launcher did not say
  EXPECT_TRUE(parse_local_peers("0,1", 2, 4).empty());  // this rank is not among them
  EXPECT_TRUE(parse_local_peers("0,4", 0, 4).empty());  // a rank past the world
  EXPECT_TRUE(parse_local_peers("0,-1", 0, 4).empty());
  EXPECT_TRUE(parse_local_peers("0,1,1", 0, 4).empty());  // a rank twice
  EXPECT_TRUE(parse_local_peers("0,,1", 0, 4).empty());
  EXPECT_TRUE(parse_local_peers("0-3", 0, 4).empty());  // not a list of ranks
  EXPECT_TRUE(parse_local_peers("0,x", 0, 4).empty());
  EXPECT_TRUE(parse_local_peers("0", 0, 0).empty());
}

}  // namespace
}  // namespace transport_pmix_join_test
}  // namespace preflight
