// SPDX-License-Identifier: MIT
// JSON report, schema "preflight/v1" (schema/preflight-v1.schema.json).
#include "report/report.hpp"

namespace preflight {

std::string render_json(const Report& report, const Options& options) {
  using json = nlohmann::ordered_json;
  const Counts c = count(report);
  json counts = json::object();
  for (Status s : {Status::Pass, Status::Warn, Status::Fail, Status::Skip, Status::Unknown}) counts[to_string(s)] = c.of(s);

  json checks = json::array();
  for (const CheckResult& r : report.results) {
    checks.push_back({
        {"id", r.id},
        {"title", r.title},
        {"status", to_string(r.verdict.status)},
        {"summary", r.verdict.summary},
        {"remedy", r.verdict.remedy},
        {"scope", to_string(r.scope)},
        {"hosts", r.hosts},
        {"ranks", r.ranks},
        {"evidence", json(r.verdict.evidence)},
    });
  }

  json ranks = json::array();
  for (const RankFacts& f : report.ranks) {
    ranks.push_back({
        {"rank", f.placement.rank},
        {"host", f.identity.hostname},
        {"local_rank", f.placement.local_rank},
        {"pid", f.identity.pid},
        {"facts", json(nlohmann::json(f))},
    });
  }

  json doc = {
      {"schema", "preflight/v1"},
      {"tool", {{"name", "preflight"}, {"version", report.version}}},
      {"profile", to_string(report.profile)},
      {"world", {{"size", report.world_size}, {"nodes", report.nodes}, {"launcher", report.launcher}}},
      {"duration_ms", static_cast<std::int64_t>(report.duration_ms + 0.5)},
      {"summary",
       {{"status", to_string(overall(report, options.strict))},
        {"exit_code", exit_code(report, options.strict)},
        {"strict", options.strict},
        {"counts", counts}}},
      {"incidents", report.incidents},
      {"checks", checks},
      {"ranks", ranks},
  };
  // Environment values and file contents may hold invalid UTF-8: replace, never throw.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace preflight
