// SPDX-License-Identifier: MIT
#include "transport/pmix_join.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <vector>

#include <gtest/gtest.h>

#include "job_fixture.hpp"
#include "loopback_port.hpp"

namespace preflight {
namespace transport_pmix_join_test {
namespace {

using job_fixture::status_row;

TEST(PmixJoin, TheIncidentNamesTheRanksThatNeverStartedByHost) {
  JoinOutcome o;
  o.state = JoinOutcome::State::Incomplete;
  o.size = 6;
  o.reporter = true;
  o.ranks = {status_row(0, true, "node1"),  status_row(1, true, "node1"), status_row(2, false, "node2"),
             status_row(3, false, "node2"), status_row(4, false, ""),     status_row(5, true, "node3")};
  const std::string text = describe_unjoined(o, 3.0);
  EXPECT_NE(text.find("init: 3 of 6 ranks never started"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks 2, 3 on node2"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 4 (the launcher did not say on which host)"), std::string::npos) << text;
  EXPECT_NE(text.find("within 3.0 s of the start, while the other 3 waited"), std::string::npos) << text;
  // Late is not never: the --timeout that waits longer (the join is the init phase, 30% of it).
  EXPECT_NE(text.find("If they are only late"), std::string::npos) << text;
  EXPECT_NE(text.find("the ranks meet within 30% of --timeout (--timeout 20 waits 6.0 s)"), std::string::npos) << text;
}

TEST(PmixJoin, ManyRanksOnOneHostAreCounted) {
  JoinOutcome o;
  o.size = 40;
  for (int r = 0; r < 40; ++r) o.ranks.push_back(status_row(r, r < 20, r < 20 ? "a" : "b"));
  const std::string text = describe_unjoined(o, 30.0);
  EXPECT_NE(text.find("ranks 20, 21, 22, 23, 24, 25, 26, 27, … (20 in all) on b"), std::string::npos) << text;
}

TEST(PmixJoin, TheServerUriIsParsedAsLibpmixWritesIt) {
  const auto v4 = parse_pmix_server_uri("288620544.0;tcp4://127.0.0.1:46591");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->uri, "tcp4://127.0.0.1:46591");
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 46591);
  const auto v6 = parse_pmix_server_uri("prterun-node1-77@0.0;tcp6://[::1]:1024");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 1024);
  for (const char* bad : {"", "ns.0", "ns.0;usock:/tmp/pmix", "ns.0;tcp4://127.0.0.1", "ns.0;tcp4://127.0.0.1:0",
                          "ns.0;tcp4://127.0.0.1:70000", "ns.0;tcp4://:80", "ns.0;tcp6://::1:80", "ns.0;tcp4://h:x"}) {
    EXPECT_FALSE(parse_pmix_server_uri(bad)) << bad;
  }
}

// PMIx_Init says only that it failed; the plain connection names the errno.
TEST(PmixJoin, AServerThatIsGoneIsNamedWithTheErrno) {
  // A port nothing listens on: bound and closed again.
  testing::LoopbackPort gone(-1);
  ASSERT_TRUE(gone.ok());
  const std::string uri = "ns.0;tcp4://127.0.0.1:" + gone.port_text();
  gone.close();
  const std::string why = pmix_server_connect_failure({{"PMIX_SERVER_URI41", uri}});
  EXPECT_NE(why.find("a connection to tcp4://127.0.0.1:"), std::string::npos) << why;
  EXPECT_NE(why.find("(ECONNREFUSED)"), std::string::npos) << why;

  // One that answers is no failure; nor is a URI without a TCP address.
  const testing::LoopbackPort server(4);
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(pmix_server_connect_failure({{"PMIX_SERVER_URI2", "ns.0;tcp4://127.0.0.1:" + server.port_text()}}), "");
  EXPECT_EQ(pmix_server_connect_failure({{"PMIX_SERVER_URI2", "ns.0;usock:/nonexistent"}}), "");
}

// Not under a sanitizer: its runtime needs descriptors of its own (LimitsProbe has the same rule).
TEST(PmixJoin, AProcessOutOfDescriptorsIsNamedNotTheLauncher) {
#ifdef PREFLIGHT_SANITIZED_BUILD
  GTEST_SKIP() << "a sanitizer's runtime needs descriptors of its own (the normal build runs this test)";
#endif
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit low = before;
  low.rlim_cur = 64;
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < low.rlim_cur) GTEST_SKIP() << "hard RLIMIT_NOFILE below 64";
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> held;
  for (int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC); fd >= 0; fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    held.push_back(fd);
  }
  const std::string why = pmix_server_connect_failure({{"PMIX_SERVER_URI41", "ns.0;tcp4://127.0.0.1:9"}});
  for (const int fd : held) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
  EXPECT_EQ(why, "this process cannot open a socket: Too many open files (EMFILE)");
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
