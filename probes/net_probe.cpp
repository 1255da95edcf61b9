// SPDX-License-Identifier: MIT
// The net probe: IP interfaces (getifaddrs on the live system, /sys/class/net for state, speed, MTU,
// type, PCI device and RDMA device), RDMA devices and ports (/sys/class/infiniband), GPUDirect RDMA
// (nvidia_peermem / nv_mem), and MASTER_ADDR / MASTER_PORT as this host resolves and finds them.
#include "probes/net_probe.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

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

int prefix_length(const sockaddr* mask) {
  if (mask == nullptr) return 0;
  const unsigned char* bytes = nullptr;
  std::size_t n = 0;
  if (mask->sa_family == AF_INET) {
    bytes = reinterpret_cast<const unsigned char*>(&reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    n = 4;
  } else if (mask->sa_family == AF_INET6) {
    bytes = reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr.s6_addr;
    n = 16;
  }
  int bits = 0;
  for (std::size_t k = 0; k < n; ++k) bits += __builtin_popcount(bytes[k]);
  return bits;
}

std::string address_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  const void* src = sa->sa_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
                                             : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  if (inet_ntop(sa->sa_family, src, buf, sizeof buf) == nullptr) return {};
  return buf;
}

Probed<std::vector<NetInterface>> live_interfaces(const FileSystem& fs) {
  using Result = Probed<std::vector<NetInterface>>;
  const std::string source(kInterfacesLiveSource);
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return Result::error(probe_error_from_errno(errno), source);
  std::vector<NetInterface> out;
  std::map<std::string, std::size_t> index;
  for (ifaddrs* a = list; a != nullptr && out.size() < kMaxInterfaces; a = a->ifa_next) {
    if (a->ifa_name == nullptr) continue;
    auto [it, inserted] = index.emplace(a->ifa_name, out.size());
    if (inserted) {
      NetInterface i;
      i.name = a->ifa_name;
      i.up = (a->ifa_flags & IFF_UP) != 0;
      i.running = (a->ifa_flags & IFF_RUNNING) != 0;
      i.loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
      out.push_back(std::move(i));
    }
    if (a->ifa_addr == nullptr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6)) continue;
    NetAddress addr;
    addr.family = a->ifa_addr->sa_family == AF_INET ? "inet" : "inet6";
    addr.address = address_text(a->ifa_addr);
    addr.prefix = prefix_length(a->ifa_netmask);
    out[it->second].addresses.push_back(std::move(addr));
  }
  ::freeifaddrs(list);
  for (NetInterface& i : out) read_sysfs_attributes(fs, i);
  return Result::ok(std::move(out), source);
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
  for (const char* path : {"/sys/kernel/mm/memory_peers/nv_mem/version", "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
                           "/sys/module/nvidia_peermem/version"}) {
    if (fs.exists(path)) return Probed<bool>::ok(true, path);
  }
  return Probed<bool>::ok(false, "/sys/kernel/mm/memory_peers/nv_mem, nv_mem_nc, /sys/module/nvidia_peermem: none exists");
}

const char* errno_name(int err) {
  switch (err) {
    case EADDRINUSE: return "EADDRINUSE";
    case EACCES: return "EACCES";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    default: return "errno";
  }
}

// socket + SO_REUSEADDR + bind(address:port), closed at once: what PyTorch's TCPStore needs.
Probed<std::string> bind_test(const std::string& address, int port) {
  const std::string source = "bind(" + address + ":" + std::to_string(port) + ", SO_REUSEADDR)";
  const auto ip = parse_ip(address);
  if (!ip) return Probed<std::string>::error(ProbeErrc::ParseError, "not a numeric address", source);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (ip->v6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(static_cast<std::uint16_t>(port));
    std::memcpy(&s6->sin6_addr, ip->bytes.data(), 16);
    len = sizeof(sockaddr_in6);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(static_cast<std::uint16_t>(port));
    std::memcpy(&s4->sin_addr, ip->bytes.data(), 4);
    len = sizeof(sockaddr_in);
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int err = errno;
    return Probed<std::string>::error(ProbeErrc::ApiError, std::string("socket: ") + std::strerror(err), source);
  }
  const int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&ss), len);
  const int err = errno;
  ::close(fd);
  if (rc == 0) return Probed<std::string>::ok("free", source);
  return Probed<std::string>::ok(std::string(errno_name(err)) + ": " + std::strerror(err), source);
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
    return Probed<std::vector<int>>::error(ProbeErrc::ParseError, "not two ports: '" + printable(*text.value()) + "'", path);
  }
  return Probed<std::vector<int>>::ok({static_cast<int>(*lo), static_cast<int>(*hi)}, path);
}

std::string seconds_text(std::chrono::milliseconds ms) {
  const long long tenths = (ms.count() + 50) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

int default_resolver(const std::string& host, std::vector<std::string>& addresses, int& sys_errno) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  sys_errno = errno;
  if (rc != 0) return rc;
  for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
    if (p->ai_addr == nullptr || (p->ai_family != AF_INET && p->ai_family != AF_INET6)) continue;
    std::string a = address_text(p->ai_addr);
    if (!a.empty() && std::find(addresses.begin(), addresses.end(), a) == addresses.end()) addresses.push_back(std::move(a));
  }
  ::freeaddrinfo(res);
  return 0;
}

}  // namespace

struct BoundedLookup::State {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  int rc = 0;
  int sys_errno = 0;
  std::vector<std::string> addresses;
};

BoundedLookup::BoundedLookup(std::string host, HostResolver resolver) : m_host(std::move(host)), m_state(std::make_shared<State>()) {
  if (!resolver) resolver = default_resolver;
  try {
    std::thread([state = m_state, host = m_host, resolver = std::move(resolver)] {
      std::vector<std::string> addresses;
      int sys_errno = 0;
      const int rc = resolver(host, addresses, sys_errno);
      const std::lock_guard<std::mutex> lock(state->mutex);
      state->rc = rc;
      state->sys_errno = sys_errno;
      state->addresses = std::move(addresses);
      state->done = true;
      state->done_cv.notify_all();
    }).detach();
  } catch (const std::exception& e) {
    m_start_error = e.what();
  }
}

Probed<std::vector<std::string>> BoundedLookup::wait(std::chrono::steady_clock::time_point deadline,
                                                      std::chrono::milliseconds limit) {
  using Result = Probed<std::vector<std::string>>;
  const std::string source = "getaddrinfo(" + printable(m_host) + ")";
  if (!m_start_error.empty()) return Result::error(ProbeErrc::ApiError, "could not start the lookup: " + m_start_error, source);
  std::unique_lock<std::mutex> lock(m_state->mutex);
  if (!m_state->done_cv.wait_until(lock, deadline, [&] { return m_state->done; })) {
    return Result::error(ProbeErrc::Timeout, "did not resolve within " + seconds_text(limit), source);
  }
  if (m_state->rc == 0) {
    if (m_state->addresses.empty()) return Result::error(ProbeErrc::NotFound, "no IPv4 or IPv6 address", source);
    return Result::ok(m_state->addresses, source);
  }
  const int rc = m_state->rc;
  std::string detail = rc == EAI_SYSTEM ? std::string(std::strerror(m_state->sys_errno)) : std::string(::gai_strerror(rc));
  const bool not_found = rc == EAI_NONAME
#ifdef EAI_NODATA
                         || rc == EAI_NODATA
#endif
      ;
  return Result::error(not_found ? ProbeErrc::NotFound : ProbeErrc::ApiError, detail, source);
}

std::vector<std::string> hosts_file_lookup(std::string_view hosts_text, std::string_view name) {
  std::vector<std::string> out;
  const std::string want = to_lower(name);
  for (std::string_view line : split(hosts_text, '\n')) {
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const std::vector<std::string_view> cols = split_ws(trim(line));
    if (cols.size() < 2 || !parse_ip(cols[0])) continue;
    for (std::size_t k = 1; k < cols.size(); ++k) {
      if (to_lower(cols[k]) == want && std::find(out.begin(), out.end(), cols[0]) == out.end()) out.emplace_back(cols[0]);
    }
  }
  return out;
}

namespace {

Probed<std::vector<std::string>> sysroot_lookup(const FileSystem& fs, const std::string& name) {
  using Result = Probed<std::vector<std::string>>;
  const Probed<std::string> hosts = fs.read("/etc/hosts", 1u << 20);
  if (hosts.ok()) {
    std::vector<std::string> found = hosts_file_lookup(*hosts.value(), name);
    if (!found.empty()) return Result::ok(std::move(found), "/etc/hosts");
  }
  return Result::error(ProbeErrc::Unsupported,
                       "not resolved: a --sysroot tree has no resolver, and its /etc/hosts does not list '" + printable(name) + "'",
                       "/etc/hosts");
}

void probe_master(const ProbeContext& ctx, RankFacts& facts) {
  MasterFacts& m = facts.net.master;
  m.addr = ctx.env.get("MASTER_ADDR").value_or("");
  m.port = ctx.env.get("MASTER_PORT").value_or("");
  const bool live = ctx.fs.is_live();
  const HelperDeadline lookup = ctx.helper_deadline(Helper::NameLookup);
  const auto limit = lookup.limit;
  const auto deadline = std::chrono::steady_clock::now() + limit;

  std::optional<BoundedLookup> addr_lookup, host_lookup;
  if (m.addr.empty()) {
    m.resolved = Probed<std::vector<std::string>>::error(ProbeErrc::NotFound, "MASTER_ADDR is not set", "environment");
  } else if (const auto ip = parse_ip(m.addr)) {
    m.resolved = Probed<std::vector<std::string>>::ok({m.addr}, "numeric address");
  } else if (live) {
    addr_lookup.emplace(m.addr);
  } else {
    m.resolved = sysroot_lookup(ctx.fs, m.addr);
  }
  const std::string& hostname = facts.identity.hostname;
  if (m.addr.empty() || hostname.empty()) {
    m.hostname_resolves_to = Probed<std::vector<std::string>>::error(
        ProbeErrc::Unsupported, m.addr.empty() ? "MASTER_ADDR is not set" : "the hostname is not known", "gethostname()");
  } else if (live) {
    host_lookup.emplace(hostname);
  } else {
    m.hostname_resolves_to = sysroot_lookup(ctx.fs, hostname);
  }
  if (addr_lookup) m.resolved = addr_lookup->wait(deadline, limit);
  if (host_lookup) m.hostname_resolves_to = host_lookup->wait(deadline, limit);
  // An expired lookup says which deadline it was and that --timeout raises it.
  for (Probed<std::vector<std::string>>* p : {&m.resolved, &m.hostname_resolves_to}) {
    if (p->error() != nullptr && p->error()->code == ProbeErrc::Timeout) {
      *p = Probed<std::vector<std::string>>::error(
          ProbeErrc::Timeout, "did not resolve within " + lookup.describe() + ": a longer --timeout gives it longer",
          p->source());
    }
  }

  // On the master: a resolved address is loopback or one of this host's interface addresses.
  std::string local_address;
  if (const auto* resolved = m.resolved.value(); resolved != nullptr && live) {
    const auto* ifs = facts.net.interfaces.value();
    for (const std::string& a : *resolved) {
      bool local = is_loopback_ip(a);
      if (ifs != nullptr) {
        for (const NetInterface& i : *ifs) {
          for (const NetAddress& x : i.addresses) local = local || same_ip(x.address, a);
        }
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
    if (!live) {
      m.bind_test = Probed<std::string>::error(ProbeErrc::Unsupported, "no bind test on a --sysroot tree", "bind()");
    } else if (!m.addr_is_local) {
      m.bind_test = Probed<std::string>::error(ProbeErrc::Unsupported, "MASTER_ADDR is not an address of this host", "bind()");
    } else {
      m.bind_test = bind_test(local_address, static_cast<int>(*port));
    }
  }
  m.ephemeral_range = ephemeral_range(ctx.fs);
  m.reserved_ports = ctx.fs.read_line("/proc/sys/net/ipv4/ip_local_reserved_ports");
}

}  // namespace

void probe_net(const ProbeContext& ctx, RankFacts& facts) {
  NetFacts& net = facts.net;
  const bool live = ctx.fs.is_live();
  // A capture holds the interfaces with their addresses (getifaddrs on the node); a plain tree only
  // its /sys/class/net.
  Probed<std::vector<NetInterface>> held;
  if (!live) held = captured_probed<std::vector<NetInterface>>(ctx, "net", "interfaces", "interface list");
  const bool from_capture = !live && (held.ok() || held.error()->code != ProbeErrc::Unsupported);
  net.interfaces = live ? live_interfaces(ctx.fs) : from_capture ? std::move(held) : sysfs_interfaces(ctx.fs);
  net.ib_devices = ib_devices(ctx.fs);
  net.gpudirect_rdma = gpudirect_rdma(ctx.fs);
  if (!live) {
    // MASTER_ADDR as the captured node resolved it, and its own bind test.
    Probed<MasterFacts> master = captured_fact<MasterFacts>(ctx, "net", "master", "MASTER_ADDR facts");
    if (MasterFacts* m = master.value()) {
      facts.net.master = std::move(*m);
      return;
    }
  }
  probe_master(ctx, facts);
}

}  // namespace preflight
