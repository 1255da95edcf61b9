// SPDX-License-Identifier: MIT
// An Os whose answers a unit test sets: the probes that ask the kernel (identity, net, affinity)
// run against it like against a live node, with no system call made.
#pragma once

#include <algorithm>
#include <map>
#include <thread>

#include "sys/os.hpp"

namespace preflight {

/// A lookup that never answers: waited for, it expires at the deadline as a stuck resolver does.
class StuckLookup : public PendingLookup {
 public:
  Probed<std::vector<std::string>> wait(std::chrono::steady_clock::time_point deadline,
                                        std::chrono::milliseconds) override {
    std::this_thread::sleep_until(deadline);
    return Probed<std::vector<std::string>>::error(ProbeErrc::Timeout, "did not resolve", "fake resolver");
  }
};

class FakeOs : public Os {
 public:
  std::optional<std::string> host = "fake-node";
  std::optional<std::string> release = "6.1.0-fake";
  Probed<std::vector<NetInterface>> ifs = Probed<std::vector<NetInterface>>::ok({}, "fake getifaddrs");
  /// name -> addresses; a name not listed is NotFound; `stuck` names never answer.
  std::map<std::string, std::vector<std::string>> names;
  std::vector<std::string> stuck;
  std::string bind_answer = "free";
  Probed<std::vector<int>> cpus = Probed<std::vector<int>>::ok({0, 1, 2, 3}, "fake sched_getaffinity");
  Probed<MemPolicy> mempolicy = Probed<MemPolicy>::ok(MemPolicy{"default", {}}, "fake get_mempolicy");
  /// nullopt: the limits probe reads the file system's /proc/self/limits and /proc/self/status.
  std::optional<ProcessLimits> limits;

  // What the probes asked.
  mutable std::vector<std::string> looked_up;
  mutable std::vector<std::pair<std::string, int>> binds;
  mutable int possible_cpus = -1, possible_nodes = -1;

  std::optional<std::string> hostname() const override { return host; }
  std::optional<std::string> kernel_release() const override { return release; }
  Probed<std::vector<NetInterface>> interfaces() const override { return ifs; }
  std::unique_ptr<PendingLookup> lookup(const std::string& name) const override {
    looked_up.push_back(name);
    if (std::find(stuck.begin(), stuck.end(), name) != stuck.end()) {
      return std::make_unique<StuckLookup>();
    }
    const auto it = names.find(name);
    if (it == names.end()) {
      return std::make_unique<ReadyLookup>(
          Probed<std::vector<std::string>>::error(ProbeErrc::NotFound, "Name or service not known", "fake resolver"));
    }
    return std::make_unique<ReadyLookup>(Probed<std::vector<std::string>>::ok(it->second, "fake resolver"));
  }
  Probed<std::string> bind_test(const std::string& address, int port) const override {
    binds.emplace_back(address, port);
    return Probed<std::string>::ok(bind_answer, "fake bind");
  }
  Probed<std::vector<int>> process_cpus(int possible) const override {
    possible_cpus = possible;
    return cpus;
  }
  Probed<MemPolicy> process_mempolicy(int possible) const override {
    possible_nodes = possible;
    return mempolicy;
  }
  std::optional<ProcessLimits> process_limits() const override { return limits; }
};

}  // namespace preflight
