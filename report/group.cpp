// SPDX-License-Identifier: MIT
// Grouping of per-rank results and the JSON form of one check result.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

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
void add_unique(std::vector<T>& into, const std::vector<T>& from) {
  into.insert(into.end(), from.begin(), from.end());
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

}  // namespace

void to_json(nlohmann::json& j, const CheckResult& r) {
  j = nlohmann::json{
      {"id", r.id},
      {"title", r.title},
      {"status", to_string(r.verdict.status)},
      {"summary", r.verdict.summary},
      {"remedy", r.verdict.remedy},
      {"scope", to_string(r.scope)},
      {"hosts", r.hosts},
      {"ranks", r.ranks},
      {"evidence", r.verdict.evidence},
  };
}

void from_json(const nlohmann::json& j, CheckResult& r) {
  r.id = j.at("id").get<std::string>();
  r.area = r.id.substr(0, r.id.find('.'));
  r.title = j.value("title", std::string());
  const std::string status = j.at("status").get<std::string>();
  const std::optional<Status> s = status_from_string(status);
  if (!s) throw std::invalid_argument("unknown status '" + status + "'");
  r.verdict.status = *s;
  r.verdict.summary = j.value("summary", std::string());
  r.verdict.remedy = j.value("remedy", std::string());
  r.verdict.evidence = j.contains("evidence") ? j.at("evidence") : nlohmann::json::object();
  r.scope = scope_from_string(j.at("scope").get<std::string>());
  r.hosts = j.value("hosts", std::vector<std::string>());
  r.ranks = j.value("ranks", std::vector<int>());
}

std::vector<CheckResult> group_results(std::vector<CheckResult> results, bool per_rank) {
  using Key = std::tuple<std::size_t, std::string, int, std::string, std::string, int>;
  std::map<Key, CheckResult> groups;
  for (CheckResult& r : results) {
    const int first_rank = r.ranks.empty() ? -1 : *std::min_element(r.ranks.begin(), r.ranks.end());
    // Worst status first within a check: severity descending.
    Key key{registry_position(r.id), r.id, -severity(r.verdict.status), r.verdict.summary, r.verdict.remedy,
            per_rank ? first_rank : 0};
    auto it = groups.find(key);
    if (it == groups.end()) {
      groups.emplace(std::move(key), std::move(r));
    } else {
      add_unique(it->second.ranks, r.ranks);
      add_unique(it->second.hosts, r.hosts);
    }
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
