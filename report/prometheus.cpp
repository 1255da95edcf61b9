// SPDX-License-Identifier: MIT
// Prometheus textfile (node_exporter's textfile collector): per check and host, one
// preflight_check_status series per status (1 for the status that applies), the run's duration,
// timestamp and exit code, and measured values that dashboards plot.
#include <chrono>
#include <sstream>

#include "core/text.hpp"
#include "report/report.hpp"

namespace preflight {
namespace {

/// Label values escape backslash, double quote and newline; other bytes are made printable.
std::string label(std::string_view raw) {
  std::string out;
  for (char ch : printable(raw, 200)) {
    if (ch == '\\' || ch == '"') out += '\\';
    out += ch;
  }
  return out;
}

void family(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

}  // namespace

std::string render_prometheus(const Report& report, const Options& options) {
  std::ostringstream out;
  family(out, "preflight_check_status", "gauge",
         "1 for the status of the check on the host, 0 for the other statuses (PASS, WARN, FAIL, SKIP, UNKNOWN).");
  for (const CheckResult& r : report.results) {
    for (const std::string& host : r.hosts) {
      for (Status s : {Status::Pass, Status::Warn, Status::Fail, Status::Skip, Status::Unknown}) {
        out << "preflight_check_status{check=\"" << label(r.id) << "\",host=\"" << label(host) << "\",status=\""
            << to_string(s) << "\"} " << (r.verdict.status == s ? 1 : 0) << "\n";
      }
    }
  }

  const std::string host = report.ranks.empty() ? std::string() : label(report.ranks.front().identity.hostname);
  family(out, "preflight_run_duration_seconds", "gauge", "Wall-clock time of the last preflight run.");
  out << "preflight_run_duration_seconds{host=\"" << host << "\"} " << report.duration_ms / 1000.0 << "\n";
  family(out, "preflight_last_run_timestamp_seconds", "gauge", "Unix time at which the last preflight run ended.");
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  out << "preflight_last_run_timestamp_seconds{host=\"" << host << "\"} " << now.count() << "\n";
  family(out, "preflight_exit_code", "gauge", "Exit code of the last run (0 ok, 1 FAIL, 3 UNKNOWN, 4 deadline).");
  out << "preflight_exit_code{host=\"" << host << "\"} " << exit_code(report, options.strict) << "\n";

  family(out, "preflight_shm_bytes", "gauge", "/dev/shm size, free space and what the node's ranks need.");
  for (const CheckResult& r : report.results) {
    if (r.id != "shm.capacity") continue;
    for (const char* key : {"total_bytes", "free_bytes", "required_bytes"}) {
      if (r.verdict.evidence.contains(key) && r.verdict.evidence[key].is_number()) {
        out << "preflight_shm_bytes{host=\"" << host << "\",kind=\"" << std::string_view(key).substr(0, std::string_view(key).find('_'))
            << "\"} " << r.verdict.evidence[key].get<std::uint64_t>() << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace preflight
