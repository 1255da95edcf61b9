// SPDX-License-Identifier: MIT
// A TCP socket of the test's own on 127.0.0.1, on a port the kernel chose.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace preflight::testing {

class LoopbackPort {
 public:
  /// Bound, and listening with `backlog` unless it is negative; ok() is false when either failed.
  explicit LoopbackPort(int backlog) {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (m_fd < 0) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        (backlog >= 0 && ::listen(m_fd, backlog) != 0) ||
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      close();
      return;
    }
    m_port = ntohs(a.sin_port);
  }
  ~LoopbackPort() { close(); }
  LoopbackPort(const LoopbackPort&) = delete;
  LoopbackPort& operator=(const LoopbackPort&) = delete;

  bool ok() const { return m_fd >= 0; }
  int port() const { return m_port; }
  std::string port_text() const { return std::to_string(m_port); }
  /// Closes the socket: a port nothing listens on, once a bound socket is closed.
  void close() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
  }

 private:
  int m_fd = -1;
  int m_port = 0;
};

}  // namespace preflight::testing
