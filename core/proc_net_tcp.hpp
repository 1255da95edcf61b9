// SPDX-License-Identifier: MIT
// /proc/net/tcp and /proc/net/tcp6: the kernel's table of TCP sockets in this network namespace,
// read to see whether a port is already listening without touching it. Pure parser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

inline constexpr int kTcpStateListen = 0x0A;  // TCP_LISTEN in the "st" column

struct TcpSocketEntry {
  std::string local_address;  // "127.0.0.1", "::", "::ffff:10.0.0.1"
  int local_port = 0;
  std::string remote_address;
  int remote_port = 0;
  int state = 0;            // TCP_ESTABLISHED 1 ... TCP_LISTEN 0x0A
  std::uint64_t inode = 0;  // the socket inode (0 for sockets no process holds)
  bool ipv6 = false;
};

struct ProcNetTcp {
  std::vector<TcpSocketEntry> entries;
  std::vector<int> malformed_lines;  // 1-based line numbers that are not a socket row (header excluded)
};

/// Parses the text of /proc/net/tcp (ipv6 = false) or /proc/net/tcp6 (ipv6 = true). Addresses are
/// printed by the kernel as 32-bit words in host byte order ("0100007F:1F90" is 127.0.0.1:8080 on
/// a little-endian machine); they are decoded on this machine's byte order, as the kernel wrote
/// them. The header line is skipped; lines that are not rows are counted, never fatal.
ProcNetTcp parse_proc_net_tcp(std::string_view text, bool ipv6);

/// The sockets in LISTEN on `port` (any local address).
std::vector<TcpSocketEntry> tcp_listeners_on(const std::vector<TcpSocketEntry>& entries, int port);

}  // namespace preflight
