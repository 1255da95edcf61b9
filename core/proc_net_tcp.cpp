// SPDX-License-Identifier: MIT
#include "core/proc_net_tcp.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <optional>

#include "core/text.hpp"

namespace preflight {
namespace {

std::optional<std::uint64_t> hex_value(std::string_view s, std::size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  return v;
}

// "0100007F:1F90" -> ("127.0.0.1", 8080); 8 hex digits for IPv4, 32 for IPv6.
bool parse_endpoint(std::string_view text, bool ipv6, std::string& address, int& port) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view addr_hex = text.substr(0, colon);
  const auto port_value = hex_value(text.substr(colon + 1), 4);
  if (!port_value) return false;
  char buf[INET6_ADDRSTRLEN] = {};
  if (!ipv6) {
    if (addr_hex.size() != 8) return false;
    const auto word = hex_value(addr_hex, 8);
    if (!word) return false;
    in_addr a{};
    a.s_addr = static_cast<std::uint32_t>(*word);  // the kernel printed the raw word in host order
    if (inet_ntop(AF_INET, &a, buf, sizeof buf) == nullptr) return false;
  } else {
    if (addr_hex.size() != 32) return false;
    in6_addr a{};
    for (std::size_t i = 0; i < 4; ++i) {
      const auto word = hex_value(addr_hex.substr(i * 8, 8), 8);
      if (!word) return false;
      const auto w = static_cast<std::uint32_t>(*word);
      std::memcpy(&a.s6_addr[i * 4], &w, 4);
    }
    if (inet_ntop(AF_INET6, &a, buf, sizeof buf) == nullptr) return false;
  }
  address = buf;
  port = static_cast<int>(*port_value);
  return true;
}

}  // namespace

ProcNetTcp parse_proc_net_tcp(std::string_view text, bool ipv6) {
  ProcNetTcp out;
  int line_no = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_no;
    const std::vector<std::string_view> cols = split_ws(trim(line));
    if (cols.empty()) continue;
    if (cols[0] == "sl") continue;  // the header
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
    TcpSocketEntry e;
    e.ipv6 = ipv6;
    const bool sl_ok =
        cols[0].size() >= 2 && cols[0].back() == ':' && parse_uint(cols[0].substr(0, cols[0].size() - 1));
    const auto state = cols.size() >= 10 ? hex_value(cols[3], 2) : std::nullopt;
    const auto inode = cols.size() >= 10 ? parse_uint(cols[9]) : std::nullopt;
    if (!sl_ok || !state || !inode || !parse_endpoint(cols[1], ipv6, e.local_address, e.local_port) ||
        !parse_endpoint(cols[2], ipv6, e.remote_address, e.remote_port)) {
      out.malformed_lines.push_back(line_no);
      continue;
    }
    e.state = static_cast<int>(*state);
    e.inode = *inode;
    out.entries.push_back(std::move(e));
  }
  return out;
}

std::vector<TcpSocketEntry> tcp_listeners_on(const std::vector<TcpSocketEntry>& entries, int port) {
  std::vector<TcpSocketEntry> out;
  for (const TcpSocketEntry& e : entries) {
    if (e.state == kTcpStateListen && e.local_port == port) out.push_back(e);
  }
  return out;
}

}  // namespace preflight
