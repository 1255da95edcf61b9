// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "checks/check.hpp"

namespace preflight {
namespace {

IbPort port(int n, std::string state, std::string layer = "InfiniBand", std::string rate = "400 Gb/sec (4X NDR)") {
  IbPort p;
  p.port = n;
  p.state = std::move(state);
  p.phys_state = p.state.starts_with("4") ? "5: LinkUp" : "3: Disabled";
  p.link_layer = std::move(layer);
  p.rate = std::move(rate);
  return p;
}

IbDevice dev(std::string name, std::vector<IbPort> ports) {
  IbDevice d;
  d.name = std::move(name);
  d.pci_bus_id = "0000:17:00.0";
  d.ports = std::move(ports);
  return d;
}

// An 8-rail-like node, shortened: mlx5_0, mlx5_1 ACTIVE IB 400G, mlx5_10 ACTIVE too (the trap target).
std::vector<IbDevice> node() {
  return {dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_1", {port(1, "4: ACTIVE")}), dev("mlx5_10", {port(1, "4: ACTIVE")})};
}

struct Case {
  RankFacts facts;
  Case() {
    facts.net.ib_devices = Probed<std::vector<IbDevice>>::ok(node(), "/sys/class/infiniband");
    facts.net.gpudirect_rdma = Probed<bool>::ok(true, "/sys/module/nvidia_peermem/version");
  }
  Case& devices(std::vector<IbDevice> d) {
    facts.net.ib_devices = Probed<std::vector<IbDevice>>::ok(std::move(d), "/sys/class/infiniband");
    return *this;
  }
  Case& env(std::string k, std::string v) {
    facts.env.set(std::move(k), std::move(v));
    return *this;
  }
  Verdict run() const {
    const Options options;
    return run_check(*find_check("net.ib"), CheckContext{facts, options, Profile::Node});
  }
};

void expect(const Verdict& v, Status s, const std::string& summary_has, const std::string& remedy_has = {}) {
  EXPECT_EQ(v.status, s) << v.summary << " / " << v.remedy;
  EXPECT_NE(v.summary.find(summary_has), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find(remedy_has), std::string::npos) << v.remedy;
}

TEST(NetIb, PassNamesThePorts) {
  const Verdict v = Case().run();
  expect(v, Status::Pass, "NCCL (NCCL_IB_HCA unset) will use 3 ACTIVE port(s): mlx5_0:1, mlx5_1:1, mlx5_10:1 (InfiniBand, 400 Gb/sec (4X NDR)); GPUDirect RDMA module loaded");
  EXPECT_EQ(v.evidence["gpudirect_rdma"], true);
  EXPECT_EQ(v.evidence["used_ports"].size(), 3u);
  EXPECT_EQ(v.evidence["devices"][0]["name"], "mlx5_0");
  expect(Case().env("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1").run(), Status::Pass, "will use 2 ACTIVE port(s): mlx5_0:1, mlx5_1:1");
  const Verdict excl = Case().env("NCCL_IB_HCA", "^mlx5_1").run();  // also drops mlx5_10: the trap works both ways
  expect(excl, Status::Warn, "mlx5_1 also selects mlx5_10", "export NCCL_IB_HCA=^=mlx5_1");
  EXPECT_EQ(excl.evidence["used_ports"], nlohmann::json::array({"mlx5_0:1"}));
  expect(Case().env("NCCL_IB_HCA", "^=mlx5_1").run(), Status::Pass, "will use 2 ACTIVE port(s): mlx5_0:1, mlx5_10:1");
}

TEST(NetIb, NoRdmaSkips) {
  Case c;
  c.facts.net.ib_devices = Probed<std::vector<IbDevice>>::error(ProbeErrc::NotFound, "does not exist (no RDMA driver loaded)", "/sys/class/infiniband");
  expect(c.run(), Status::Skip, "no RDMA devices (/sys/class/infiniband: does not exist");
  expect(Case().devices({}).run(), Status::Skip, "no RDMA devices in /sys/class/infiniband");
}

TEST(NetIb, UnreadableSysfsIsUnknown) {
  Case c;
  c.facts.net.ib_devices = Probed<std::vector<IbDevice>>::error(ProbeErrc::Unreadable, "/sys/class/infiniband/mlx5_0/ports: Invalid argument",
                                                                "/sys/class/infiniband");
  expect(c.run(), Status::Unknown, "could not read the RDMA devices");
  Case state;
  state.devices({dev("mlx5_0", {port(1, "")})});
  expect(state.run(), Status::Unknown, "the state of mlx5_0:1 (state unknown");
  RankFacts never;
  const Options options;
  EXPECT_EQ(run_check(*find_check("net.ib"), CheckContext{never, options, Profile::Node}).status, Status::Unknown);
}

TEST(NetIb, HcaSelectingNoActivePortFails) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_4", {port(1, "1: DOWN")})}).env("NCCL_IB_HCA", "=mlx5_4");
  expect(c.run(), Status::Fail, "NCCL_IB_HCA==mlx5_4 selects no ACTIVE port: mlx5_4:1 (1: DOWN, 3: Disabled, InfiniBand", "export NCCL_IB_HCA==mlx5_0:1");
  expect(Case().env("NCCL_IB_HCA", "mlx5_0:2").run(), Status::Fail, "NCCL_IB_HCA names mlx5_0:2, a port the device does not have");
  expect(Case().env("NCCL_IB_HCA", "^").run(), Status::Fail, "selects no ACTIVE port");  // an empty exclude list selects nothing
}

TEST(NetIb, HcaNamingAMissingDeviceFails) {
  expect(Case().env("NCCL_IB_HCA", "=mlx5_0,mlx5_9").run(), Status::Fail,
         "NCCL_IB_HCA names mlx5_9, which matches no RDMA device (devices: mlx5_0, mlx5_1, mlx5_10)", "export NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_10");
  expect(Case().env("NCCL_IB_HCA", "^mlx5_9").run(), Status::Pass, "3 ACTIVE");  // excluding a missing device is harmless
}

TEST(NetIb, PrefixTrapWarns) {
  const Verdict v = Case().env("NCCL_IB_HCA", "mlx5_1:1").run();
  expect(v, Status::Warn, "NCCL_IB_HCA=mlx5_1:1 matches by prefix: mlx5_1 also selects mlx5_10", "export NCCL_IB_HCA==mlx5_1:1");
  EXPECT_EQ(v.evidence["used_ports"].size(), 2u);
}

TEST(NetIb, SelectedPortNotActiveWarns) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_1", {port(1, "2: INIT")})});
  expect(c.run(), Status::Warn, "also selects ports that are not ACTIVE: mlx5_1:1 (2: INIT", "export NCCL_IB_HCA==mlx5_0:1");
}

TEST(NetIb, NoActivePortAtAllWarns) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "1: DOWN")})});
  expect(c.run(), Status::Warn, "no RDMA port is ACTIVE (mlx5_0:1 (1: DOWN", "ibstat");
}

TEST(NetIb, MixedLinkLayersWarn) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_1", {port(1, "4: ACTIVE", "Ethernet")})});
  expect(c.run(), Status::Warn, "mix link layers (mlx5_0:1 InfiniBand, mlx5_1:1 RoCE)", "Select one link type");
  c.env("NCCL_IB_HCA", "=mlx5_0");
  expect(c.run(), Status::Pass, "1 ACTIVE port(s): mlx5_0:1");
}

TEST(NetIb, UnequalRatesWarn) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_1", {port(1, "4: ACTIVE", "InfiniBand", "200 Gb/sec (4X HDR)")})});
  expect(c.run(), Status::Warn, "different rates (mlx5_0:1 400 Gb/sec (4X NDR), mlx5_1:1 200 Gb/sec (4X HDR))");
}

TEST(NetIb, IbDisabledWhileActiveWarns) {
  const Verdict v = Case().env("NCCL_IB_DISABLE", "1").run();
  expect(v, Status::Warn, "NCCL_IB_DISABLE=1 (environment) while 3 RDMA port(s) are ACTIVE", "unset NCCL_IB_DISABLE");
  EXPECT_NE(v.summary.find("falls back to TCP sockets"), std::string::npos);
  expect(Case().env("NCCL_IB_DISABLE", "0").run(), Status::Pass, "3 ACTIVE");
  expect(Case().env("NCCL_IB_DISABLE", "true").run(), Status::Pass, "3 ACTIVE");  // strtoll reads 0: not disabled
  Case down;
  down.devices({dev("mlx5_0", {port(1, "1: DOWN")})}).env("NCCL_IB_DISABLE", "1");
  expect(down.run(), Status::Pass, "no RDMA port is ACTIVE anyway");
  Case conf;
  ConfFile f;
  f.path = "/etc/nccl.conf";
  f.contents = Probed<ConfFileContents>::ok(ConfFileContents{{{"NCCL_IB_DISABLE", "1", 4}}, {}}, "/etc/nccl.conf");
  conf.facts.nccl_conf.files.push_back(f);
  expect(conf.run(), Status::Warn, "NCCL_IB_DISABLE=1 (/etc/nccl.conf:4)");
}

TEST(NetIb, ExplainListsWhatItReadsFailuresAndFix) {
  const std::string explain(find_check("net.ib")->explain);
  for (const char* part : {"What it reads", "Failures", "Fix", "FAIL", "WARN", "UNKNOWN"}) {
    EXPECT_NE(explain.find(part), std::string::npos) << part;
  }
}

}  // namespace
}  // namespace preflight
