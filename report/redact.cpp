// SPDX-License-Identifier: MIT
// The report as every renderer shows it: each string it holds through the one redaction rule of
// core/redact.hpp, with the secrets of every rank's environment and NCCL configuration files known.
#include "report/report.hpp"

namespace preflight {
namespace {

void redact_string(const Redactor& redactor, std::string& text) {
  if (redactor.may_change(text)) text = redactor.text(text);
}

void redact_strings(const Redactor& redactor, std::vector<std::string>& texts) {
  for (std::string& t : texts) redact_string(redactor, t);
}

void redact_finding(const Redactor& redactor, Finding& finding) {
  redact_string(redactor, finding.message);
  redact_string(redactor, finding.fix);
  redactor.json(finding.params);
}

void redact_result(const Redactor& redactor, CheckResult& result) {
  Verdict& v = result.verdict;
  redact_string(redactor, v.summary);
  redact_string(redactor, v.remedy);
  redact_string(redactor, v.cause);
  redactor.json(v.evidence);
  redact_finding(redactor, v.finding);
  for (Finding& f : v.findings) redact_finding(redactor, f);
  redact_strings(redactor, result.hosts);
}

void redact_status(const Redactor& redactor, RankStatus& status) {
  redact_string(redactor, status.host);
  redact_string(redactor, status.payload_error);
  redact_string(redactor, status.parting);
}

void redact_comm(const Redactor& redactor, CommResult& comm) {
  redact_string(redactor, comm.note);
  redact_strings(redactor, comm.errors);
}

}  // namespace

Redactor report_redactor(const Report& report) {
  Redactor redactor;
  for (const RankFacts& f : report.ranks) {
    redactor.add_env(f.env);
    for (const ConfFile& file : f.nccl_conf.files) {
      if (const ConfFileContents* contents = file.contents.value()) {
        for (const ConfEntry& e : contents->entries) redactor.add_variable(e.name, e.value);
      }
    }
  }
  return redactor;
}

Report redact_report(const Report& report, const Redactor& redactor) {
  Report out = report;
  for (CheckResult& r : out.results) redact_result(redactor, r);
  redact_strings(redactor, out.incidents);
  redact_strings(redactor, out.notes);
  redact_string(redactor, out.reach_note);
  redact_string(redactor, out.launcher);
  if (out.reach_target) redact_string(redactor, out.reach_target->address);
  for (RankStatus& s : out.missing) redact_status(redactor, s);
  for (RankStatus& s : out.lost) redact_status(redactor, s);
  redact_comm(redactor, out.barrier);
  redact_comm(redactor, out.allreduce);
  for (RankFacts& f : out.ranks) {
    f.env = redactor.env(f.env);
    redact_string(redactor, f.identity.hostname);
  }
  return out;
}

}  // namespace preflight
