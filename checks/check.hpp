// SPDX-License-Identifier: MIT
// A check is a pure function from facts to a verdict. It never opens a file, a library or a socket,
// so every check is unit-tested on hand-built facts. Each check lives in its own file as one
// CheckSpec and is listed once in checks/registry.cpp.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/fact_sources.hpp"
#include "core/facts.hpp"
#include "core/job.hpp"
#include "core/options.hpp"
#include "core/verdict.hpp"

namespace preflight {

enum class Scope { Rank, Node, Job };
const char* to_string(Scope s);

class CompatMatrix;

/// What a check judges. Rank- and node-scope checks read `facts` (the rank being judged). Job-scope
/// checks run once, on rank 0 (or in `preflight merge`), and read `job`: every rank's facts and how
/// the collective phases went; `facts` is then rank 0's (the first delivered rank's in a merge).
/// `job` is nullptr where nothing was gathered (a single process without a launcher or MPI).
struct CheckContext {
  const RankFacts& facts;
  const Options& options;
  Profile profile;
  const CompatMatrix* matrix = nullptr;  // --matrix DIR; nullptr: the built-in copy
  const JobFacts* job = nullptr;
  /// Node-scope checks that judge the node from every rank's view (CheckSpec::node_view): the
  /// delivered ranks on this host, rank order, `facts` among them. nullptr: `facts` alone.
  const std::vector<const RankFacts*>* host_ranks = nullptr;
};

/// The ranks on this node whose views a node-scope check judges: every delivered rank of the host
/// where rank 0 judges the node with them (CheckSpec::node_view), else this rank alone.
std::vector<const RankFacts*> node_ranks(const CheckContext& ctx);

/// The ranks a job-scope check judges: every delivered rank of the job, or this rank alone where
/// nothing was gathered.
std::vector<const RankFacts*> job_ranks(const CheckContext& ctx);

/// The compatibility matrix a check judges against: --matrix DIR's, else the built-in one.
const CompatMatrix& compat_matrix(const CheckContext& ctx);

/// Which profiles run a check; elsewhere it is SKIP with `skip_reason`.
enum ProfileMask : unsigned { kInNode = 1u, kInJob = 2u, kInImage = 4u, kInAll = 7u };

struct CheckSpec {
  std::string_view id;  // stable, dotted: "shm.capacity"
  Scope scope;
  std::string_view title;        // one line for `preflight list`
  std::string_view explain;      // long form for `preflight explain`: what is read, every failure, the fix
  unsigned profiles;             // ProfileMask bits
  std::string_view skip_reason;  // why it does not run in the other profiles
  Verdict (*run)(const CheckContext&);
  /// Every probe or job phase whose facts it judges (core/fact_sources.hpp), written as names
  /// ("gpu_driver,allreduce", checked when compiled): a run gathers only what its selected checks
  /// read (with what those sources read), and their time is the check's time in the JUnit report.
  FactSources reads = {};
  /// True for node-scope checks whose verdict depends on what every rank of the node sees (the
  /// GPUs of each rank's CUDA_VISIBLE_DEVICES): in a gathered job rank 0 judges them once per host
  /// with every delivered rank of that host (CheckContext::host_ranks).
  bool node_view = false;
  /// The checks whose non-PASS result may explain this one's (comma-separated): a check id (any
  /// of its non-PASS findings explains it) or finding codes of it ("nccl.library/not-found": only a
  /// result with one of those findings does). A verdict that follows from one of them names the
  /// check in Verdict::cause, and the report folds it under that result. A cause a check names that
  /// is not declared here, or whose result lacks the declared findings, is dropped.
  std::string_view causes = {};
  /// What a check that follows from this one lacks, for the folded line under it: "the driver"
  /// prints "FAIL  cuda.smoke, gpu.count  need the driver (see driver.loaded)".
  std::string_view needed_as = {};
  /// For a rank-scope check: a finding only the whole job shows ("every rank claims RANK=0"),
  /// judged once over every delivered rank (CheckContext::job). When it returns a verdict, that one
  /// job-level result replaces the check's per-rank results, whose non-PASS summaries it keeps in
  /// its evidence ("per_rank"); nullopt leaves the per-rank results as they are.
  std::optional<Verdict> (*job_finding)(const CheckContext&) = nullptr;
  /// The findings it can report (FindingSpec, core/verdict.hpp), declared next to run(): their codes
  /// are "<id>/<what>", listed by `preflight explain ID`, and run() reports them by these rows.
  std::span<const FindingSpec> findings = {};

  /// "shm" of "shm.capacity": the group it is shown under.
  std::string_view area() const { return id.substr(0, id.find('.')); }
};

/// True when `spec` runs in `profile` (CheckSpec::profiles); elsewhere run_check() is SKIP.
bool runs_in(const CheckSpec& spec, Profile profile);

/// True when `spec` declares `cause` (a check id) among its possible causes (CheckSpec::causes),
/// whole or by some of its findings.
bool may_follow_from(const CheckSpec& spec, std::string_view cause);
/// The finding codes of check `cause` that `spec` declares as explaining it; empty when it declares
/// the whole check (or not at all).
std::vector<std::string_view> explaining_findings(const CheckSpec& spec, std::string_view cause);

/// Every check, in report order.
std::span<const CheckSpec* const> all_checks();
const CheckSpec* find_check(std::string_view id);

/// Runs one check with the profile gate applied; a check that throws becomes UNKNOWN naming the
/// exception (a bug in preflight must not hide a failure or crash the run).
Verdict run_check(const CheckSpec& spec, const CheckContext& ctx);

/// Helper for checks: UNKNOWN because a fact could not be gathered.
/// A fact preflight's own budget left unread, never a verdict on what it reads: left behind by a
/// probe that hung (job/run.cpp marks them: code Timeout, and a detail "probe 'NAME' hung: …"
/// that names the probe and its deadline), or stopped by a helper deadline cut to what was left of
/// the probe phase (code OutOfBudget: the detail names the time it got and the --timeout that fits).
inline bool hung_probe(const ProbeError& e) {
  if (e.code == ProbeErrc::OutOfBudget) return true;
  return e.code == ProbeErrc::Timeout && e.detail.starts_with("probe '") &&
         e.detail.find("' hung") != std::string::npos;
}
inline constexpr std::string_view kHungProbeRemedy =
    "A probe that hangs waits on the kernel: look for a hung network file system (`mount`, then `stat` each mount "
    "point; `timeout 5 df`) or a stuck GPU driver (`dmesg | grep -i -e xid -e nvrm -e hung`), fix it or drain the "
    "node; "
    "if the node is only slow, give the run longer with --timeout.";

/// The templates of a fact a check could not read (unknown_from). A check that judges such a fact
/// declares two findings of its own with them: "<id>/facts-unreadable" (UNKNOWN, kUnreadableMessage,
/// its fix a template over {what} and {why}: kUnreadableFix or one that says more) and
/// "<id>/facts-hung" (UNKNOWN, kHungMessage, kHungProbeRemedy).
inline constexpr std::string_view kUnreadableMessage = "could not read {what}: {why}";
inline constexpr std::string_view kUnreadableFix =
    "Run preflight where it can read {what} (see the detail), or fix the permission named.";
inline constexpr std::string_view kHungMessage = "{what} was not gathered: {detail}";

/// UNKNOWN because `fact` (named `what`: "the network interfaces") could not be gathered: the check's
/// `unreadable` finding with the probe's reason ({why}), or its `hung` finding where a probe hung
/// (a hang, named with its deadline in {detail}, whatever the usual causes of a read failure).
template <typename T>
Verdict unknown_from(const Probed<T>& fact, std::string_view what, const FindingSpec& unreadable,
                     const FindingSpec& hung, nlohmann::json evidence = nlohmann::json::object()) {
  if (const ProbeError* e = fact.error(); e != nullptr && hung_probe(*e)) {
    return Verdict::of(hung, {{"what", what}, {"detail", e->detail}}, std::move(evidence));
  }
  return Verdict::of(unreadable, {{"what", what}, {"why", fact.why()}}, std::move(evidence));
}

}  // namespace preflight
