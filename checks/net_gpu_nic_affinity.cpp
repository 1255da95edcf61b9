// SPDX-License-Identifier: MIT
// net.gpu_nic_affinity: placeholder until implemented.
#include "checks/check.hpp"

namespace preflight {
namespace {

Verdict run(const CheckContext&) {
  return Verdict::unknown("net.gpu_nic_affinity is not implemented yet", "Nothing to do.");
}

}  // namespace

extern const CheckSpec kNetGpuNicAffinity = {
    "net.gpu_nic_affinity", Scope::Node, "each GPU has a NIC on its own PCIe switch or socket", "not implemented yet",
    kInNode | kInJob, "an image build has no topology", &run};

}  // namespace preflight
