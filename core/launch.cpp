// SPDX-License-Identifier: MIT
// PLACEHOLDER: replaced by the real launcher detection.
#include "core/launch.hpp"

namespace preflight {
LaunchView detect_launchers(const EnvSnapshot&) { return {}; }
Placement placement_from(const LaunchView&, const Options& options) {
  Placement p;
  if (options.ranks_per_node) {
    p.local_ranks = *options.ranks_per_node;
    p.source = "--ranks-per-node";
  }
  return p;
}
}  // namespace preflight
