// SPDX-License-Identifier: MIT
// The report: one result per check instance, the world it ran in, the facts of every rank.
// Renderers (text, JSON) read it; the exit code is a function of it.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.hpp"
#include "core/facts.hpp"
#include "core/job.hpp"
#include "core/options.hpp"
#include "core/redact.hpp"
#include "core/verdict.hpp"

namespace preflight {

/// One check's verdict for the ranks (and hosts) it applies to. Per rank before grouping; after
/// grouping, one result per distinct verdict of a check.
struct CheckResult {
  std::string id;
  std::string area;
  std::string title;
  Scope scope = Scope::Node;
  Verdict verdict;
  std::vector<std::string> hosts;
  std::vector<int> ranks;
  double seconds =
      0;  // gathering its facts (the probes or phases it reads) and judging them; the slowest rank's when grouped
};

/// The JSON report's form of a check item: {"id","title","status","summary","remedy","scope",
/// "hosts","ranks","evidence"}. from_json throws nlohmann::json::exception (or std::invalid_argument
/// for an unknown status or scope) on malformed input.
/// The ordered_json forms keep that key order in documents (the JSON report); the plain ones are
/// for payloads.
void to_json(nlohmann::json& j, const CheckResult& r);
void from_json(const nlohmann::json& j, CheckResult& r);
void to_json(nlohmann::ordered_json& j, const CheckResult& r);
void from_json(const nlohmann::ordered_json& j, CheckResult& r);

/// Identical verdicts of one check from many ranks become one result: the key is (id, status,
/// summary, remedy) — for PASS and SKIP (id, status), the lowest rank's summary shown; ranks and hosts are merged
/// (sorted, unique) and the first rank's evidence is kept. Results come out in check-registry order, the worst group of
/// a check first. With `per_rank` (-v) nothing is merged: one result per rank, in rank order.
std::vector<CheckResult> group_results(std::vector<CheckResult> results, bool per_rank = false);

/// Keeps each result's cause (Verdict::cause) only where it holds: the first candidate its check
/// declares (CheckSpec::causes) whose own result is not PASS or SKIP on one of the result's ranks;
/// otherwise the result stands alone. Run over the per-rank results, before group_results.
void settle_causes(std::vector<CheckResult>& results);

struct Report {
  std::string version;
  Profile profile = Profile::Node;
  int world_size = 1;
  int nodes = 1;
  std::string launcher;  // "none", "openmpi", "slurm", ...
  double duration_ms = 0;
  bool deadline_expired = false;       // a probe or rank did not finish in time
  std::vector<std::string> incidents;  // what expired: "probe 'shm' did not finish within 60.0 s"
  std::vector<CheckResult> results;
  std::vector<RankFacts> ranks;
  // The job the report covers (assemble_report copies them from JobFacts).
  std::string source = "none";      // "mpi" (gathered), "merge" (files), "none" (one process)
  std::vector<RankStatus> missing;  // ranks that did not deliver their facts, with what is known of them
  std::vector<RankStatus> lost;  // ranks whose process ended or whose host stopped answering (rank 0's liveness watch)
  std::optional<ReachTarget> reach_target;  // rank 0's NCCL bootstrap address tested by net.reachability
  std::string reach_note;                   // why there is no reach target
  CommResult barrier;
  CommResult allreduce;
  std::vector<std::string> notes;  // what the reader must know that is no failure ("ranks renumbered ...")
};

struct Counts {
  std::array<int, 5> by_status{};  // indexed by Status
  int of(Status s) const { return by_status[static_cast<std::size_t>(s)]; }
};

/// The checks by status: each check id once, by its worst status over its results (a check that
/// FAILs on one rank and PASSes on fifteen is one FAIL). They sum to the number of checks run.
Counts count(const Report& report);
/// The results by status: one per row of the report (a check's results on different ranks or
/// hosts counted apart).
Counts count_instances(const Report& report);

/// The status a result counts as: under --strict a WARN counts as a FAIL (README.md#exit-codes); every other
/// status, and every status without --strict, counts as itself. The exit code, the overall status,
/// JUnit's failures and the text view's "what to fix first" all judge by it.
Status counted_as(Status s, bool strict);

/// The verdict's exit code (core/exit_code.hpp): Ok (WARN allowed unless strict), Fail (any FAIL, or
/// WARN with strict), Unknown (UNKNOWN and no FAIL), Deadline (a deadline expired, or a helper was
/// stopped by preflight's own budget: ProbeErrc::OutOfBudget in a rank's facts).
int exit_code(const Report& report, bool strict);

/// The run's overall status for the summary line.
Status overall(const Report& report, bool strict);

/// The redaction of every output (core/redact.hpp) for this report: it knows the secret values of
/// every rank's environment and NCCL configuration files.
Redactor report_redactor(const Report& report);
/// A copy of the report with every string a renderer shows through `redactor`: the results'
/// summaries, remedies, causes, findings, evidence and hosts; the notes and incidents; the job's
/// notes, errors, reach target and rank statuses; every rank's host name and environment (a secret
/// variable's value replaced whole). The ranks' other facts are copied as they are: render_json,
/// the one renderer that shows them, scrubs their JSON with the same Redactor. Every renderer
/// renders the report through it, so no output shows what another hides.
Report redact_report(const Report& report, const Redactor& redactor);

std::string render_text(const Report& report, const Options& options, bool color);
/// How a JSON document is laid out: indented for people (--json, --format json), or on one line for
/// a machine (--json-per-rank's files, which `preflight merge` reads by the thousand).
enum class JsonLayout { Indented, Compact };
std::string render_json(const Report& report, const Options& options, JsonLayout layout = JsonLayout::Indented);
std::string render_junit(const Report& report, const Options& options);
std::string render_prometheus(const Report& report, const Options& options);

}  // namespace preflight
