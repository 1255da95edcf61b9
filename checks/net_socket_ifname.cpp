// SPDX-License-Identifier: MIT
// net.socket_ifname: placeholder until implemented.
#include "checks/check.hpp"

namespace preflight {
namespace {

Verdict run(const CheckContext&) {
  return Verdict::unknown("net.socket_ifname is not implemented yet", "Nothing to do.");
}

}  // namespace

extern const CheckSpec kNetSocketIfname = {
    "net.socket_ifname", Scope::Rank, "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME select an interface that is up, addressed and right for the job", "not implemented yet",
    kInNode | kInJob, "an image build has no topology", &run};

}  // namespace preflight
