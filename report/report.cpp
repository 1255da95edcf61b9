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

Status counted_as(Status s, bool strict) { return strict && s == Status::Warn ? Status::Fail : s; }

int exit_code(const Report& report, bool strict) {
  if (report.deadline_expired) return to_int(ExitCode::Deadline);
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
