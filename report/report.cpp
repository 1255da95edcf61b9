// SPDX-License-Identifier: MIT
#include "report/report.hpp"
#include "core/exit_code.hpp"

#include <map>
#include <string_view>

namespace preflight {

Counts count(const Report& report) {
  std::map<std::string_view, Status> by_id;
  for (const CheckResult& r : report.results) {
    const auto [it, inserted] = by_id.emplace(r.id, r.verdict.status);
    if (!inserted) it->second = worst(it->second, r.verdict.status);
  }
  Counts c;
  for (const auto& [id, status] : by_id) ++c.by_status[static_cast<std::size_t>(status)];
  return c;
}

Counts count_instances(const Report& report) {
  Counts c;
  for (const CheckResult& r : report.results) ++c.by_status[static_cast<std::size_t>(r.verdict.status)];
  return c;
}

namespace {

template <typename T>
bool budget_cut(const Probed<T>& p) {
  return p.error() != nullptr && p.error()->code == ProbeErrc::OutOfBudget;
}

/// Whether a helper of this rank was stopped by preflight's own budget (a deadline cut to what
/// was left of the probe phase): its checks say UNKNOWN, and the run ends with exit 4.
bool out_of_budget(const RankFacts& f) {
  const DriverFacts& d = f.gpu.driver;
  return budget_cut(d.nvml_driver_version) || budget_cut(d.cuda_driver_version) || budget_cut(d.nvml_gpus) ||
         budget_cut(d.cuda_devices) || budget_cut(d.smoke) || budget_cut(d.gpu_pairs) || budget_cut(d.peer_copies) ||
         budget_cut(d.health) || budget_cut(f.gpu.nccl) || budget_cut(f.net.master.resolved) ||
         budget_cut(f.net.master.hostname_resolves_to);
}

}  // namespace

Status counted_as(Status s, bool strict) { return strict && s == Status::Warn ? Status::Fail : s; }

int exit_code(const Report& report, bool strict) {
  if (report.deadline_expired) return to_int(ExitCode::Deadline);
  for (const RankFacts& f : report.ranks) {
    if (out_of_budget(f)) return to_int(ExitCode::Deadline);
  }
  bool unknown = false;
  for (const CheckResult& r : report.results) {
    const Status s = counted_as(r.verdict.status, strict);
    if (s == Status::Fail) return to_int(ExitCode::Fail);
    unknown = unknown || s == Status::Unknown;
  }
  return to_int(unknown ? ExitCode::Unknown : ExitCode::Ok);
}

Status overall(const Report& report, bool strict) {
  Status s = Status::Pass;
  for (const CheckResult& r : report.results) {
    if (r.verdict.status == Status::Skip) continue;
    s = worst(s, counted_as(r.verdict.status, strict));
  }
  if (report.deadline_expired) s = worst(s, Status::Fail);
  return s;
}

}  // namespace preflight
