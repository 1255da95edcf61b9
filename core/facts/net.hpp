// SPDX-License-Identifier: MIT
// The network as NCCL and PyTorch will see it: IP interfaces (getifaddrs + /sys/class/net), RDMA
// devices and ports (/sys/class/infiniband), and MASTER_ADDR / MASTER_PORT as this rank resolves
// and finds them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

struct NetAddress {
  std::string family;   // "inet" or "inet6"
  std::string address;  // "10.0.0.5", "fe80::1"
  int prefix = 0;       // netmask length
};
PREFLIGHT_JSON_DECLARE(NetAddress)

struct NetInterface {
  std::string name;
  bool up = false;        // IFF_UP
  bool running = false;   // IFF_RUNNING: what NCCL requires
  bool loopback = false;  // IFF_LOOPBACK
  std::string operstate;  // /sys/class/net/<if>/operstate ("up", "down", "unknown")
  std::optional<int> mtu;
  std::optional<int> speed_mbps;      // absent when the link is down or the device is virtual
  std::optional<int> type;            // ARPHRD: 1 Ethernet, 32 InfiniBand, 772 loopback
  std::vector<NetAddress> addresses;  // in getifaddrs order
  std::string pci_bus_id;             // from the device link; empty for virtual interfaces
  std::string rdma_device;            // the RDMA device behind it, if any ("mlx5_0")
  std::string driver;  // the device's kernel driver: basename of /sys/class/net/<if>/device/driver ("mlx5_core")
  std::string driver_version;  // /sys/module/<module>/version, when the module publishes one
};
PREFLIGHT_JSON_DECLARE(NetInterface)

struct IbPort {
  int port = 1;
  std::string state;                 // "4: ACTIVE"
  std::string phys_state;            // "5: LinkUp"
  std::string rate;                  // "400 Gb/sec (4X NDR)"
  std::string link_layer;            // "InfiniBand" or "Ethernet"
  std::vector<std::string> gids;     // non-zero GIDs
  std::vector<std::string> netdevs;  // RoCE: the netdevs of the GIDs
};
PREFLIGHT_JSON_DECLARE(IbPort)

struct IbDevice {
  std::string name;        // "mlx5_0"
  std::string pci_bus_id;  // "0000:17:00.0"
  std::vector<IbPort> ports;
};
PREFLIGHT_JSON_DECLARE(IbDevice)

struct MasterFacts {
  std::string addr;                                       // MASTER_ADDR as set ("" when unset)
  std::string port;                                       // MASTER_PORT as set
  Probed<std::vector<std::string>> resolved;              // getaddrinfo(MASTER_ADDR) addresses
  bool addr_is_local = false;                             // a resolved address is on one of this host's interfaces
  Probed<std::vector<std::string>> hostname_resolves_to;  // getaddrinfo(gethostname()): the 127.0.1.1 trap
  Probed<bool> port_listening;                            // /proc/net/tcp{,6}: a socket in LISTEN on MASTER_PORT
  Probed<std::string> bind_test;                          // "free" or the errno text of bind() with SO_REUSEADDR
  Probed<std::vector<int>> ephemeral_range;               // /proc/sys/net/ipv4/ip_local_port_range: {low, high}
  Probed<std::string> reserved_ports;                     // /proc/sys/net/ipv4/ip_local_reserved_ports
};
PREFLIGHT_JSON_DECLARE(MasterFacts)

/// The reachability test of a job: this rank opened a TCP connection (bounded in time) to rank 0's
/// NCCL bootstrap address, from the interface NCCL would use here.
struct ReachResult {
  bool attempted = false;  // false: no target was offered (the reason is in the job facts)
  bool ok = false;
  std::string target;  // "192.0.2.2:41234" ("[fd00::2]:41234" for IPv6)
  std::string source;  // this rank's local address of the connection, when it connected
  std::string error;   // "connect: Connection refused", "no answer within 2.0 s", ...
  double ms = 0;       // time to connect (or to give up)
};
PREFLIGHT_JSON_DECLARE(ReachResult)

struct NetFacts {
  Probed<std::vector<NetInterface>> interfaces;
  Probed<std::vector<IbDevice>> ib_devices;  // NotFound: no /sys/class/infiniband
  MasterFacts master;
  Probed<bool> gpudirect_rdma;       // nvidia_peermem / nv_mem loaded
  std::optional<ReachResult> reach;  // job runs: the connection test to rank 0 (nullopt: not run)
};
PREFLIGHT_JSON_DECLARE(NetFacts)

}  // namespace preflight
