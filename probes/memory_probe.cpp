// SPDX-License-Identifier: MIT
// PLACEHOLDER: replaced by the real probe.
#include "probes/probe.hpp"

namespace preflight {
void probe_memory(const ProbeContext&, RankFacts&) {}
}  // namespace preflight
