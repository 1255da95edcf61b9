// SPDX-License-Identifier: MIT
// The topology probe: placeholder until implemented (hwloc, or --topology-xml).
#include "probes/probe.hpp"

namespace preflight {

void probe_topology(const ProbeContext&, RankFacts&) {}

}  // namespace preflight
