// SPDX-License-Identifier: MIT
// The pcie probe: placeholder until implemented (sysfs: bridge chains, ACS, IOMMU).
#include "probes/probe.hpp"

namespace preflight {

void probe_pcie(const ProbeContext&, RankFacts&) {}

}  // namespace preflight
