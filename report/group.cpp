// SPDX-License-Identifier: MIT
// Grouping of per-rank results and the JSON form of one check result.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "core/text.hpp"
#include "report/report.hpp"

namespace preflight {
namespace {

Scope scope_from_string(const std::string& text) {
  if (text == "rank") return Scope::Rank;
  if (text == "node") return Scope::Node;
  if (text == "job") return Scope::Job;
  // The value is not quoted: it comes from a file (core/redact.hpp's rule for what files hold).
  throw std::invalid_argument("\"scope\" is none of rank, node, job (a string of " + std::to_string(text.size()) +
                              " bytes)");
}

std::size_t registry_position(const std::string& id) {
  const auto checks = all_checks();
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (checks[i]->id == id) return i;
  }
  return checks.size();  // unknown ids (a newer version's file in a merge) go last
}

template <typename T>
void sort_unique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

namespace {

// One implementation for both JSON types: "id" first, then the fields in reading order.
template <typename Json>
void check_to_json(Json& j, const CheckResult& r) {
  j = Json::object();
  j["id"] = r.id;
  j["title"] = r.title;
  j["status"] = to_string(r.verdict.status);
  j["summary"] = r.verdict.summary;
  j["remedy"] = r.verdict.remedy;
  j["scope"] = to_string(r.scope);
  j["hosts"] = r.hosts;
  j["ranks"] = r.ranks;
  j["evidence"] = Json(r.verdict.evidence);
  j["seconds"] = std::round(r.seconds * 1e4) / 1e4;
  j["cause"] = r.verdict.cause.empty() ? Json(nullptr) : Json(r.verdict.cause);
  if (!r.verdict.finding.code.empty()) {
    const Finding& f = r.verdict.finding;
    j["finding"] = Json{{"code", f.code}, {"message", f.message}, {"fix", f.fix}, {"params", Json(f.params)}};
  }
  if (!r.verdict.findings.empty()) {
    Json all = Json::array();
    for (const Finding& f : r.verdict.findings) {
      all.push_back(Json{{"code", f.code}, {"status", to_string(f.status)}, {"params", Json(f.params)}});
    }
    j["findings"] = std::move(all);
  }
}

template <typename Json>
void check_from_json(const Json& j, CheckResult& r) {
  r.id = j.at("id").template get<std::string>();
  r.area = r.id.substr(0, r.id.find('.'));
  r.title = j.value("title", std::string());
  const std::string status = j.at("status").template get<std::string>();
  const std::optional<Status> s = status_from_string(status);
  if (!s) {
    throw std::invalid_argument("\"status\" is none of PASS, WARN, FAIL, SKIP, UNKNOWN (a string of " +
                                std::to_string(status.size()) + " bytes)");
  }
  r.verdict.status = *s;
  r.verdict.summary = j.value("summary", std::string());
  r.verdict.remedy = j.value("remedy", std::string());
  if (j.contains("evidence")) {
    const Json& ev = j.at("evidence");
    if (!ev.is_object()) throw std::invalid_argument("its \"evidence\" is not an object");
    if constexpr (std::is_same_v<Json, nlohmann::json>) {
      r.verdict.evidence = ev;
    } else {
      r.verdict.evidence = nlohmann::json::parse(ev.dump());  // rare: the report's own ordered documents
    }
  } else {
    r.verdict.evidence = nlohmann::json::object();
  }
  r.scope = scope_from_string(j.at("scope").template get<std::string>());
  r.hosts = j.value("hosts", std::vector<std::string>());
  r.ranks = j.value("ranks", std::vector<int>());
  r.seconds = j.contains("seconds") && j.at("seconds").is_number()
                  ? std::max(0.0, j.at("seconds").template get<double>())
                  : 0.0;
  r.verdict.cause =
      j.contains("cause") && j.at("cause").is_string() ? j.at("cause").template get<std::string>() : std::string();
  r.verdict.finding = {};
  if (j.contains("finding") && j.at("finding").is_object()) {
    const Json& f = j.at("finding");
    r.verdict.finding.code = f.value("code", std::string());
    r.verdict.finding.message = f.value("message", std::string());
    r.verdict.finding.fix = f.value("fix", std::string());
    if (f.contains("params") && f.at("params").is_object()) {
      r.verdict.finding.params = nlohmann::json::parse(f.at("params").dump());
    }
    r.verdict.finding.status = r.verdict.status;
  }
  r.verdict.findings.clear();
  if (j.contains("findings") && j.at("findings").is_array()) {
    for (const Json& f : j.at("findings")) {
      if (!f.is_object() || !f.contains("code") || !f.at("code").is_string()) continue;
      Finding one;
      one.code = f.at("code").template get<std::string>();
      const std::optional<Status> fs = status_from_string(f.value("status", std::string()));
      one.status = fs.value_or(Status::Unknown);
      if (f.contains("params") && f.at("params").is_object()) one.params = nlohmann::json::parse(f.at("params").dump());
      r.verdict.findings.push_back(std::move(one));
    }
  }
}

}  // namespace

void to_json(nlohmann::json& j, const CheckResult& r) { check_to_json(j, r); }
void to_json(nlohmann::ordered_json& j, const CheckResult& r) { check_to_json(j, r); }
void from_json(const nlohmann::json& j, CheckResult& r) { check_from_json(j, r); }
void from_json(const nlohmann::ordered_json& j, CheckResult& r) { check_from_json(j, r); }

namespace {

/// The values one parameter took across a group, as the row says them: numbers as ranges
/// ("1–15"), anything else as a short list ("gpu-a, gpu-b, and 3 more").
nlohmann::json said_together(const std::vector<const nlohmann::json*>& values) {
  bool all_int = true;
  std::vector<int> numbers;
  std::vector<std::string> texts;
  for (const nlohmann::json* v : values) {
    if (v->is_number_integer() && v->get<std::int64_t>() >= 0 && v->get<std::int64_t>() < (1 << 30)) {
      numbers.push_back(static_cast<int>(v->get<std::int64_t>()));
    } else {
      all_int = false;
    }
    texts.push_back(v->is_string() ? v->get<std::string>()
                                   : v->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  if (all_int) {
    sort_unique(numbers);
    return range_list(numbers);
  }
  sort_unique(texts);
  constexpr std::size_t kNamed = 3;
  if (texts.size() <= kNamed) return join(texts, ", ");
  std::vector<std::string> head(texts.begin(), texts.begin() + kNamed);
  return join(head, ", ") + " and " + std::to_string(texts.size() - kNamed) + " more";
}

/// Who a group member speaks for in the per-rank evidence: "rank 3", or the host of a node result.
std::string member_label(const CheckResult& r) {
  if (r.scope == Scope::Node && !r.hosts.empty()) return r.hosts.front();
  return r.ranks.empty() ? std::string("?")
                         : "rank " + std::to_string(*std::min_element(r.ranks.begin(), r.ranks.end()));
}

/// A coded finding shared by several members: the parameters every member agrees on stay as they
/// are, the others are said together in the row and kept per member in the evidence ("per_rank").
void settle_parameters(CheckResult& group, const std::vector<std::pair<std::string, nlohmann::json>>& members) {
  Finding& f = group.verdict.finding;
  if (members.size() < 2 || !f.params.is_object()) return;
  nlohmann::json shown = nlohmann::json::object();
  nlohmann::json per_member = nlohmann::json::object();
  for (const auto& [name, first] : f.params.items()) {
    std::vector<const nlohmann::json*> values;
    bool same = true;
    for (const auto& [label, params] : members) {
      const auto it = params.find(name);
      const nlohmann::json* v = it == params.end() ? &first : &*it;
      values.push_back(v);
      same = same && *v == first;
    }
    if (same) {
      shown[name] = first;
      continue;
    }
    shown[name] = said_together(values);
    for (std::size_t i = 0; i < members.size(); ++i) per_member[members[i].first][name] = *values[i];
  }
  group.verdict.summary = render_template(f.message, shown);
  group.verdict.remedy = render_template(f.fix, shown);
  if (!per_member.empty()) {
    if (!group.verdict.evidence.is_object()) group.verdict.evidence = nlohmann::json::object();
    group.verdict.evidence[group.scope == Scope::Node ? "per_host" : "per_rank"] = std::move(per_member);
  }
}

}  // namespace

namespace {

// Whether `cause` (a non-PASS result of the cause check) explains `r`: wrong on one of r's ranks,
// and holding the finding r's verdict names (`code`), or else one of the findings r's check
// declares for it, where it declares findings.
bool explains(const CheckSpec& spec, const CheckResult& r, const CheckResult& cause, std::string_view code) {
  const bool overlaps =
      r.ranks.empty() || cause.ranks.empty() || std::any_of(r.ranks.begin(), r.ranks.end(), [&](int rank) {
        return std::find(cause.ranks.begin(), cause.ranks.end(), rank) != cause.ranks.end();
      });
  if (!overlaps) return false;
  std::vector<std::string_view> codes = explaining_findings(spec, cause.id);
  if (!code.empty()) {
    if (!codes.empty() && std::find(codes.begin(), codes.end(), code) == codes.end()) return false;
    codes = {code};
  }
  if (codes.empty()) return true;
  return std::any_of(cause.verdict.findings.begin(), cause.verdict.findings.end(), [&](const Finding& f) {
    return f.status != Status::Pass && std::find(codes.begin(), codes.end(), f.code) != codes.end();
  });
}

}  // namespace

void settle_causes(std::vector<CheckResult>& results) {
  // The results of each check that are not PASS (nor SKIP): a cause must be wrong where its
  // consequence is, with a finding that explains it.
  std::unordered_map<std::string, std::vector<std::size_t>> wrong;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CheckResult& r = results[i];
    if (r.verdict.status != Status::Pass && r.verdict.status != Status::Skip) wrong[r.id].push_back(i);
  }
  for (CheckResult& r : results) {
    if (r.verdict.cause.empty()) continue;
    const CheckSpec* spec = find_check(r.id);
    std::string settled;
    // Each candidate is a check id, or one of its finding codes ("nccl.library/not-found").
    for (std::string_view candidate : split(r.verdict.cause, ',')) {
      candidate = trim(candidate);
      const std::string_view check = candidate.substr(0, candidate.find('/'));
      const std::string_view code = check.size() < candidate.size() ? candidate : std::string_view();
      if (spec == nullptr || check == r.id || !may_follow_from(*spec, check)) continue;
      const auto it = wrong.find(std::string(check));
      if (it == wrong.end()) continue;
      if (std::any_of(it->second.begin(), it->second.end(),
                      [&](std::size_t i) { return explains(*spec, r, results[i], code); })) {
        settled = std::string(check);
        break;
      }
    }
    r.verdict.cause = std::move(settled);
  }
}

std::vector<CheckResult> group_results(std::vector<CheckResult> results, bool per_rank) {
  using Key = std::tuple<std::size_t, std::string, int, std::string, std::string, std::string, int>;
  std::map<Key, CheckResult> groups;
  std::map<Key, int> lowest;
  std::map<Key, std::vector<std::pair<std::string, nlohmann::json>>> params;  // coded groups: each member's parameters
  for (CheckResult& r : results) {
    const int first_rank = r.ranks.empty() ? -1 : *std::min_element(r.ranks.begin(), r.ranks.end());
    // Worst status first within a check: severity descending. PASS and SKIP group by status
    // alone (their summaries carry each rank's own numbers; the lowest rank's is shown); WARN,
    // FAIL and UNKNOWN by their finding: its code and templates when the check states one (the
    // parameters may differ: they are the ranks' own values), else the same summary and remedy,
    // since the difference is the news. A result that follows from another check's stays apart
    // from one that stands alone.
    const bool by_status = r.verdict.status == Status::Pass || r.verdict.status == Status::Skip;
    const Finding& f = r.verdict.finding;
    const bool coded = !by_status && !f.code.empty();
    std::string what = by_status ? std::string() : coded ? f.code + '\n' + f.message : r.verdict.summary;
    std::string fix = by_status ? std::string() : coded ? f.fix : r.verdict.remedy;
    Key key{registry_position(r.id),  r.id,           -severity(r.verdict.status),
            std::move(what),          std::move(fix), by_status ? std::string() : r.verdict.cause,
            per_rank ? first_rank : 0};
    if (coded) params[key].emplace_back(member_label(r), f.params);
    auto it = groups.find(key);
    if (it == groups.end()) {
      lowest[key] = first_rank;
      groups.emplace(std::move(key), std::move(r));
    } else {
      it->second.seconds = std::max(it->second.seconds, r.seconds);
      int& low = lowest[key];
      if (first_rank >= 0 && first_rank < low) {
        it->second.verdict = std::move(r.verdict);  // the lowest rank speaks for the group
        low = first_rank;
      }
      // Appended now, sorted once below: sorting on every merge would be quadratic in the ranks.
      it->second.ranks.insert(it->second.ranks.end(), r.ranks.begin(), r.ranks.end());
      it->second.hosts.insert(it->second.hosts.end(), r.hosts.begin(), r.hosts.end());
    }
  }
  for (auto& [key, r] : groups) {
    sort_unique(r.ranks);
    sort_unique(r.hosts);
    const auto members = params.find(key);
    if (members != params.end()) settle_parameters(r, members->second);
  }
  std::vector<std::pair<Key, CheckResult>> ordered(std::make_move_iterator(groups.begin()),
                                                   std::make_move_iterator(groups.end()));
  // Within one check and status, the group that starts with the lowest rank first.
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    const auto lead = [](const auto& e) {
      return std::make_tuple(std::get<0>(e.first), std::get<2>(e.first),
                             e.second.ranks.empty() ? -1 : e.second.ranks.front());
    };
    return lead(a) < lead(b);
  });
  std::vector<CheckResult> out;
  out.reserve(ordered.size());
  for (auto& [key, r] : ordered) out.push_back(std::move(r));
  return out;
}

}  // namespace preflight
