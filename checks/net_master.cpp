// SPDX-License-Identifier: MIT
// net.master: placeholder until implemented.
#include "checks/check.hpp"

namespace preflight {
namespace {

Verdict run(const CheckContext&) {
  return Verdict::unknown("net.master is not implemented yet", "Nothing to do.");
}

}  // namespace

extern const CheckSpec kNetMaster = {
    "net.master", Scope::Job, "MASTER_ADDR resolves to a usable address and MASTER_PORT is free on the master", "not implemented yet",
    kInNode | kInJob, "an image build has no topology", &run};

}  // namespace preflight
