// SPDX-License-Identifier: MIT
// How a job's ranks connect (job/transport_start.hpp), with every call it makes recorded: MPI only
// when a launcher started the ranks or --mpi on asks for it, never after a PMIx join that found no
// server or that some rank never reached, and this rank alone with the reason when MPI fails.
#include <gtest/gtest.h>

#include <chrono>

#include "job/transport_start.hpp"

namespace preflight {
namespace job_transport_start_test {
namespace {

using namespace std::chrono_literals;

struct Recorded {
  bool launched = false;
  JoinOutcome::State join_state = JoinOutcome::State::NotUsed;
  bool init_fails = false;
  bool own_limits = false;  // the join's NoServer came from this process's descriptor limit
  std::vector<std::string> calls;
  TimePoint init_deadline;
  bool singleton = false;
  std::string peers_given;  // the local peers init_mpi was given

  TransportCalls calls_of() {
    TransportCalls c;
    c.launch_detected = [this](const EnvSnapshot&, std::string& why) {
      why = launched ? "" : "no launcher variables";
      return launched;
    };
    c.join = [this](const EnvSnapshot&, TimePoint, TimePoint, TimePoint) {
      calls.emplace_back("join");
      JoinOutcome j;
      j.state = join_state;
      if (join_state == JoinOutcome::State::NoServer) j.why = "the PMIx server at PMIX_SERVER_URI41 does not answer";
      j.own_limits = own_limits;
      if (join_state == JoinOutcome::State::Complete) j.local_peers = "4,5,6,7";
      return j;
    };
    c.release_join = [this] { calls.emplace_back("release"); };
    c.before_mpi = [this] { calls.emplace_back("reserve"); };
    c.init_mpi = [this](TimePoint deadline, bool single, const std::string& peers,
                        std::string& error) -> std::unique_ptr<Transport> {
      calls.emplace_back("init");
      peers_given = peers;
      init_deadline = deadline;
      singleton = single;
      if (init_fails) {
        error = "MPI_Init did not return within 3.0 s";
        return nullptr;
      }
      return make_local_transport();  // a rank 0 of its own: stands in for MPI's
    };
    c.local = [this] {
      calls.emplace_back("local");
      return make_local_transport();
    };
    c.on_mpi_root = [this] { calls.emplace_back("root-handler"); };
    return c;
  }

  TransportStart start(const std::string& mpi, const PhaseDeadlines& d) {
    return start_transport(mpi, 60, EnvSnapshot{}, d, calls_of());
  }
};

using Calls = std::vector<std::string>;
const PhaseDeadlines kDeadlines = PhaseDeadlines::from(Clock::now(), 60);

TEST(TransportStart, WithoutALauncherTheRankRunsAloneAndNoMpiIsTried) {
  Recorded r;
  const TransportStart s = r.start("auto", kDeadlines);
  EXPECT_FALSE(s.mpi);
  ASSERT_NE(s.transport, nullptr);
  EXPECT_EQ(s.incident, "");
  EXPECT_EQ(r.calls, (Calls{"local"}));
}

TEST(TransportStart, MpiOnWithoutALauncherInitsASingletonWithoutAJoin) {
  Recorded r;
  const TransportStart s = r.start("on", kDeadlines);
  EXPECT_TRUE(s.mpi);
  EXPECT_TRUE(r.singleton);
  EXPECT_EQ(r.init_deadline, kDeadlines.init);
  EXPECT_EQ(r.calls, (Calls{"reserve", "init", "root-handler"}));
}

TEST(TransportStart, UnderALauncherTheRanksJoinThenInitAndTheJoinIsReleased) {
  Recorded r;
  r.launched = true;
  r.join_state = JoinOutcome::State::Complete;
  const PhaseDeadlines past = PhaseDeadlines::from(Clock::now() - 100s, 60);  // the join took long
  const TimePoint before = Clock::now();
  const TransportStart s = r.start("auto", past);
  EXPECT_TRUE(s.mpi);
  EXPECT_FALSE(r.singleton);
  EXPECT_EQ(r.calls, (Calls{"reserve", "join", "init", "release", "root-handler"}));
  EXPECT_GE(r.init_deadline, before + past.grace);  // every rank is there: MPI_Init still gets a moment
  EXPECT_EQ(r.peers_given, "4,5,6,7");              // the node's ranks as the launcher placed them
}

TEST(TransportStart, AJoinThatFoundNoServerNeverCallsMpiInit) {
  Recorded r;
  r.launched = true;
  r.join_state = JoinOutcome::State::NoServer;
  const TransportStart s = r.start("auto", kDeadlines);
  EXPECT_FALSE(s.mpi);
  EXPECT_EQ(r.calls, (Calls{"reserve", "join", "local"}));
  EXPECT_EQ(s.incident,
            "MPI could not start (the PMIx server at PMIX_SERVER_URI41 does not answer): this rank ran alone");
  EXPECT_EQ(s.join.state, JoinOutcome::State::NoServer);  // launch.env reports the launcher gone
  EXPECT_FALSE(s.alone_in_a_live_job) << "a launcher that is gone: nobody to wait for";
}

TEST(TransportStart, ARankOutOfDescriptorsRunsAloneInALiveJob) {
  // Its own limits kept it from the PMIx server (EMFILE): the launcher and the other ranks may be
  // running, so it must not end the job before the reporting rank reports.
  Recorded r;
  r.launched = true;
  r.join_state = JoinOutcome::State::NoServer;
  r.own_limits = true;
  const TransportStart s = r.start("auto", kDeadlines);
  EXPECT_FALSE(s.mpi);
  EXPECT_TRUE(s.alone_in_a_live_job);
}

TEST(TransportStart, AJoinSomeRankNeverReachedLeavesTheTransportToTheRun) {
  Recorded r;
  r.launched = true;
  r.join_state = JoinOutcome::State::Incomplete;
  const TransportStart s = r.start("auto", kDeadlines);
  EXPECT_EQ(s.transport, nullptr);
  EXPECT_EQ(s.join.state, JoinOutcome::State::Incomplete);
  EXPECT_EQ(r.calls, (Calls{"reserve", "join"}));
}

TEST(TransportStart, AnMpiInitThatFailsLeavesTheRankAloneAndSaysWhy) {
  Recorded r;
  r.launched = true;
  r.init_fails = true;
  const TransportStart s = r.start("auto", kDeadlines);
  EXPECT_FALSE(s.mpi);
  ASSERT_NE(s.transport, nullptr);
  EXPECT_EQ(s.incident, "MPI could not start (MPI_Init did not return within 3.0 s): this rank ran alone");
  EXPECT_EQ(r.calls, (Calls{"reserve", "join", "init", "local"}));
  EXPECT_TRUE(s.alone_in_a_live_job) << "the launcher started it: the job is live";
}

TEST(TransportStart, MpiOffIgnoresTheLauncher) {
  Recorded r;
  r.launched = true;
  const TransportStart s = r.start("off", kDeadlines);
  EXPECT_FALSE(s.mpi);
  EXPECT_EQ(s.incident, "");
  EXPECT_EQ(r.calls, (Calls{"local"}));
  EXPECT_FALSE(s.alone_in_a_live_job) << "alone as asked";
}

}  // namespace
}  // namespace job_transport_start_test
}  // namespace preflight
