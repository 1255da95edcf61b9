// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "checks/check.hpp"

namespace preflight {
namespace checks_net_ib_test {
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
  return {dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_1", {port(1, "4: ACTIVE")}),
          dev("mlx5_10", {port(1, "4: ACTIVE")})};
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
  expect(v, Status::Pass,
         "NCCL (NCCL_IB_HCA unset) will use 3 ACTIVE port(s): mlx5_0:1, mlx5_1:1, mlx5_10:1 (InfiniBand, 400 Gb/sec "
         "(4X NDR)); GPUDirect RDMA module loaded");
  EXPECT_EQ(v.finding.code, "net.ib/ports");
  EXPECT_EQ(v.finding.params["count"], 3);
  EXPECT_EQ(v.finding.params["ports"], "mlx5_0:1, mlx5_1:1, mlx5_10:1");
  EXPECT_EQ(v.evidence["gpudirect_rdma"], true);
  EXPECT_EQ(v.evidence["used_ports"].size(), 3u);
  EXPECT_EQ(v.evidence["devices"][0]["name"], "mlx5_0");
  expect(Case().env("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1").run(), Status::Pass,
         "will use 2 ACTIVE port(s): mlx5_0:1, mlx5_1:1");
  const Verdict excl = Case().env("NCCL_IB_HCA", "^mlx5_1").run();  // also drops mlx5_10: the trap works both ways
  expect(excl, Status::Warn, "mlx5_1 also selects mlx5_10", "export NCCL_IB_HCA=^=mlx5_1");
  EXPECT_EQ(excl.finding.code, "net.ib/prefix-trap");
  EXPECT_EQ(excl.finding.params["exact"], "^=mlx5_1");
  EXPECT_EQ(excl.evidence["used_ports"], nlohmann::json::array({"mlx5_0:1"}));
  expect(Case().env("NCCL_IB_HCA", "^=mlx5_1").run(), Status::Pass, "will use 2 ACTIVE port(s): mlx5_0:1, mlx5_10:1");
}

TEST(NetIb, NoRdmaSkips) {
  Case c;
  c.facts.net.ib_devices = Probed<std::vector<IbDevice>>::error(
      ProbeErrc::NotFound, "does not exist (no RDMA driver loaded)", "/sys/class/infiniband");
  const Verdict missing = c.run();
  expect(missing, Status::Skip, "no RDMA devices (/sys/class/infiniband: does not exist");
  EXPECT_EQ(missing.finding.code, "net.ib/no-devices");
  const Verdict empty = Case().devices({}).run();
  EXPECT_EQ(empty.summary,
            "no RDMA devices in /sys/class/infiniband; NCCL uses TCP sockets (NET/Socket) between nodes");
  EXPECT_EQ(empty.status, Status::Skip);
  EXPECT_EQ(empty.finding.code, "net.ib/no-devices");
  EXPECT_NE(empty.summary.find("no RDMA devices in /sys/class/infiniband"), std::string::npos) << empty.summary;
}

TEST(NetIb, UnreadableSysfsIsUnknown) {
  Case c;
  c.facts.net.ib_devices = Probed<std::vector<IbDevice>>::error(
      ProbeErrc::Unreadable, "/sys/class/infiniband/mlx5_0/ports: Invalid argument", "/sys/class/infiniband");
  expect(c.run(), Status::Unknown, "could not read the RDMA devices");
  Case state;
  state.devices({dev("mlx5_0", {port(1, "")})});
  const Verdict s = state.run();
  expect(s, Status::Unknown, "the state of mlx5_0:1 (state unknown");
  EXPECT_EQ(s.finding.code, "net.ib/state-unreadable");
  EXPECT_EQ(s.finding.params["unreadable"], "mlx5_0:1 (state unknown, 3: Disabled, InfiniBand, 400 Gb/sec (4X NDR))");
  RankFacts never;
  const Options options;
  EXPECT_EQ(run_check(*find_check("net.ib"), CheckContext{never, options, Profile::Node}).status, Status::Unknown);
}

TEST(NetIb, HcaSelectingNoActivePortFails) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_4", {port(1, "1: DOWN")})}).env("NCCL_IB_HCA", "=mlx5_4");
  const Verdict v = c.run();
  expect(v, Status::Fail, "NCCL_IB_HCA==mlx5_4 selects no ACTIVE port: mlx5_4:1 (1: DOWN, 3: Disabled, InfiniBand",
         "export NCCL_IB_HCA==mlx5_0:1");
  EXPECT_EQ(v.finding.code, "net.ib/hca-misses-active");
  EXPECT_EQ(v.finding.params["selected_by"], "NCCL_IB_HCA==mlx5_4");
  EXPECT_EQ(v.finding.params["first_active"], "mlx5_0:1");
  EXPECT_EQ(v.remedy, "Select ACTIVE ports: mlx5_0:1 (e.g. `export NCCL_IB_HCA==mlx5_0:1`).");
  const Verdict port = Case().env("NCCL_IB_HCA", "mlx5_0:2").run();
  expect(port, Status::Fail, "NCCL_IB_HCA names mlx5_0:2, a port the device does not have",
         "/sys/class/infiniband/mlx5_0/ports");
  EXPECT_EQ(port.findings[0].code, "net.ib/unknown-port");
  EXPECT_EQ(port.findings[0].params["entry"], "mlx5_0:2");
  EXPECT_EQ(port.findings[0].params["device"], "mlx5_0");
  const Verdict none = Case().env("NCCL_IB_HCA", "^").run();
  expect(none, Status::Fail, "selects no ACTIVE port");  // an empty exclude list selects nothing
  EXPECT_EQ(none.finding.code, "net.ib/hca-misses-active");
  EXPECT_FALSE(none.finding.params.contains("down_note"));  // spliced into the message
}

TEST(NetIb, HcaWhenNoPortIsActiveFails) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "1: DOWN")}), dev("mlx5_1", {port(1, "1: DOWN")})}).env("NCCL_IB_HCA", "=mlx5_0");
  const Verdict v = c.run();
  expect(
      v, Status::Fail, "NCCL_IB_HCA==mlx5_0 selects no ACTIVE port: mlx5_0:1 (1: DOWN, 3: Disabled, InfiniBand",
      "Bring the RDMA ports up (`ibstat`; check cables, the subnet manager for InfiniBand, the switch port for RoCE).");
  EXPECT_EQ(v.finding.code, "net.ib/hca-none-active");
  EXPECT_EQ(v.finding.params["selected_by"], "NCCL_IB_HCA==mlx5_0");
  EXPECT_EQ(v.finding.params["down_ports"], "mlx5_0:1 (1: DOWN, 3: Disabled, InfiniBand, 400 Gb/sec (4X NDR))");
}

TEST(NetIb, HcaNamingAMissingDeviceFails) {
  const Verdict v = Case().env("NCCL_IB_HCA", "=mlx5_0,mlx5_9").run();
  expect(v, Status::Fail, "NCCL_IB_HCA names mlx5_9, which matches no RDMA device (devices: mlx5_0, mlx5_1, mlx5_10)",
         "export NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_10");
  EXPECT_EQ(v.finding.code, "net.ib/unknown-device");
  EXPECT_EQ(v.finding.params["entry"], "mlx5_9");
  EXPECT_EQ(v.finding.params["device_list"], "mlx5_0,mlx5_1,mlx5_10");
  expect(Case().env("NCCL_IB_HCA", "^mlx5_9").run(), Status::Pass,
         "3 ACTIVE");  // excluding a missing device is harmless
}

TEST(NetIb, PrefixTrapWarns) {
  const Verdict v = Case().env("NCCL_IB_HCA", "mlx5_1:1").run();
  expect(v, Status::Warn, "NCCL_IB_HCA=mlx5_1:1 matches by prefix: mlx5_1 also selects mlx5_10",
         "export NCCL_IB_HCA==mlx5_1:1");
  EXPECT_EQ(v.finding.code, "net.ib/prefix-trap");
  EXPECT_EQ(v.finding.params["hca"], "mlx5_1:1");
  EXPECT_EQ(v.finding.params["traps"], "mlx5_1 also selects mlx5_10");
  EXPECT_EQ(v.evidence["used_ports"].size(), 2u);
}

TEST(NetIb, SelectedPortNotActiveWarns) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_1", {port(1, "2: INIT")})});
  const Verdict v = c.run();
  expect(v, Status::Warn, "NCCL (NCCL_IB_HCA unset) also selects ports that are not ACTIVE: mlx5_1:1 (2: INIT",
         "export NCCL_IB_HCA==mlx5_0:1");
  EXPECT_EQ(v.finding.code, "net.ib/some-inactive");
  EXPECT_EQ(v.finding.params["used_ports"], "mlx5_0:1");
  EXPECT_EQ(v.finding.params["selected_by"], "NCCL (NCCL_IB_HCA unset)");
}

TEST(NetIb, NoActivePortAtAllWarns) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "1: DOWN")})});
  const Verdict v = c.run();
  expect(v, Status::Warn, "no RDMA port is ACTIVE (mlx5_0:1 (1: DOWN", "ibstat");
  EXPECT_EQ(v.finding.code, "net.ib/none-active");
  EXPECT_EQ(v.finding.params["down_ports"], "mlx5_0:1 (1: DOWN, 3: Disabled, InfiniBand, 400 Gb/sec (4X NDR))");
}

TEST(NetIb, MixedLinkLayersWarn) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "4: ACTIVE")}), dev("mlx5_1", {port(1, "4: ACTIVE", "Ethernet")})});
  const Verdict v = c.run();
  expect(v, Status::Warn, "mix link layers (mlx5_0:1 InfiniBand, mlx5_1:1 RoCE)", "Select one link type");
  EXPECT_EQ(v.finding.code, "net.ib/mixed-link-layers");
  EXPECT_EQ(v.finding.params["per_port"], "mlx5_0:1 InfiniBand, mlx5_1:1 RoCE");
  c.env("NCCL_IB_HCA", "=mlx5_0");
  expect(c.run(), Status::Pass, "1 ACTIVE port(s): mlx5_0:1");
}

TEST(NetIb, UnequalRatesWarn) {
  Case c;
  c.devices({dev("mlx5_0", {port(1, "4: ACTIVE")}),
             dev("mlx5_1", {port(1, "4: ACTIVE", "InfiniBand", "200 Gb/sec (4X HDR)")})});
  const Verdict v = c.run();
  expect(v, Status::Warn, "different rates (mlx5_0:1 400 Gb/sec (4X NDR), mlx5_1:1 200 Gb/sec (4X HDR))");
  EXPECT_EQ(v.finding.code, "net.ib/mixed-rates");
  EXPECT_EQ(v.finding.params["port_rates"], "mlx5_0:1 400 Gb/sec (4X NDR), mlx5_1:1 200 Gb/sec (4X HDR)");
}

TEST(NetIb, IbDisabledWhileActiveWarns) {
  const Verdict v = Case().env("NCCL_IB_DISABLE", "1").run();
  expect(v, Status::Warn, "NCCL_IB_DISABLE=1 (environment) while 3 RDMA port(s) are ACTIVE", "unset NCCL_IB_DISABLE");
  EXPECT_NE(v.summary.find("falls back to TCP sockets"), std::string::npos);
  EXPECT_EQ(v.finding.code, "net.ib/ib-disabled");
  EXPECT_EQ(v.finding.params["active"], 3);
  EXPECT_EQ(v.finding.params["origin"], "environment");
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
}  // namespace checks_net_ib_test
}  // namespace preflight
