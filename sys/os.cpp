// SPDX-License-Identifier: MIT
// The live system's answers to the Os seam: gethostname, uname, getifaddrs, getaddrinfo (bounded),
// bind, sched_getaffinity, get_mempolicy and capget (raw system calls: no libnuma, no libcap), and
// getrlimit.
#include "sys/os.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "core/nccl_socket.hpp"
#include "core/text.hpp"
#include "sys/file_system.hpp"

namespace preflight {
namespace {

constexpr std::size_t kMaxInterfaces = 4096;
constexpr int kMaxCpus = 1 << 20;

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
  const void* src = sa->sa_family == AF_INET
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  if (inet_ntop(sa->sa_family, src, buf, sizeof buf) == nullptr) return {};
  return buf;
}

Probed<std::vector<NetInterface>> kernel_interfaces() {
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
  return Result::ok(std::move(out), source);
}

// socket + SO_REUSEADDR + bind(address:port), closed at once: what PyTorch's TCPStore needs.
Probed<std::string> bind_once(const std::string& address, int port) {
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
  return Probed<std::string>::ok(errno_name(err) + ": " + std::strerror(err), source);
}

Probed<std::vector<int>> cpus_of_process(int possible) {
  using Result = Probed<std::vector<int>>;
  int n = std::max(possible, 64);
  for (;;) {
    cpu_set_t* set = CPU_ALLOC(static_cast<std::size_t>(n));
    if (set == nullptr) return Result::error(ProbeErrc::Unreadable, "CPU_ALLOC failed", "sched_getaffinity(0)");
    const std::size_t size = CPU_ALLOC_SIZE(static_cast<std::size_t>(n));
    CPU_ZERO_S(size, set);
    if (::sched_getaffinity(0, size, set) == 0) {
      std::vector<int> cpus;
      for (int c = 0; c < n; ++c) {
        if (CPU_ISSET_S(static_cast<std::size_t>(c), size, set)) cpus.push_back(c);
      }
      CPU_FREE(set);
      return Result::ok(std::move(cpus), "sched_getaffinity(0)");
    }
    const int err = errno;
    CPU_FREE(set);
    if (err != EINVAL || n >= kMaxCpus) {
      return Result::error(ProbeErrc::Unreadable, std::string("sched_getaffinity: ") + std::strerror(err),
                           "sched_getaffinity(0)");
    }
    n *= 2;  // the kernel's mask is larger than /sys said
  }
}

Probed<MemPolicy> mempolicy_of_process(int possible) {
  using Result = Probed<MemPolicy>;
  const char* source = "get_mempolicy()";
  constexpr std::size_t kBits = 8 * sizeof(unsigned long);
  std::size_t nodes = static_cast<std::size_t>(std::max(possible, 64));
  for (;;) {
    std::vector<unsigned long> mask((nodes + kBits - 1) / kBits, 0);
    const unsigned long maxnode = mask.size() * kBits;
    int mode = 0;
    if (::syscall(SYS_get_mempolicy, &mode, mask.data(), maxnode, nullptr, 0UL) == 0) {
      MemPolicy p;
      p.mode = mempolicy_mode_name(mode);
      for (std::size_t i = 0; i < mask.size() * kBits; ++i) {
        if ((mask[i / kBits] >> (i % kBits)) & 1UL) p.nodes.push_back(static_cast<int>(i));
      }
      return Result::ok(std::move(p), source);
    }
    const int err = errno;
    if (err == EPERM || err == EACCES) {
      return Result::error(ProbeErrc::PermissionDenied,
                           "get_mempolicy: operation not permitted (seccomp: a container without CAP_SYS_NICE)",
                           source);
    }
    if (err == ENOSYS)
      return Result::error(ProbeErrc::Unsupported, "get_mempolicy: the kernel has no NUMA support", source);
    if (err != EINVAL || nodes >= (1u << 16)) {
      return Result::error(ProbeErrc::Unreadable, std::string("get_mempolicy: ") + std::strerror(err), source);
    }
    nodes *= 2;
  }
}

Probed<Rlimit> rlimit_of(int resource, const char* name) {
  const std::string source = std::string("getrlimit(") + name + ")";
  rlimit r{};
  if (::getrlimit(resource, &r) != 0) {
    const int err = errno;
    return Probed<Rlimit>::error(ProbeErrc::ApiError, std::string("getrlimit: ") + std::strerror(err), source);
  }
  const auto side = [](rlim_t v) {
    return v == RLIM_INFINITY ? std::optional<std::uint64_t>() : std::optional<std::uint64_t>(v);
  };
  return Probed<Rlimit>::ok(Rlimit{side(r.rlim_cur), side(r.rlim_max)}, source);
}

// capget(2) as a raw system call: the effective set of this process, without libcap.
Probed<bool> effective_cap_ipc_lock() {
  const char* source = "capget(CAP_IPC_LOCK)";
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) {
    const int err = errno;
    return Probed<bool>::error(ProbeErrc::ApiError, std::string("capget: ") + std::strerror(err), source);
  }
  constexpr unsigned kBit = CAP_IPC_LOCK;
  return Probed<bool>::ok(((data[kBit / 32].effective >> (kBit % 32)) & 1u) != 0, source);
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
    if (!a.empty() && std::find(addresses.begin(), addresses.end(), a) == addresses.end())
      addresses.push_back(std::move(a));
  }
  ::freeaddrinfo(res);
  return 0;
}

class LiveOs final : public Os {
 public:
  std::optional<std::string> hostname() const override {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return std::nullopt;
    return std::string(buf);
  }
  std::optional<std::string> kernel_release() const override {
    struct utsname u {};
    if (::uname(&u) != 0) return std::nullopt;
    return std::string(u.release);
  }
  Probed<std::vector<NetInterface>> interfaces() const override { return kernel_interfaces(); }
  std::unique_ptr<PendingLookup> lookup(const std::string& name) const override {
    return std::make_unique<BoundedLookup>(name);
  }
  Probed<std::string> bind_test(const std::string& address, int port) const override {
    return bind_once(address, port);
  }
  Probed<std::vector<int>> process_cpus(int possible_cpus) const override { return cpus_of_process(possible_cpus); }
  Probed<MemPolicy> process_mempolicy(int possible_nodes) const override {
    return mempolicy_of_process(possible_nodes);
  }
  std::optional<ProcessLimits> process_limits() const override {
    return ProcessLimits{rlimit_of(RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"), rlimit_of(RLIMIT_NOFILE, "RLIMIT_NOFILE"),
                         rlimit_of(RLIMIT_CORE, "RLIMIT_CORE"), effective_cap_ipc_lock()};
  }
};

}  // namespace

const Os& live_os() {
  static const LiveOs os;
  return os;
}

std::string mempolicy_mode_name(int mode) {
  // Flags the kernel ORs into the mode: MPOL_F_STATIC_NODES, MPOL_F_RELATIVE_NODES, MPOL_F_NUMA_BALANCING.
  const int base = mode & ~((1 << 15) | (1 << 14) | (1 << 13));
  switch (base) {
    case 0: return "default";
    case 1: return "preferred";
    case 2: return "bind";
    case 3: return "interleave";
    case 4: return "local";
    case 5: return "preferred_many";
    case 6: return "weighted_interleave";
    default: return "unknown(" + std::to_string(base) + ")";
  }
}

struct BoundedLookup::State {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  int rc = 0;
  int sys_errno = 0;
  std::vector<std::string> addresses;
};

BoundedLookup::BoundedLookup(std::string host, HostResolver resolver)
    : m_host(std::move(host)), m_state(std::make_shared<State>()) {
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
  if (!m_start_error.empty())
    return Result::error(ProbeErrc::ApiError, "could not start the lookup: " + m_start_error, source);
  std::unique_lock<std::mutex> lock(m_state->mutex);
  if (!m_state->done_cv.wait_until(lock, deadline, [&] { return m_state->done; })) {
    return Result::error(ProbeErrc::Timeout, "did not resolve within " + seconds_text(limit), source);
  }
  if (m_state->rc == 0) {
    if (m_state->addresses.empty()) return Result::error(ProbeErrc::NotFound, "no IPv4 or IPv6 address", source);
    return Result::ok(m_state->addresses, source);
  }
  const int rc = m_state->rc;
  std::string detail =
      rc == EAI_SYSTEM ? std::string(std::strerror(m_state->sys_errno)) : std::string(::gai_strerror(rc));
  const bool not_found = rc == EAI_NONAME
#ifdef EAI_NODATA
                         || rc == EAI_NODATA
#endif
      ;
  return Result::error(not_found ? ProbeErrc::NotFound : ProbeErrc::ApiError, detail, source);
}

}  // namespace preflight
