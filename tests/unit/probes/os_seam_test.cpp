// SPDX-License-Identifier: MIT
// The probes that ask the kernel through system calls do so through the Os seam: with a fake Os
// they report what it answers (no branch on "live or tree" left in them); a --sysroot tree's Os
// answers from the tree and never with this machine's; the live Os answers with the calls.
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/nccl_socket.hpp"
#include "probes/fake_os.hpp"
#include "probes/probe.hpp"
#include "probes/tree_os.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace probes_os_seam_test {
namespace {

const std::string kRdmaNode = test_paths::fixtures_dir() + "/net/rdma-node";

NetInterface iface(std::string name, std::vector<std::string> addresses, bool loopback = false) {
  NetInterface i;
  i.name = std::move(name);
  i.up = i.running = true;
  i.loopback = loopback;
  for (std::string& a : addresses) i.addresses.push_back(NetAddress{"inet", std::move(a), 24});
  return i;
}

struct Node {
  FakeOs os;
  FileSystem fs{kRdmaNode};  // the tree's /sys, /etc/hosts and /proc/net/tcp; the fake's system calls
  EnvSnapshot env;
  Options options;
  RankFacts facts;

  void probe() {
    const ProbeContext ctx(fs, env, options, os);
    probe_identity(ctx, facts);
    probe_net(ctx, facts);
    probe_affinity(ctx, facts);
  }
};

TEST(OsSeam, IdentityTakesTheSystemCallsOverTheFiles) {
  Node n;
  n.os.host = "node-07";
  n.os.release = "6.8.0-custom";
  n.probe();
  EXPECT_EQ(n.facts.identity.hostname, "node-07");  // gethostname, not the tree's file (gpu-a)
  EXPECT_EQ(n.facts.identity.pid, static_cast<int>(::getpid()));

  Node files;
  files.os.host.reset();
  files.os.release.reset();
  files.probe();
  EXPECT_EQ(files.facts.identity.hostname, "gpu-a");  // no system call to make: the file says it
}

TEST(OsSeam, InterfacesAreTheKernelsListWithWhatSysSaysOfEach) {
  Node n;
  n.os.ifs = Probed<std::vector<NetInterface>>::ok({iface("lo", {"127.0.0.1"}, true), iface("eth0", {"10.0.0.5"})},
                                                   std::string(kInterfacesLiveSource));
  n.probe();
  const auto* ifs = n.facts.net.interfaces.value();
  ASSERT_NE(ifs, nullptr) << n.facts.net.interfaces.why();
  EXPECT_EQ(n.facts.net.interfaces.source(), kInterfacesLiveSource);
  ASSERT_EQ(ifs->size(), 2u);  // the kernel's list, not every directory of /sys/class/net
  const NetInterface& eth0 = (*ifs)[1];
  EXPECT_EQ(eth0.addresses.at(0).address, "10.0.0.5");
  EXPECT_EQ(eth0.mtu, 9000);  // from /sys/class/net/eth0
  EXPECT_EQ(eth0.pci_bus_id, "0000:17:00.0");
  EXPECT_EQ(eth0.rdma_device, "mlx5_0");

  Node broken;
  broken.os.ifs =
      Probed<std::vector<NetInterface>>::error(ProbeErrc::PermissionDenied, "permission denied", "getifaddrs");
  broken.probe();
  ASSERT_FALSE(broken.facts.net.interfaces.ok());  // an error of the call stays an error
  EXPECT_EQ(broken.facts.net.interfaces.error()->code, ProbeErrc::PermissionDenied);

  Node none;
  none.os.ifs = Probed<std::vector<NetInterface>>::error(ProbeErrc::Unsupported, "no list", "tree");
  none.probe();
  ASSERT_TRUE(none.facts.net.interfaces.ok());  // no list at all: /sys/class/net's names and state
  EXPECT_EQ(none.facts.net.interfaces.source(), kInterfacesSysfsSource);
  EXPECT_EQ(none.facts.net.interfaces.value()->size(), 5u);
}

TEST(OsSeam, TheMasterIsResolvedAndBoundThroughTheOs) {
  Node n;
  n.os.ifs = Probed<std::vector<NetInterface>>::ok({iface("lo", {"127.0.0.1"}, true), iface("eth0", {"10.0.0.5"})},
                                                   std::string(kInterfacesLiveSource));
  n.os.names = {{"master.cluster", {"10.0.0.5"}}, {"node-07", {"10.0.0.5"}}};
  n.os.host = "node-07";
  n.os.bind_answer = "EADDRINUSE: Address already in use";
  n.env = EnvSnapshot{{"MASTER_ADDR", "master.cluster"}, {"MASTER_PORT", "29500"}};
  n.probe();
  const MasterFacts& m = n.facts.net.master;
  EXPECT_EQ(n.os.looked_up, (std::vector<std::string>{"master.cluster", "node-07"}));
  ASSERT_TRUE(m.resolved.ok()) << m.resolved.why();
  EXPECT_EQ(*m.resolved.value(), std::vector<std::string>{"10.0.0.5"});
  EXPECT_EQ(*m.hostname_resolves_to.value(), std::vector<std::string>{"10.0.0.5"});
  EXPECT_TRUE(m.addr_is_local);  // one of the kernel's addresses of this host
  ASSERT_EQ(n.os.binds.size(), 1u);
  EXPECT_EQ(n.os.binds[0], (std::pair<std::string, int>{"10.0.0.5", 29500}));
  EXPECT_EQ(*m.bind_test.value(), "EADDRINUSE: Address already in use");

  Node elsewhere;  // resolves, but to another host: no bind test is made
  elsewhere.os.names = {{"master.cluster", {"10.0.0.9"}}};
  elsewhere.env = n.env;
  elsewhere.probe();
  EXPECT_FALSE(elsewhere.facts.net.master.addr_is_local);
  EXPECT_TRUE(elsewhere.os.binds.empty());
  EXPECT_EQ(elsewhere.facts.net.master.bind_test.error()->code, ProbeErrc::Unsupported);
  EXPECT_EQ(elsewhere.facts.net.master.hostname_resolves_to.error()->code, ProbeErrc::NotFound);
}

TEST(OsSeam, AStuckLookupExpiresAtTheLookupsShareOfTheTimeout) {
  Node n;
  n.options.timeout_s = 3;
  n.os.stuck = {"slow.dns"};
  n.env = EnvSnapshot{{"MASTER_ADDR", "slow.dns"}, {"MASTER_PORT", "29500"}};
  const auto start = std::chrono::steady_clock::now();
  n.probe();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  const MasterFacts& m = n.facts.net.master;
  ASSERT_FALSE(m.resolved.ok());
  EXPECT_EQ(m.resolved.error()->code, ProbeErrc::Timeout);
  EXPECT_NE(m.resolved.why().find("a longer --timeout gives it longer"), std::string::npos) << m.resolved.why();
  EXPECT_FALSE(m.addr_is_local);
}

TEST(OsSeam, TheProcessBindingIsTheOssWithMasksSizedFromSys) {
  Node n;
  n.os.cpus = Probed<std::vector<int>>::ok({4, 5}, "fake sched_getaffinity");
  n.os.mempolicy = Probed<MemPolicy>::error(ProbeErrc::PermissionDenied, "seccomp", "get_mempolicy()");
  n.probe();
  EXPECT_EQ(*n.facts.affinity.cpus.value(), (std::vector<int>{4, 5}));
  EXPECT_EQ(n.facts.affinity.mempolicy.error()->code, ProbeErrc::PermissionDenied);
  EXPECT_GE(n.os.possible_cpus, 64);  // the tree's /sys/devices/system/cpu/possible, or the fallback
  EXPECT_GE(n.os.possible_nodes, 64);
}

TEST(TreeOs, APlainTreeAnswersFromItsFilesAndNeverWithThisMachines) {
  const FileSystem fs(kRdmaNode);
  const EnvSnapshot env;
  const Options options;
  const ProbeContext ctx(fs, env, options);
  const Os& os = ctx.os;
  EXPECT_NE(&os, &live_os());
  EXPECT_FALSE(os.hostname());
  EXPECT_FALSE(os.kernel_release());
  EXPECT_EQ(os.interfaces().error()->code, ProbeErrc::Unsupported);  // no capture: no getifaddrs list
  const auto far = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  const auto hosts = os.lookup("GPU-MASTER")->wait(far, std::chrono::seconds(1));
  ASSERT_TRUE(hosts.ok()) << hosts.why();
  EXPECT_EQ(*hosts.value(), std::vector<std::string>{"10.0.0.5"});
  EXPECT_EQ(hosts.source(), "/etc/hosts");
  const auto unknown = os.lookup("localhost.invalid")->wait(far, std::chrono::seconds(1));
  EXPECT_EQ(unknown.error()->code, ProbeErrc::Unsupported);
  EXPECT_NE(unknown.why().find("/etc/hosts does not list 'localhost.invalid'"), std::string::npos);
  const auto bind = os.bind_test("127.0.0.1", 29500);
  EXPECT_EQ(bind.error()->code, ProbeErrc::Unsupported);
  EXPECT_EQ(bind.error()->detail, "no bind test on a --sysroot tree");
  EXPECT_EQ(os.process_cpus(64).error()->code, ProbeErrc::Unsupported);
  EXPECT_EQ(os.process_mempolicy(64).error()->code, ProbeErrc::Unsupported);
}

TEST(LiveOs, AnswersWithTheSystemCalls) {
  const Os& os = live_os();
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(os.hostname(), std::string(name));
  EXPECT_FALSE(os.kernel_release().value_or("").empty());
  const auto ifs = os.interfaces();
  ASSERT_TRUE(ifs.ok()) << ifs.why();
  bool loopback = false;
  for (const NetInterface& i : *ifs.value()) loopback = loopback || (i.loopback && !i.addresses.empty());
  EXPECT_TRUE(loopback);
  EXPECT_EQ(*os.bind_test("127.0.0.1", 0).value(), "free");  // port 0: any free port
  const auto cpus = os.process_cpus(1);                      // a hint under the real count still finds every CPU
  ASSERT_TRUE(cpus.ok()) << cpus.why();
  EXPECT_FALSE(cpus.value()->empty());
  const FileSystem live;
  const EnvSnapshot env;
  const Options options;
  EXPECT_EQ(&ProbeContext(live, env, options).os, &live_os());
}

}  // namespace
}  // namespace probes_os_seam_test
}  // namespace preflight
