// SPDX-License-Identifier: MIT
// launch.gpu_binding (job): placeholder, to be written.
#include "checks/check.hpp"

namespace preflight {
namespace {

constexpr std::string_view kExplain = "(to be written)";

Verdict run(const CheckContext&) { return Verdict::unknown("not implemented", "-"); }

}  // namespace

extern const CheckSpec kLaunchGpuBinding = {
    "launch.gpu_binding", Scope::Job, "every rank of a host has a GPU of its own that it can see", kExplain,
    kInJob, "an image build has no job to check", &run};

}  // namespace preflight
