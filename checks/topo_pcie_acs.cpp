// SPDX-License-Identifier: MIT
// topo.pcie_acs: placeholder until implemented.
#include "checks/check.hpp"

namespace preflight {
namespace {

Verdict run(const CheckContext&) {
  return Verdict::unknown("topo.pcie_acs is not implemented yet", "Nothing to do.");
}

}  // namespace

extern const CheckSpec kTopoPcieAcs = {
    "topo.pcie_acs", Scope::Node, "no PCIe ACS redirect or translated IOMMU between GPUs and NICs", "not implemented yet",
    kInNode | kInJob, "an image build has no topology", &run};

}  // namespace preflight
