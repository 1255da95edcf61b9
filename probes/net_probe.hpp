// SPDX-License-Identifier: MIT
// Parts of the net probe that tests reach directly: the bounded name lookup and the /etc/hosts reader.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/probed.hpp"

namespace preflight {

/// A resolver: getaddrinfo's return code and the addresses found (numeric text, in its order).
using HostResolver = std::function<int(const std::string& host, std::vector<std::string>& addresses, int& sys_errno)>;

/// getaddrinfo(host) (AF_UNSPEC, SOCK_STREAM) in a detached thread, waited for at most `limit`:
/// DNS can block far longer than a probe may. Expiry is a Timeout error ("did not resolve within
/// 2.0 s"); a resolver error is NotFound (EAI_NONAME, EAI_NODATA) or ApiError with gai_strerror's text.
class BoundedLookup {
 public:
  explicit BoundedLookup(std::string host, HostResolver resolver = {});
  Probed<std::vector<std::string>> wait(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds limit);

 private:
  struct State;
  std::string m_host;
  std::shared_ptr<State> m_state;
  std::string m_start_error;
};

/// The addresses /etc/hosts text gives `name` (case-insensitive), in file order.
std::vector<std::string> hosts_file_lookup(std::string_view hosts_text, std::string_view name);

}  // namespace preflight
