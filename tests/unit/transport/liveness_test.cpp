// SPDX-License-Identifier: MIT
// Rank 0's liveness watch (transport/liveness.hpp) over loopback, the address order it offers, and how
// the checks and the job tell the ranks and hosts it lost.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "job_fixture.hpp"
#include "transport/liveness.hpp"

namespace preflight {
namespace transport_liveness_test {
namespace {

using namespace std::chrono_literals;

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void say(int fd, const std::string& line) {
  ASSERT_EQ(::send(fd, line.data(), line.size(), MSG_NOSIGNAL), static_cast<ssize_t>(line.size()));
}

/// Polls `done` every 5 ms for at most 3 s (bounded: the watch answers in milliseconds).
template <class F>
bool eventually(F done) {
  for (int i = 0; i < 600; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

TEST(LivenessWatch, AnEndedRankIsLostWithWhatItSaid) {
  LivenessWatch watch;
  std::string error;
  ASSERT_TRUE(watch.open(4, 3000ms, error)) << error;
  ASSERT_GT(watch.offer().port, 0);
  ASSERT_EQ(watch.offer().token.size(), 32u);
  ASSERT_FALSE(watch.offer().addresses.empty());
  const int two = connect_loopback(watch.offer().port);
  const int three = connect_loopback(watch.offer().port);
  ASSERT_GE(two, 0);
  ASSERT_GE(three, 0);
  say(two, "hello " + watch.offer().token + " 2\n");
  say(three, "hello " + watch.offer().token + " 3\n");
  ASSERT_TRUE(eventually([&] { return watch.watched() == 2; }));
  EXPECT_TRUE(watch.quiet());
  EXPECT_TRUE(watch.losses().empty());

  say(three, "bye gave up in phase barrier: rank 0 did not answer\n");
  ::close(three);
  ASSERT_TRUE(eventually([&] { return watch.losses().size() == 1; }));
  const LivenessLoss loss = watch.losses().front();
  EXPECT_EQ(loss.rank, 3);
  EXPECT_EQ(loss.kind, "ended");
  EXPECT_EQ(loss.parting, "gave up in phase barrier: rank 0 did not answer");
  EXPECT_TRUE(watch.quiet());  // taken by the watch: nothing left to read

  watch.close();  // the job's normal end: later ends are not losses
  ::close(two);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(watch.losses().size(), 1u);
}

TEST(LivenessWatch, StrangersAndWrongTokensAreNotWatched) {
  LivenessWatch watch;
  std::string error;
  ASSERT_TRUE(watch.open(4, 3000ms, error)) << error;
  const int bad_token = connect_loopback(watch.offer().port);
  say(bad_token, "hello 0123 2\n");
  const int outside = connect_loopback(watch.offer().port);
  say(outside, "hello " + watch.offer().token + " 9\n");  // no rank 9 in a world of 4
  const int rank0 = connect_loopback(watch.offer().port);
  say(rank0, "hello " + watch.offer().token + " 0\n");  // rank 0 does not watch itself
  const int silent = connect_loopback(watch.offer().port);
  ::close(silent);  // connected and gone without a hello
  std::this_thread::sleep_for(100ms);
  ::close(bad_token);
  ::close(outside);
  ::close(rank0);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(watch.watched(), 0);
  EXPECT_TRUE(watch.losses().empty());
}

TEST(LivenessWatch, QuietIsFalseWhileAnEndIsUnread) {
  // quiet() polls the connections itself: the end shows before the watching thread took it.
  LivenessWatch watch;
  std::string error;
  ASSERT_TRUE(watch.open(2, 3000ms, error)) << error;
  const int one = connect_loopback(watch.offer().port);
  say(one, "hello " + watch.offer().token + " 1\n");
  ASSERT_TRUE(eventually([&] { return watch.watched() == 1; }));
  bool seen_unquiet = false;
  ::close(one);
  ASSERT_TRUE(eventually([&] {
    seen_unquiet = seen_unquiet || !watch.quiet();
    return !watch.losses().empty();
  }));
  EXPECT_TRUE(watch.quiet());
  (void)seen_unquiet;  // either order is right: the thread may take it before the first look
}

TEST(LivenessWatch, PhaseLinesAreHeardAndAreNotAnEnding) {
  LivenessWatch watch;
  std::string error;
  ASSERT_TRUE(watch.open(4, 3000ms, error)) << error;
  const int two = connect_loopback(watch.offer().port);
  ASSERT_GE(two, 0);
  say(two, "hello " + watch.offer().token + " 2\n");
  ASSERT_TRUE(eventually([&] { return watch.watched() == 1; }));
  say(two, "phase probe 4242 node-b\n");
  ASSERT_TRUE(eventually([&] { return watch.heard().size() == 1; }));
  // Unread phase lines do not look like an ending: rank 0 goes on calling MPI.
  say(two, "phase gather 4242 node-b\n");
  EXPECT_TRUE(watch.quiet());
  ASSERT_TRUE(eventually([&] { return !watch.heard().empty() && watch.heard().front().phase == Phase::Gather; }));
  // Lines that are not a phase of this job's ranks are ignored: an unknown phase, a bad pid, a
  // host name with characters no host has, a phase that goes backwards.
  say(two, "phase nap 4242 node-b\nphase barrier -1 node-b\nphase barrier 4242 node$(id)\nphase probe 4242 node-b\n");
  std::this_thread::sleep_for(50ms);
  const std::vector<LivenessHeard> heard = watch.heard();
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard.front().rank, 2);
  EXPECT_EQ(heard.front().phase, Phase::Gather);
  EXPECT_EQ(heard.front().pid, 4242);
  EXPECT_EQ(heard.front().host, "node-b");
  // A parting line is: quiet() says so before the watching thread takes it, or the loss shows.
  say(two, "bye gave up in phase gather: rank 0 did not answer\n");
  ::close(two);
  ASSERT_TRUE(eventually([&] { return watch.losses().size() == 1; }));
  EXPECT_EQ(watch.losses().front().parting, "gave up in phase gather: rank 0 did not answer");
}

/// What rank 0 sent on `fd` within 3 s, without its pings ('.'), until `want` bytes came.
std::string sent_to(int fd, std::size_t want) {
  std::string out;
  for (int i = 0; i < 600 && out.size() < want; ++i) {
    char buf[64];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    for (ssize_t k = 0; k < n; ++k) {
      if (buf[k] != '.') out += buf[k];
    }
    if (n <= 0) std::this_thread::sleep_for(5ms);
  }
  return out;
}

TEST(LivenessWatch, RankZeroSaysItsPhaseAndItsReport) {
  LivenessWatch watch;
  std::string error;
  ASSERT_TRUE(watch.open(4, 3000ms, error)) << error;
  EXPECT_GT(watch.offer().pid, 0);  // for a report in rank 0's place
  EXPECT_FALSE(watch.offer().host.empty());
  const int two = connect_loopback(watch.offer().port);
  say(two, "hello " + watch.offer().token + " 2\n");
  ASSERT_TRUE(eventually([&] { return watch.watched() == 1; }));
  watch.phase(Phase::Probe);
  EXPECT_EQ(sent_to(two, 1), "1");
  watch.phase(Phase::Gather);
  EXPECT_EQ(sent_to(two, 1), "3");
  // A rank that connects later hears the phase so far right after its hello.
  const int three = connect_loopback(watch.offer().port);
  say(three, "hello " + watch.offer().token + " 3\n");
  EXPECT_EQ(sent_to(three, 1), "3");
  watch.reported();
  EXPECT_EQ(sent_to(two, 1), "R");
  EXPECT_EQ(sent_to(three, 1), "R");
  ::close(two);
  ::close(three);
}

TEST(LivenessAddressOrder, InterfacesFirstThenBridgesThenLoopback) {
  const std::vector<std::pair<std::string, std::string>> ifs = {
      {"lo", "127.0.0.1"},  {"lo", "::1"},           {"docker0", "172.17.0.1"}, {"eth0", "fe80::1"},
      {"ib0", "192.0.2.7"}, {"eth0", "2001:db8::7"}, {"eth0", "198.51.100.7"},  {"eth0", "198.51.100.7"}};
  EXPECT_EQ(liveness_address_order(ifs, true),
            (std::vector<std::string>{"192.0.2.7", "198.51.100.7", "2001:db8::7", "172.17.0.1", "127.0.0.1", "::1"}));
  EXPECT_EQ(liveness_address_order(ifs, false),
            (std::vector<std::string>{"192.0.2.7", "198.51.100.7", "172.17.0.1", "127.0.0.1"}));
  EXPECT_EQ(liveness_address_order(ifs, true, 2), (std::vector<std::string>{"192.0.2.7", "198.51.100.7"}));
}

// ---- the job's story ------------------------------------------------------------------------------

RankStatus& status(JobFacts& j, int rank) { return j.status[static_cast<std::size_t>(rank)]; }

TEST(DescribeLost, AWholeHostIsNamedAsAHost) {
  JobFacts j = job_fixture::job(2, 2);  // gpu-a: ranks 0, 1; gpu-b: ranks 2, 3
  EXPECT_EQ(j.describe_lost(), "");
  for (int r : {2, 3}) {
    status(j, r).lost = "ended";
    status(j, r).lost_at_s = r == 2 ? 3.1 : 3.2;
    status(j, r).last_phase = Phase::Barrier;
  }
  EXPECT_EQ(j.describe_lost(),
            "every process of gpu-b ended (ranks 2, 3) at 3.1–3.2 s: the host went down or its processes were killed, "
            "in phase barrier");
  EXPECT_EQ(j.lost(), (std::vector<int>{2, 3}));
  for (int r : {2, 3}) status(j, r).lost = "unreachable";
  EXPECT_NE(j.describe_lost().find("gpu-b stopped answering (ranks 2, 3)"), std::string::npos) << j.describe_lost();
  EXPECT_NE(j.describe_lost().find("its network is cut"), std::string::npos);
}

TEST(DescribeLost, OneRankOfAHostIsNamedAsARank) {
  JobFacts j = job_fixture::job(2, 2);
  status(j, 3).lost = "ended";
  status(j, 3).lost_at_s = 0.4;
  status(j, 3).parting = "gave up in phase gather: rank 0 did not take this rank's facts";
  const std::string story = j.describe_lost();
  EXPECT_NE(story.find("rank 3 (gpu-b, pid"), std::string::npos) << story;
  EXPECT_NE(story.find("its process ended at 0.4 s"), std::string::npos) << story;
  EXPECT_NE(story.find("saying \"gave up in phase gather"), std::string::npos) << story;
  EXPECT_EQ(story.find("every process"), std::string::npos) << story;
}

TEST(DescribeLost, TheChecksTellTheLostRanks) {
  JobFacts j = job_fixture::job(2, 2);
  for (int r : {2, 3}) {
    status(j, r).lost = "ended";
    status(j, r).lost_at_s = 2.0;
    status(j, r).last_phase = Phase::Barrier;
    status(j, r).silent_s = 0.01;  // heard a moment ago: silence alone would call it alive
  }
  j.barrier.completed = false;
  j.barrier.expired = true;
  j.barrier.interrupted = true;
  j.barrier.missing = {2, 3};
  const Verdict barrier = job_fixture::judge_job(*find_check("comm.barrier"), j);
  EXPECT_EQ(barrier.status, Status::Fail);
  EXPECT_NE(barrier.summary.find("the barrier could not complete: every process of gpu-b ended (ranks 2, 3)"),
            std::string::npos)
      << barrier.summary;
  EXPECT_NE(barrier.remedy.find("rank 2 on gpu-b ended in the barrier"), std::string::npos) << barrier.remedy;

  j.barrier.completed = true;
  j.barrier.expired = false;
  j.allreduce.attempted = true;
  j.allreduce.completed = false;
  j.allreduce.expired = true;
  j.allreduce.transport = "nccl";
  const Verdict allreduce = job_fixture::judge_job(*find_check("comm.allreduce"), j);
  EXPECT_EQ(allreduce.status, Status::Fail);
  EXPECT_NE(allreduce.summary.find("the all_reduce over nccl could not complete: every process of gpu-b ended"),
            std::string::npos)
      << allreduce.summary;
}

TEST(DescribeLost, LaunchRanksBlamesTheLostNotTheRanksOnTheirWay) {
  JobFacts j = job_fixture::job(2, 2);
  job_fixture::lose(j, 3, Phase::Gather);
  job_fixture::lose(j, 1, Phase::Gather);  // alive, still sending its facts
  status(j, 3).lost = "ended";
  status(j, 3).lost_at_s = 0.4;
  const Verdict v = job_fixture::judge_job(*find_check("launch.ranks"), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_NE(v.summary.find("1 rank of 4 ended before delivering facts: rank 3 (gpu-b"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("1 rank was still on the way when the report was made (rank 1 (gpu-a"), std::string::npos)
      << v.summary;
  EXPECT_NE(v.remedy.find("rank 3 on gpu-b ended in the gather"), std::string::npos) << v.remedy;
}

}  // namespace
}  // namespace transport_liveness_test
}  // namespace preflight
