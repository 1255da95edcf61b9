// SPDX-License-Identifier: MIT
// comm.barrier (job): placeholder, to be written.
#include "checks/check.hpp"

namespace preflight {
namespace {

constexpr std::string_view kExplain = "(to be written)";

Verdict run(const CheckContext&) { return Verdict::unknown("not implemented", "-"); }

}  // namespace

extern const CheckSpec kCommBarrier = {
    "comm.barrier", Scope::Job, "a barrier across all ranks completes within its deadline", kExplain,
    kInJob, "an image build has no job to check", &run};

}  // namespace preflight
