// SPDX-License-Identifier: MIT
// The reachability primitives on loopback: the listener takes many connections at once, a closed
// port is refused at once, a SYN that is never answered ends at the deadline, IPv6 works, and the
// bootstrap address is the one NCCL would pick from rank 0's interfaces.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/nccl_socket.hpp"
#include "loopback_port.hpp"
#include "transport/reach.hpp"

namespace preflight {
namespace transport_reach_test {
namespace {

using namespace std::chrono_literals;

bool has_ipv6_loopback() {
  std::ifstream in("/proc/net/if_inet6");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("00000000000000000000000000000001", 0) == 0) return true;
  }
  return false;
}

TEST(ReachListener, SixtyFourConcurrentConnects) {
  ReachListener l;
  std::string error;
  ASSERT_TRUE(l.listen("127.0.0.1", error)) << error;
  ASSERT_GT(l.port(), 0);
  constexpr int kClients = 64;
  std::vector<ReachResult> results(kClients);
  std::vector<std::thread> threads;
  for (int k = 0; k < kClients; ++k) {
    threads.emplace_back([&, k] {
      results[static_cast<std::size_t>(k)] = reach({"lo", "127.0.0.1", l.port()}, 3000ms);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const ReachResult& r : results) {
    EXPECT_TRUE(r.attempted);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.source, "127.0.0.1");
    EXPECT_EQ(r.target, "127.0.0.1:" + std::to_string(l.port()));
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_LT(r.ms, 3000.0);
  }
  // The accept thread takes them all (bounded wait).
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (l.accepted() < kClients && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(l.accepted(), kClients);
}

TEST(ReachListener, ClosedPortIsRefusedAtOnce) {
  int port = 0;
  {
    ReachListener l;
    std::string error;
    ASSERT_TRUE(l.listen("127.0.0.1", error)) << error;
    port = l.port();
  }  // the destructor closed it
  const ReachResult r = reach({"lo", "127.0.0.1", port}, 2000ms);
  EXPECT_TRUE(r.attempted);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "connect: Connection refused (ECONNREFUSED)");
  EXPECT_TRUE(r.source.empty());
  EXPECT_LT(r.ms, 1000.0);
}

TEST(ReachListener, CloseThenListenAgain) {
  ReachListener l;
  std::string error;
  ASSERT_TRUE(l.listen("127.0.0.1", error)) << error;
  l.close();
  EXPECT_EQ(l.port(), 0);
  ASSERT_TRUE(l.listen("127.0.0.1", error)) << error;
  EXPECT_TRUE(reach({"lo", "127.0.0.1", l.port()}, 2000ms).ok);
}

TEST(ReachListener, BadAddressesAreErrors) {
  ReachListener l;
  std::string error;
  EXPECT_FALSE(l.listen("gpu-a.example", error));
  EXPECT_NE(error.find("is not a numeric IP address"), std::string::npos) << error;
  EXPECT_FALSE(l.listen("192.0.2.77", error));  // not an address of this host
  EXPECT_NE(error.find("bind 192.0.2.77: Cannot assign requested address (EADDRNOTAVAIL)"), std::string::npos) << error;
  EXPECT_EQ(l.port(), 0);
}

// A listener that never accepts, with a backlog of 0: once its accept queue is full the kernel
// drops further SYNs, which is what a firewall's DROP looks like to the connecting side.
TEST(Reach, UnansweredSynEndsAtTheDeadline) {
  testing::LoopbackPort listener(0);
  ASSERT_TRUE(listener.ok());
  const ReachTarget t{"lo", "127.0.0.1", listener.port()};
  std::optional<ReachResult> timed_out;
  int connected = 0;
  for (int k = 0; k < 8 && !timed_out; ++k) {  // the first one or two fill the queue
    ReachResult r = reach(t, 300ms);
    if (r.ok)
      ++connected;
    else
      timed_out = std::move(r);
  }
  listener.close();
  ASSERT_TRUE(timed_out.has_value()) << "every connect completed";
  EXPECT_GE(connected, 1);
  EXPECT_FALSE(timed_out->ok);
  EXPECT_EQ(timed_out->error,
            "no answer within 0.3 s (the SYN was not answered: a firewall drops it, or there is no route)");
  EXPECT_GE(timed_out->ms, 290.0);
  EXPECT_LT(timed_out->ms, 1000.0);  // bounded: never the kernel's own SYN retry timeout
}

TEST(Reach, Ipv6Loopback) {
  if (!has_ipv6_loopback()) GTEST_SKIP() << "no ::1 on this host";
  ReachListener l;
  std::string error;
  ASSERT_TRUE(l.listen("::1", error)) << error;
  const ReachResult r = reach({"lo", "::1", l.port()}, 2000ms);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.target, "[::1]:" + std::to_string(l.port()));
  EXPECT_EQ(r.source, "::1");
  EXPECT_EQ(reach({"lo", "[::1]", l.port()}, 2000ms).target, "[::1]:" + std::to_string(l.port()));
}

TEST(Reach, BadTargetsAreErrorsNotConnects) {
  ReachResult r = reach({"eth0", "not-an-ip", 80}, 100ms);
  EXPECT_TRUE(r.attempted);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("'not-an-ip' is not a numeric IP address"), std::string::npos) << r.error;
  r = reach({"eth0", "127.0.0.1", 0}, 100ms);
  EXPECT_EQ(r.error, "port 0 is not in 1..65535");
}

// ---- the bootstrap address ---------------------------------------------------------------------

NetInterface iface(std::string name, bool running, std::vector<NetAddress> addresses, bool loopback = false) {
  NetInterface i;
  i.name = std::move(name);
  i.up = i.running = running;
  i.loopback = loopback;
  i.addresses = std::move(addresses);
  return i;
}

RankFacts rank0(std::vector<NetInterface> ifs) {
  RankFacts f;
  f.net.interfaces = Probed<std::vector<NetInterface>>::ok(std::move(ifs), std::string(kInterfacesLiveSource));
  return f;
}

RankFacts usual_host() {
  return rank0({iface("lo", true, {{"inet", "127.0.0.1", 8}, {"inet6", "::1", 128}}, true),
                iface("docker0", true, {{"inet", "172.17.0.1", 16}}),
                iface("eth0", true, {{"inet", "192.0.2.2", 24}, {"inet6", "fd00::2", 64}})});
}

TEST(BootstrapTarget, DefaultOrderSkipsLoopbackAndDocker) {
  std::string why;
  const std::optional<ReachTarget> t = bootstrap_target(usual_host(), why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->interface, "eth0");
  EXPECT_EQ(t->address, "192.0.2.2");
  EXPECT_EQ(t->port, 0);
}

TEST(BootstrapTarget, IbComesFirst) {
  RankFacts f = usual_host();
  f.net.interfaces.value()->push_back(iface("ib0", true, {{"inet", "10.10.0.2", 16}}));
  std::string why;
  const auto t = bootstrap_target(f, why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->interface, "ib0");
  EXPECT_EQ(t->address, "10.10.0.2");
}

TEST(BootstrapTarget, SocketIfnameLoGivesLoopback) {
  RankFacts f = usual_host();
  f.env.set("NCCL_SOCKET_IFNAME", "lo");
  std::string why;
  const auto t = bootstrap_target(f, why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->interface, "lo");
  EXPECT_EQ(t->address, "127.0.0.1");
}

TEST(BootstrapTarget, FamilyInet6PicksTheIpv6Address) {
  RankFacts f = usual_host();
  f.env.set("NCCL_SOCKET_FAMILY", "AF_INET6");
  std::string why;
  const auto t = bootstrap_target(f, why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->interface, "eth0");
  EXPECT_EQ(t->address, "fd00::2");
  EXPECT_EQ(target_text({t->interface, t->address, 41234}), "[fd00::2]:41234");
}

TEST(BootstrapTarget, OnlyLoopbackFallsBackToLo) {
  RankFacts f = rank0({iface("lo", true, {{"inet", "127.0.0.1", 8}}, true), iface("eth0", false, {})});
  std::string why;
  const auto t = bootstrap_target(f, why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->interface, "lo");
}

TEST(BootstrapTarget, NothingMatchesSaysWhy) {
  RankFacts f = usual_host();
  f.env.set("NCCL_SOCKET_IFNAME", "ib9");
  std::string why;
  EXPECT_FALSE(bootstrap_target(f, why));
  EXPECT_EQ(why,
            "rank 0 has no usable interface for NCCL's bootstrap: NCCL_SOCKET_IFNAME=ib9 selects no running interface "
            "with an IP address");
}

TEST(BootstrapTarget, UnknownInterfacesSayWhy) {
  RankFacts f;
  f.net.interfaces = Probed<std::vector<NetInterface>>::error(ProbeErrc::PermissionDenied,
                                                              "getifaddrs: Permission denied", "getifaddrs");
  std::string why;
  EXPECT_FALSE(bootstrap_target(f, why));
  EXPECT_NE(why.find("rank 0's network interfaces could not be read"), std::string::npos) << why;
  RankFacts s = usual_host();
  s.net.interfaces =
      Probed<std::vector<NetInterface>>::ok(*usual_host().net.interfaces.value(), std::string(kInterfacesSysfsSource));
  EXPECT_FALSE(bootstrap_target(s, why));
  EXPECT_NE(why.find("--sysroot"), std::string::npos) << why;
}

}  // namespace
}  // namespace transport_reach_test
}  // namespace preflight
