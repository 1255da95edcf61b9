// SPDX-License-Identifier: MIT
// Grouping of per-rank results and the JSON form of one check result.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>
#include <type_traits>

#include "report/report.hpp"

namespace preflight {
namespace {

Scope scope_from_string(const std::string& text) {
  if (text == "rank") return Scope::Rank;
  if (text == "node") return Scope::Node;
  if (text == "job") return Scope::Job;
  throw std::invalid_argument("unknown scope '" + text + "'");
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
}

template <typename Json>
void check_from_json(const Json& j, CheckResult& r) {
  r.id = j.at("id").template get<std::string>();
  r.area = r.id.substr(0, r.id.find('.'));
  r.title = j.value("title", std::string());
  const std::string status = j.at("status").template get<std::string>();
  const std::optional<Status> s = status_from_string(status);
  if (!s) throw std::invalid_argument("unknown status '" + status + "'");
  r.verdict.status = *s;
  r.verdict.summary = j.value("summary", std::string());
  r.verdict.remedy = j.value("remedy", std::string());
  if (j.contains("evidence")) {
    const Json& ev = j.at("evidence");
    if (!ev.is_object()) throw std::invalid_argument("evidence of '" + r.id + "' is not an object");
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
  r.seconds = j.contains("seconds") && j.at("seconds").is_number() ? std::max(0.0, j.at("seconds").template get<double>()) : 0.0;
}

}  // namespace

void to_json(nlohmann::json& j, const CheckResult& r) { check_to_json(j, r); }
void to_json(nlohmann::ordered_json& j, const CheckResult& r) { check_to_json(j, r); }
void from_json(const nlohmann::json& j, CheckResult& r) { check_from_json(j, r); }
void from_json(const nlohmann::ordered_json& j, CheckResult& r) { check_from_json(j, r); }

std::vector<CheckResult> group_results(std::vector<CheckResult> results, bool per_rank) {
  using Key = std::tuple<std::size_t, std::string, int, std::string, std::string, int>;
  std::map<Key, CheckResult> groups;
  std::map<Key, int> lowest;
  for (CheckResult& r : results) {
    const int first_rank = r.ranks.empty() ? -1 : *std::min_element(r.ranks.begin(), r.ranks.end());
    // Worst status first within a check: severity descending. PASS and SKIP group by status
    // alone (their summaries carry each rank's own numbers; the lowest rank's is shown); WARN,
    // FAIL and UNKNOWN only with the same summary and remedy, since the difference is the news.
    const bool by_status = r.verdict.status == Status::Pass || r.verdict.status == Status::Skip;
    Key key{registry_position(r.id), r.id, -severity(r.verdict.status), by_status ? std::string() : r.verdict.summary,
            by_status ? std::string() : r.verdict.remedy, per_rank ? first_rank : 0};
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
