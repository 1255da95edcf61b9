// SPDX-License-Identifier: MIT
// NCCL's socket interface selection (core/nccl_socket) on synthetic interface lists, and every
// status of net.socket_ifname on hand-built facts.
#include <gtest/gtest.h>

#include "checks/check.hpp"
#include "core/nccl_socket.hpp"

namespace preflight {
namespace checks_net_socket_ifname_test {
namespace {

NetInterface iface(std::string name, bool running, std::vector<NetAddress> addresses, bool loopback = false) {
  NetInterface i;
  i.name = std::move(name);
  i.up = running;
  i.running = running;
  i.loopback = loopback;
  i.operstate = loopback ? "unknown" : running ? "up" : "down";
  i.addresses = std::move(addresses);
  return i;
}
NetAddress v4(std::string a, int prefix = 24) { return {"inet", std::move(a), prefix}; }
NetAddress v6(std::string a, int prefix = 64) { return {"inet6", std::move(a), prefix}; }

std::vector<NetInterface> host() {
  return {iface("lo", true, {v4("127.0.0.1", 8), v6("::1", 128)}, true),
          iface("eth0", true, {v4("192.0.2.2"), v6("fd00::2"), v6("fe80::1")}),
          iface("docker0", true, {v4("172.17.0.1", 16)})};
}

std::vector<std::string> names(const std::vector<SocketChoice>& c) {
  std::vector<std::string> out;
  for (const SocketChoice& x : c) out.push_back(x.interface);
  return out;
}

// ---- the selection algorithm -------------------------------------------------------------------

TEST(NcclSocketSelect, DefaultOrderSkipsDockerAndLo) {
  const SocketSelection s = nccl_socket_select(host(), std::nullopt, std::nullopt, std::nullopt);
  EXPECT_FALSE(s.from_env);
  EXPECT_EQ(s.rule, "^docker,lo,virbr");
  EXPECT_EQ(s.tried, (std::vector<std::string>{"ib", "^docker,lo,virbr"}));
  ASSERT_EQ(names(s.matches), std::vector<std::string>{"eth0"});
  EXPECT_EQ(s.matches[0].address.address, "192.0.2.2");  // IPv4 first
}

TEST(NcclSocketSelect, IbFirstThenDockerThenLo) {
  std::vector<NetInterface> ifs = host();
  ifs.push_back(iface("ib0", true, {v4("10.10.0.2")}));
  EXPECT_EQ(nccl_socket_select(ifs, std::nullopt, std::nullopt, std::nullopt).rule, "ib");
  ifs = {iface("lo", true, {v4("127.0.0.1", 8)}, true), iface("docker0", true, {v4("172.17.0.1", 16)}),
         iface("eth0", false, {v4("192.0.2.2")})};
  SocketSelection s = nccl_socket_select(ifs, std::nullopt, std::nullopt, std::nullopt);
  EXPECT_EQ(s.rule, "docker");
  EXPECT_EQ(names(s.matches), std::vector<std::string>{"docker0"});
  ifs.erase(ifs.begin() + 1);
  s = nccl_socket_select(ifs, std::nullopt, std::nullopt, std::nullopt);
  EXPECT_EQ(s.rule, "lo");
  EXPECT_EQ(s.tried.back(), "lo");
  ifs = {iface("eth0", false, {v4("192.0.2.2")})};
  s = nccl_socket_select(ifs, std::nullopt, std::nullopt, std::nullopt);
  EXPECT_TRUE(s.matches.empty());
  EXPECT_EQ(s.tried.back(), "virbr");
}

TEST(NcclSocketSelect, Ipv4AddressesComeFirstAcrossInterfaces) {
  // getifaddrs lists every IPv4 address before any IPv6 one: an IPv6-only interface comes last.
  const std::vector<NetInterface> ifs = {iface("eth0", true, {v6("fd00::2")}), iface("eth1", true, {v4("10.0.0.2")})};
  const SocketSelection s = nccl_socket_select(ifs, std::string("eth"), std::nullopt, std::nullopt);
  EXPECT_EQ(names(s.matches), (std::vector<std::string>{"eth1", "eth0"}));
  EXPECT_EQ(s.matches[1].address.address, "fd00::2");
}

TEST(NcclSocketSelect, OnlyRunningAndNotIpv6Loopback) {
  const std::vector<NetInterface> ifs = {iface("lo", true, {v6("::1", 128)}, true),
                                         iface("eth0", false, {v4("10.0.0.2")}), iface("eth1", true, {})};
  EXPECT_TRUE(nccl_find_interfaces(ifs, "", "").empty());
  EXPECT_TRUE(nccl_find_interfaces(ifs, "lo", "").empty());  // the IPv6 loopback is skipped
}

TEST(NcclSocketSelect, FamilyIsForcedOnlyByExactNames) {
  SocketSelection s = nccl_socket_select(host(), std::string("eth"), std::string("AF_INET6"), std::nullopt);
  EXPECT_EQ(s.family, "inet6");
  ASSERT_EQ(s.matches.size(), 1u);
  EXPECT_EQ(s.matches[0].address.address, "fd00::2");
  s = nccl_socket_select(host(), std::string("eth"), std::string("ipv4"), std::nullopt);
  EXPECT_TRUE(s.family_ignored);
  EXPECT_EQ(s.family, "");
  EXPECT_EQ(s.matches[0].address.address, "192.0.2.2");
}

TEST(NcclSocketSelect, ShortValueIsIgnored) {
  const SocketSelection s = nccl_socket_select(host(), std::string("d"), std::nullopt, std::nullopt);
  EXPECT_FALSE(s.from_env);
  EXPECT_EQ(names(s.matches), std::vector<std::string>{"eth0"});
  EXPECT_TRUE(nccl_socket_select(host(), std::string("=docker0"), std::nullopt, std::nullopt).from_env);
}

TEST(NcclSocketSelect, AtMostSixteenAndOnePerName) {
  std::vector<NetInterface> ifs;
  for (int k = 0; k < 20; ++k)
    ifs.push_back(iface("eth" + std::to_string(k), true,
                        {v4("10.0." + std::to_string(k) + ".1"), v4("10.1." + std::to_string(k) + ".1")}));
  const auto found = nccl_find_interfaces(ifs, "eth", "");
  EXPECT_EQ(found.size(), kNcclMaxIfs);
  EXPECT_EQ(found[0].address.address, "10.0.0.1");  // the first address of the interface
}

TEST(NcclSocketSelect, CommIdSubnet) {
  const std::vector<NetInterface> ifs = {iface("eth0", true, {v4("192.0.2.2")}),
                                         iface("eth1", true, {v4("10.5.0.2", 16)})};
  SocketSelection s = nccl_socket_select(ifs, std::nullopt, std::nullopt, std::string("10.5.7.1:12345"));
  EXPECT_EQ(s.rule, "NCCL_COMM_ID subnet");
  EXPECT_EQ(names(s.matches), std::vector<std::string>{"eth1"});
  s = nccl_socket_select(ifs, std::nullopt, std::nullopt, std::string("master.example:12345"));
  EXPECT_FALSE(s.comm_id_note.empty());
  EXPECT_EQ(names(s.matches), (std::vector<std::string>{"eth0", "eth1"}));
}

TEST(NcclSocketSelect, AddressHelpers) {
  EXPECT_TRUE(is_loopback_ip("127.0.1.1"));
  EXPECT_TRUE(is_loopback_ip("::1"));
  EXPECT_TRUE(is_loopback_ip("::ffff:127.0.0.1"));
  EXPECT_FALSE(is_loopback_ip("10.0.0.1"));
  EXPECT_FALSE(is_loopback_ip("localhost"));
  EXPECT_TRUE(same_ip("::ffff:10.0.0.1", "10.0.0.1"));
  EXPECT_TRUE(same_ip("fd00::02", "fd00::2"));
  EXPECT_EQ(subnet_text(v4("192.0.2.77", 24)), "192.0.2.0/24");
  EXPECT_EQ(subnet_text(v6("fd00::2", 64)), "fd00::/64");
  EXPECT_TRUE(in_subnet(v4("10.5.0.2", 16), "10.5.200.1"));
  EXPECT_FALSE(in_subnet(v4("10.5.0.2", 16), "10.6.0.1"));
}

TEST(NcclSocketSelect, MultiNode) {
  Placement p;
  EXPECT_FALSE(is_multi_node(p));
  p.nodes = 2;
  EXPECT_TRUE(is_multi_node(p));
  p.nodes = 1;
  EXPECT_FALSE(is_multi_node(p));
  p.nodes.reset();
  p.world_size = 16;
  p.local_ranks = 8;
  p.source = "OMPI_COMM_WORLD_LOCAL_SIZE";
  EXPECT_TRUE(is_multi_node(p));
  p.source = "openmpi does not say how many ranks share the node: assumed 1 (pass --ranks-per-node)";
  p.local_ranks = 1;
  EXPECT_FALSE(is_multi_node(p));
}

// ---- the check ---------------------------------------------------------------------------------

struct Case {
  RankFacts facts;
  Case() { facts.net.interfaces = Probed<std::vector<NetInterface>>::ok(host(), std::string(kInterfacesLiveSource)); }
  Case& env(std::string k, std::string v) {
    facts.env.set(std::move(k), std::move(v));
    return *this;
  }
  Case& ifs(std::vector<NetInterface> v) {
    facts.net.interfaces = Probed<std::vector<NetInterface>>::ok(std::move(v), std::string(kInterfacesLiveSource));
    return *this;
  }
  Case& nodes(int n) {
    facts.placement.nodes = n;
    return *this;
  }
  Verdict run() const {
    const Options options;
    return run_check(*find_check("net.socket_ifname"), CheckContext{facts, options, Profile::Job});
  }
};

void expect(const Verdict& v, Status s, const std::string& summary_has, const std::string& remedy_has = {}) {
  EXPECT_EQ(v.status, s) << v.summary << " / " << v.remedy;
  EXPECT_NE(v.summary.find(summary_has), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find(remedy_has), std::string::npos) << v.remedy;
}

TEST(NetSocketIfname, PassNamesTheBootstrapInterface) {
  Case c;
  std::vector<NetInterface> ifs = host();
  ifs[1].speed_mbps = 100000;
  c.ifs(ifs);
  const Verdict v = c.run();
  expect(v, Status::Pass,
         "NCCL's bootstrap will use eth0 192.0.2.2/24 (100 Gb/s), selected by NCCL's default order (^docker,lo,virbr)");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/bootstrap");
  EXPECT_EQ(v.finding.params["interface"], "eth0");
  EXPECT_EQ(v.finding.params["prefix"], 24);
  EXPECT_EQ(v.finding.params["speed"], "100 Gb/s");
  EXPECT_EQ(v.evidence["bootstrap"]["interface"], "eth0");
  EXPECT_EQ(v.evidence["interfaces"].size(), 3u);
  EXPECT_EQ(v.evidence["selection"]["matches"][0]["address"], "192.0.2.2");
  const Verdict e = Case().env("NCCL_SOCKET_IFNAME", "eth").run();
  expect(e, Status::Pass,
         "eth0 192.0.2.2/24 (speed unknown: NCCL assumes 10 Gb/s), selected by NCCL_SOCKET_IFNAME=eth");
  EXPECT_EQ(e.finding.params["selected_by"], "NCCL_SOCKET_IFNAME=eth");
  EXPECT_EQ(e.evidence["nccl_socket_ifname"]["origin"], "environment");
}

TEST(NetSocketIfname, ValueFromNcclConfFile) {
  Case c;
  ConfFile f;
  f.path = "/etc/nccl.conf";
  f.contents =
      Probed<ConfFileContents>::ok(ConfFileContents{{{"NCCL_SOCKET_IFNAME", "=docker0", 2}}, {}}, "/etc/nccl.conf");
  c.facts.nccl_conf.files.push_back(f);
  const Verdict v = c.run();
  expect(v, Status::Pass, "docker0 172.17.0.1/16");
  EXPECT_EQ(v.evidence["nccl_socket_ifname"]["origin"], "/etc/nccl.conf:2");
  c.env("NCCL_SOCKET_IFNAME", "eth0");  // the environment wins over the file
  expect(c.run(), Status::Pass, "eth0 192.0.2.2");
}

TEST(NetSocketIfname, NothingMatchesFailsListingInterfaces) {
  const Verdict v = Case().env("NCCL_SOCKET_IFNAME", "doesnotexist").run();
  expect(v, Status::Fail,
         "NCCL_SOCKET_IFNAME=doesnotexist matches no interface; interfaces here: lo (running, operstate unknown, "
         "127.0.0.1/8",
         "export NCCL_SOCKET_IFNAME==eth0");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/no-match");
  EXPECT_EQ(v.finding.params["ifname"], "doesnotexist");
  EXPECT_EQ(v.finding.params["example"], "eth0");
  EXPECT_NE(v.summary.find("eth0 (running, operstate up, 192.0.2.2/24, fd00::2/64"), std::string::npos);
}

TEST(NetSocketIfname, MatchDownFails) {
  Case c;
  std::vector<NetInterface> ifs = host();
  ifs[1].running = ifs[1].up = false;
  ifs[1].operstate = "down";
  c.ifs(ifs).env("NCCL_SOCKET_IFNAME", "eth");
  const Verdict v = c.run();
  expect(v, Status::Fail, "matches no usable interface: eth0 is not running (down, operstate down)", "ip link set");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/matches-unusable");
  EXPECT_EQ(v.finding.params["reasons"], "eth0 is not running (down, operstate down)");
  EXPECT_EQ(v.finding.params["family_value"], "");
}

TEST(NetSocketIfname, NoAddressOfTheFamilyFails) {
  Case c;
  c.ifs({iface("lo", true, {v4("127.0.0.1", 8)}, true), iface("eth0", true, {v4("192.0.2.2")})})
      .env("NCCL_SOCKET_IFNAME", "eth")
      .env("NCCL_SOCKET_FAMILY", "AF_INET6");
  const Verdict v = c.run();
  expect(v, Status::Fail, "matches no usable interface: eth0 has no IPv6 address (NCCL_SOCKET_FAMILY=AF_INET6)",
         "unset NCCL_SOCKET_FAMILY");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/matches-no-family-address");
  EXPECT_EQ(v.finding.params["family"], "IPv6");
  EXPECT_EQ(v.finding.params["family_value"], "AF_INET6");
  EXPECT_EQ(v.remedy, "Give the interface an IPv6 address, or unset NCCL_SOCKET_FAMILY (`unset NCCL_SOCKET_FAMILY`).");
  Case none;
  none.ifs({iface("eth0", false, {v4("192.0.2.2")})});
  const Verdict n = none.run();
  expect(n, Status::Fail, "no interface is running with an IPv4 or IPv6 address");
  EXPECT_EQ(n.finding.code, "net.socket_ifname/no-interface");
  EXPECT_EQ(n.finding.params["family"], "IPv4 or IPv6");
}

TEST(NetSocketIfname, LoopbackInMultiNodeFails) {
  const Verdict v = Case().env("NCCL_SOCKET_IFNAME", "lo").nodes(2).run();
  expect(
      v, Status::Fail,
      "NCCL's bootstrap would use the loopback interface lo (127.0.0.1, by NCCL_SOCKET_IFNAME=lo) in a multi-node job");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/bootstrap-loopback");
  EXPECT_EQ(v.finding.params["interface"], "lo");
  EXPECT_EQ(v.finding.params["address"], "127.0.0.1");
  EXPECT_EQ(v.finding.params["selected_by"], "NCCL_SOCKET_IFNAME=lo");
  expect(Case().env("NCCL_SOCKET_IFNAME", "lo").nodes(1).run(), Status::Pass, "lo 127.0.0.1/8");
  Case only_lo;
  only_lo.ifs({iface("lo", true, {v4("127.0.0.1", 8)}, true)}).nodes(4);
  const Verdict o = only_lo.run();
  expect(o, Status::Fail, "loopback interface lo (127.0.0.1, by NCCL's default order (lo))");
  EXPECT_EQ(o.finding.code, "net.socket_ifname/bootstrap-loopback");
  EXPECT_EQ(o.finding.params["selected_by"], "NCCL's default order (lo)");
}

TEST(NetSocketIfname, DefaultOnDockerInMultiNodeWarns) {
  Case c;
  c.ifs({iface("lo", true, {v4("127.0.0.1", 8)}, true), iface("docker0", true, {v4("172.17.0.1", 16)})}).nodes(2);
  const Verdict v = c.run();
  expect(v, Status::Warn,
         "NCCL's default order lands on docker0 (172.17.0.1, a container/virtual bridge) in a multi-node job");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/bootstrap-bridge");
  EXPECT_EQ(v.finding.params["interface"], "docker0");
  EXPECT_EQ(v.finding.params["address"], "172.17.0.1");
}

TEST(NetSocketIfname, PrefixTrapWarns) {
  Case c;
  c.ifs({iface("eth1", true, {v4("10.0.1.2")}), iface("eth10", true, {v4("10.0.1.3")})})
      .env("NCCL_SOCKET_IFNAME", "eth1");
  const Verdict v = c.run();
  expect(v, Status::Warn, "NCCL_SOCKET_IFNAME=eth1 matches by prefix: eth1 also matches eth10",
         "export NCCL_SOCKET_IFNAME==eth1");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/prefix-trap");
  EXPECT_EQ(v.finding.params["ifname"], "eth1");
  EXPECT_EQ(v.finding.params["traps"], "eth1 also matches eth10");
  EXPECT_EQ(v.finding.params["exact"], "=eth1");
  EXPECT_EQ(v.evidence["prefix_traps"][0], "eth1 also matches eth10");
  c.env("NCCL_SOCKET_IFNAME", "=eth1");
  expect(c.run(), Status::Pass, "eth1 10.0.1.2");
  c.env("NCCL_SOCKET_IFNAME", "^eth1");
  const Verdict excluded = c.run();
  expect(excluded, Status::Fail, "NCCL_SOCKET_IFNAME=^eth1 matches no interface");  // it excludes eth10 too
  EXPECT_EQ(excluded.finding.code, "net.socket_ifname/no-match");
  c.ifs({iface("eth1", true, {v4("10.0.1.2")}), iface("eth10", true, {v4("10.0.1.3")}),
         iface("eth2", true, {v4("10.0.1.4")})});
  const Verdict w = c.run();
  expect(w, Status::Warn, "matches by prefix", "export NCCL_SOCKET_IFNAME=^=eth1");
  EXPECT_EQ(w.finding.code, "net.socket_ifname/prefix-trap");
  EXPECT_EQ(w.finding.params["exact"], "^=eth1");
}

TEST(NetSocketIfname, DifferentSubnetsWarn) {
  Case c;
  c.ifs({iface("eth0", true, {v4("10.0.0.2")}), iface("eth1", true, {v4("192.168.7.2")})})
      .env("NCCL_SOCKET_IFNAME", "eth");
  const Verdict v = c.run();
  expect(v, Status::Warn, "selects interfaces in different subnets (eth0 10.0.0.0/24, eth1 192.168.7.0/24)",
         "export NCCL_SOCKET_IFNAME==eth0");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/mixed-subnets");
  EXPECT_EQ(v.finding.params["subnets"], "eth0 10.0.0.0/24, eth1 192.168.7.0/24");
  EXPECT_EQ(v.finding.params["interface"], "eth0");
  c.nodes(1);
  expect(c.run(), Status::Pass, "NET/Socket would use 2 interfaces");
}

TEST(NetSocketIfname, LoopbackAmongNetSocketInterfacesWarns) {
  Case c;
  c.ifs({iface("eth0", true, {v4("192.0.2.2")}), iface("lo", true, {v4("127.0.0.1", 8)}, true)})
      .env("NCCL_SOCKET_IFNAME", "^docker")
      .nodes(2);
  const Verdict v = c.run();
  expect(v, Status::Warn, "NET/Socket would also use the loopback interface lo (NCCL_SOCKET_IFNAME=^docker)",
         "export NCCL_SOCKET_IFNAME==eth0");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/also-loopback");
  EXPECT_EQ(v.finding.params["loopback"], "lo");
  EXPECT_EQ(v.finding.params["interface"], "eth0");
  // lo comes first in getifaddrs order: "^docker" makes it the bootstrap interface.
  expect(Case().env("NCCL_SOCKET_IFNAME", "^docker").nodes(2).run(), Status::Fail,
         "would use the loopback interface lo");
}

TEST(NetSocketIfname, IgnoredFamilyWarns) {
  const Verdict v = Case().env("NCCL_SOCKET_FAMILY", "ipv4").run();
  expect(v, Status::Warn, "NCCL_SOCKET_FAMILY=ipv4 is ignored by NCCL", "NCCL_SOCKET_FAMILY=AF_INET");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/family-ignored");
  EXPECT_EQ(v.finding.params["socket_family"], "ipv4");
}

TEST(NetSocketIfname, GlooSocketIfname) {
  expect(Case().env("GLOO_SOCKET_IFNAME", "eth0").run(), Status::Pass, "Gloo will use eth0 192.0.2.2");
  const Verdict missing = Case().env("GLOO_SOCKET_IFNAME", "eth").run();
  expect(missing, Status::Fail, "GLOO_SOCKET_IFNAME names eth, which does not exist",
         "export GLOO_SOCKET_IFNAME=docker0");
  EXPECT_EQ(missing.finding.code, "net.socket_ifname/gloo-missing");
  EXPECT_EQ(missing.finding.params["name"], "eth");
  EXPECT_EQ(missing.summary.find("Gloo takes exact names"), std::string::npos) << missing.summary;
  const Verdict grammar = Case().env("GLOO_SOCKET_IFNAME", "^docker0").run();
  expect(grammar, Status::Fail, "Gloo takes exact names");
  EXPECT_EQ(grammar.finding.code, "net.socket_ifname/gloo-missing");
  EXPECT_EQ(grammar.finding.params["name"], "^docker0");
  Case down;
  std::vector<NetInterface> ifs = host();
  ifs[1].running = false;
  down.ifs(ifs).env("GLOO_SOCKET_IFNAME", "eth0");
  const Verdict d = down.run();
  expect(d, Status::Fail, "GLOO_SOCKET_IFNAME names eth0, but eth0 is not running (up, no carrier, operstate up)",
         "ip link set eth0 up");
  EXPECT_EQ(d.finding.code, "net.socket_ifname/gloo-not-running");
  EXPECT_EQ(d.finding.params["name"], "eth0");
  EXPECT_EQ(d.finding.params["state"], "up, no carrier, operstate up");
  const Verdict lo = Case().env("GLOO_SOCKET_IFNAME", "lo").nodes(2).env("NCCL_SOCKET_IFNAME", "eth0").run();
  expect(lo, Status::Fail, "GLOO_SOCKET_IFNAME names the loopback interface lo in a multi-node job");
  EXPECT_EQ(lo.finding.code, "net.socket_ifname/gloo-loopback");
  EXPECT_EQ(lo.finding.params["name"], "lo");
  const Verdict empty = Case().env("GLOO_SOCKET_IFNAME", ",eth0").run();
  expect(empty, Status::Warn, "has an empty entry");
  EXPECT_EQ(empty.finding.code, "net.socket_ifname/gloo-empty-entry");
  EXPECT_EQ(empty.finding.params["gloo"], ",eth0");
}

TEST(NetSocketIfname, GlooInterfaceWithoutAddressFails) {
  Case c;
  c.ifs({iface("eth0", true, {v4("192.0.2.2")}), iface("eth1", true, {})}).env("GLOO_SOCKET_IFNAME", "eth1");
  const Verdict v = c.run();
  expect(v, Status::Fail,
         "GLOO_SOCKET_IFNAME names eth1, but eth1 has no IPv4 or IPv6 address; Gloo fails with 'Unable to find address "
         "for: eth1'",
         "Give eth1 an address");
  EXPECT_EQ(v.finding.code, "net.socket_ifname/gloo-no-address");
  EXPECT_EQ(v.finding.params["name"], "eth1");
  EXPECT_EQ(v.evidence["gloo_socket_ifname"]["interfaces"][0]["problem"], "no address");
}

TEST(NetSocketIfname, UnknownWithoutInterfaces) {
  Case c;
  c.facts.net.interfaces =
      Probed<std::vector<NetInterface>>::error(ProbeErrc::PermissionDenied, "permission denied", "getifaddrs");
  expect(c.run(), Status::Unknown, "could not read the network interfaces");
  RankFacts never;
  const Options options;
  EXPECT_EQ(run_check(*find_check("net.socket_ifname"), CheckContext{never, options, Profile::Job}).status,
            Status::Unknown);
}

TEST(NetSocketIfname, SysrootWithoutAddresses) {
  Case c;
  std::vector<NetInterface> ifs = host();
  for (NetInterface& i : ifs) i.addresses.clear();
  c.facts.net.interfaces = Probed<std::vector<NetInterface>>::ok(ifs, std::string(kInterfacesSysfsSource));
  const Verdict unknown = c.run();
  expect(unknown, Status::Unknown, "addresses are not known from a --sysroot tree");
  EXPECT_EQ(unknown.finding.code, "net.socket_ifname/addresses-unknown");
  c.env("NCCL_SOCKET_IFNAME", "ib");
  const Verdict none = c.run();
  expect(none, Status::Fail,
         "NCCL_SOCKET_IFNAME=ib matches no interface; interfaces here: lo (running, operstate unknown)");
  EXPECT_EQ(none.finding.code, "net.socket_ifname/no-match");
  EXPECT_EQ(none.finding.params["example"], "docker0");
  ifs[1].running = ifs[1].up = false;
  ifs[1].operstate = "down";
  c.facts.net.interfaces = Probed<std::vector<NetInterface>>::ok(ifs, std::string(kInterfacesSysfsSource));
  c.env("NCCL_SOCKET_IFNAME", "=eth0");
  const Verdict down = c.run();
  expect(down, Status::Fail,
         "NCCL_SOCKET_IFNAME==eth0 matches no usable interface: eth0 is not running (down, operstate down)",
         "check its link) or point NCCL_SOCKET_IFNAME at a running interface.");
  EXPECT_EQ(down.finding.code, "net.socket_ifname/matches-down");
  EXPECT_EQ(down.finding.params["ifname"], "=eth0");
  EXPECT_EQ(down.finding.params["reasons"], "eth0 is not running (down, operstate down)");
  c.env("NCCL_SOCKET_IFNAME", "^eth0");
  expect(c.run(), Status::Unknown, "addresses are not known");
}

TEST(NetSocketIfname, ImageProfileSkips) {
  const Case c;
  const Options options;
  EXPECT_EQ(run_check(*find_check("net.socket_ifname"), CheckContext{c.facts, options, Profile::Image}).status,
            Status::Skip);
}

TEST(NetSocketIfname, ExplainListsWhatItReadsFailuresAndFix) {
  const std::string explain(find_check("net.socket_ifname")->explain);
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN"}) {
    EXPECT_NE(explain.find(part), std::string::npos) << part;
  }
}

}  // namespace
}  // namespace checks_net_socket_ifname_test
}  // namespace preflight
