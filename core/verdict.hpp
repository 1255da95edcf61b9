// SPDX-License-Identifier: MIT
// The five statuses and the verdict a check returns.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// A finding as data: a stable code ("launch.env/rank-mismatch"), its message as a template with
/// `{name}` parameters, and their values. Results of one check that carry the same code and
/// template are one finding however their parameters differ (the rank, the host, a GPU index):
/// the report groups them into one row that names every rank, with each rank's values kept.
struct Finding {
  std::string code = {};                             // "" when the verdict is plain text (grouped by its text)
  Status status = Status::Pass;                      // the finding's own status (the verdict's is the worst of them)
  std::string message = {};                          // the summary with {name} where a parameter goes
  std::string fix = {};                              // the remedy, a template too
  nlohmann::json params = nlohmann::json::object();  // name -> data: a number, a string, or lists/objects of them
};

/// One finding a check can report, declared in the check's table (CheckSpec::findings, next to its
/// run() in checks/<id>.cpp): a stable code "<check id>/<what>", its status, and its message and fix
/// as templates over named parameters ({name}). `preflight explain ID` lists them; JSON results
/// carry the findings a run reported by code, status and parameters.
struct FindingSpec {
  std::string_view code;  // "shm.capacity/too-small"
  Status status;
  std::string_view message;  // "{path} is {size}; {need}"
  std::string_view fix;      // "" for a PASS note
};

/// `text` with every {name} that `params` holds replaced by its value (a string as it is, a template
/// parameter rendered in place, anything else as JSON writes it); other braces stay as they are.
std::string render_template(std::string_view text, const nlohmann::json& params);

/// A parameter whose value is itself a template over the finding's other parameters: a binding
/// command that names {local_rank}, a list "RANK={claimed0} but …" whose values are parameters.
/// Verdict::coded and VerdictBuilder::add write it into the message and the fix in place of its
/// {name}, unrendered, before anything is rendered: findings that differ only in the parameters it
/// names share one template and group into one row, each rank keeping its own values. It is then
/// taken out of the finding's params (its text is in the templates).
nlohmann::json template_param(std::string text);
/// `text` with each {name} whose parameter is a template_param replaced by that template (once: a
/// template is not expanded again).
std::string splice_template_params(std::string_view text, const nlohmann::json& params);

struct Verdict {
  Status status = Status::Unknown;
  std::string summary;  // one line with the actual numbers
  std::string remedy;   // the exact fix; empty on PASS
  nlohmann::json evidence = nlohmann::json::object();
  Finding finding = {};                // the finding that decides the status, when the check states it as data
  std::vector<Finding> findings = {};  // every coded finding of the verdict, worst first (JSON: findings)
  /// The check whose non-PASS result explains this one ("driver.loaded" for every GPU check on a
  /// node without a driver): one of the causes its CheckSpec declares. The result keeps its own
  /// status; the report prints it as one short line under its cause. "" when it stands alone.
  /// A check may name candidates, comma-separated, in order ("launch.gpu_binding,nccl.library"):
  /// the report keeps the first that is not PASS on the result's ranks (settle_causes), or none.
  std::string cause = {};

  /// This verdict stated as a finding: summary and remedy are the templates rendered with `params`.
  static Verdict coded(Status s, std::string code, std::string message, std::string fix, nlohmann::json params,
                       nlohmann::json evidence = nlohmann::json::object());
  /// The verdict of one declared finding.
  static Verdict of(const FindingSpec& spec, nlohmann::json params = nlohmann::json::object(),
                    nlohmann::json evidence = nlohmann::json::object());
  /// The same verdict, marked as following from `check`'s non-PASS result.
  Verdict&& because(std::string check) && {
    cause = std::move(check);
    return std::move(*this);
  }

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
  /// A finding with a code: its message and fix are templates over `params` (see Finding).
  void add(Status s, std::string code, std::string message, std::string fix, nlohmann::json params);
  /// A finding of the check's table (CheckSpec::findings) with its parameters.
  void add(const FindingSpec& spec, nlohmann::json params = nlohmann::json::object());
  void note(std::string summary) { add(Status::Pass, std::move(summary)); }
  nlohmann::json& evidence() { return m_evidence; }
  Status status() const { return m_status; }
  Verdict build() const;

 private:
  struct Item {
    Status status;
    std::string code;
    std::string message;  // a template when coded, else plain text
    std::string fix;
    nlohmann::json params = nlohmann::json::object();
  };
  Status m_status = Status::Pass;
  std::vector<Item> m_findings;
  nlohmann::json m_params = nlohmann::json::object();
  bool m_params_collide = false;  // two findings gave one parameter name different values
  nlohmann::json m_evidence = nlohmann::json::object();
};

}  // namespace preflight
