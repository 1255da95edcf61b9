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

std::string render_prometheus(const Report& unredacted, const Options& options) {
  const Report report = redact_report(unredacted, report_redactor(unredacted));
  std::ostringstream out;
  family(out, "preflight_check_status", "gauge",
         "1 for the status of the check on the host, 0 for the other statuses (PASS, WARN, FAIL, SKIP, UNKNOWN).");
  for (const CheckResult& r : report.results) {
    for (const std::string& host : r.hosts) {
      for (Status s : kStatuses) {
        out << "preflight_check_status{check=\"" << label(r.id) << "\",host=\"" << label(host) << "\",status=\""
            << to_string(s) << "\"} " << (r.verdict.status == s ? 1 : 0) << "\n";
      }
    }
  }

  const std::string host = report.ranks.empty() ? std::string() : label(report.ranks.front().identity.hostname);
  family(out, "preflight_run_duration_seconds", "gauge", "Wall-clock time of the last preflight run.");
  out << "preflight_run_duration_seconds{host=\"" << host << "\"} " << report.duration_ms / 1000.0 << "\n";
  family(out, "preflight_last_run_timestamp_seconds", "gauge", "Unix time at which the last preflight run ended.");
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  out << "preflight_last_run_timestamp_seconds{host=\"" << host << "\"} " << now.count() << "\n";
  family(out, "preflight_exit_code", "gauge", "Exit code of the last run (0 ok, 1 FAIL, 3 UNKNOWN, 4 deadline).");
  out << "preflight_exit_code{host=\"" << host << "\"} " << exit_code(report, options.strict) << "\n";

  family(out, "preflight_checks", "gauge", "Checks of the last run by status (each check once, by its worst status).");
  const Counts c = count(report);
  for (Status s : kStatuses) {
    out << "preflight_checks{host=\"" << host << "\",status=\"" << to_string(s) << "\"} " << c.of(s) << "\n";
  }
  family(out, "preflight_check_duration_seconds", "gauge",
         "Time to gather what the check reads (its probes or job phase) and judge it; the slowest rank's.");
  for (const CheckResult& r : report.results) {
    for (const std::string& h : r.hosts) {
      out << "preflight_check_duration_seconds{check=\"" << label(r.id) << "\",host=\"" << label(h) << "\"} "
          << r.seconds << "\n";
    }
  }
  family(out, "preflight_world_size", "gauge", "Ranks in the job the report covers (1 alone).");
  out << "preflight_world_size{host=\"" << host << "\"} " << report.world_size << "\n";

  family(out, "preflight_shm_bytes", "gauge", "/dev/shm size, free space and what the node's ranks need.");
  for (const CheckResult& r : report.results) {
    if (r.id != "shm.capacity") continue;
    for (const std::string& h : r.hosts) {
      for (const char* key : {"total_bytes", "free_bytes", "required_bytes"}) {
        if (r.verdict.evidence.contains(key) && r.verdict.evidence[key].is_number()) {
          const std::string_view k(key);
          out << "preflight_shm_bytes{host=\"" << label(h) << "\",kind=\"" << k.substr(0, k.find('_')) << "\"} "
              << r.verdict.evidence[key].get<std::uint64_t>() << "\n";
        }
      }
    }
  }

  // The job's collectives, where they ran: what dashboards plot against the fabric's floor.
  const CommResult& a = report.allreduce;
  if (a.attempted && a.completed) {
    const std::string labels = "{host=\"" + host + "\",transport=\"" + label(a.transport) + "\"}";
    family(out, "preflight_allreduce_busbw_gbps", "gauge",
           "all_reduce bus bandwidth, GB/s (algbw x 2(n-1)/n), as nccl-tests reports it.");
    out << "preflight_allreduce_busbw_gbps" << labels << " " << a.busbw_gbps << "\n";
    family(out, "preflight_allreduce_algbw_gbps", "gauge", "all_reduce algorithm bandwidth, GB/s (bytes / time).");
    out << "preflight_allreduce_algbw_gbps" << labels << " " << a.algbw_gbps << "\n";
    family(out, "preflight_allreduce_bytes", "gauge", "all_reduce message size per rank, bytes.");
    out << "preflight_allreduce_bytes" << labels << " " << a.bytes << "\n";
    family(out, "preflight_allreduce_ranks", "gauge",
           "all_reduce participants (ranks, or local GPUs in the node profile).");
    out << "preflight_allreduce_ranks" << labels << " " << a.ranks << "\n";
  }
  if (report.barrier.attempted) {
    family(out, "preflight_barrier_seconds", "gauge", "Wall time of the job's barrier on rank 0.");
    out << "preflight_barrier_seconds{host=\"" << host << "\"} " << report.barrier.seconds << "\n";
  }
  return out.str();
}

}  // namespace preflight
