// SPDX-License-Identifier: MIT
// launch.ranks (job): placeholder, to be written.
#include "checks/check.hpp"

namespace preflight {
namespace {

constexpr std::string_view kExplain = "(to be written)";

Verdict run(const CheckContext&) { return Verdict::unknown("not implemented", "-"); }

}  // namespace

extern const CheckSpec kLaunchRanks = {
    "launch.ranks", Scope::Job, "the world has the expected ranks and nodes, each rank once, evenly spread", kExplain,
    kInJob, "an image build has no job to check", &run};

}  // namespace preflight
