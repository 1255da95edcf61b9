// SPDX-License-Identifier: MIT
// PLACEHOLDER: replaced by the real check.
#include "checks/check.hpp"

namespace preflight {
namespace {
Verdict run(const CheckContext&) { return Verdict::unknown("not implemented", "not implemented"); }
}  // namespace

extern const CheckSpec kHostLimits = {"host.limits", Scope::Rank, "placeholder", "placeholder", kInAll, "", &run};

}  // namespace preflight
