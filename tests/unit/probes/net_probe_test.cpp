// SPDX-License-Identifier: MIT
#include "probes/net_probe.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/nccl_socket.hpp"
#include "loopback_port.hpp"
#include "probes/probe.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace probes_net_probe_test {
namespace {

const std::string kDir = preflight::test_paths::fixtures_dir() + "/net/";

struct ProbeRun {
  RankFacts facts;
  Options options;
  EnvSnapshot env;
  void run(const std::string& root) {
    const FileSystem fs(root);
    probe_identity(ProbeContext{fs, env, options}, facts);
    probe_net(ProbeContext{fs, env, options}, facts);
  }
};

const NetInterface* find(const std::vector<NetInterface>& ifs, std::string_view name) {
  for (const NetInterface& i : ifs) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

TEST(NetProbe, SysrootInterfacesFromSysfs) {
  ProbeRun r;
  r.run(kDir + "rdma-node");
  const auto* ifs = r.facts.net.interfaces.value();
  ASSERT_NE(ifs, nullptr) << r.facts.net.interfaces.why();
  EXPECT_EQ(r.facts.net.interfaces.source(), kInterfacesSysfsSource);
  ASSERT_EQ(ifs->size(), 5u);
  // ifindex order, as getifaddrs would list them
  EXPECT_EQ((*ifs)[0].name, "lo");
  EXPECT_EQ((*ifs)[1].name, "eth0");
  EXPECT_EQ((*ifs)[2].name, "eth1");
  EXPECT_EQ((*ifs)[3].name, "eth10");
  EXPECT_EQ((*ifs)[4].name, "ib0");

  const NetInterface& lo = (*ifs)[0];
  EXPECT_TRUE(lo.loopback);
  EXPECT_TRUE(lo.running);  // operstate "unknown" counts as up for IFF_RUNNING
  EXPECT_EQ(lo.operstate, "unknown");
  EXPECT_EQ(lo.type, 772);
  EXPECT_TRUE(lo.pci_bus_id.empty());

  const NetInterface& eth0 = (*ifs)[1];
  EXPECT_TRUE(eth0.up);
  EXPECT_TRUE(eth0.running);
  EXPECT_FALSE(eth0.loopback);
  EXPECT_EQ(eth0.mtu, 9000);
  EXPECT_EQ(eth0.speed_mbps, 200000);
  EXPECT_EQ(eth0.pci_bus_id, "0000:17:00.0");
  EXPECT_EQ(eth0.rdma_device, "mlx5_0");
  EXPECT_TRUE(eth0.addresses.empty());

  const NetInterface& eth1 = (*ifs)[2];
  EXPECT_FALSE(eth1.up);
  EXPECT_FALSE(eth1.running);
  EXPECT_EQ(eth1.operstate, "down");
  EXPECT_FALSE(eth1.speed_mbps);               // -1: unknown
  EXPECT_EQ(eth1.pci_bus_id, "0000:00:05.0");  // virtio: the PCI function above virtio3
  EXPECT_TRUE(eth1.rdma_device.empty());

  EXPECT_TRUE(find(*ifs, "eth10")->pci_bus_id.empty());  // virtual: no device link
  EXPECT_FALSE(find(*ifs, "eth10")->speed_mbps);
  EXPECT_EQ(find(*ifs, "ib0")->type, 32);
  EXPECT_EQ(find(*ifs, "ib0")->rdma_device, "mlx5_1");
}

TEST(NetProbe, SysrootRdmaDevices) {
  ProbeRun r;
  r.run(kDir + "rdma-node");
  const auto* devs = r.facts.net.ib_devices.value();
  ASSERT_NE(devs, nullptr) << r.facts.net.ib_devices.why();
  ASSERT_EQ(devs->size(), 3u);
  const IbDevice& m0 = (*devs)[0];
  EXPECT_EQ(m0.name, "mlx5_0");
  EXPECT_EQ(m0.pci_bus_id, "0000:17:00.0");
  ASSERT_EQ(m0.ports.size(), 1u);
  EXPECT_EQ(m0.ports[0].port, 1);
  EXPECT_EQ(m0.ports[0].state, "4: ACTIVE");
  EXPECT_EQ(m0.ports[0].phys_state, "5: LinkUp");
  EXPECT_EQ(m0.ports[0].rate, "200 Gb/sec (4X HDR)");
  EXPECT_EQ(m0.ports[0].link_layer, "Ethernet");
  EXPECT_EQ(m0.ports[0].gids.size(), 2u);  // the all-zero GID is left out
  EXPECT_EQ(m0.ports[0].netdevs, std::vector<std::string>{"eth0"});
  const IbDevice& m1 = (*devs)[1];
  EXPECT_EQ(m1.name, "mlx5_1");
  EXPECT_EQ(m1.pci_bus_id, "0000:51:00.0");
  EXPECT_EQ(m1.ports[0].gids.size(), 1u);
  EXPECT_TRUE(m1.ports[0].netdevs.empty());  // no gid_attrs (as in containers): skipped silently
  EXPECT_EQ((*devs)[2].name, "mlx5_10");
  EXPECT_EQ((*devs)[2].ports[0].state, "1: DOWN");

  ASSERT_TRUE(r.facts.net.gpudirect_rdma.ok());
  EXPECT_TRUE(*r.facts.net.gpudirect_rdma.value());
  EXPECT_EQ(r.facts.net.gpudirect_rdma.source(), "/sys/module/nvidia_peermem/version");
}

TEST(NetProbe, SysrootMasterFromEtcHostsAndProcNetTcp) {
  ProbeRun r;
  r.env = EnvSnapshot{{"MASTER_ADDR", "gpu-a"}, {"MASTER_PORT", "29492"}};
  r.run(kDir + "rdma-node");
  const MasterFacts& m = r.facts.net.master;
  EXPECT_EQ(m.addr, "gpu-a");
  EXPECT_EQ(m.port, "29492");
  ASSERT_TRUE(m.resolved.ok()) << m.resolved.why();
  EXPECT_EQ(*m.resolved.value(), std::vector<std::string>{"127.0.1.1"});
  EXPECT_EQ(m.resolved.source(), "/etc/hosts");
  ASSERT_TRUE(m.hostname_resolves_to.ok());  // the tree's hostname is gpu-a
  EXPECT_EQ(*m.hostname_resolves_to.value(), std::vector<std::string>{"127.0.1.1"});
  EXPECT_FALSE(m.addr_is_local);  // interface addresses are not known in a tree
  ASSERT_TRUE(m.port_listening.ok()) << m.port_listening.why();
  EXPECT_TRUE(*m.port_listening.value());
  EXPECT_NE(m.port_listening.source().find("0.0.0.0:29492 LISTEN, inode 41872"), std::string::npos)
      << m.port_listening.source();
  ASSERT_FALSE(m.bind_test.ok());
  EXPECT_EQ(m.bind_test.error()->code, ProbeErrc::Unsupported);
  ASSERT_TRUE(m.ephemeral_range.ok());
  EXPECT_EQ(*m.ephemeral_range.value(), (std::vector<int>{32768, 60999}));
  EXPECT_EQ(*m.reserved_ports.value(), "40000-40010");
}

TEST(NetProbe, SysrootPortsOnTcp6AndFree) {
  ProbeRun r;
  r.env = EnvSnapshot{{"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "8080"}};
  r.run(kDir + "rdma-node");
  const MasterFacts& m = r.facts.net.master;
  EXPECT_EQ(m.resolved.source(), "numeric address");
  ASSERT_TRUE(m.port_listening.ok());
  EXPECT_TRUE(*m.port_listening.value());
  EXPECT_NE(m.port_listening.source().find("/proc/net/tcp6: [::]:8080"), std::string::npos)
      << m.port_listening.source();

  ProbeRun free_port;
  free_port.env = EnvSnapshot{{"MASTER_ADDR", "gpu-master"}, {"MASTER_PORT", "29500"}};
  free_port.run(kDir + "rdma-node");
  EXPECT_EQ(*free_port.facts.net.master.resolved.value(), std::vector<std::string>{"10.0.0.5"});
  EXPECT_FALSE(*free_port.facts.net.master.port_listening.value());

  ProbeRun unknown_name;
  unknown_name.env = EnvSnapshot{{"MASTER_ADDR", "elsewhere"}, {"MASTER_PORT", "x"}};
  unknown_name.run(kDir + "rdma-node");
  EXPECT_EQ(unknown_name.facts.net.master.resolved.error()->code, ProbeErrc::Unsupported);
  EXPECT_EQ(unknown_name.facts.net.master.port_listening.error()->code, ProbeErrc::ParseError);
}

TEST(NetProbe, NoRdmaNode) {
  ProbeRun r;
  r.run(kDir + "no-rdma");
  ASSERT_FALSE(r.facts.net.ib_devices.ok());
  EXPECT_EQ(r.facts.net.ib_devices.error()->code, ProbeErrc::NotFound);
  ASSERT_TRUE(r.facts.net.gpudirect_rdma.ok());
  EXPECT_FALSE(*r.facts.net.gpudirect_rdma.value());
  ASSERT_TRUE(r.facts.net.interfaces.ok());
  EXPECT_EQ(r.facts.net.interfaces.value()->size(), 2u);
  EXPECT_EQ(r.facts.net.master.resolved.error()->code, ProbeErrc::NotFound);  // MASTER_ADDR unset
}

TEST(NetProbe, GarbageTree) {
  ProbeRun r;
  r.env = EnvSnapshot{{"MASTER_ADDR", "10.1.1.1"}, {"MASTER_PORT", "29500"}};
  r.run(kDir + "garbage");
  EXPECT_FALSE(r.facts.net.interfaces.ok());
  ASSERT_FALSE(r.facts.net.ib_devices.ok());
  EXPECT_EQ(r.facts.net.ib_devices.error()->code, ProbeErrc::Unreadable);  // a device exists: not "no RDMA"
  ASSERT_TRUE(r.facts.net.master.port_listening.ok());                     // garbage rows are skipped
  EXPECT_FALSE(*r.facts.net.master.port_listening.value());
  ASSERT_FALSE(r.facts.net.master.ephemeral_range.ok());
  EXPECT_EQ(r.facts.net.master.ephemeral_range.error()->code, ProbeErrc::ParseError);
  ProbeRun empty;
  empty.run(kDir + "does-not-exist");
  EXPECT_EQ(empty.facts.net.interfaces.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(empty.facts.net.master.port_listening.error()->code, ProbeErrc::ParseError);  // MASTER_PORT unset
}

TEST(NetProbe, LiveInterfacesAndAHeldPort) {
  // A listener of our own on 127.0.0.1, port chosen by the kernel.
  testing::LoopbackPort listener(1);
  ASSERT_TRUE(listener.ok());
  const std::string port = listener.port_text();

  ProbeRun r;
  r.env = EnvSnapshot{{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}};
  r.run("");
  listener.close();
  const auto* ifs = r.facts.net.interfaces.value();
  ASSERT_NE(ifs, nullptr) << r.facts.net.interfaces.why();
  EXPECT_EQ(r.facts.net.interfaces.source(), kInterfacesLiveSource);
  const NetInterface* lo = find(*ifs, "lo");
  if (lo == nullptr) GTEST_SKIP() << "no loopback interface here";
  EXPECT_TRUE(lo->loopback);
  ASSERT_FALSE(lo->addresses.empty());
  EXPECT_EQ(lo->addresses.front().family, "inet");
  EXPECT_EQ(lo->addresses.front().address, "127.0.0.1");
  EXPECT_EQ(lo->addresses.front().prefix, 8);

  const MasterFacts& m = r.facts.net.master;
  EXPECT_TRUE(m.addr_is_local);
  ASSERT_TRUE(m.port_listening.ok()) << m.port_listening.why();
  EXPECT_TRUE(*m.port_listening.value()) << m.port_listening.source();
  ASSERT_TRUE(m.bind_test.ok()) << m.bind_test.why();
  EXPECT_EQ(m.bind_test.value()->rfind("EADDRINUSE", 0), 0u) << *m.bind_test.value();
}

TEST(NetProbe, LiveFreePortBindsAndCloses) {
  ProbeRun r;
  r.env = EnvSnapshot{{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}};
  r.run("");
  ASSERT_TRUE(r.facts.net.master.bind_test.ok());
  // Port 1: EACCES for an unprivileged user, "free" for root; either way it is a verdict, not an error.
  const std::string& v = *r.facts.net.master.bind_test.value();
  EXPECT_TRUE(v == "free" || v.rfind("EACCES", 0) == 0) << v;
}

TEST(BoundedLookup, ExpiresWithATimeout) {
  const auto slow = [](const std::string&, std::vector<std::string>& out, int&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    out.push_back("10.0.0.1");
    return 0;
  };
  BoundedLookup lookup("slow.example", slow);
  const auto start = std::chrono::steady_clock::now();
  const auto p = lookup.wait(start + std::chrono::milliseconds(100), std::chrono::milliseconds(100));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error()->code, ProbeErrc::Timeout);
  EXPECT_EQ(p.error()->detail, "did not resolve within 0.1 s");
  EXPECT_EQ(p.source(), "getaddrinfo(slow.example)");
}

TEST(BoundedLookup, ErrorsAndAddresses) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  BoundedLookup none("x", [](const std::string&, std::vector<std::string>&, int&) { return EAI_NONAME; });
  const auto p = none.wait(deadline, std::chrono::seconds(5));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error()->code, ProbeErrc::NotFound);
  BoundedLookup again("x", [](const std::string&, std::vector<std::string>&, int&) { return EAI_AGAIN; });
  EXPECT_EQ(again.wait(deadline, std::chrono::seconds(5)).error()->code, ProbeErrc::ApiError);
  BoundedLookup ok("x", [](const std::string&, std::vector<std::string>& out, int&) {
    out = {"10.0.0.1", "fd00::1"};
    return 0;
  });
  const auto v = ok.wait(deadline, std::chrono::seconds(5));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.value()->size(), 2u);
  BoundedLookup real("localhost");
  const auto l = real.wait(deadline, std::chrono::seconds(5));
  ASSERT_TRUE(l.ok()) << l.why();
}

TEST(HostsFile, Lookup) {
  const char* hosts =
      "127.0.0.1\tlocalhost\n127.0.1.1 gpu-a.example.com GPU-A  # Debian\n# 10.0.0.9 gpu-a\n10.0.0.5 gpu-a\nbad "
      "line\n::1 ip6-localhost\n";
  EXPECT_EQ(hosts_file_lookup(hosts, "gpu-a"), (std::vector<std::string>{"127.0.1.1", "10.0.0.5"}));
  EXPECT_EQ(hosts_file_lookup(hosts, "ip6-localhost"), std::vector<std::string>{"::1"});
  EXPECT_TRUE(hosts_file_lookup(hosts, "line").empty());
  EXPECT_TRUE(hosts_file_lookup("", "x").empty());
}

// A sysfs tree built for the test: each interface's driver from its device's driver link, the
// version from the module that holds it.
struct DriverTree {
  std::filesystem::path root;
  DriverTree() {
    char tmpl[] = "/tmp/preflight-net-driver-XXXXXX";
    root = ::mkdtemp(tmpl);
    const auto file = [&](const std::string& path, const std::string& text) {
      std::filesystem::create_directories((root / path).parent_path());
      std::ofstream(root / path) << text << "\n";
    };
    const auto link = [&](const std::string& path, const std::string& target) {
      std::filesystem::create_directories((root / path).parent_path());
      std::filesystem::create_directory_symlink(target, root / path);
    };
    for (const auto& [name, index] : {std::pair<std::string, int>{"lo", 1}, {"eth0", 2}, {"eth1", 3}, {"eth2", 4}}) {
      file("sys/class/net/" + name + "/ifindex", std::to_string(index));
      file("sys/class/net/" + name + "/operstate", "up");
      file("sys/class/net/" + name + "/flags", "0x1003");
    }
    file("sys/devices/pci0000:00/0000:17:00.0/vendor", "0x15b3");
    file("sys/devices/pci0000:00/0000:31:00.0/vendor", "0x8086");
    file("sys/devices/pci0000:00/0000:00:05.0/virtio3/features", "0");
    link("sys/class/net/eth0/device", "../../../devices/pci0000:00/0000:17:00.0");
    link("sys/class/net/eth1/device", "../../../devices/pci0000:00/0000:31:00.0");
    link("sys/class/net/eth2/device", "../../../devices/pci0000:00/0000:00:05.0/virtio3");
    // mlx5_core: a driver in a module with a version; ixgbe: no version file; virtio_net: no module link.
    link("sys/devices/pci0000:00/0000:17:00.0/driver", "../../../bus/pci/drivers/mlx5_core");
    link("sys/devices/pci0000:00/0000:31:00.0/driver", "../../../bus/pci/drivers/ixgbe");
    link("sys/devices/pci0000:00/0000:00:05.0/virtio3/driver", "../../../../bus/virtio/drivers/virtio_net");
    file("sys/bus/virtio/drivers/virtio_net/uevent", "");
    link("sys/bus/pci/drivers/mlx5_core/module", "../../../../module/mlx5_core");
    link("sys/bus/pci/drivers/ixgbe/module", "../../../../module/ixgbe");
    file("sys/module/mlx5_core/version", "24.10-1.1.4");
    file("sys/module/ixgbe/refcnt", "1");
    file("sys/module/virtio_net/version", "1.0.0");
  }
  ~DriverTree() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
};

TEST(NetProbe, NicDriverAndModuleVersion) {
  const DriverTree tree;
  ProbeRun r;
  r.run(tree.root.string());
  const auto* ifs = r.facts.net.interfaces.value();
  ASSERT_NE(ifs, nullptr) << r.facts.net.interfaces.why();
  ASSERT_EQ(ifs->size(), 4u);
  EXPECT_TRUE(find(*ifs, "lo")->driver.empty());  // no device link
  EXPECT_TRUE(find(*ifs, "lo")->driver_version.empty());
  EXPECT_EQ(find(*ifs, "eth0")->driver, "mlx5_core");
  EXPECT_EQ(find(*ifs, "eth0")->driver_version, "24.10-1.1.4");
  EXPECT_EQ(find(*ifs, "eth0")->pci_bus_id, "0000:17:00.0");
  EXPECT_EQ(find(*ifs, "eth1")->driver, "ixgbe");
  EXPECT_TRUE(find(*ifs, "eth1")->driver_version.empty());  // the module publishes no version
  EXPECT_EQ(find(*ifs, "eth2")->driver, "virtio_net");      // no module link: the driver's name
  EXPECT_EQ(find(*ifs, "eth2")->driver_version, "1.0.0");
  // The facts serialise with the new fields.
  const nlohmann::json j = *find(*ifs, "eth0");
  EXPECT_EQ(j["driver"], "mlx5_core");
  EXPECT_EQ(j["driver_version"], "24.10-1.1.4");
}

TEST(NetProbe, FixtureTreesWithoutDriverLinks) {
  ProbeRun r;
  r.run(kDir + "rdma-node");
  ASSERT_TRUE(r.facts.net.interfaces.ok());
  for (const NetInterface& i : *r.facts.net.interfaces.value()) {
    EXPECT_TRUE(i.driver.empty()) << i.name;
    EXPECT_TRUE(i.driver_version.empty()) << i.name;
  }
}

}  // namespace
}  // namespace probes_net_probe_test
}  // namespace preflight
