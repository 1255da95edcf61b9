// SPDX-License-Identifier: MIT
#include "core/launch.hpp"
#include "probes/probe.hpp"

namespace preflight {

void probe_placement(const ProbeContext& ctx, RankFacts& facts) {
  facts.placement = placement_from(detect_launchers(ctx.env), ctx.options);
}

}  // namespace preflight
