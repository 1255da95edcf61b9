// SPDX-License-Identifier: MIT
#include "core/nccl_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "core/nccl_names.hpp"
#include "core/text.hpp"

namespace preflight {

std::optional<NcclSetting> nccl_setting(const RankFacts& facts, std::string_view name) {
  if (auto v = facts.env.get(name)) return NcclSetting{*v, "environment"};
  for (const ConfFile& file : facts.nccl_conf.files) {
    const ConfFileContents* contents = file.contents.value();
    if (contents == nullptr) continue;
    for (const ConfEntry& e : contents->entries) {
      if (e.name == name) return NcclSetting{e.value, file.path + ":" + std::to_string(e.line)};
    }
  }
  return std::nullopt;
}

bool is_multi_node(const Placement& p) {
  if (p.nodes) return *p.nodes > 1;
  const bool local_known = p.source == "--ranks-per-node" || p.source.find(' ') == std::string::npos;
  return local_known && p.local_ranks > 0 && p.world_size > p.local_ranks;
}

std::optional<IpBytes> parse_ip(std::string_view text) {
  std::string s(text);
  if (const std::size_t pct = s.find('%'); pct != std::string::npos) s.resize(pct);  // fe80::1%eth0
  IpBytes out;
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, s.c_str(), &a4) == 1) {
    std::memcpy(out.bytes.data(), &a4, 4);
    return out;
  }
  if (inet_pton(AF_INET6, s.c_str(), &a6) == 1) {
    out.v6 = true;
    std::memcpy(out.bytes.data(), &a6, 16);
    return out;
  }
  return std::nullopt;
}

namespace {
// ::ffff:a.b.c.d as a.b.c.d.
IpBytes unmap(IpBytes ip) {
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (ip.v6 && std::memcmp(ip.bytes.data(), kMapped, 12) == 0) {
    IpBytes v4;
    std::memcpy(v4.bytes.data(), ip.bytes.data() + 12, 4);
    return v4;
  }
  return ip;
}
}  // namespace

bool same_ip(std::string_view a, std::string_view b) {
  const auto x = parse_ip(a), y = parse_ip(b);
  if (!x || !y) return a == b;
  const IpBytes u = unmap(*x), v = unmap(*y);
  return u.v6 == v.v6 && u.bytes == v.bytes;
}

bool is_loopback_ip(std::string_view address) {
  const auto ip = parse_ip(address);
  if (!ip) return false;
  const IpBytes u = unmap(*ip);
  if (!u.v6) return u.bytes[0] == 127;
  for (std::size_t i = 0; i < 15; ++i) {
    if (u.bytes[i] != 0) return false;
  }
  return u.bytes[15] == 1;
}

namespace {
bool prefix_equal(const IpBytes& a, const IpBytes& b, int prefix) {
  const int bits = a.v6 ? 128 : 32;
  prefix = std::max(0, std::min(prefix, bits));
  for (int i = 0; i < prefix; ++i) {
    const auto bit = [i](const IpBytes& x) { return (x.bytes[static_cast<std::size_t>(i / 8)] >> (7 - i % 8)) & 1; };
    if (bit(a) != bit(b)) return false;
  }
  return true;
}
}  // namespace

std::string subnet_text(const NetAddress& a) {
  auto ip = parse_ip(a.address);
  if (!ip) return {};
  const int bits = ip->v6 ? 128 : 32;
  const int prefix = std::max(0, std::min(a.prefix, bits));
  for (int i = prefix; i < bits; ++i) {
    ip->bytes[static_cast<std::size_t>(i / 8)] &= static_cast<std::uint8_t>(~(1u << (7 - i % 8)));
  }
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(ip->v6 ? AF_INET6 : AF_INET, ip->bytes.data(), buf, sizeof buf) == nullptr) return {};
  return std::string(buf) + "/" + std::to_string(prefix);
}

bool in_subnet(const NetAddress& net, std::string_view address) {
  const auto n = parse_ip(net.address), a = parse_ip(address);
  if (!n || !a || n->v6 != a->v6) return false;
  return prefix_equal(*n, *a, net.prefix);
}

std::vector<SocketChoice> nccl_find_interfaces(const std::vector<NetInterface>& interfaces, std::string_view list,
                                               std::string_view family, std::size_t max_ifs) {
  const NcclNameList names = parse_nccl_names(list);
  std::vector<SocketChoice> out;
  for (std::string_view fam : {std::string_view("inet"), std::string_view("inet6")}) {
    if (!family.empty() && fam != family) continue;
    for (const NetInterface& i : interfaces) {
      if (out.size() >= max_ifs) return out;
      if (!i.running) continue;
      bool taken = false;
      for (const SocketChoice& c : out) taken = taken || c.interface == i.name;
      if (taken || !nccl_selects(names, i.name)) continue;
      for (const NetAddress& a : i.addresses) {
        if (a.family != fam) continue;
        if (fam == "inet6" && is_loopback_ip(a.address)) continue;
        out.push_back({i.name, a});
        break;
      }
    }
  }
  return out;
}

namespace {
// NCCL_COMM_ID "<ipv4>:<port>", "[<ipv6>]:<port>" or "<host>:<port>": the address part.
std::string comm_id_address(std::string_view id) {
  if (!id.empty() && id.front() == '[') {
    const std::size_t close = id.find(']');
    return close == std::string_view::npos ? std::string() : std::string(id.substr(1, close - 1));
  }
  return std::string(id.substr(0, id.find(':')));
}
}  // namespace

SocketSelection nccl_socket_select(const std::vector<NetInterface>& interfaces,
                                   const std::optional<std::string>& ifname, const std::optional<std::string>& family,
                                   const std::optional<std::string>& comm_id) {
  SocketSelection s;
  if (family) {
    if (*family == "AF_INET")
      s.family = "inet";
    else if (*family == "AF_INET6")
      s.family = "inet6";
    else
      s.family_ignored = true;
  }
  if (ifname && ifname->size() > 1) {
    s.from_env = true;
    s.rule = *ifname;
    s.matches = nccl_find_interfaces(interfaces, *ifname, s.family);
    return s;
  }
  const auto step = [&](std::string_view list) {
    s.tried.emplace_back(list);
    s.rule = std::string(list);
    s.matches = nccl_find_interfaces(interfaces, list, s.family);
    return !s.matches.empty();
  };
  if (step("ib")) return s;
  if (comm_id && comm_id->size() > 1) {
    s.tried.emplace_back("NCCL_COMM_ID subnet");
    const std::string addr = comm_id_address(*comm_id);
    if (!parse_ip(addr)) {
      s.comm_id_note =
          "NCCL_COMM_ID's host '" + printable(addr) + "' is not a numeric address: the subnet step was not replayed";
    } else {
      // ncclFindInterfaceMatchSubnet: the first address (any state, any family order of getifaddrs) in the same subnet.
      for (std::string_view fam : {std::string_view("inet"), std::string_view("inet6")}) {
        for (const NetInterface& i : interfaces) {
          for (const NetAddress& a : i.addresses) {
            if (s.matches.empty() && a.family == fam && in_subnet(a, addr)) s.matches.push_back({i.name, a});
          }
        }
      }
      if (!s.matches.empty()) {
        s.rule = "NCCL_COMM_ID subnet";
        return s;
      }
    }
  }
  for (std::string_view list : {"^docker,lo,virbr", "docker", "lo", "virbr"}) {
    if (step(list)) return s;
  }
  return s;
}

std::string describe_interface(const NetInterface& i) {
  std::vector<std::string> parts;
  parts.push_back(i.running ? "running" : i.up ? "up, not running" : "down");
  if (!i.operstate.empty()) parts.push_back("operstate " + i.operstate);
  for (const NetAddress& a : i.addresses) parts.push_back(a.address + "/" + std::to_string(a.prefix));
  if (i.addresses.empty()) parts.push_back("no address");
  if (i.speed_mbps) parts.push_back(std::to_string(*i.speed_mbps) + " Mb/s");
  return i.name + " (" + join(parts, ", ") + ")";
}

}  // namespace preflight
