// SPDX-License-Identifier: MIT
// JSON report, schema "preflight/v1" (schema/preflight-v1.schema.json).
#include "report/report.hpp"

namespace preflight {
namespace {

using json = nlohmann::ordered_json;

json status_json(const RankStatus& s) {
  json out = {
      {"rank", s.rank},
      {"host", s.host},
      {"pid", s.pid},
      {"last_phase", to_string(s.last_phase)},
      {"heard", s.heard},
      {"silent_s", s.silent_s},
      {"delivered", s.delivered},
      {"payload_error", s.payload_error},
  };
  if (!s.lost.empty()) {
    out["lost"] = s.lost;
    out["lost_at_s"] = s.lost_at_s;
    if (!s.parting.empty()) out["parting"] = s.parting;
  }
  return out;
}

json comm_json(const CommResult& c) {
  json out = {
      {"attempted", c.attempted}, {"completed", c.completed}, {"expired", c.expired},       {"transport", c.transport},
      {"note", c.note},           {"seconds", c.seconds},     {"deadline_s", c.deadline_s}, {"missing", c.missing},
      {"wrong", c.wrong},         {"errors", c.errors},
  };
  return out;
}

/// What the job adds: the collective phases, rank 0's reach target, the ranks that never delivered.
json job_json(const Report& report) {
  json barrier = comm_json(report.barrier);
  json allreduce = comm_json(report.allreduce);
  allreduce["bytes"] = report.allreduce.bytes;
  allreduce["ranks"] = report.allreduce.ranks;
  allreduce["repeats"] = report.allreduce.repeats;
  allreduce["algbw_gbps"] = report.allreduce.algbw_gbps;
  allreduce["busbw_gbps"] = report.allreduce.busbw_gbps;
  if (report.allreduce.blocked) allreduce["blocked"] = true;
  if (report.allreduce.undetermined) allreduce["undetermined"] = true;
  json reach = nullptr;
  if (report.reach_target) {
    reach = {{"interface", report.reach_target->interface},
             {"address", report.reach_target->address},
             {"port", report.reach_target->port}};
  }
  json missing = json::array();
  for (const RankStatus& s : report.missing) missing.push_back(status_json(s));
  json lost = json::array();
  for (const RankStatus& s : report.lost) lost.push_back(status_json(s));
  return {
      {"barrier", barrier}, {"allreduce", allreduce}, {"reach_target", reach}, {"reach_note", report.reach_note},
      {"missing", missing}, {"lost", lost},
  };
}

}  // namespace

std::string render_json(const Report& unredacted, const Options& options, JsonLayout layout) {
  const Redactor redactor = report_redactor(unredacted);
  const Report report = redact_report(unredacted, redactor);
  const Counts c = count(report);
  const Counts rows = count_instances(report);
  json counts = json::object();
  json instance_counts = json::object();
  for (Status s : kStatuses) {
    counts[to_string(s)] = c.of(s);
    instance_counts[to_string(s)] = rows.of(s);
  }

  json checks = json::array();
  for (const CheckResult& r : report.results) checks.push_back(json(r));

  json ranks = json::array();
  for (const RankFacts& f : report.ranks) {
    nlohmann::json facts = f;
    redactor.json(facts);
    ranks.push_back({
        {"rank", f.placement.rank},
        {"host", f.identity.hostname},
        {"local_rank", f.placement.local_rank},
        {"pid", f.identity.pid},
        {"facts", json(std::move(facts))},
    });
  }

  json doc = {
      {"schema", "preflight/v1"},
      {"tool", {{"name", "preflight"}, {"version", report.version}}},
      {"profile", to_string(report.profile)},
      {"world",
       {{"size", report.world_size},
        {"nodes", report.nodes},
        {"launcher", report.launcher},
        {"source", report.source}}},
      {"duration_ms", static_cast<std::int64_t>(report.duration_ms + 0.5)},
      {"summary",
       {{"status", to_string(overall(report, options.strict))},
        {"exit_code", exit_code(report, options.strict)},
        {"strict", options.strict},
        {"counts", counts},
        {"instance_counts", instance_counts}}},
      {"incidents", report.incidents},
      {"notes", report.notes},
      {"job", job_json(report)},
      {"checks", checks},
      {"ranks", ranks},
  };
  // Environment values and file contents may hold invalid UTF-8: replace, never throw.
  return doc.dump(layout == JsonLayout::Indented ? 2 : -1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace preflight
