// SPDX-License-Identifier: MIT
// net.reachability (job): placeholder, to be written.
#include "checks/check.hpp"

namespace preflight {
namespace {

constexpr std::string_view kExplain = "(to be written)";

Verdict run(const CheckContext&) { return Verdict::unknown("not implemented", "-"); }

}  // namespace

extern const CheckSpec kNetReachability = {
    "net.reachability", Scope::Job, "every rank reaches rank 0's NCCL bootstrap address over TCP", kExplain,
    kInJob, "an image build has no job to check", &run};

}  // namespace preflight
