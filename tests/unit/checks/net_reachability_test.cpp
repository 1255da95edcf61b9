// SPDX-License-Identifier: MIT
// net.reachability on hand-built jobs: every rank's connection to rank 0's NCCL bootstrap address.
#include <gtest/gtest.h>

#include "core/nccl_socket.hpp"
#include "job_fixture.hpp"

namespace preflight {
namespace checks_net_reachability_test {
namespace {

using job_fixture::judge_job;
using job_fixture::lose;

const CheckSpec& spec() { return *find_check("net.reachability"); }

void expect(const Verdict& v, Status s, const std::string& summary_has, const std::string& remedy_has = {}) {
  EXPECT_EQ(v.status, s) << v.summary << " / " << v.remedy;
  EXPECT_NE(v.summary.find(summary_has), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find(remedy_has), std::string::npos) << v.remedy;
}

NetInterface iface(std::string name, std::vector<NetAddress> addresses, bool loopback = false) {
  NetInterface i;
  i.name = std::move(name);
  i.up = i.running = true;
  i.loopback = loopback;
  i.addresses = std::move(addresses);
  return i;
}

// 2 hosts x 2 ranks; rank 0 listened on eth0 192.0.2.2:41234 and every rank connected.
JobFacts reached() {
  JobFacts j = job_fixture::job(2, 2);
  j.reach_target = ReachTarget{"eth0", "192.0.2.2", 41234};
  for (RankFacts& f : j.ranks) {
    const int h = f.identity.hostname == "gpu-a" ? 2 : 3;
    f.net.interfaces = Probed<std::vector<NetInterface>>::ok(
        {iface("lo", {{"inet", "127.0.0.1", 8}}, true), iface("eth0", {{"inet", "192.0.2." + std::to_string(h), 24}})},
        std::string(kInterfacesLiveSource));
    ReachResult r;
    r.attempted = r.ok = true;
    r.target = "192.0.2.2:41234";
    r.source = "192.0.2." + std::to_string(h);
    r.ms = 0.2 + f.placement.rank;
    f.net.reach = r;
  }
  return j;
}

void fail_rank(JobFacts& j, int rank, const std::string& error) {
  RankFacts& f = j.ranks[static_cast<std::size_t>(rank)];
  f.net.reach->ok = false;
  f.net.reach->source.clear();
  f.net.reach->error = error;
}

TEST(NetReachability, PassNamesTheTarget) {
  const Verdict v = judge_job(spec(), reached());
  expect(v, Status::Pass,
         "all 4 ranks opened a TCP connection to rank 0's NCCL bootstrap address 192.0.2.2:41234 (eth0 on gpu-a) "
         "(slowest 3.2 ms)");
  EXPECT_EQ(v.finding.code, "net.reachability/reached");
  EXPECT_EQ(v.finding.params["reached"], 4);
  EXPECT_EQ(v.finding.params["target"], "192.0.2.2:41234");
  EXPECT_EQ(v.finding.params["interface"], "eth0");
  EXPECT_EQ(v.finding.params["host"], "gpu-a");
  EXPECT_EQ(v.evidence["target"]["port"], 41234);
  EXPECT_EQ(v.evidence["results"].size(), 4u);
}

TEST(NetReachability, FailingRanksAreNamedWithTheirError) {
  JobFacts j = reached();
  const std::string timeout =
      "no answer within 2.0 s (the SYN was not answered: a firewall drops it, or there is no route)";
  fail_rank(j, 2, timeout);
  fail_rank(j, 3, timeout);
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "2 of 4 ranks cannot open a TCP connection to rank 0's NCCL bootstrap address 192.0.2.2:41234 (eth0 on "
         "gpu-a): ranks "
         "2–3 (gpu-b): no answer within 2.0 s",
         "a firewall drops the SYN");
  EXPECT_NE(v.remedy.find("Rank 0 picked eth0 (192.0.2.2) by NCCL's default order (ib, ^docker,lo,virbr)"),
            std::string::npos)
      << v.remedy;
  EXPECT_NE(v.remedy.find("set NCCL_SOCKET_IFNAME to the interface the nodes share"), std::string::npos) << v.remedy;
  EXPECT_NE(v.remedy.find("ip route get 192.0.2.2"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.finding.code, "net.reachability/unreachable");
  EXPECT_EQ(v.finding.params["failed"], 2);
  EXPECT_EQ(v.finding.params["total"], 4);
  EXPECT_EQ(v.finding.params["address"], "192.0.2.2");
  EXPECT_TRUE(v.summary.find("No answer means a firewall drops the SYN or there is no route. ") != std::string::npos ||
              v.remedy.find("No answer means a firewall drops the SYN or there is no route. ") != std::string::npos)
      << v.summary << " / " << v.remedy;
  EXPECT_EQ(v.cause, "net.socket_ifname");
  EXPECT_EQ(v.evidence["failed"], 2);
}

TEST(NetReachability, RefusedAndUnreachableExplainThemselves) {
  JobFacts j = reached();
  fail_rank(j, 2, "connect: Connection refused (ECONNREFUSED)");
  fail_rank(j, 3, "connect: No route to host (EHOSTUNREACH)");
  j.ranks[0].env.set("NCCL_SOCKET_IFNAME", "eth0");
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail,
         "rank 2 (gpu-b): connect: Connection refused (ECONNREFUSED); rank 3 (gpu-b): connect: No route to host",
         "Refused means a firewall rejects the port");
  EXPECT_NE(v.remedy.find("Unreachable means these hosts have no route"), std::string::npos) << v.remedy;
  EXPECT_NE(v.remedy.find("by NCCL_SOCKET_IFNAME=eth0"), std::string::npos) << v.remedy;
  EXPECT_EQ(v.finding.code, "net.reachability/unreachable");
  EXPECT_EQ(v.finding.params["pick"], "Rank 0 picked eth0 (192.0.2.2) by NCCL_SOCKET_IFNAME=eth0");
}

TEST(NetReachability, NoTargetIsUnknownWithTheNote) {
  JobFacts j = reached();
  j.reach_target.reset();
  j.reach_note = "rank 0's listener failed: bind 192.0.2.2: Cannot assign requested address (EADDRNOTAVAIL)";
  for (RankFacts& f : j.ranks) f.net.reach = ReachResult{};
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Unknown, "the reachability test was not run: rank 0's listener failed: bind 192.0.2.2",
         "See net.socket_ifname on rank 0 (gpu-a)");
  EXPECT_EQ(v.finding.code, "net.reachability/not-run");
  EXPECT_EQ(v.finding.params["why"], j.reach_note);
  EXPECT_EQ(v.finding.params["host"], "gpu-a");
}

TEST(NetReachability, RankZeroWithoutUsableInterfaceFails) {
  JobFacts j = reached();
  j.reach_target.reset();
  j.reach_note = "rank 0 has no usable interface for NCCL's bootstrap";
  j.ranks[0].env.set("NCCL_SOCKET_IFNAME", "ib9");
  const Verdict v = judge_job(spec(), j);
  expect(
      v, Status::Fail,
      "rank 0 (gpu-a) has no interface NCCL's bootstrap can use: NCCL_SOCKET_IFNAME=ib9 selects no running interface",
      "On gpu-a, set NCCL_SOCKET_IFNAME to a running interface");
  EXPECT_EQ(v.finding.code, "net.reachability/rank0-no-interface");
  EXPECT_EQ(v.finding.params["selected_by"], "NCCL_SOCKET_IFNAME=ib9");
  EXPECT_EQ(v.finding.params["reach_note"], "rank 0 has no usable interface for NCCL's bootstrap");
  EXPECT_EQ(v.cause, "net.socket_ifname");
}

TEST(NetReachability, MissingResultsAreUnknown) {
  JobFacts j = reached();
  j.ranks[1].net.reach.reset();
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Unknown, "rank 1 (gpu-a) delivered no reachability result");
  EXPECT_EQ(v.finding.code, "net.reachability/no-result");
  EXPECT_EQ(v.finding.params["silent"], "rank 1 (gpu-a)");
  JobFacts u = reached();
  lose(u, 3, Phase::Probe);
  const Verdict lost = judge_job(spec(), u);
  expect(lost, Status::Unknown, "no facts arrived from rank 3 (gpu-b, pid 1003, last phase probe)");
  EXPECT_EQ(lost.finding.code, "net.reachability/no-facts");
  EXPECT_EQ(lost.finding.params["missing"], "rank 3 (gpu-b, pid 1003, last phase probe)");
}

TEST(NetReachability, FailureOutranksMissingResults) {
  JobFacts j = reached();
  j.ranks[1].net.reach.reset();
  fail_rank(j, 2, "connect: Connection refused (ECONNREFUSED)");
  const Verdict v = judge_job(spec(), j);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_NE(v.remedy.find("Rerun preflight under the job's launcher"), std::string::npos) << v.remedy;
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "net.reachability/unreachable");
  EXPECT_EQ(v.findings[1].code, "net.reachability/no-result");
}

TEST(NetReachability, LoopbackTargetAcrossHostsFails) {
  JobFacts j = reached();
  j.reach_target = ReachTarget{"lo", "127.0.0.1", 41234};
  const Verdict v = judge_job(spec(), j);
  expect(v, Status::Fail, "rank 0's NCCL bootstrap address 127.0.0.1:41234 is loopback in a job across 2 hosts",
         "not lo");
  EXPECT_EQ(v.finding.code, "net.reachability/loopback");
  EXPECT_EQ(v.finding.params["hosts"], 2);
  EXPECT_EQ(v.finding.params["target"], "127.0.0.1:41234");
  JobFacts one = job_fixture::job(1, 2);
  one.reach_target = ReachTarget{"lo", "127.0.0.1", 41234};
  for (RankFacts& f : one.ranks) f.net.reach = ReachResult{true, true, "127.0.0.1:41234", "127.0.0.1", "", 0.1};
  expect(judge_job(spec(), one), Status::Pass, "127.0.0.1:41234 (lo on gpu-a)");
}

TEST(NetReachability, Ipv6TargetIsBracketed) {
  JobFacts j = reached();
  j.reach_target = ReachTarget{"eth0", "fd00::2", 41234};
  expect(judge_job(spec(), j), Status::Pass, "[fd00::2]:41234 (eth0 on gpu-a)");
}

TEST(NetReachability, SkipForOneProcess) {
  JobFacts one;
  const Verdict v = judge_job(spec(), one);
  expect(v, Status::Skip, "a single process");
  EXPECT_EQ(v.finding.code, "net.reachability/single-process");
  const RankFacts f;
  const Options o;
  expect(run_check(spec(), CheckContext{f, o, Profile::Job, nullptr, nullptr}), Status::Skip, "a single process");
}

TEST(NetReachability, MergeJudgesFilesOrSkips) {
  JobFacts m = reached();
  m.source = "merge";
  m.reach_target.reset();
  fail_rank(m, 3, "connect: Connection refused (ECONNREFUSED)");
  const Verdict v = judge_job(spec(), m);
  expect(v, Status::Fail,
         "1 of 4 ranks cannot open a TCP connection to rank 0's NCCL bootstrap address 192.0.2.2:41234 (gpu-a)");
  EXPECT_EQ(v.finding.code, "net.reachability/unreachable");
  EXPECT_FALSE(v.finding.params.contains("interface"));
  JobFacts none = job_fixture::job(2, 2);
  none.source = "merge";
  const Verdict skipped = judge_job(spec(), none);
  expect(skipped, Status::Skip, "reachability is tested only in a live job");
  EXPECT_EQ(skipped.finding.code, "net.reachability/merged-without-results");
}

}  // namespace
}  // namespace checks_net_reachability_test
}  // namespace preflight
