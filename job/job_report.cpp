// SPDX-License-Identifier: MIT
#include "job/job_report.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "checks/check.hpp"
#include "core/text.hpp"
#include "job/run.hpp"

#ifndef PREFLIGHT_VERSION
#define PREFLIGHT_VERSION "0.0.0"
#endif

namespace preflight {
namespace {

/// The time of what a check reads (its probes on this rank, or rank 0's job phases).
double time_of_reads(const CheckSpec& spec, const std::map<std::string, double>& measured) {
  double total = 0;
  for (const FactSourceSpec& source : kFactSources) {
    if (!spec.reads.contains(source.source)) continue;
    const auto it = measured.find(std::string(source.name));
    if (it != measured.end()) total += it->second;
  }
  return total;
}

CheckResult result_of(const CheckSpec& spec, Verdict verdict) {
  CheckResult r;
  r.id = std::string(spec.id);
  r.area = std::string(spec.area());
  r.title = std::string(spec.title);
  r.scope = spec.scope;
  r.verdict = std::move(verdict);
  return r;
}

/// Runs the check and times it, with the time of what it reads.
CheckResult judged(const CheckSpec& spec, const CheckContext& ctx, const std::map<std::string, double>& measured) {
  const auto t0 = std::chrono::steady_clock::now();
  CheckResult r = result_of(spec, run_check(spec, ctx));
  r.seconds =
      time_of_reads(spec, measured) + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

/// The ranks of every host (hostname + boot id: NCCL's host identity), built once: the node
/// count, the widening of node-scope results and the job results' host list all read it, so a
/// report over thousands of ranks stays linear.
class HostIndex {
 public:
  explicit HostIndex(const JobFacts& job) {
    for (const RankFacts& f : job.ranks) {
      const std::string key = f.identity.hostname + '\n' + f.identity.boot_id;
      auto [it, added] = m_index.try_emplace(key, m_hosts.size());
      if (added) m_hosts.push_back({f.identity.hostname, {}});
      m_hosts[it->second].ranks.push_back(f.placement.rank);
      m_host_of_rank[f.placement.rank] = it->second;
    }
  }
  std::size_t nodes() const { return m_hosts.size(); }
  /// The ranks on the host of `rank` (empty when the rank did not deliver).
  const std::vector<int>* ranks_with(int rank) const {
    const auto it = m_host_of_rank.find(rank);
    return it == m_host_of_rank.end() ? nullptr : &m_hosts[it->second].ranks;
  }
  std::vector<std::string> hostnames() const {
    std::vector<std::string> out;
    std::unordered_set<std::string> seen;
    for (const Host& h : m_hosts) {
      if (seen.insert(h.name).second) out.push_back(h.name);
    }
    return out;
  }

 private:
  struct Host {
    std::string name;
    std::vector<int> ranks;
  };
  std::vector<Host> m_hosts;
  std::unordered_map<std::string, std::size_t> m_index;
  std::unordered_map<int, std::size_t> m_host_of_rank;
};

/// A node-scope result judged on one rank applies to every rank of that host (a result read from
/// a file may already stand for several ranks: each one's host counts).
void widen_to_host(CheckResult& r, const HostIndex& hosts) {
  if (r.scope != Scope::Node || r.ranks.empty()) return;
  const std::size_t judged = r.ranks.size();
  for (std::size_t i = 0; i < judged; ++i) {
    const std::vector<int>* ranks = hosts.ranks_with(r.ranks[i]);
    if (ranks != nullptr) r.ranks.insert(r.ranks.end(), ranks->begin(), ranks->end());
  }
  std::sort(r.ranks.begin(), r.ranks.end());
  r.ranks.erase(std::unique(r.ranks.begin(), r.ranks.end()), r.ranks.end());
}

/// Whether a check judges what the all_reduce recorded (its `reads` names the phase).
bool reads_allreduce(const CheckSpec& spec) { return spec.reads.contains(FactSource::Allreduce); }

/// The node-scope checks that judge a node from every rank's view (CheckSpec::node_view): on a
/// host with several delivered ranks, the result its local rank 0 judged alone is replaced by one
/// judged with every delivered rank of that host. Those that read the all_reduce (gpu.xid: the
/// XIDs NVML reported during it) are judged again on every host when it recorded something, since
/// the ranks judged them before it ran.
void rejudge_node_views(const Options& options, Profile profile, const JobFacts& job,
                        std::vector<CheckResult>& per_rank, const CompatMatrix* matrix) {
  std::map<std::string, std::vector<const RankFacts*>> every_host;
  for (const RankFacts& f : job.ranks) every_host[f.identity.hostname + '\n' + f.identity.boot_id].push_back(&f);
  std::map<std::string, std::vector<const RankFacts*>> shared_hosts = every_host;
  std::erase_if(shared_hosts, [](const auto& kv) { return kv.second.size() < 2; });
  const bool allreduce_recorded = !job.allreduce.xid_watches.empty();
  for (const CheckSpec* spec : all_checks()) {
    if (spec->scope != Scope::Node || !spec->node_view || !selected(options, spec->id)) continue;
    const auto& by_host = allreduce_recorded && reads_allreduce(*spec) ? every_host : shared_hosts;
    if (by_host.empty()) continue;
    std::unordered_map<int, const std::vector<const RankFacts*>*> host_of;
    for (const auto& [key, members] : by_host) {
      for (const RankFacts* f : members) host_of[f->placement.rank] = &members;
    }
    std::erase_if(per_rank, [&](const CheckResult& r) {
      return r.id == spec->id && !r.ranks.empty() && host_of.count(r.ranks.front()) > 0;
    });
    for (const auto& [key, members] : by_host) {
      const RankFacts& lead = *members.front();
      const CheckContext ctx{lead, options, profile, matrix, &job, &members};
      CheckResult r = judged(*spec, ctx, lead.probe_seconds);
      r.hosts = {lead.identity.hostname};
      for (const RankFacts* f : members) r.ranks.push_back(f->placement.rank);
      per_rank.push_back(std::move(r));
    }
  }
}

/// The findings of rank-scope checks that only the whole job shows (CheckSpec::job_finding): one
/// job-level result in place of that check's per-rank results, whose non-PASS summaries it keeps.
void apply_job_findings(const CheckContext& ctx, const std::vector<int>& all_ranks,
                        const std::vector<std::string>& all_hosts, std::vector<CheckResult>& per_rank) {
  if (ctx.job == nullptr || ctx.job->ranks.size() < 2) return;
  for (const CheckSpec* spec : all_checks()) {
    if (spec->job_finding == nullptr || spec->scope != Scope::Rank || !selected(ctx.options, spec->id) ||
        !runs_in(*spec, ctx.profile)) {
      continue;
    }
    std::optional<Verdict> finding;
    try {
      finding = spec->job_finding(ctx);
    } catch (const std::exception&) {
      continue;  // the per-rank results stand
    }
    if (!finding) continue;
    CheckResult r = result_of(*spec, std::move(*finding));
    r.scope = Scope::Job;
    r.ranks = all_ranks;
    r.hosts = all_hosts;
    nlohmann::json ranks_said = nlohmann::json::object();
    for (const CheckResult& each : per_rank) {
      if (each.id != spec->id) continue;
      r.seconds = std::max(r.seconds, each.seconds);
      r.verdict.status = worst(r.verdict.status, each.verdict.status);
      if (each.verdict.status == Status::Pass) continue;
      for (int rank : each.ranks) ranks_said[std::to_string(rank)] = each.verdict.summary;
    }
    if (!ranks_said.empty()) r.verdict.evidence["per_rank"] = std::move(ranks_said);
    std::erase_if(per_rank, [&](const CheckResult& each) { return each.id == spec->id; });
    per_rank.push_back(std::move(r));
  }
}

}  // namespace

std::vector<CheckResult> judge_rank(const Options& options, Profile profile, const RankFacts& facts, bool node_leader,
                                    const CompatMatrix* matrix) {
  std::vector<CheckResult> out;
  const CheckContext ctx{facts, options, profile, matrix, nullptr};
  for (const CheckSpec* spec : all_checks()) {
    if (spec->scope == Scope::Job || !selected(options, spec->id)) continue;
    if (spec->scope == Scope::Node && !node_leader) continue;
    CheckResult r = judged(*spec, ctx, facts.probe_seconds);
    r.hosts = {facts.identity.hostname};
    r.ranks = {facts.placement.rank};
    out.push_back(std::move(r));
  }
  return out;
}

Report assemble_report(const Options& options, Profile profile, JobFacts job, std::vector<CheckResult> per_rank,
                       const CompatMatrix* matrix) {
  Report report;
  report.version = PREFLIGHT_VERSION;
  report.profile = profile;
  report.world_size = job.world_size;
  const HostIndex hosts(job);
  // The nodes of the job: those of the ranks that delivered, and the hosts of the ranks that did
  // not — where they were heard from, or where the launcher placed a rank that never started (a
  // host whose every rank stopped, or never started, is still one of the job's nodes).
  std::unordered_set<std::string> named;
  for (const RankFacts& f : job.ranks) named.insert(f.identity.hostname);
  int silent_hosts = 0;
  for (const RankStatus& s : job.status) {
    if (!s.delivered && !s.host.empty() && named.insert(s.host).second) ++silent_hosts;
  }
  const int nodes = static_cast<int>(hosts.nodes()) + silent_hosts;
  const RankFacts* lead = job.ranks.empty() ? nullptr : &job.ranks.front();
  report.nodes =
      std::max(1, lead != nullptr && lead->placement.nodes && job.source == "none" ? *lead->placement.nodes : nodes);
  report.launcher = lead == nullptr || lead->placement.launcher.empty() ? "none" : lead->placement.launcher;

  rejudge_node_views(options, profile, job, per_rank, matrix);
  for (CheckResult& r : per_rank) widen_to_host(r, hosts);
  std::vector<int> all_ranks;
  all_ranks.reserve(job.ranks.size());
  for (const RankFacts& f : job.ranks) all_ranks.push_back(f.placement.rank);
  const std::vector<std::string> all_hosts = hosts.hostnames();
  static const RankFacts kNoFacts;
  const CheckContext ctx{lead != nullptr ? *lead : kNoFacts, options, profile, matrix, &job};
  for (const CheckSpec* spec : all_checks()) {
    if (spec->scope != Scope::Job || !selected(options, spec->id)) continue;
    CheckResult r = judged(*spec, ctx, job.phase_seconds);
    r.ranks = all_ranks;
    r.hosts = all_hosts;
    per_rank.push_back(std::move(r));
  }
  apply_job_findings(ctx, all_ranks, all_hosts, per_rank);
  settle_causes(per_rank);
  report.results = group_results(std::move(per_rank), options.verbose && job.world_size > 1);
  report.ranks = std::move(job.ranks);  // the checks are done with them
  report.source = job.source;
  for (const RankStatus& s : job.status) {
    if (!s.delivered) report.missing.push_back(s);
    if (!s.lost.empty()) report.lost.push_back(s);
  }
  report.reach_target = job.reach_target;
  report.reach_note = job.reach_note;
  report.barrier = job.barrier;
  report.allreduce = job.allreduce;
  return report;
}

}  // namespace preflight
