// SPDX-License-Identifier: MIT
// Text report: a header, the results grouped by area in an aligned table, the remedy under every
// non-PASS line, evidence with -v, and one summary line with the counts and the duration. Every
// string taken from the results (ids, summaries, remedies, evidence keys and values, host names,
// notes: a merge file's or another rank's as much as this rank's) goes through terminal_safe():
// nothing in a report can move the cursor, retitle the terminal or hide text.
#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "report/report.hpp"

namespace preflight {
namespace {

const char* color_of(Status s) {
  switch (s) {
    case Status::Pass: return "\033[32m";
    case Status::Warn: return "\033[33m";
    case Status::Fail: return "\033[1;31m";
    case Status::Skip: return "\033[2m";
    case Status::Unknown: return "\033[35m";
  }
  return "";
}

std::string paint(const std::string& text, const char* code, bool color) {
  if (!color) return text;
  return std::string(code) + text + "\033[0m";
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

/// The evidence's "table" (an array of rows, each an array of strings) as aligned columns, one
/// line per row with `indent` before it, then "table_legend" when there is one. "" when the
/// evidence has no such table.
std::string table_lines(const nlohmann::json& evidence, const std::string& indent) {
  if (!evidence.is_object() || !evidence.contains("table")) return {};
  const nlohmann::json& table = evidence.at("table");
  if (!table.is_array() || table.empty()) return {};
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> widths;
  for (const nlohmann::json& row : table) {
    if (!row.is_array()) return {};
    std::vector<std::string> cells;
    for (const nlohmann::json& cell : row) {
      cells.push_back(terminal_safe(cell.is_string() ? cell.get<std::string>()
                                                     : cell.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    }
    if (widths.size() < cells.size()) widths.resize(cells.size(), 0);
    for (std::size_t i = 0; i < cells.size(); ++i) widths[i] = std::max(widths[i], cells[i].size());
    rows.push_back(std::move(cells));
  }
  std::string out;
  for (const std::vector<std::string>& cells : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      line += i + 1 < cells.size() ? pad(cells[i], widths[i] + 2) : cells[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (evidence.contains("table_legend") && evidence.at("table_legend").is_string()) {
    out += indent + terminal_safe(evidence.at("table_legend").get<std::string>()) + "\n";
  }
  return out;
}

std::string evidence_line(const nlohmann::json& evidence) {
  std::string out;
  for (const auto& [key, value] : evidence.items()) {
    if (key == "table" || key == "table_legend") continue;  // rendered as a table
    if (!out.empty()) out += ", ";
    out += terminal_safe(key) + "=" +
           terminal_safe(value.is_string() ? value.get<std::string>()
                                           : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

constexpr std::size_t kHostsNamed = 8;  // hosts named on a "where" line; the rest are counted

/// Where a result applies in a job: "on 8/16 ranks: gpu-b ranks 8–15", "on 16/16 ranks",
/// "for the job (16 ranks on 2 nodes)".
std::string where(const CheckResult& r, const Report& report) {
  const std::string world = std::to_string(report.world_size);
  if (r.scope == Scope::Job) {
    return "for the job (" + world + " ranks on " + std::to_string(report.nodes) + (report.nodes == 1 ? " node)" : " nodes)");
  }
  std::string out = "on " + std::to_string(r.ranks.size()) + "/" + world + " ranks";
  if (r.ranks.size() == static_cast<std::size_t>(report.world_size) || r.ranks.empty()) return out;
  std::vector<std::string> hosts;
  for (std::size_t i = 0; i < r.hosts.size() && i < kHostsNamed; ++i) hosts.push_back(terminal_safe(r.hosts[i]));
  if (r.hosts.size() > kHostsNamed) hosts.push_back("and " + std::to_string(r.hosts.size() - kHostsNamed) + " more hosts");
  if (r.hosts.size() > kHostsNamed) hosts.push_back("and " + std::to_string(r.hosts.size() - kHostsNamed) + " more hosts");
  out += ": " + join(hosts, ", ") + (r.ranks.size() == 1 ? " rank " : " ranks ") + range_list(r.ranks);
  return out;
}

constexpr std::size_t kFixFirstShown = 10;

/// "What to fix first": every FAIL, then UNKNOWN, then WARN (a WARN is a FAIL with --strict), in
/// report order within a status (launcher, then driver, then what needs it: causes before their
/// consequences), each with where it applies and its fix. Empty when there is nothing to fix.
std::string fix_first(const Report& report, const Options& options, bool color) {
  std::vector<const CheckResult*> todo;
  for (const CheckResult& r : report.results) {
    const Status s = r.verdict.status;
    if (s == Status::Fail || s == Status::Unknown || s == Status::Warn) todo.push_back(&r);
  }
  if (todo.empty()) return {};
  const auto rank_of = [&options](Status s) {
    if (counted_as(s, options.strict) == Status::Fail) return 0;
    return s == Status::Unknown ? 1 : 2;
  };
  std::stable_sort(todo.begin(), todo.end(),
                   [&](const CheckResult* a, const CheckResult* b) { return rank_of(a->verdict.status) < rank_of(b->verdict.status); });
  std::ostringstream out;
  out << "\n" << paint("WHAT TO FIX FIRST", "\033[1m", color) << "\n";
  for (std::size_t i = 0; i < todo.size() && i < kFixFirstShown; ++i) {
    const CheckResult& r = *todo[i];
    const Status s = r.verdict.status;
    const std::string number = std::to_string(i + 1) + ". ";
    out << "  " << number << paint(to_string(s), color_of(s), color) << " " << terminal_safe(r.id);
    if (report.world_size > 1) out << " " << where(r, report);
    out << ": " << terminal_safe(r.verdict.summary) << "\n";
    const std::string indent(2 + number.size(), ' ');
    out << indent << paint("fix: ", "\033[1m", color)
        << terminal_safe(r.verdict.remedy.empty() ? "see `preflight explain " + r.id + "`" : r.verdict.remedy) << "\n";
  }
  if (todo.size() > kFixFirstShown) {
    out << "  … and " << todo.size() - kFixFirstShown << " more, each with its fix above\n";
  }
  return out.str();
}

}  // namespace

std::string render_text(const Report& report, const Options& options, bool color) {
  std::ostringstream out;
  const std::string host = report.ranks.empty() ? std::string("?") : terminal_safe(report.ranks.front().identity.hostname);
  out << "preflight " << terminal_safe(report.version) << " · profile " << to_string(report.profile) << " · "
      << (report.world_size > 1 ? std::to_string(report.world_size) + " ranks on " + std::to_string(report.nodes) + " node(s)"
                                : "host " + host)
      << " · launcher " << terminal_safe(report.launcher) << (report.source == "merge" ? " · merged from result files" : "") << "\n";

  std::size_t id_width = 0;
  for (const CheckResult& r : report.results) id_width = std::max(id_width, terminal_safe(r.id).size());
  id_width += 2;

  std::string area;
  for (const CheckResult& r : report.results) {
    if (r.area != area) {
      area = r.area;
      std::string heading = terminal_safe(area);
      std::transform(heading.begin(), heading.end(), heading.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
      out << "\n" << paint(heading, "\033[1m", color) << "\n";
    }
    const Status s = r.verdict.status;
    out << "  " << paint(pad(to_string(s), 9), color_of(s), color) << pad(terminal_safe(r.id), id_width)
        << terminal_safe(r.verdict.summary);
    out << "\n";
    const std::string indent(11 + id_width, ' ');
    if (report.world_size > 1) {
      out << indent << paint(to_string(s), color_of(s), color) << " " << where(r, report) << "\n";
    }
    if (s != Status::Pass && !r.verdict.remedy.empty()) {
      out << indent << paint("fix: ", "\033[1m", color) << terminal_safe(r.verdict.remedy) << "\n";
    }
    out << table_lines(r.verdict.evidence, indent);
    if (options.verbose && !r.verdict.evidence.empty()) {
      out << indent << paint("evidence: ", "\033[2m", color) << evidence_line(r.verdict.evidence) << "\n";
    }
  }

  for (const std::string& note : report.notes) {
    out << "\n" << paint("NOTE ", "\033[1m", color) << terminal_safe(note) << "\n";
  }
  for (const std::string& incident : report.incidents) {
    out << "\n" << paint("DEADLINE ", color_of(Status::Fail), color) << terminal_safe(incident) << "\n";
  }

  out << fix_first(report, options, color);

  const Counts c = count(report);
  const Status all = overall(report, options.strict);
  const std::string duration = fixed(report.duration_ms / 1000.0, 2) + " s";
  // The headline word is the overall status; an expired deadline is said as such, not as a FAIL
  // nothing failed.
  const std::string headline = report.deadline_expired ? "DEADLINE" : to_string(all);
  out << "\n"
      << paint(headline, color_of(report.deadline_expired ? Status::Fail : all), color) << ": " << c.of(Status::Pass) << " PASS · " << c.of(Status::Warn)
      << " WARN · " << c.of(Status::Fail) << " FAIL · " << c.of(Status::Skip) << " SKIP · " << c.of(Status::Unknown)
      << " UNKNOWN · " << duration << (options.strict ? " · strict (WARN counts as FAIL)" : "") << "\n";
  return out.str();
}

}  // namespace preflight
