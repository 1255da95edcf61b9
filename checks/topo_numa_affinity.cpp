// SPDX-License-Identifier: MIT
// topo.numa_affinity: placeholder until implemented.
#include "checks/check.hpp"

namespace preflight {
namespace {

Verdict run(const CheckContext&) {
  return Verdict::unknown("topo.numa_affinity is not implemented yet", "Nothing to do.");
}

}  // namespace

extern const CheckSpec kTopoNumaAffinity = {
    "topo.numa_affinity", Scope::Rank, "the rank runs and allocates on its GPU's NUMA node", "not implemented yet",
    kInNode | kInJob, "an image build has no topology", &run};

}  // namespace preflight
