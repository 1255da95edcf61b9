// SPDX-License-Identifier: MIT
// cluster.shm_namespace (job): placeholder, to be written.
#include "checks/check.hpp"

namespace preflight {
namespace {

constexpr std::string_view kExplain = "(to be written)";

Verdict run(const CheckContext&) { return Verdict::unknown("not implemented", "-"); }

}  // namespace

extern const CheckSpec kClusterShmNamespace = {
    "cluster.shm_namespace", Scope::Job, "ranks of one host share one /dev/shm (one IPC namespace)", kExplain,
    kInJob, "an image build has no job to check", &run};

}  // namespace preflight
