// SPDX-License-Identifier: MIT
// The TCP reachability test of a job: rank 0 listens on the address NCCL's bootstrap would use
// (an ephemeral port on it), every rank opens one bounded TCP connection to it. Plain sockets, no
// MPI: the orchestrator broadcasts the target and gathers the results.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "core/facts.hpp"
#include "core/job.hpp"

namespace preflight {

/// Rank 0's NCCL bootstrap address from its facts, as NCCL would pick it (nccl_socket_select with
/// NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY / NCCL_COMM_ID as rank 0 sees them; matches[0]), with
/// port 0 (the listener's port is filled in later), or nullopt with the reason in `why_not`.
std::optional<ReachTarget> bootstrap_target(const RankFacts& rank0, std::string& why_not);

/// "192.0.2.2:41234", "[fd00::2]:41234".
std::string target_text(const ReachTarget& target);

/// A listening TCP socket on an ephemeral port of one address. A background thread accepts and
/// closes every connection at once (and the backlog is large), so many ranks can connect at the
/// same moment. The destructor stops the thread and closes every socket.
class ReachListener {
 public:
  ReachListener() = default;
  ~ReachListener();
  ReachListener(const ReachListener&) = delete;
  ReachListener& operator=(const ReachListener&) = delete;

  /// Binds `address` (numeric IPv4 or IPv6, "fe80::1%eth0" for a link-local one) on port 0 and
  /// listens. False with the reason in `error` ("bind 192.0.2.2: Cannot assign requested address").
  bool listen(const std::string& address, std::string& error);
  /// The port the kernel chose; 0 before a successful listen().
  int port() const { return m_port; }
  /// Connections accepted so far.
  long accepted() const { return m_accepted.load(); }
  /// Stops accepting and closes the listening socket (the destructor does it too).
  void close();

 private:
  void accept_loop();

  int m_fd = -1;
  int m_wake[2] = {-1, -1};  // a pipe: a byte written to [1] ends the accept loop
  int m_port = 0;
  std::atomic<long> m_accepted{0};
  std::thread m_thread;
};

/// A connected TCP socket (non-blocking, close-on-exec) to a numeric `address` and `port`, or -1
/// when the connection failed or `timeout` passed first (never longer): `error` is the errno
/// (ETIMEDOUT for no answer, 0 for a bad address or port) and `why` says it for people.
int connect_within(const std::string& address, int port, std::chrono::milliseconds timeout, int& error,
                   std::string& why);

/// One TCP connection to `target`: a non-blocking connect() and poll() until it completes, fails or
/// `timeout` passes (never longer), then closed. Records the local address it used, the time, and
/// the error ("connect: Connection refused", "no answer within 2.0 s").
ReachResult reach(const ReachTarget& target, std::chrono::milliseconds timeout);

}  // namespace preflight
