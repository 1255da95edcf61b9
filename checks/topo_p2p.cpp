// SPDX-License-Identifier: MIT
// topo.p2p: placeholder until implemented.
#include "checks/check.hpp"

namespace preflight {
namespace {

Verdict run(const CheckContext&) {
  return Verdict::unknown("topo.p2p is not implemented yet", "Nothing to do.");
}

}  // namespace

extern const CheckSpec kTopoP2p = {
    "topo.p2p", Scope::Node, "GPU peer-to-peer paths carry real copies; NCCL_P2P settings fit the topology", "not implemented yet",
    kInNode | kInJob, "an image build has no topology", &run};

}  // namespace preflight
