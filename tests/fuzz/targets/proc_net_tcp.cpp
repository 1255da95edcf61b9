// SPDX-License-Identifier: MIT
// /proc/net/tcp and /proc/net/tcp6: parse_proc_net_tcp, tcp_listeners_on.
#include "core/proc_net_tcp.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  for (bool v6 : {false, true}) {
    const ProcNetTcp t = parse_proc_net_tcp(in, v6);
    for (const TcpSocketEntry& e : t.entries) {
      FUZZ_CHECK(e.ipv6 == v6);
      FUZZ_CHECK(e.local_port >= 0 && e.local_port <= 0xffff);
      FUZZ_CHECK(e.remote_port >= 0 && e.remote_port <= 0xffff);
      for (const TcpSocketEntry& l : tcp_listeners_on(t.entries, e.local_port)) {
        FUZZ_CHECK(l.state == kTcpStateListen && l.local_port == e.local_port);
      }
    }
  }
  return 0;
}
