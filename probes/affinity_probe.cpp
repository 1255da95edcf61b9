// SPDX-License-Identifier: MIT
// The affinity probe: placeholder until implemented (sched_getaffinity, get_mempolicy).
#include "probes/probe.hpp"

namespace preflight {

void probe_affinity(const ProbeContext&, RankFacts&) {}

}  // namespace preflight
