// SPDX-License-Identifier: MIT
// The five statuses and the verdict a check returns.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace preflight {

/// Ordered by severity for "worst of": Pass < Skip < Warn < Unknown < Fail.
enum class Status { Pass, Skip, Warn, Unknown, Fail };
/// Every status, in the order reports list them.
inline constexpr Status kStatuses[] = {Status::Pass, Status::Warn, Status::Fail, Status::Skip, Status::Unknown};

const char* to_string(Status s);
std::optional<Status> status_from_string(std::string_view text);
int severity(Status s);
Status worst(Status a, Status b);

struct Verdict {
  Status status = Status::Unknown;
  std::string summary;           // one line with the actual numbers
  std::string remedy;            // the exact fix; empty on PASS
  nlohmann::json evidence = nlohmann::json::object();

  static Verdict pass(std::string summary, nlohmann::json evidence = nlohmann::json::object());
  static Verdict warn(std::string summary, std::string remedy, nlohmann::json evidence = nlohmann::json::object());
  static Verdict fail(std::string summary, std::string remedy, nlohmann::json evidence = nlohmann::json::object());
  static Verdict skip(std::string reason, nlohmann::json evidence = nlohmann::json::object());
  static Verdict unknown(std::string summary, std::string remedy, nlohmann::json evidence = nlohmann::json::object());
};

/// Several findings of one check fold into one verdict: the worst status wins, the summaries of
/// that status are joined with "; " and every remedy of a non-PASS finding is kept.
class VerdictBuilder {
 public:
  void add(Status s, std::string summary, std::string remedy = {});
  void note(std::string summary) { add(Status::Pass, std::move(summary)); }
  nlohmann::json& evidence() { return m_evidence; }
  Status status() const { return m_status; }
  Verdict build() const;

 private:
  struct Finding {
    Status status;
    std::string summary;
    std::string remedy;
  };
  Status m_status = Status::Pass;
  std::vector<Finding> m_findings;
  nlohmann::json m_evidence = nlohmann::json::object();
};

}  // namespace preflight
