// SPDX-License-Identifier: MIT
// The gpu_p2p probe: placeholder until implemented (the contained helper's peer copies).
#include "probes/probe.hpp"

namespace preflight {

void probe_gpu_p2p(const ProbeContext&, RankFacts&) {}

}  // namespace preflight
