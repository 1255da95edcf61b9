// SPDX-License-Identifier: MIT
// FakeWorld(N): N ranks of a job in one process, each with its own Transport
// (transport/transport.hpp) over shared memory, so that the phases of a job run
// (job/phases.hpp) are tested with missing, stuck and lying ranks without MPI or a launcher.
// Every rank that takes part runs on its own thread; a wait ends at its deadline as MPI's does.
//
//   FakeWorld world(4);
//   world.set(2, {FakeWorld::Behaviour::Silent});
//   auto outcomes = world.run<BarrierOutcome>([&](Transport& t) { return barrier_phase(t, soon); });
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transport/transport.hpp"

namespace preflight::testing {

class FakeWorld {
 public:
  enum class Behaviour {
    Healthy,
    Silent,  // its process is stuck before the phase: it takes part in nothing, the others wait to their deadline
    Slow,    // every call waits `delay` before it starts
    Dead,    // its process ended: rank 0's statuses say "ended", collectives that need it fail at once
    Lying,   // believes it is rank `claims` (a duplicate rank): rank() answers that
  };
  struct Rank {
    Behaviour behaviour = Behaviour::Healthy;
    std::chrono::milliseconds delay{0};
    int claims = -1;
  };
  /// What abort() throws in a fake world instead of ending the process.
  struct Aborted {
    ExitCode code;
  };

  /// `n` ranks, `per_node` to a host (host "node<k>"; the last may have fewer).
  explicit FakeWorld(int n, int per_node = 0);
  ~FakeWorld();
  FakeWorld(const FakeWorld&) = delete;
  FakeWorld& operator=(const FakeWorld&) = delete;

  FakeWorld& set(int rank, Rank how);
  int size() const { return static_cast<int>(m_transports.size()); }
  Transport& transport(int rank) { return *m_transports.at(static_cast<std::size_t>(rank)); }

  /// Runs `body` on every rank that takes part (not Silent or Dead), one thread each, and returns
  /// each rank's result (nullopt: did not take part, or its body aborted the job).
  template <class R>
  std::vector<std::optional<R>> run(const std::function<R(Transport&)>& body) {
    std::vector<std::optional<R>> out(m_transports.size());
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < m_transports.size(); ++r) {
      if (!takes_part(static_cast<int>(r))) continue;
      threads.emplace_back([&, r] {
        try {
          out[r] = body(*m_transports[r]);
        } catch (const Aborted&) {
          out[r].reset();
        }
      });
    }
    for (std::thread& t : threads) t.join();
    return out;
  }

  struct Shared;  // the world's state, behind one mutex (fake_world.cpp)

 private:
  bool takes_part(int rank) const;
  std::shared_ptr<Shared> m_shared;
  std::vector<std::unique_ptr<Transport>> m_transports;
};

/// A deadline `ms` from now, as the phases and exchanges under test take it.
inline TimePoint in(std::chrono::milliseconds ms) { return Clock::now() + ms; }

}  // namespace preflight::testing
