// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "checks/check.hpp"

namespace preflight {
namespace checks_net_master_test {
namespace {

using Addrs = std::vector<std::string>;

// The master itself: MASTER_ADDR is this host's 10.0.0.5, port free, outside the ephemeral range.
struct Case {
  RankFacts facts;
  Case() {
    facts.identity.hostname = "gpu-a";
    MasterFacts& m = facts.net.master;
    m.addr = "gpu-a.example";
    m.port = "29500";
    m.resolved = Probed<Addrs>::ok({"10.0.0.5"}, "getaddrinfo(gpu-a.example)");
    m.addr_is_local = true;
    m.hostname_resolves_to = Probed<Addrs>::ok({"10.0.0.5"}, "getaddrinfo(gpu-a)");
    m.port_listening = Probed<bool>::ok(false, "/proc/net/tcp, /proc/net/tcp6");
    m.bind_test = Probed<std::string>::ok("free", "bind(10.0.0.5:29500, SO_REUSEADDR)");
    m.ephemeral_range = Probed<std::vector<int>>::ok({32768, 60999}, "/proc/sys/net/ipv4/ip_local_port_range");
    m.reserved_ports = Probed<std::string>::ok("", "/proc/sys/net/ipv4/ip_local_reserved_ports");
  }
  MasterFacts& m() { return facts.net.master; }
  Case& nodes(int n) {
    facts.placement.nodes = n;
    return *this;
  }
  Verdict run() const {
    const Options options;
    return run_check(*find_check("net.master"), CheckContext{facts, options, Profile::Job});
  }
};

void expect(const Verdict& v, Status s, const std::string& summary_has, const std::string& remedy_has = {}) {
  EXPECT_EQ(v.status, s) << v.summary << " / " << v.remedy;
  EXPECT_NE(v.summary.find(summary_has), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find(remedy_has), std::string::npos) << v.remedy;
}

TEST(NetMaster, PassOnTheMaster) {
  const Verdict v = Case().run();
  expect(
      v, Status::Pass,
      "MASTER_PORT 29500 is free on this host, the master; MASTER_ADDR=gpu-a.example resolves to 10.0.0.5 (this host)");
  EXPECT_EQ(v.finding.code, "net.master/resolves");
  EXPECT_EQ(v.finding.params["addresses"], "10.0.0.5");
  EXPECT_TRUE(v.summary.find(" (this host)") != std::string::npos) << v.summary;
  EXPECT_EQ(v.evidence["resolved"]["value"][0], "10.0.0.5");
  EXPECT_EQ(v.evidence["bind_test"]["value"], "free");
}

TEST(NetMaster, PassElsewhere) {
  Case c;
  c.m().addr_is_local = false;
  c.m().bind_test =
      Probed<std::string>::error(ProbeErrc::Unsupported, "MASTER_ADDR is not an address of this host", "bind()");
  c.m().port_listening = Probed<bool>::ok(true, "/proc/net/tcp: 0.0.0.0:29500 LISTEN");  // not the master: irrelevant
  expect(c.nodes(2).run(), Status::Pass, "not an address of this host: the port is checked on the master");
}

TEST(NetMaster, SkipWhenUnset) {
  Case c;
  c.m().addr.clear();
  c.m().port.clear();
  const Verdict v = c.run();
  expect(v, Status::Skip, "MASTER_ADDR and MASTER_PORT are not set");
  EXPECT_EQ(v.finding.code, "net.master/unset");
}

TEST(NetMaster, OneOfTheTwoMissingFails) {
  Case a;
  a.m().addr.clear();
  a.m().resolved = Probed<Addrs>::error(ProbeErrc::NotFound, "MASTER_ADDR is not set", "environment");
  const Verdict no_addr = a.run();
  expect(no_addr, Status::Fail, "MASTER_PORT=29500 is set but MASTER_ADDR is not");
  EXPECT_EQ(no_addr.finding.code, "net.master/addr-missing");
  EXPECT_EQ(no_addr.finding.params["master_port"], "29500");
  Case p;
  p.m().port.clear();
  const Verdict no_port = p.run();
  expect(no_port, Status::Fail, "MASTER_ADDR=gpu-a.example is set but MASTER_PORT is not", "export MASTER_PORT=29500");
  EXPECT_EQ(no_port.finding.code, "net.master/port-missing");
  EXPECT_EQ(no_port.finding.params["addr"], "gpu-a.example");
}

TEST(NetMaster, BadPortFails) {
  for (const char* bad : {"0", "65536", "abc", "29500x", "-1", " 29500"}) {
    Case c;
    c.m().port = bad;
    const Verdict v = c.run();
    expect(v, Status::Fail, "is not a port number in 1..65535", "export MASTER_PORT=29500");
    EXPECT_EQ(v.finding.code, "net.master/port-invalid");
    EXPECT_EQ(v.finding.params["master_port"], bad);
  }
  Case ok;
  ok.m().port = "65535";
  ok.m().ephemeral_range = Probed<std::vector<int>>::ok({32768, 60999}, "r");
  expect(ok.run(), Status::Pass, "65535 is free");
}

TEST(NetMaster, ResolutionFailures) {
  Case timeout;
  timeout.m().resolved =
      Probed<Addrs>::error(ProbeErrc::Timeout, "did not resolve within 2.0 s", "getaddrinfo(gpu-a.example)");
  timeout.m().addr_is_local = false;
  const Verdict t = timeout.run();
  expect(t, Status::Fail, "MASTER_ADDR=gpu-a.example did not resolve within 2.0 s", "numeric MASTER_ADDR");
  EXPECT_EQ(t.finding.code, "net.master/resolve-timeout");
  EXPECT_EQ(t.finding.params["detail"], "did not resolve within 2.0 s");
  EXPECT_NE(t.remedy.find("`getent hosts gpu-a.example`"), std::string::npos) << t.remedy;
  Case budget;  // the lookup got what was left of the probe phase, not its own deadline
  budget.m().resolved = Probed<Addrs>::error(
      ProbeErrc::OutOfBudget, "did not resolve within what was left of the probe phase, 0.2 s", "getaddrinfo(gpu-a)");
  budget.m().addr_is_local = false;
  const Verdict b = budget.run();
  EXPECT_EQ(b.status, Status::Unknown) << b.summary;
  EXPECT_EQ(b.finding.code, "net.master/resolve-out-of-budget");
  EXPECT_NE(b.remedy.find("not the DNS server"), std::string::npos) << b.remedy;
  Case none;
  none.m().addr = "nonexistent.invalid";
  none.m().resolved =
      Probed<Addrs>::error(ProbeErrc::NotFound, "Name or service not known", "getaddrinfo(nonexistent.invalid)");
  none.m().addr_is_local = false;
  const Verdict n = none.run();
  expect(n, Status::Fail, "MASTER_ADDR=nonexistent.invalid does not resolve: Name or service not known",
         "getent hosts nonexistent.invalid");
  EXPECT_EQ(n.finding.code, "net.master/does-not-resolve");
  EXPECT_EQ(n.finding.params["addr"], "nonexistent.invalid");
  EXPECT_EQ(n.finding.params["detail"], "Name or service not known");
  Case sysroot;
  sysroot.m().resolved =
      Probed<Addrs>::error(ProbeErrc::Unsupported, "not resolved: a --sysroot tree has no resolver", "/etc/hosts");
  sysroot.m().addr_is_local = false;
  const Verdict s = sysroot.run();
  expect(s, Status::Unknown, "was not resolved");
  EXPECT_EQ(s.finding.code, "net.master/not-resolved");
  EXPECT_EQ(s.finding.params["addr"], "gpu-a.example");
  Case never;
  never.m().resolved = {};
  never.m().addr_is_local = false;
  const Verdict nv = never.run();
  expect(nv, Status::Unknown, "was not resolved");
  EXPECT_EQ(nv.finding.code, "net.master/not-resolved");
}

TEST(NetMaster, LoopbackInMultiNodeFails) {
  Case c;
  c.m().addr = "localhost";
  c.m().resolved = Probed<Addrs>::ok({"127.0.0.1", "::1"}, "getaddrinfo(localhost)");
  const Verdict v = c.nodes(2).run();
  expect(v, Status::Fail, "MASTER_ADDR=localhost resolves to the loopback address 127.0.0.1 in a multi-node job");
  EXPECT_EQ(v.finding.code, "net.master/loopback");
  EXPECT_EQ(v.finding.params["address"], "127.0.0.1");
  c.nodes(1);
  expect(c.run(), Status::Pass, "resolves to 127.0.0.1, ::1 (this host)");
}

TEST(NetMaster, DebianHostnameTrap) {
  Case c;
  c.m().addr = "gpu-a";
  c.m().resolved = Probed<Addrs>::ok({"127.0.1.1"}, "getaddrinfo(gpu-a)");
  const Verdict one = c.run();
  expect(one, Status::Warn, "MASTER_ADDR=gpu-a resolves to 127.0.1.1 on this host", "instead of 127.0.1.1");
  EXPECT_EQ(one.finding.code, "net.master/hostname-address-one-node");
  EXPECT_EQ(one.finding.params["addr"], "gpu-a");
  const Verdict multi = c.nodes(2).run();
  expect(multi, Status::Fail, "other nodes cannot reach");
  EXPECT_EQ(multi.finding.code, "net.master/hostname-address");
  EXPECT_EQ(multi.finding.params["addr"], "gpu-a");
  // MASTER_ADDR is the hostname: the hostname's own lookup shows the trap even if MASTER_ADDR's came out differently.
  Case h;
  h.m().addr = "GPU-A";
  h.m().hostname_resolves_to = Probed<Addrs>::ok({"127.0.1.1", "10.0.0.5"}, "getaddrinfo(gpu-a)");
  const Verdict hv = h.run();
  expect(hv, Status::Warn, "resolves to 127.0.1.1");
  EXPECT_EQ(hv.finding.code, "net.master/hostname-address-one-node");
  EXPECT_EQ(hv.finding.params["addr"], "GPU-A");
}

TEST(NetMaster, PortInUseFails) {
  Case c;
  c.m().port_listening = Probed<bool>::ok(true, "/proc/net/tcp: 0.0.0.0:29500 LISTEN, inode 41872");
  c.m().bind_test = Probed<std::string>::ok("EADDRINUSE: Address already in use", "bind");
  const Verdict v = c.run();
  expect(
      v, Status::Fail,
      "MASTER_PORT 29500 is already in use on this host, the master (/proc/net/tcp: 0.0.0.0:29500 LISTEN, inode 41872)",
      "ss -ltnp 'sport = :29500'");
  EXPECT_EQ(v.finding.code, "net.master/port-in-use");
  EXPECT_EQ(v.finding.params["port"], 29500);
  EXPECT_EQ(v.finding.params["where"], "/proc/net/tcp: 0.0.0.0:29500 LISTEN, inode 41872");
  Case bind_only;
  bind_only.m().bind_test = Probed<std::string>::ok("EADDRINUSE: Address already in use", "bind");
  const Verdict b = bind_only.run();
  expect(b, Status::Fail, "(bind(10.0.0.5:29500): EADDRINUSE: Address already in use)");
  EXPECT_EQ(b.finding.code, "net.master/port-in-use");
  EXPECT_EQ(b.finding.params["where"], "bind(10.0.0.5:29500): EADDRINUSE: Address already in use");
  Case unreadable;
  unreadable.m().port_listening =
      Probed<bool>::error(ProbeErrc::PermissionDenied, "permission denied", "/proc/net/tcp");
  expect(unreadable.run(), Status::Pass, "29500 is free");  // the bind test still answers
}

TEST(NetMaster, TorchrunListenerIsExpected) {
  Case c;
  c.m().port_listening = Probed<bool>::ok(true, "/proc/net/tcp6: [::]:29500 LISTEN, inode 1");
  c.m().bind_test = Probed<std::string>::ok("EADDRINUSE: Address already in use", "bind");
  c.facts.env.set("TORCHELASTIC_RUN_ID", "none");
  const Verdict v = c.run();
  expect(v, Status::Pass, "as expected under torchrun: its agent hosts the TCPStore there");
  EXPECT_EQ(v.evidence["torchrun"], true);
  Case l;
  l.m().port_listening = Probed<bool>::ok(true, "x");
  l.facts.placement.launcher = "torchrun";
  expect(l.run(), Status::Pass, "as expected under torchrun");
}

TEST(NetMaster, BindRefusedFails) {
  Case c;
  c.m().port = "80";
  c.m().bind_test = Probed<std::string>::ok("EACCES: Permission denied", "bind");
  const Verdict v = c.run();
  expect(v, Status::Fail,
         "MASTER_PORT 80 cannot be bound on 10.0.0.5: EACCES: Permission denied (ports below 1024 need "
         "CAP_NET_BIND_SERVICE)",
         "Use a port above 1023");
  EXPECT_EQ(v.finding.code, "net.master/port-privileged");
  EXPECT_EQ(v.finding.params["port"], 80);
  EXPECT_EQ(v.finding.params["bind"], "EACCES: Permission denied");
  Case other;
  other.m().bind_test = Probed<std::string>::ok("EADDRNOTAVAIL: Cannot assign requested address", "bind");
  const Verdict o = other.run();
  EXPECT_EQ(o.status, Status::Fail);
  EXPECT_EQ(o.finding.code, "net.master/bind-failed");
  EXPECT_EQ(o.finding.params["address"], "10.0.0.5");
  EXPECT_EQ(o.finding.params["bind"], "EADDRNOTAVAIL: Cannot assign requested address");
  EXPECT_NE(
      o.summary.find("MASTER_PORT 29500 cannot be bound on 10.0.0.5: EADDRNOTAVAIL: Cannot assign requested address"),
      std::string::npos)
      << o.summary;
  EXPECT_EQ(o.summary.find("CAP_NET_BIND_SERVICE"), std::string::npos) << o.summary;
  EXPECT_EQ(o.remedy, "Set MASTER_ADDR to an address of this host and a free MASTER_PORT.");
}

TEST(NetMaster, PortStateUnknown) {
  Case c;
  c.m().port_listening = Probed<bool>::error(ProbeErrc::PermissionDenied, "permission denied", "/proc/net/tcp");
  c.m().bind_test = Probed<std::string>::error(ProbeErrc::ApiError, "socket: Too many open files", "bind");
  const Verdict v = c.run();
  expect(v, Status::Unknown, "could not tell whether MASTER_PORT 29500 is free");
  EXPECT_EQ(v.finding.code, "net.master/port-state-unknown");
  EXPECT_EQ(v.finding.params["port"], 29500);
}

TEST(NetMaster, EphemeralPortWarns) {
  Case c;
  c.m().port = "40000";
  const Verdict v = c.run();
  expect(v, Status::Warn, "MASTER_PORT 40000 lies in the ephemeral port range 32768-60999",
         "sysctl -w net.ipv4.ip_local_reserved_ports=40000");
  EXPECT_EQ(v.finding.code, "net.master/port-ephemeral");
  EXPECT_EQ(v.finding.params["port"], 40000);
  EXPECT_EQ(v.finding.params["low"], 32768);
  EXPECT_EQ(v.finding.params["high"], 60999);
  EXPECT_NE(v.remedy.find("Choose a port below 32768"), std::string::npos) << v.remedy;
  c.m().reserved_ports = Probed<std::string>::ok("39990-40010,50000", "r");
  expect(c.run(), Status::Pass, "40000 is free");
  Case elsewhere;
  elsewhere.m().port = "40000";
  elsewhere.m().addr_is_local = false;
  expect(elsewhere.run(), Status::Pass, "checked on the master");
}

TEST(NetMaster, RunsInNodeAndJobProfiles) {
  const Case c;
  const Options options;
  EXPECT_EQ(run_check(*find_check("net.master"), CheckContext{c.facts, options, Profile::Node}).status, Status::Pass);
  EXPECT_EQ(run_check(*find_check("net.master"), CheckContext{c.facts, options, Profile::Image}).status, Status::Skip);
}

TEST(NetMaster, ExplainListsWhatItReadsFailuresAndFix) {
  const std::string explain(find_check("net.master")->explain);
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN"}) {
    EXPECT_NE(explain.find(part), std::string::npos) << part;
  }
}

// In a job, rank 0 judges the rendezvous and every rank's MASTER_ADDR/MASTER_PORT is compared.
struct JobCase {
  JobFacts job;
  explicit JobCase(int hosts, int per_host) {
    job.source = "mpi";
    job.world_size = hosts * per_host;
    for (int r = 0; r < job.world_size; ++r) {
      Case c;
      c.facts.identity.hostname = std::string("gpu-") + static_cast<char>('a' + r / per_host);
      c.facts.placement.rank = r;
      c.facts.placement.nodes = hosts;
      c.m().addr_is_local = r < per_host;  // the master is gpu-a
      job.ranks.push_back(c.facts);
      RankStatus s;
      s.rank = r;
      s.delivered = s.heard = true;
      job.status.push_back(s);
    }
  }
  MasterFacts& m(int rank) { return job.ranks[static_cast<std::size_t>(rank)].net.master; }
  Verdict run() const {
    const Options options;
    return run_check(*find_check("net.master"), CheckContext{job.ranks.front(), options, Profile::Job, nullptr, &job});
  }
};

TEST(NetMaster, SameRendezvousOnEveryRankPasses) {
  const Verdict v = JobCase(2, 2).run();
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
}

TEST(NetMaster, AddressThatDiffersBetweenRanksFails) {
  JobCase j(3, 2);
  for (int r : {4, 5}) j.m(r).addr = "gpu-c.example";  // gpu-c's job script exported its own name
  const Verdict v = j.run();
  expect(v, Status::Fail,
         "MASTER_ADDR differs between ranks: 'gpu-a.example' on ranks 0–3 (gpu-a, gpu-b); 'gpu-c.example' on ranks 4–5 "
         "(gpu-c)",
         "export MASTER_ADDR=gpu-a.example");
  EXPECT_EQ(v.finding.code, "net.master/differs-between-ranks");
  EXPECT_EQ(v.finding.params["variable"], "MASTER_ADDR");
  EXPECT_EQ(v.finding.params["majority"], "gpu-a.example");
  EXPECT_EQ(v.evidence["MASTER_ADDR_by_rank"]["gpu-c.example"].size(), 2u);
}

TEST(NetMaster, PortThatDiffersOrIsUnsetOnSomeRanksFails) {
  JobCase j(2, 2);
  j.m(1).port = "29501";
  j.m(3).port = "";
  const Verdict v = j.run();
  expect(v, Status::Fail,
         "MASTER_PORT differs between ranks: '29500' on ranks 0,2 (gpu-a, gpu-b); '29501' on rank 1 (gpu-a); unset on "
         "rank 3 (gpu-b)",
         "export MASTER_PORT=29500");
  EXPECT_EQ(v.finding.code, "net.master/differs-between-ranks");
  EXPECT_EQ(v.finding.params["variable"], "MASTER_PORT");
  EXPECT_EQ(v.finding.params["majority"], "29500");
}

TEST(NetMaster, UnsetOnRankZeroButSetElsewhereFails) {
  JobCase j(2, 1);
  j.m(0).addr.clear();
  j.m(0).port.clear();
  const Verdict v = j.run();
  expect(v, Status::Fail,
         "MASTER_ADDR differs between ranks: unset on rank 0 (gpu-a); 'gpu-a.example' on rank 1 (gpu-b)",
         "Unset MASTER_ADDR on every rank");
  // Both variables differ, the unset side first: each is its own finding.
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "net.master/differs-between-ranks-mostly-unset");
  EXPECT_EQ(v.findings[0].params["variable"], "MASTER_ADDR");
  EXPECT_EQ(v.findings[1].code, "net.master/differs-between-ranks-mostly-unset");
  EXPECT_EQ(v.findings[1].params["variable"], "MASTER_PORT");
}

TEST(NetMaster, OneRankJobIsJudgedAlone) {
  JobCase j(1, 1);
  EXPECT_EQ(j.run().status, Status::Pass);
  j.m(0).addr.clear();
  j.m(0).port.clear();
  EXPECT_EQ(j.run().status, Status::Skip);
}

}  // namespace
}  // namespace checks_net_master_test
}  // namespace preflight
