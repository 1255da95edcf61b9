// SPDX-License-Identifier: MIT
// A fact a check could not read is a coded UNKNOWN of that check (checks/check.hpp unknown_from):
// "<id>/facts-unreadable" (or the check's own name for the fact) with the probe's reason and the
// check's fix, and "…-hung" with the fix for a hang where a probe hung. Never PASS, never prose only.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "checks/check.hpp"

namespace preflight {
namespace checks_unreadable_facts_test {
namespace {

const std::string kHung = "probe 'limits' hung: it had not finished at the probe deadline (7.5 s of the start)";

struct Case {
  const char* check;
  std::function<void(RankFacts&, ProbeError)> spoil;  // makes the check's fact fail with the error
  const char* unreadable;                             // the code when it could not be read
  const char* hung;                                   // the code when a probe hung
  const char* what;                                   // how the summary names the fact
};

const Case kCases[] = {
    {"host.limits",
     [](RankFacts& f, ProbeError e) {
       f.limits.memlock = decltype(f.limits.memlock)::error(e);
       f.limits.nofile = decltype(f.limits.nofile)::error(e);
       f.limits.core = decltype(f.limits.core)::error(e);
     },
     "host.limits/facts-unreadable", "host.limits/facts-hung", "the resource limits (/proc/self/limits)"},
    {"shm.capacity", [](RankFacts& f, ProbeError e) { f.shm.usage = decltype(f.shm.usage)::error(e); },
     "shm.capacity/facts-unreadable", "shm.capacity/facts-hung", "/dev/shm"},
    {"net.ib", [](RankFacts& f, ProbeError e) { f.net.ib_devices = decltype(f.net.ib_devices)::error(e); },
     "net.ib/facts-unreadable", "net.ib/facts-hung", "the RDMA devices"},
    {"net.socket_ifname", [](RankFacts& f, ProbeError e) { f.net.interfaces = decltype(f.net.interfaces)::error(e); },
     "net.socket_ifname/facts-unreadable", "net.socket_ifname/facts-hung", "the network interfaces"},
    {"topo.pcie_acs", [](RankFacts& f, ProbeError e) { f.pcie.functions = decltype(f.pcie.functions)::error(e); },
     "topo.pcie_acs/facts-unreadable", "topo.pcie_acs/facts-hung", "the PCI devices"},
    {"host.disk", [](RankFacts& f, ProbeError e) { f.disk = decltype(f.disk)::error(e); }, "host.disk/facts-unreadable",
     "host.disk/facts-hung", "the checkpoint directories"},
    {"host.memory", [](RankFacts& f, ProbeError e) { f.memory.meminfo = decltype(f.memory.meminfo)::error(e); },
     "host.memory/meminfo-unreadable", "host.memory/meminfo-hung", "the node's available memory"},
    {"host.memory",
     [](RankFacts& f, ProbeError e) {
       f.memory.meminfo = Probed<MemInfo>::ok(MemInfo{64ull << 30, 60ull << 30, 0, 0}, "/proc/meminfo");
       f.memory.cgroup = decltype(f.memory.cgroup)::error(e);
     },
     "host.memory/cgroup-unreadable", "host.memory/cgroup-hung", "the cgroup memory limit"},
    {"net.gpu_nic_affinity", [](RankFacts& f, ProbeError e) { f.topology = decltype(f.topology)::error(e); },
     "net.gpu_nic_affinity/topology-unreadable", "net.gpu_nic_affinity/topology-hung", "the machine's topology"},
};

Verdict judge(const Case& c, ProbeError e) {
  RankFacts facts;
  facts.shm.path = "/dev/shm";
  c.spoil(facts, std::move(e));
  const Options options;
  const CheckSpec* spec = find_check(c.check);
  EXPECT_NE(spec, nullptr) << c.check;
  return spec == nullptr ? Verdict{} : run_check(*spec, CheckContext{facts, options, Profile::Node});
}

bool declared(const char* check, const std::string& code) {
  for (const FindingSpec& f : find_check(check)->findings) {
    if (f.code == code) return true;
  }
  return false;
}

TEST(UnreadableFacts, AFactThatCouldNotBeReadIsTheChecksCodedUnknown) {
  for (const Case& c : kCases) {
    const Verdict v = judge(c, ProbeError{ProbeErrc::Unreadable, "read failed: Input/output error"});
    EXPECT_EQ(v.status, Status::Unknown) << c.check;
    EXPECT_EQ(v.finding.code, c.unreadable) << c.check << ": " << v.summary;
    EXPECT_TRUE(declared(c.check, c.unreadable)) << c.unreadable;
    EXPECT_NE(v.summary.find(std::string("could not read ") + c.what), std::string::npos) << v.summary;
    EXPECT_NE(v.summary.find("Input/output error"), std::string::npos) << v.summary;
    EXPECT_NE(v.finding.params.value("why", "").find("Input/output error"), std::string::npos)
        << v.finding.params.dump();
    EXPECT_FALSE(v.remedy.empty()) << c.check;
    EXPECT_EQ(v.remedy.find('{'), std::string::npos) << c.check << ": an unrendered template: " << v.remedy;
  }
}

TEST(UnreadableFacts, AFactAProbeLeftBehindIsAHangWithTheFixForOne) {
  for (const Case& c : kCases) {
    const Verdict v = judge(c, ProbeError{ProbeErrc::Timeout, kHung});
    EXPECT_EQ(v.status, Status::Unknown) << c.check;
    EXPECT_EQ(v.finding.code, c.hung) << c.check << ": " << v.summary;
    EXPECT_TRUE(declared(c.check, c.hung)) << c.hung;
    EXPECT_NE(v.summary.find("was not gathered: " + kHung), std::string::npos) << v.summary;
    EXPECT_EQ(v.remedy.rfind(std::string(kHungProbeRemedy), 0), 0u) << v.remedy;
  }
}

TEST(UnreadableFacts, TheTopologysFixFollowsItsError) {
  const Case& topology = kCases[std::size(kCases) - 1];
  EXPECT_EQ(judge(topology, ProbeError{ProbeErrc::Unsupported, "no topology under --sysroot"}).finding.code,
            "net.gpu_nic_affinity/topology-not-here");
  const Verdict unreadable = judge(topology, ProbeError{ProbeErrc::NotFound, "node.xml: No such file"});
  EXPECT_EQ(unreadable.finding.code, "net.gpu_nic_affinity/topology-export-unreadable");
  EXPECT_NE(unreadable.remedy.find("--topology-xml node.xml"), std::string::npos) << unreadable.remedy;
}

}  // namespace
}  // namespace checks_unreadable_facts_test
}  // namespace preflight
