// SPDX-License-Identifier: MIT
#include "core/verdict.hpp"

namespace preflight {

const char* to_string(Status s) {
  switch (s) {
    case Status::Pass: return "PASS";
    case Status::Warn: return "WARN";
    case Status::Fail: return "FAIL";
    case Status::Skip: return "SKIP";
    case Status::Unknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

std::optional<Status> status_from_string(std::string_view text) {
  for (Status s : kStatuses) {
    if (text == to_string(s)) return s;
  }
  return std::nullopt;
}

int severity(Status s) { return static_cast<int>(s); }

Status worst(Status a, Status b) { return severity(a) >= severity(b) ? a : b; }

Verdict Verdict::pass(std::string summary, nlohmann::json evidence) {
  return {Status::Pass, std::move(summary), {}, std::move(evidence)};
}
Verdict Verdict::warn(std::string summary, std::string remedy, nlohmann::json evidence) {
  return {Status::Warn, std::move(summary), std::move(remedy), std::move(evidence)};
}
Verdict Verdict::fail(std::string summary, std::string remedy, nlohmann::json evidence) {
  return {Status::Fail, std::move(summary), std::move(remedy), std::move(evidence)};
}
Verdict Verdict::skip(std::string reason, nlohmann::json evidence) {
  return {Status::Skip, std::move(reason), {}, std::move(evidence)};
}
Verdict Verdict::unknown(std::string summary, std::string remedy, nlohmann::json evidence) {
  return {Status::Unknown, std::move(summary), std::move(remedy), std::move(evidence)};
}

void VerdictBuilder::add(Status s, std::string summary, std::string remedy) {
  m_status = worst(m_status, s);
  m_findings.push_back({s, std::move(summary), std::move(remedy)});
}

Verdict VerdictBuilder::build() const {
  Verdict v;
  v.status = m_status;
  v.evidence = m_evidence;
  for (const Finding& f : m_findings) {
    if (f.status == m_status && !f.summary.empty()) {
      if (!v.summary.empty()) v.summary += "; ";
      v.summary += f.summary;
    }
  }
  // A lesser finding whose remedy is printed is named too: no fix without its problem.
  for (Status level : {Status::Fail, Status::Unknown, Status::Warn, Status::Skip}) {
    if (level == m_status) continue;
    for (const Finding& f : m_findings) {
      if (f.status == level && !f.remedy.empty() && !f.summary.empty()) {
        v.summary += (v.summary.empty() ? "" : "; ") + std::string("also ") + to_string(level) + ": " + f.summary;
      }
    }
  }
  // The remedies of every non-PASS finding, worst first.
  for (Status level : {Status::Fail, Status::Unknown, Status::Warn, Status::Skip}) {
    for (const Finding& f : m_findings) {
      if (f.status == level && !f.remedy.empty() && v.remedy.find(f.remedy) == std::string::npos) {
        if (!v.remedy.empty()) v.remedy += " ";
        v.remedy += f.remedy;
      }
    }
  }
  if (v.summary.empty()) v.summary = "no findings";
  return v;
}

}  // namespace preflight
