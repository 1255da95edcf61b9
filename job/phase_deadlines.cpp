// SPDX-License-Identifier: MIT
#include "job/phase_deadlines.hpp"

#include <algorithm>
#include <cstdio>

#include "core/deadlines.hpp"
#include "core/text.hpp"
#include "transport/transport.hpp"

namespace preflight {
namespace {

using Steady = std::chrono::steady_clock;

double between(Steady::time_point a, Steady::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

PhaseDeadlines PhaseDeadlines::from(Steady::time_point start, double timeout_s) {
  PhaseDeadlines d;
  const auto at = [&](double fraction) { return start + seconds_of(timeout_s * fraction); };
  d.start = start;
  d.init = at(PhaseShares::init);
  d.probe = at(PhaseShares::probe);
  d.reach = at(PhaseShares::reach);
  d.gather = at(PhaseShares::gather);
  d.barrier = at(PhaseShares::barrier);
  d.allreduce = at(PhaseShares::allreduce);
  d.end = at(1.0);
  d.grace = seconds_of(std::max(PhaseShares::min_grace_seconds, timeout_s * PhaseShares::grace));
  return d;
}

std::string PhaseDeadlines::describe(Steady::time_point deadline) const {
  if (termination_requested()) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%.1f s of the start: the launcher ended the job (SIGCONT/SIGTERM) after %.1f s, which "
                  "it does when one of the ranks died (mpirun/srun names it next to this report)",
                  between(start, deadline), between(start, Steady::now()));
    return buf;
  }
  return fixed(between(start, deadline), 1) + " s of the start";
}

}  // namespace preflight
