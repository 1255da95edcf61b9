// SPDX-License-Identifier: MIT
#include "transport/reach.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/nccl_socket.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

using Ms = std::chrono::milliseconds;

// Accept rounds per wake-up of the accept loop, and the poll interval that bounds each wait.
constexpr int kAcceptsPerRound = 4096;
constexpr int kAcceptPollMs = 500;
constexpr int kListenBacklog = 4096;  // the kernel caps it at net.core.somaxconn

std::string errno_text(const char* call, int e) { return std::string(call) + ": " + errno_words(e); }

std::string strip_brackets(const std::string& address) {
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
    return address.substr(1, address.size() - 2);
  return address;
}

// A numeric address (with an optional %scope) and port as a sockaddr; "" on success, else the reason.
std::string resolve_numeric(const std::string& address, int port, sockaddr_storage& out, socklen_t& len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string host = strip_brackets(address);
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    if (res != nullptr) freeaddrinfo(res);
    return "'" + printable(address) + "' is not a numeric IP address (" + gai_strerror(rc) + ")";
  }
  std::memcpy(&out, res->ai_addr, res->ai_addrlen);
  len = res->ai_addrlen;
  freeaddrinfo(res);
  return {};
}

std::string address_text(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

int port_of(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

std::string seconds_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", ms / 1000.0);
  return buf;
}

}  // namespace

std::string target_text(const ReachTarget& target) {
  const std::string host = strip_brackets(target.address);
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(target.port);
}

std::optional<ReachTarget> bootstrap_target(const RankFacts& rank0, std::string& why_not) {
  const std::vector<NetInterface>* ifs = rank0.net.interfaces.value();
  if (ifs == nullptr) {
    why_not = "rank 0's network interfaces could not be read: " + rank0.net.interfaces.why();
    return std::nullopt;
  }
  if (rank0.net.interfaces.source() == kInterfacesSysfsSource) {
    why_not = "rank 0's interface addresses are not known (read from a --sysroot tree)";
    return std::nullopt;
  }
  const std::optional<NcclSetting> ifname = nccl_setting(rank0, "NCCL_SOCKET_IFNAME");
  const std::optional<NcclSetting> family = nccl_setting(rank0, "NCCL_SOCKET_FAMILY");
  const std::optional<NcclSetting> comm_id = nccl_setting(rank0, "NCCL_COMM_ID");
  const SocketSelection sel =
      nccl_socket_select(*ifs, ifname ? std::optional<std::string>(ifname->value) : std::nullopt,
                         family ? std::optional<std::string>(family->value) : std::nullopt,
                         comm_id ? std::optional<std::string>(comm_id->value) : std::nullopt);
  if (sel.matches.empty()) {
    const std::string rule = sel.from_env ? "NCCL_SOCKET_IFNAME=" + printable(sel.rule)
                                          : "NCCL's default order (" + join(sel.tried, ", ") + ")";
    why_not = "rank 0 has no usable interface for NCCL's bootstrap: " + rule + " selects no running interface with " +
              (sel.family == "inet"    ? "an IPv4"
               : sel.family == "inet6" ? "an IPv6"
                                       : "an IP") +
              " address";
    return std::nullopt;
  }
  const SocketChoice& c = sel.matches.front();
  return ReachTarget{c.interface, c.address.address, 0};
}

// ---- listener --------------------------------------------------------------------------------------

ReachListener::~ReachListener() { close(); }

bool ReachListener::listen(const std::string& address, std::string& error) {
  close();
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (std::string why = resolve_numeric(address, 0, ss, len); !why.empty()) {
    error = why;
    return false;
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno_text("socket", errno);
    return false;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    const int e = errno;
    error = errno_text(("bind " + printable(address)).c_str(), e);
    ::close(fd);
    return false;
  }
  if (::listen(fd, kListenBacklog) != 0) {
    error = errno_text("listen", errno);
    ::close(fd);
    return false;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    error = errno_text("getsockname", errno);
    ::close(fd);
    return false;
  }
  if (::pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    error = errno_text("pipe", errno);
    m_wake[0] = m_wake[1] = -1;
    ::close(fd);
    return false;
  }
  m_fd = fd;
  m_port = port_of(bound);
  m_thread = std::thread([this] { accept_loop(); });
  return true;
}

void ReachListener::accept_loop() {
  // Runs until close() writes to the wake pipe; each wait is bounded by kAcceptPollMs.
  for (;;) {
    pollfd fds[2] = {{m_fd, POLLIN, 0}, {m_wake[0], POLLIN, 0}};
    const int rc = ::poll(fds, 2, kAcceptPollMs);
    if (rc < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (rc <= 0 || (fds[0].revents & POLLIN) == 0) {
      if ((fds[0].revents & (POLLERR | POLLNVAL)) != 0) return;
      continue;
    }
    for (int k = 0; k < kAcceptsPerRound; ++k) {
      const int c = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;  // EAGAIN: the queue is empty; anything else: try again next round
      ::close(c);
      m_accepted.fetch_add(1);
    }
  }
}

void ReachListener::close() {
  if (m_thread.joinable()) {
    const char byte = 1;
    while (::write(m_wake[1], &byte, 1) < 0 && errno == EINTR) {}
    m_thread.join();
  }
  for (int* fd : {&m_fd, &m_wake[0], &m_wake[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  m_port = 0;
}

// ---- the connection test ---------------------------------------------------------------------------

int connect_within(const std::string& address, int port, std::chrono::milliseconds timeout, int& error,
                   std::string& why) {
  using Steady = std::chrono::steady_clock;
  error = 0;
  why.clear();
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (port < 1 || port > 65535) {
    why = "port " + std::to_string(port) + " is not in 1..65535";
    return -1;
  }
  if (std::string bad = resolve_numeric(address, port, ss, len); !bad.empty()) {
    why = bad;
    return -1;
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno;
    why = errno_text("socket", error);
    return -1;
  }
  const auto deadline = Steady::now() + timeout;
  int err = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    err = errno;
    if (err == EINPROGRESS || err == EINTR) {
      err = -1;  // pending
      for (;;) {
        const auto left = std::chrono::duration_cast<Ms>(deadline - Steady::now()).count();
        if (left <= 0) break;
        pollfd p{fd, POLLOUT, 0};
        const int rc = ::poll(&p, 1, static_cast<int>(left));
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) {
          err = errno;
          break;
        }
        if (rc == 0) continue;  // the deadline check above ends the loop
        int so_error = 0;
        socklen_t so_len = sizeof so_error;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &so_len) != 0) so_error = errno;
        err = so_error;
        break;
      }
    }
  }
  if (err == 0) return fd;
  ::close(fd);
  if (err == -1) {
    error = ETIMEDOUT;
    why = "no answer within " + seconds_text(static_cast<double>(timeout.count())) +
          " (the SYN was not answered: a firewall drops it, or there is no route)";
  } else {
    error = err;
    why = errno_text("connect", err);
  }
  return -1;
}

ReachResult reach(const ReachTarget& target, std::chrono::milliseconds timeout) {
  using Steady = std::chrono::steady_clock;
  ReachResult r;
  r.attempted = true;
  r.target = target_text(target);
  const auto start = Steady::now();
  int error = 0;
  const int fd = connect_within(target.address, target.port, timeout, error, r.error);
  r.ms = std::chrono::duration<double, std::milli>(Steady::now() - start).count();
  if (fd < 0) return r;
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0) r.source = address_text(local);
  r.ok = true;
  ::close(fd);
  return r;
}

}  // namespace preflight
