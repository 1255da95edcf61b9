// SPDX-License-Identifier: MIT
// net.ib: placeholder until implemented.
#include "checks/check.hpp"

namespace preflight {
namespace {

Verdict run(const CheckContext&) {
  return Verdict::unknown("net.ib is not implemented yet", "Nothing to do.");
}

}  // namespace

extern const CheckSpec kNetIb = {
    "net.ib", Scope::Node, "RDMA devices and ports ACTIVE; NCCL_IB_HCA selects what exists, exactly", "not implemented yet",
    kInNode | kInJob, "an image build has no topology", &run};

}  // namespace preflight
