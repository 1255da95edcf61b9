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
#include <unordered_map>
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
      cells.push_back(terminal_safe(cell.is_string()
                                        ? cell.get<std::string>()
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

/// Where a result applies in a job, before its summary: "on ranks 1–15 (gpu-a, gpu-b): "; "" for a
/// result of the whole job, of every rank, or of a one-process run.
std::string where(const CheckResult& r, const Report& report) {
  if (report.world_size <= 1 || r.scope == Scope::Job || r.ranks.empty() ||
      r.ranks.size() >= static_cast<std::size_t>(report.world_size)) {
    return {};
  }
  std::vector<std::string> hosts;
  for (std::size_t i = 0; i < r.hosts.size() && i < kHostsNamed; ++i) hosts.push_back(terminal_safe(r.hosts[i]));
  if (r.hosts.size() > kHostsNamed)
    hosts.push_back("and " + std::to_string(r.hosts.size() - kHostsNamed) + " more hosts");
  return (r.ranks.size() == 1 ? "on rank " : "on ranks ") + range_list(r.ranks) +
         (hosts.empty() ? "" : " (" + join(hosts, ", ") + ")") + ": ";
}

/// The results as the text report shows them: consequences (a settled Verdict::cause) folded
/// under the result they follow from, and results of different checks that say the same thing
/// (status, summary, fix, where) folded into one row.
struct Layout {
  struct Row {
    std::vector<const CheckResult*> members;       // same status and text: one row, every id named
    std::vector<const CheckResult*> consequences;  // folded under it (every one whose chain of causes ends here)
  };
  std::vector<Row> rows;
};

/// The result a consequence is finally shown under: its cause's (the first result of that check
/// that is not PASS or SKIP, from `wrong`), or that one's cause's, …; nullptr when it stands alone.
const CheckResult* root_of(const std::unordered_map<std::string, const CheckResult*>& wrong, const CheckResult& r) {
  const CheckResult* at = &r;
  for (int depth = 0; depth < 8 && !at->verdict.cause.empty(); ++depth) {
    const auto next = wrong.find(at->verdict.cause);
    if (next == wrong.end() || next->second == at) break;
    at = next->second;
  }
  return at == &r ? nullptr : at;
}

/// What makes results of different checks one row: the same status, summary, fix and ranks. A
/// result with a table (topo.p2p's matrix) has a row of its own.
std::string row_key(const CheckResult& r) {
  if (r.verdict.evidence.is_object() && r.verdict.evidence.contains("table")) return {};
  std::string key = std::string(to_string(r.verdict.status)) + '\n' + to_string(r.scope) + '\n' + r.verdict.summary +
                    '\n' + r.verdict.remedy + '\n';
  for (int rank : r.ranks) key += std::to_string(rank) + ',';
  return key;
}

/// Linear in the results (a -v report of thousands of ranks has a result per rank and check).
Layout lay_out(const Report& report) {
  std::unordered_map<std::string, const CheckResult*> wrong;  // check id -> its first non-PASS result
  for (const CheckResult& r : report.results) {
    if (r.verdict.status != Status::Pass && r.verdict.status != Status::Skip) wrong.try_emplace(r.id, &r);
  }
  Layout layout;
  std::unordered_map<std::string, std::size_t> row_with;                  // row_key -> its row
  std::unordered_map<const CheckResult*, std::size_t> row_of;             // a standing result -> its row
  std::vector<std::pair<const CheckResult*, const CheckResult*>> folded;  // (consequence, root)
  for (const CheckResult& r : report.results) {
    if (const CheckResult* root = r.verdict.cause.empty() ? nullptr : root_of(wrong, r)) {
      folded.emplace_back(&r, root);
      continue;
    }
    const std::string key = row_key(r);
    const auto same = key.empty() ? row_with.end() : row_with.find(key);
    // Another check saying the same thing shares its row; the same check's other result does not.
    const bool shared = same != row_with.end() && layout.rows[same->second].members.front()->id != r.id;
    const std::size_t at = shared ? same->second : layout.rows.size();
    if (!shared) {
      layout.rows.emplace_back();
      if (!key.empty()) row_with.try_emplace(key, at);
    }
    layout.rows[at].members.push_back(&r);
    row_of.emplace(&r, at);
  }
  for (const auto& [consequence, root] : folded) {
    const auto at = row_of.find(root);
    if (at != row_of.end()) layout.rows[at->second].consequences.push_back(consequence);
  }
  return layout;
}

std::vector<std::string> ids_of(const std::vector<const CheckResult*>& results) {
  std::vector<std::string> ids;
  for (const CheckResult* r : results) {
    const std::string id = terminal_safe(r->id);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

/// "need the driver (see driver.loaded)": what consequences of `cause` lack, from the check table.
std::string needs_text(const std::string& cause) {
  const CheckSpec* spec = find_check(cause);
  const std::string see = "(see " + terminal_safe(cause) + ")";
  if (spec == nullptr || spec->needed_as.empty()) return "follow from " + terminal_safe(cause) + " " + see;
  return "need " + std::string(spec->needed_as) + " " + see;
}

/// The folded lines under a row: one per (status, direct cause), the consequences' ids on it.
std::string consequence_lines(const std::vector<const CheckResult*>& consequences, const std::string& indent,
                              bool verbose, bool color) {
  std::vector<std::pair<std::pair<Status, std::string>, std::vector<const CheckResult*>>> lines;
  for (const CheckResult* c : consequences) {
    const std::pair<Status, std::string> key{c->verdict.status, c->verdict.cause};
    auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == key; });
    if (it == lines.end()) {
      lines.push_back({key, {c}});
    } else {
      it->second.push_back(c);
    }
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return severity(a.first.first) > severity(b.first.first); });
  std::string out;
  for (const auto& [key, members] : lines) {
    out += indent + paint(pad(to_string(key.first), 8), color_of(key.first), color) + join(ids_of(members), ", ") +
           "  " + needs_text(key.second) + "\n";
    if (!verbose) continue;
    for (const CheckResult* c : members) {
      out += indent + "  " + terminal_safe(c->id) + ": " + terminal_safe(c->verdict.summary) + "\n";
      if (!c->verdict.evidence.empty()) out += indent + "    evidence: " + evidence_line(c->verdict.evidence) + "\n";
    }
  }
  return out;
}

/// The check ids that follow, directly or not, from the rows' members: what fixing them unblocks.
std::vector<std::string> unblocked_by(const Layout::Row& row) { return ids_of(row.consequences); }

constexpr std::size_t kFixFirstShown = 10;

/// "What to fix first": the causes — every non-PASS row that follows from no other — each check
/// once (its worst row), FAIL before UNKNOWN before WARN (a WARN is a FAIL with --strict), and
/// within a status what unblocks the most first, then report order. Each with where it applies,
/// its fix and what it unblocks. Returns every such row in that order; the first kFixFirstShown are
/// listed (their fix is printed there, not above).
std::vector<const Layout::Row*> fix_first_rows(const Layout& layout, const Options& options) {
  std::vector<const Layout::Row*> todo;
  std::vector<std::string> seen;
  for (const Layout::Row& row : layout.rows) {
    const CheckResult& r = *row.members.front();
    const Status s = r.verdict.status;
    if (s != Status::Fail && s != Status::Unknown && s != Status::Warn) continue;
    if (std::find(seen.begin(), seen.end(), r.id) != seen.end()) continue;
    seen.push_back(r.id);
    todo.push_back(&row);
  }
  const auto rank_of = [&options](Status s) {
    if (counted_as(s, options.strict) == Status::Fail) return 0;
    return s == Status::Unknown ? 1 : 2;
  };
  std::stable_sort(todo.begin(), todo.end(), [&](const Layout::Row* a, const Layout::Row* b) {
    const int ra = rank_of(a->members.front()->verdict.status);
    const int rb = rank_of(b->members.front()->verdict.status);
    if (ra != rb) return ra < rb;
    return unblocked_by(*a).size() > unblocked_by(*b).size();
  });
  return todo;
}

std::string fix_first(const std::vector<const Layout::Row*>& todo, std::size_t not_shown, const Report& report,
                      bool color) {
  if (todo.empty()) return {};
  std::ostringstream out;
  out << "\n" << paint("WHAT TO FIX FIRST", "\033[1m", color) << "\n";
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const CheckResult& r = *todo[i]->members.front();
    const Status s = r.verdict.status;
    const std::string number = std::to_string(i + 1) + ". ";
    const std::string at = where(r, report);
    out << "  " << number << paint(to_string(s), color_of(s), color) << " " << join(ids_of(todo[i]->members), ", ")
        << (at.empty() ? ": " : " " + at) << terminal_safe(r.verdict.summary) << "\n";
    const std::string indent(2 + number.size(), ' ');
    // The same fix as an entry above (checks that fail for one reason whose own check was not
    // selected): said once, then pointed at.
    std::size_t same = i;
    for (std::size_t j = 0; j < i && same == i; ++j) {
      if (!r.verdict.remedy.empty() && todo[j]->members.front()->verdict.remedy == r.verdict.remedy) same = j;
    }
    out << indent << paint("fix: ", "\033[1m", color)
        << (same != i
                ? "the same as " + std::to_string(same + 1) + "."
                : terminal_safe(r.verdict.remedy.empty() ? "see `preflight explain " + r.id + "`" : r.verdict.remedy))
        << "\n";
    const std::vector<std::string> unblocks = unblocked_by(*todo[i]);
    if (!unblocks.empty()) out << indent << "then: " << join(unblocks, ", ") << " (they follow from it)\n";
  }
  if (not_shown > 0) out << "  … and " << not_shown << " more, each with its fix above\n";
  return out.str();
}

}  // namespace

std::string render_text(const Report& unredacted, const Options& options, bool color) {
  const Report report = redact_report(unredacted, report_redactor(unredacted));
  std::ostringstream out;
  const std::string host =
      report.ranks.empty() ? std::string("?") : terminal_safe(report.ranks.front().identity.hostname);
  out << "preflight " << terminal_safe(report.version) << " · profile " << to_string(report.profile) << " · "
      << (report.world_size > 1 ? std::to_string(report.world_size) + " ranks on " + std::to_string(report.nodes) +
                                      (report.nodes == 1 ? " node" : " nodes")
                                : "host " + host)
      << " · launcher " << terminal_safe(report.launcher)
      << (report.source == "merge" ? " · merged from result files" : "") << "\n\n";

  const Layout layout = lay_out(report);
  std::vector<const Layout::Row*> first = fix_first_rows(layout, options);
  const std::size_t not_shown = first.size() > kFixFirstShown ? first.size() - kFixFirstShown : 0;
  first.resize(first.size() - not_shown);

  std::size_t id_width = 0;
  for (const Layout::Row& row : layout.rows) {
    if (row.members.size() == 1) id_width = std::max(id_width, terminal_safe(row.members.front()->id).size());
  }
  id_width += 2;
  const std::string indent(11 + id_width, ' ');

  for (const Layout::Row& row : layout.rows) {
    const CheckResult& r = *row.members.front();
    const Status s = r.verdict.status;
    const std::vector<std::string> ids = ids_of(row.members);
    const std::string id_cell = ids.size() == 1 ? pad(ids.front(), id_width) : join(ids, ", ") + "  ";
    out << "  " << paint(pad(to_string(s), 9), color_of(s), color) << id_cell << where(r, report)
        << terminal_safe(r.verdict.summary) << "\n";
    const bool fixed_below = std::find(first.begin(), first.end(), &row) != first.end();
    if (s != Status::Pass && s != Status::Skip && !r.verdict.remedy.empty() && (!fixed_below || options.verbose)) {
      out << indent << paint("fix: ", "\033[1m", color) << terminal_safe(r.verdict.remedy) << "\n";
    }
    out << table_lines(r.verdict.evidence, indent);
    if (options.verbose && !r.verdict.evidence.empty()) {
      out << indent << paint("evidence: ", "\033[2m", color) << evidence_line(r.verdict.evidence) << "\n";
    }
    out << consequence_lines(row.consequences, indent, options.verbose, color);
  }

  for (const std::string& note : report.notes) {
    out << "\n" << paint("NOTE ", "\033[1m", color) << terminal_safe(note) << "\n";
  }
  for (const std::string& incident : report.incidents) {
    out << "\n" << paint("DEADLINE ", color_of(Status::Fail), color) << terminal_safe(incident) << "\n";
  }

  out << fix_first(first, not_shown, report, color);

  const Counts c = count(report);
  const Status all = overall(report, options.strict);
  const std::string duration = fixed(report.duration_ms / 1000.0, 2) + " s";
  // The headline word is the overall status; an expired deadline is said as such, not as a FAIL
  // nothing failed.
  const std::string headline = report.deadline_expired ? "DEADLINE" : to_string(all);
  out << "\n"
      << paint(headline, color_of(report.deadline_expired ? Status::Fail : all), color) << ": " << c.of(Status::Pass)
      << " PASS · " << c.of(Status::Warn) << " WARN · " << c.of(Status::Fail) << " FAIL · " << c.of(Status::Skip)
      << " SKIP · " << c.of(Status::Unknown) << " UNKNOWN · " << duration
      << (options.strict ? " · strict (WARN counts as FAIL)" : "") << "\n";
  return out.str();
}

}  // namespace preflight
