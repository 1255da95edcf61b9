// SPDX-License-Identifier: MIT
// comm.allreduce (job): placeholder, to be written.
#include "checks/check.hpp"

namespace preflight {
namespace {

constexpr std::string_view kExplain = "(to be written)";

Verdict run(const CheckContext&) { return Verdict::unknown("not implemented", "-"); }

}  // namespace

extern const CheckSpec kCommAllreduce = {
    "comm.allreduce", Scope::Job, "an all_reduce of exact integers is correct on every rank and fast enough", kExplain,
    kInNode | kInJob, "an image build has no job to check", &run};

}  // namespace preflight
