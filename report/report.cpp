// SPDX-License-Identifier: MIT
#include "report/report.hpp"

namespace preflight {

Counts count(const Report& report) {
  Counts c;
  for (const CheckResult& r : report.results) ++c.by_status[static_cast<std::size_t>(r.verdict.status)];
  return c;
}

int exit_code(const Report& report, bool strict) {
  if (report.deadline_expired) return 4;
  const Counts c = count(report);
  if (c.of(Status::Fail) > 0 || (strict && c.of(Status::Warn) > 0)) return 1;
  if (c.of(Status::Unknown) > 0) return 3;
  return 0;
}

Status overall(const Report& report, bool strict) {
  Status s = Status::Pass;
  for (const CheckResult& r : report.results) {
    Status st = r.verdict.status;
    if (st == Status::Skip) continue;
    if (strict && st == Status::Warn) st = Status::Fail;
    s = worst(s, st);
  }
  if (report.deadline_expired) s = worst(s, Status::Fail);
  return s;
}

}  // namespace preflight
