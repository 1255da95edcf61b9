// SPDX-License-Identifier: MIT
#include "checks/gpu_health_common.hpp"

#include <algorithm>
#include <cstddef>

#include "checks/gpu_common.hpp"
#include "core/text.hpp"

namespace preflight {

HealthView node_health(const CheckContext& ctx, std::string_view what, const GpuSharedRows& shared,
                       const FindingSpec& not_read) {
  HealthView v;
  const DriverFacts& d = ctx.facts.gpu.driver;
  if (std::optional<GpuShared> none = no_driver(d, "the job needs a GPU")) {
    v.verdict = shared_verdict(shared, *none);
    return v;
  }
  const Probed<GpuHealthFacts>* first_error = nullptr;
  for (const RankFacts* f : node_ranks(ctx)) {
    const Probed<GpuHealthFacts>& h = f->gpu.driver.health;
    if (const GpuHealthFacts* facts = h.value()) {
      v.facts = facts;
      return v;
    }
    if (first_error == nullptr ||
        (first_error->error()->code == ProbeErrc::Unsupported && h.error()->code != ProbeErrc::Unsupported)) {
      first_error = &h;
    }
  }
  if (first_error == nullptr) first_error = &d.health;
  const ProbeError& err = *first_error->error();
  if (err.code == ProbeErrc::Unsupported) {
    v.verdict = Verdict::of(not_read, {{"what", what}, {"detail", err.detail}});
    return v;
  }
  v.verdict = shared_verdict(shared, missing_gpu_fact(err, first_error->source(), what, ""));
  return v;
}

std::string health_gpu_text(const GpuHealth& g) {
  return "GPU " + std::to_string(g.index) + (g.pci_bus_id.empty() ? std::string() : " (" + g.pci_bus_id + ")");
}

std::string unavailable_text(const GpuHealth& g, const std::string& fact) {
  const auto it = g.unavailable.find(fact);
  return it != g.unavailable.end() ? it->second : std::string("not reported");
}

bool add_lost_gpus(VerdictBuilder& b, const GpuHealthFacts& h, const FindingSpec& spec) {
  std::vector<std::string> lost;
  for (const GpuHealth& g : h.gpus) {
    if (!g.lost.empty()) lost.push_back(health_gpu_text(g) + ": " + g.lost);
  }
  if (lost.empty()) return false;
  b.add(spec, {{"gpus", list_text(lost, 4)}});
  return true;
}

std::string list_text(const std::vector<std::string>& items, std::size_t most) {
  std::vector<std::string> shown(items.begin(),
                                 items.begin() + static_cast<std::ptrdiff_t>(std::min(most, items.size())));
  std::string out = join(shown, "; ");
  if (items.size() > shown.size()) out += "; and " + std::to_string(items.size() - shown.size()) + " more";
  return out;
}

}  // namespace preflight
