// SPDX-License-Identifier: MIT
// The seam for what probes ask the running kernel through system calls rather than files: the
// host's name and kernel release, its interfaces with their addresses, name lookup, a bind test,
// this process's CPU and memory binding, and its resource limits and CAP_IPC_LOCK. The live system
// answers with the calls (LiveOs, here); a --sysroot tree answers from its files and its capture
// (probes/tree_os.hpp); unit tests give their own. A probe asks its ProbeContext's Os and never
// checks which one it has.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/facts/affinity.hpp"
#include "core/facts/limits.hpp"
#include "core/facts/net.hpp"
#include "core/probed.hpp"

namespace preflight {

/// A name lookup under way; wait() gives its answer, or Timeout at `deadline` (the lookup is left
/// behind: DNS can block far longer than a probe may). `limit` is how the deadline is named.
class PendingLookup {
 public:
  virtual ~PendingLookup() = default;
  virtual Probed<std::vector<std::string>> wait(std::chrono::steady_clock::time_point deadline,
                                                std::chrono::milliseconds limit) = 0;
};

/// This process's resource limits that host.limits judges, and CAP_IPC_LOCK, each with its source.
struct ProcessLimits {
  Probed<Rlimit> memlock;     // RLIMIT_MEMLOCK, bytes
  Probed<Rlimit> nofile;      // RLIMIT_NOFILE
  Probed<Rlimit> core;        // RLIMIT_CORE, bytes
  Probed<bool> cap_ipc_lock;  // CAP_IPC_LOCK in the effective set
};

class Os {
 public:
  virtual ~Os() = default;

  /// gethostname(2); nullopt where there is no such call to make (a tree: its files say it).
  virtual std::optional<std::string> hostname() const = 0;
  /// uname(2)'s release; nullopt as for hostname.
  virtual std::optional<std::string> kernel_release() const = 0;

  /// The interfaces as the kernel lists them with their IPv4/IPv6 addresses (getifaddrs): name,
  /// up, running, loopback, addresses; the probe adds what /sys says of each. Unsupported where no
  /// such list exists (a tree that is not a capture: the probe reads /sys/class/net instead).
  virtual Probed<std::vector<NetInterface>> interfaces() const = 0;

  /// Starts resolving `name` to its addresses (numeric text, the resolver's order, no repeats).
  virtual std::unique_ptr<PendingLookup> lookup(const std::string& name) const = 0;

  /// socket + SO_REUSEADDR + bind(address:port), closed at once: "free", or "<ERRNO>: <text>" for
  /// a bind the kernel refused (the answer, not an error); errors are for a test that could not run.
  virtual Probed<std::string> bind_test(const std::string& address, int port) const = 0;

  /// The CPUs this process may run on (sched_getaffinity). `possible_cpus`: how many the kernel may
  /// have (/sys/devices/system/cpu/possible), the mask's first size.
  virtual Probed<std::vector<int>> process_cpus(int possible_cpus) const = 0;
  /// This process's memory policy (get_mempolicy); `possible_nodes` as for process_cpus.
  virtual Probed<MemPolicy> process_mempolicy(int possible_nodes) const = 0;

  /// This process's limits (getrlimit(2)) and effective CAP_IPC_LOCK (capget(2)): calls that open
  /// nothing, so they answer in a process that has run out of file descriptors (`ulimit -n 8`),
  /// where /proc/self/limits cannot be opened. nullopt where there is no such call to make (a tree:
  /// its /proc/self/limits and /proc/self/status say it).
  virtual std::optional<ProcessLimits> process_limits() const = 0;
};

/// The live system's answers. Stateless: one instance serves every thread.
const Os& live_os();

/// A resolver: getaddrinfo's return code and the addresses found (numeric text, in its order).
using HostResolver = std::function<int(const std::string& host, std::vector<std::string>& addresses, int& sys_errno)>;

/// getaddrinfo(host) (AF_UNSPEC, SOCK_STREAM) in a detached thread, waited for at most `limit`:
/// expiry is a Timeout error ("did not resolve within 2.0 s"); a resolver error is NotFound
/// (EAI_NONAME, EAI_NODATA) or ApiError with gai_strerror's text. LiveOs::lookup is one of these
/// with getaddrinfo itself; tests give their own resolver.
class BoundedLookup : public PendingLookup {
 public:
  explicit BoundedLookup(std::string host, HostResolver resolver = {});
  Probed<std::vector<std::string>> wait(std::chrono::steady_clock::time_point deadline,
                                        std::chrono::milliseconds limit) override;

 private:
  struct State;
  std::string m_host;
  std::shared_ptr<State> m_state;
  std::string m_start_error;
};

/// A lookup whose answer is already known (a tree's /etc/hosts, a test's table).
class ReadyLookup : public PendingLookup {
 public:
  explicit ReadyLookup(Probed<std::vector<std::string>> answer) : m_answer(std::move(answer)) {}
  Probed<std::vector<std::string>> wait(std::chrono::steady_clock::time_point, std::chrono::milliseconds) override {
    return m_answer;
  }

 private:
  Probed<std::vector<std::string>> m_answer;
};

/// get_mempolicy's mode with the MPOL_F_* flags stripped: 0 "default", 1 "preferred", 2 "bind",
/// 3 "interleave", 4 "local", 5 "preferred_many", 6 "weighted_interleave", else "unknown(N)".
std::string mempolicy_mode_name(int mode);

}  // namespace preflight
