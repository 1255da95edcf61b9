// SPDX-License-Identifier: MIT
// The net probe: placeholder until implemented (interfaces, RDMA devices, MASTER_ADDR).
#include "probes/probe.hpp"

namespace preflight {

void probe_net(const ProbeContext&, RankFacts&) {}

}  // namespace preflight
