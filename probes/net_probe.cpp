// SPDX-License-Identifier: MIT
// The net probe: IP interfaces (the Os seam's getifaddrs list, /sys/class/net for state, speed, MTU,
// type, PCI device and RDMA device), RDMA devices and ports (/sys/class/infiniband), GPUDirect RDMA
// (nvidia_peermem / nv_mem), and MASTER_ADDR / MASTER_PORT as this host resolves and finds them
// (name lookup and the bind test through the Os seam too: sys/os.hpp).
#include "probes/net_probe.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "core/nccl_socket.hpp"
#include "core/pci_topology.hpp"
#include "core/proc_net_tcp.hpp"
#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

constexpr unsigned kIffUp = 0x1, kIffLoopback = 0x8;
constexpr std::size_t kMaxInterfaces = 4096;  // bounds every sysfs walk
constexpr std::size_t kMaxGids = 256;

std::optional<int> read_int(const FileSystem& fs, const std::string& path) {
  const Probed<std::string> p = fs.read_line(path);
  if (!p.ok()) return std::nullopt;
  const auto v = parse_int(*p.value());
  if (!v || *v < INT_MIN || *v > INT_MAX) return std::nullopt;
  return static_cast<int>(*v);
}

std::string read_text(const FileSystem& fs, const std::string& path) {
  const Probed<std::string> p = fs.read_line(path);
  return p.ok() ? *p.value() : std::string();
}

// The PCI bus id behind a sysfs "device" link: the last path component that is a bus id, after
// resolving the link inside the root (virtio devices sit one level below their PCI function).
// A link whose target is not in a captured tree is read as written.
std::string pci_bus_id_of(const FileSystem& fs, const std::string& link) {
  Probed<std::string> resolved = fs.real_path(link);
  if (!resolved.ok()) resolved = fs.read_link(link);
  if (!resolved.ok() || resolved.value()->empty()) return {};
  const std::string& target = *resolved.value();
  const std::vector<std::string_view> parts = split(target, '/');
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    const std::string id = normalize_bus_id(*it);
    if (!id.empty() && id == to_lower(*it)) return id;
  }
  return {};
}

// The last component of a symbolic link's target inside the root ("" when it is not a link).
std::string link_basename(const FileSystem& fs, const std::string& link) {
  const Probed<std::string> text = fs.read_link(link);
  if (!text.ok()) return {};
  std::string_view target(*text.value());
  while (!target.empty() && target.back() == '/') target.remove_suffix(1);
  const std::size_t slash = target.rfind('/');
  return std::string(slash == std::string_view::npos ? target : target.substr(slash + 1));
}

// The kernel driver of the interface's device and its module's version: device/driver names the
// driver, device/driver/module the module that holds it (the same name for most NIC drivers).
void read_driver(const FileSystem& fs, const std::string& dir, NetInterface& i) {
  i.driver = link_basename(fs, dir + "/device/driver");
  if (i.driver.empty()) return;
  std::string module = link_basename(fs, dir + "/device/driver/module");
  if (module.empty()) module = i.driver;
  if (module.find('/') != std::string::npos || module == "." || module == "..") return;
  i.driver_version = read_text(fs, "/sys/module/" + module + "/version");
}

void read_sysfs_attributes(const FileSystem& fs, NetInterface& i) {
  const std::string dir = "/sys/class/net/" + i.name;
  i.operstate = read_text(fs, dir + "/operstate");
  i.mtu = read_int(fs, dir + "/mtu");
  i.speed_mbps = read_int(fs, dir + "/speed");  // EINVAL when the link is down or virtual
  if (i.speed_mbps && *i.speed_mbps <= 0) i.speed_mbps.reset();
  i.type = read_int(fs, dir + "/type");
  i.pci_bus_id = pci_bus_id_of(fs, dir + "/device");
  if (const auto rdma = fs.list(dir + "/device/infiniband"); rdma.ok() && !rdma.value()->empty()) {
    i.rdma_device = rdma.value()->front();
  }
  read_driver(fs, dir, i);
}

// A --sysroot tree: names and state from sysfs; the kernel's IFF_RUNNING is IFF_UP with operstate
// up or unknown (dev_get_flags: netif_running && netif_oper_up). No addresses.
Probed<std::vector<NetInterface>> sysfs_interfaces(const FileSystem& fs) {
  using Result = Probed<std::vector<NetInterface>>;
  const std::string source(kInterfacesSysfsSource);
  const Probed<std::vector<std::string>> names = fs.list("/sys/class/net");
  if (!names.ok()) return Result::error(*names.error(), source);
  std::vector<std::pair<int, NetInterface>> found;
  for (const std::string& name : *names.value()) {
    if (found.size() >= kMaxInterfaces) break;
    NetInterface i;
    i.name = name;
    read_sysfs_attributes(fs, i);
    const std::string flags_text = read_text(fs, "/sys/class/net/" + name + "/flags");
    const long flags = flags_text.starts_with("0x") ? std::strtol(flags_text.c_str(), nullptr, 16) : 0;
    i.up = (static_cast<unsigned long>(flags) & kIffUp) != 0;
    i.loopback = (static_cast<unsigned long>(flags) & kIffLoopback) != 0 || i.type == 772;
    i.running = i.up && (i.operstate == "up" || i.operstate == "unknown");
    found.emplace_back(read_int(fs, "/sys/class/net/" + name + "/ifindex").value_or(INT_MAX), std::move(i));
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<NetInterface> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return Result::ok(std::move(out), source);
}

bool is_zero_gid(std::string_view gid) {
  for (char c : gid) {
    if (c != '0' && c != ':') return false;
  }
  return true;
}

Probed<std::vector<IbDevice>> ib_devices(const FileSystem& fs) {
  using Result = Probed<std::vector<IbDevice>>;
  const std::string root = "/sys/class/infiniband";
  const Probed<std::vector<std::string>> names = fs.list(root);
  if (!names.ok()) {
    ProbeError e = *names.error();
    if (e.code == ProbeErrc::NotFound) e.detail = "does not exist (no RDMA driver loaded)";
    return Result::error(e, root);
  }
  std::vector<IbDevice> out;
  for (const std::string& name : *names.value()) {
    if (out.size() >= kMaxInterfaces) break;
    IbDevice d;
    d.name = name;
    const std::string dir = root + "/" + name;
    d.pci_bus_id = pci_bus_id_of(fs, dir + "/device");
    const Probed<std::vector<std::string>> ports = fs.list(dir + "/ports");
    if (!ports.ok()) return Result::error(ProbeErrc::Unreadable, dir + "/ports: " + ports.error()->detail, root);
    for (const std::string& p : *ports.value()) {
      const auto num = parse_int(p);
      if (!num || *num < 0 || *num > 255) continue;
      IbPort port;
      port.port = static_cast<int>(*num);
      const std::string pdir = dir + "/ports/" + p;
      port.state = read_text(fs, pdir + "/state");
      port.phys_state = read_text(fs, pdir + "/phys_state");
      port.rate = read_text(fs, pdir + "/rate");
      port.link_layer = read_text(fs, pdir + "/link_layer");
      if (const auto gids = fs.list(pdir + "/gids"); gids.ok()) {
        std::vector<std::pair<int, std::string>> indexes;
        for (const std::string& g : *gids.value()) {
          if (const auto idx = parse_int(g); idx && *idx >= 0 && static_cast<std::size_t>(*idx) < kMaxGids) {
            indexes.emplace_back(static_cast<int>(*idx), g);
          }
        }
        std::sort(indexes.begin(), indexes.end());
        for (const auto& [idx, g] : indexes) {
          const std::string gid = read_text(fs, pdir + "/gids/" + g);  // EINVAL in containers: skipped
          if (gid.empty() || is_zero_gid(gid)) continue;
          port.gids.push_back(gid);
          const std::string ndev = read_text(fs, pdir + "/gid_attrs/ndevs/" + g);
          if (!ndev.empty() && std::find(port.netdevs.begin(), port.netdevs.end(), ndev) == port.netdevs.end()) {
            port.netdevs.push_back(ndev);
          }
        }
      }
      d.ports.push_back(std::move(port));
    }
    out.push_back(std::move(d));
  }
  return Result::ok(std::move(out), root);
}

Probed<bool> gpudirect_rdma(const FileSystem& fs) {
  for (const char* path : {"/sys/kernel/mm/memory_peers/nv_mem/version",
                           "/sys/kernel/mm/memory_peers/nv_mem_nc/version", "/sys/module/nvidia_peermem/version"}) {
    if (fs.exists(path)) return Probed<bool>::ok(true, path);
  }
  return Probed<bool>::ok(false,
                          "/sys/kernel/mm/memory_peers/nv_mem, nv_mem_nc, /sys/module/nvidia_peermem: none exists");
}

Probed<bool> port_listening(const FileSystem& fs, int port) {
  const Probed<std::string> tcp = fs.read("/proc/net/tcp", 64u << 20);
  if (!tcp.ok()) return Probed<bool>::error(*tcp.error(), "/proc/net/tcp");
  std::vector<std::string> sources = {"/proc/net/tcp"};
  std::vector<TcpSocketEntry> entries = parse_proc_net_tcp(*tcp.value(), false).entries;
  const Probed<std::string> tcp6 = fs.read("/proc/net/tcp6", 64u << 20);
  if (tcp6.ok()) {
    sources.emplace_back("/proc/net/tcp6");
    for (TcpSocketEntry& e : parse_proc_net_tcp(*tcp6.value(), true).entries) entries.push_back(std::move(e));
  } else if (tcp6.error()->code != ProbeErrc::NotFound) {
    return Probed<bool>::error(*tcp6.error(), "/proc/net/tcp6");
  }
  const std::vector<TcpSocketEntry> listeners = tcp_listeners_on(entries, port);
  if (listeners.empty()) return Probed<bool>::ok(false, join(sources, ", "));
  const TcpSocketEntry& l = listeners.front();
  std::string where = std::string(l.ipv6 ? "/proc/net/tcp6" : "/proc/net/tcp") + ": " +
                      (l.ipv6 ? "[" + l.local_address + "]" : l.local_address) + ":" + std::to_string(port) + " LISTEN";
  if (l.inode != 0) where += ", inode " + std::to_string(l.inode);
  return Probed<bool>::ok(true, where);
}

Probed<std::vector<int>> ephemeral_range(const FileSystem& fs) {
  const std::string path = "/proc/sys/net/ipv4/ip_local_port_range";
  const Probed<std::string> text = fs.read_line(path);
  if (!text.ok()) return Probed<std::vector<int>>::error(*text.error(), path);
  const std::vector<std::string_view> cols = split_ws(*text.value());
  const auto lo = cols.size() == 2 ? parse_int(cols[0]) : std::nullopt;
  const auto hi = cols.size() == 2 ? parse_int(cols[1]) : std::nullopt;
  if (!lo || !hi || *lo < 0 || *hi > 65535 || *lo > *hi) {
    return Probed<std::vector<int>>::error(ProbeErrc::ParseError, "not two ports: '" + printable(*text.value()) + "'",
                                           path);
  }
  return Probed<std::vector<int>>::ok({static_cast<int>(*lo), static_cast<int>(*hi)}, path);
}

}  // namespace

std::vector<std::string> hosts_file_lookup(std::string_view hosts_text, std::string_view name) {
  std::vector<std::string> out;
  const std::string want = to_lower(name);
  for (std::string_view line : split(hosts_text, '\n')) {
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const std::vector<std::string_view> cols = split_ws(trim(line));
    if (cols.size() < 2 || !parse_ip(cols[0])) continue;
    for (std::size_t k = 1; k < cols.size(); ++k) {
      if (to_lower(cols[k]) == want && std::find(out.begin(), out.end(), cols[0]) == out.end())
        out.emplace_back(cols[0]);
    }
  }
  return out;
}

namespace {

void probe_master(const ProbeContext& ctx, RankFacts& facts) {
  MasterFacts& m = facts.net.master;
  m.addr = ctx.env.get("MASTER_ADDR").value_or("");
  m.port = ctx.env.get("MASTER_PORT").value_or("");
  const HelperDeadline lookup = ctx.helper_deadline(Helper::NameLookup);
  const auto limit = lookup.limit;
  const auto deadline = std::chrono::steady_clock::now() + limit;

  // Both lookups run at once; each is waited for until the one deadline.
  std::unique_ptr<PendingLookup> addr_lookup, host_lookup;
  if (m.addr.empty()) {
    m.resolved = Probed<std::vector<std::string>>::error(ProbeErrc::NotFound, "MASTER_ADDR is not set", "environment");
  } else if (const auto ip = parse_ip(m.addr)) {
    m.resolved = Probed<std::vector<std::string>>::ok({m.addr}, "numeric address");
  } else {
    addr_lookup = ctx.os.lookup(m.addr);
  }
  const std::string& hostname = facts.identity.hostname;
  if (m.addr.empty() || hostname.empty()) {
    m.hostname_resolves_to = Probed<std::vector<std::string>>::error(
        ProbeErrc::Unsupported, m.addr.empty() ? "MASTER_ADDR is not set" : "the hostname is not known",
        "gethostname()");
  } else {
    host_lookup = ctx.os.lookup(hostname);
  }
  if (addr_lookup) m.resolved = addr_lookup->wait(deadline, limit);
  if (host_lookup) m.hostname_resolves_to = host_lookup->wait(deadline, limit);
  // An expired lookup says which deadline it was and that --timeout raises it.
  for (Probed<std::vector<std::string>>* p : {&m.resolved, &m.hostname_resolves_to}) {
    if (p->error() != nullptr && p->error()->code == ProbeErrc::Timeout) {
      *p = Probed<std::vector<std::string>>::error(
          lookup.expiry_code(), "did not resolve within " + lookup.describe() + ": a longer --timeout gives it longer",
          p->source());
    }
  }

  // On the master: a resolved address is loopback or one of this host's interface addresses (the
  // kernel's list: a tree's /sys/class/net holds no addresses, and its loopback is not this host's).
  std::string local_address;
  const auto* ifs = facts.net.interfaces.value();
  if (const auto* resolved = m.resolved.value();
      resolved != nullptr && ifs != nullptr && facts.net.interfaces.source() != kInterfacesSysfsSource) {
    for (const std::string& a : *resolved) {
      bool local = is_loopback_ip(a);
      for (const NetInterface& i : *ifs) {
        for (const NetAddress& x : i.addresses) local = local || same_ip(x.address, a);
      }
      if (local && local_address.empty()) local_address = a;
    }
  }
  m.addr_is_local = !local_address.empty();

  const auto port = parse_int(m.port);
  const bool port_ok = port && *port >= 1 && *port <= 65535;
  if (!port_ok) {
    const std::string why = m.port.empty() ? "MASTER_PORT is not set" : "MASTER_PORT is not a port number";
    m.port_listening = Probed<bool>::error(ProbeErrc::ParseError, why, "environment");
    m.bind_test = Probed<std::string>::error(ProbeErrc::ParseError, why, "environment");
  } else {
    m.port_listening = port_listening(ctx.fs, static_cast<int>(*port));
    if (!m.addr_is_local) {
      m.bind_test =
          Probed<std::string>::error(ProbeErrc::Unsupported, "MASTER_ADDR is not an address of this host", "bind()");
    } else {
      m.bind_test = ctx.os.bind_test(local_address, static_cast<int>(*port));
    }
  }
  m.ephemeral_range = ephemeral_range(ctx.fs);
  m.reserved_ports = ctx.fs.read_line("/proc/sys/net/ipv4/ip_local_reserved_ports");
}

}  // namespace

void probe_net(const ProbeContext& ctx, RankFacts& facts) {
  NetFacts& net = facts.net;
  // The kernel's list with addresses (getifaddrs; a capture's copy of it), or where there is none
  // (a plain --sysroot tree) the names and state /sys/class/net gives.
  net.interfaces = ctx.os.interfaces();
  if (const ProbeError* e = net.interfaces.error()) {
    if (e->code == ProbeErrc::Unsupported) net.interfaces = sysfs_interfaces(ctx.fs);
  } else {
    for (NetInterface& i : *net.interfaces.value()) read_sysfs_attributes(ctx.fs, i);
  }
  net.ib_devices = ib_devices(ctx.fs);
  net.gpudirect_rdma = gpudirect_rdma(ctx.fs);
  // A capture holds MASTER_ADDR as the captured node resolved it, and its own bind test (nothing
  // is captured on the live system or in a plain tree).
  Probed<MasterFacts> held = captured_fact<MasterFacts>(ctx, "net", "master", "MASTER_ADDR facts");
  if (MasterFacts* m = held.value()) {
    net.master = std::move(*m);
    return;
  }
  probe_master(ctx, facts);
}

}  // namespace preflight
