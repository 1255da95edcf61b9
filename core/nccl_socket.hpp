// SPDX-License-Identifier: MIT
// How NCCL picks its socket interfaces (bootstrap and NET/Socket), replayed on enumerated
// interfaces: ncclFindInterfaces()/ncclOsFindInterfaces() of NCCL 2.30 (src/misc/socket.cc,
// src/os/linux.cc). Pure functions, shared by the net probe and the net checks, so the algorithm
// is unit-tested on synthetic interface lists.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts.hpp"

namespace preflight {

/// The source the net probe gives facts.net.interfaces: the live system (getifaddrs, with flags and
/// addresses) or a --sysroot tree (sysfs only: names, state, no addresses).
inline constexpr std::string_view kInterfacesLiveSource = "getifaddrs + /sys/class/net";
inline constexpr std::string_view kInterfacesSysfsSource = "/sys/class/net (no addresses in a --sysroot tree)";

/// NCCL_SOCKET_IFNAME entries beyond this are ignored by NCCL (MAX_IFS), and NET/Socket uses at
/// most this many interfaces.
inline constexpr std::size_t kNcclMaxIfs = 16;

/// A setting NCCL reads: the environment wins, then NCCL's configuration files in order (the first
/// file and the first line that set a name win: NCCL applies them with setenv(name, value, 0)).
struct NcclSetting {
  std::string value;
  std::string origin;  // "environment" or "/etc/nccl.conf:3"
};
std::optional<NcclSetting> nccl_setting(const RankFacts& facts, std::string_view name);

/// True when the job spans several nodes, as far as this rank can tell: the launcher's node count
/// (or --expect-nodes) above 1, or a world larger than the ranks a launcher says share this node.
bool is_multi_node(const Placement& p);

/// An IP address as 16 bytes (IPv4 as the first 4), with its family; nullopt when not numeric.
struct IpBytes {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};
};
std::optional<IpBytes> parse_ip(std::string_view text);
bool same_ip(std::string_view a, std::string_view b);
/// 127.0.0.0/8, ::1, ::ffff:127.x.x.x.
bool is_loopback_ip(std::string_view address);
/// "192.0.2.0/24" for 192.0.2.7/24; "" when the address is not numeric.
std::string subnet_text(const NetAddress& a);
/// True when `address` lies in the network of `net` (its address and prefix).
bool in_subnet(const NetAddress& net, std::string_view address);

/// One interface NCCL would pick, with the address it would use (the first of the interface's
/// addresses in getifaddrs order that passes the filters).
struct SocketChoice {
  std::string interface;
  NetAddress address;
};

/// ncclOsFindInterfaces(list, family): interfaces in getifaddrs order whose name the list selects,
/// IFF_RUNNING, with an AF_INET/AF_INET6 address ("inet"/"inet6"; "" = any) that is not the IPv6
/// loopback; one entry per name; at most max_ifs. getifaddrs lists every IPv4 address (interfaces
/// in ifindex order) before every IPv6 address, so an interface's IPv4 address wins, and an
/// interface with only IPv6 addresses comes after those with IPv4.
std::vector<SocketChoice> nccl_find_interfaces(const std::vector<NetInterface>& interfaces, std::string_view list,
                                               std::string_view family, std::size_t max_ifs = kNcclMaxIfs);

struct SocketSelection {
  bool from_env = false;  // NCCL_SOCKET_IFNAME set with strlen > 1
  std::string rule;       // the list that found the interfaces: the variable's value, or the default step
  std::vector<std::string>
      tried;                    // default steps tried in order ("ib", "NCCL_COMM_ID subnet", "^docker,lo,virbr", ...)
  std::string family;           // "inet", "inet6" or "" (NCCL_SOCKET_FAMILY not set or not understood)
  bool family_ignored = false;  // NCCL_SOCKET_FAMILY set to something NCCL ignores
  std::string comm_id_note;     // why the NCCL_COMM_ID step could not be replayed, if it could not
  std::vector<SocketChoice> matches;  // NET/Socket's interfaces; matches[0] is the bootstrap interface
};

/// ncclFindInterfaces(): NCCL_SOCKET_IFNAME when its length is above 1, else the default order
/// "ib", the interface in NCCL_COMM_ID's subnet (numeric addresses only), "^docker,lo,virbr",
/// "docker", "lo", "virbr". Bootstrap uses matches[0].
SocketSelection nccl_socket_select(const std::vector<NetInterface>& interfaces,
                                   const std::optional<std::string>& ifname, const std::optional<std::string>& family,
                                   const std::optional<std::string>& comm_id);

/// "eth0 (up, running, 192.0.2.2/24, fd00::2/64, 10000 Mb/s)", for messages.
std::string describe_interface(const NetInterface& i);

}  // namespace preflight
