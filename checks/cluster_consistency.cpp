// SPDX-License-Identifier: MIT
// cluster.consistency (job): placeholder, to be written.
#include "checks/check.hpp"

namespace preflight {
namespace {

constexpr std::string_view kExplain = "(to be written)";

Verdict run(const CheckContext&) { return Verdict::unknown("not implemented", "-"); }

}  // namespace

extern const CheckSpec kClusterConsistency = {
    "cluster.consistency", Scope::Job, "driver, CUDA, NCCL, framework, kernel and NIC driver versions agree across ranks", kExplain,
    kInJob, "an image build has no job to check", &run};

}  // namespace preflight
