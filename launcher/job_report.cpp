// SPDX-License-Identifier: MIT
#include "launcher/job_report.hpp"

#include <algorithm>

#include "checks/check.hpp"
#include "launcher/run.hpp"

#ifndef PREFLIGHT_VERSION
#define PREFLIGHT_VERSION "0.0.0"
#endif

namespace preflight {
namespace {

CheckResult result_of(const CheckSpec& spec, Verdict verdict) {
  CheckResult r;
  r.id = std::string(spec.id);
  r.area = std::string(spec.area());
  r.title = std::string(spec.title);
  r.scope = spec.scope;
  r.verdict = std::move(verdict);
  return r;
}

bool same_host(const RankFacts& a, const RankFacts& b) {
  return a.identity.hostname == b.identity.hostname && a.identity.boot_id == b.identity.boot_id;
}

/// A node-scope result judged on one rank applies to every rank of that host.
void widen_to_host(CheckResult& r, const JobFacts& job) {
  if (r.scope != Scope::Node || r.ranks.empty()) return;
  const RankFacts* judged = job.facts_of(r.ranks.front());
  if (judged == nullptr) return;
  for (const RankFacts& f : job.ranks) {
    if (same_host(f, *judged)) r.ranks.push_back(f.placement.rank);
  }
  std::sort(r.ranks.begin(), r.ranks.end());
  r.ranks.erase(std::unique(r.ranks.begin(), r.ranks.end()), r.ranks.end());
}

}  // namespace

std::vector<CheckResult> judge_rank(const Options& options, Profile profile, const RankFacts& facts, bool node_leader,
                                    const CompatMatrix* matrix) {
  std::vector<CheckResult> out;
  const CheckContext ctx{facts, options, profile, matrix, nullptr};
  for (const CheckSpec* spec : all_checks()) {
    if (spec->scope == Scope::Job || !selected(options, spec->id)) continue;
    if (spec->scope == Scope::Node && !node_leader) continue;
    CheckResult r = result_of(*spec, run_check(*spec, ctx));
    r.hosts = {facts.identity.hostname};
    r.ranks = {facts.placement.rank};
    out.push_back(std::move(r));
  }
  return out;
}

JobFacts single_rank_job(const RankFacts& facts) {
  JobFacts job;
  job.source = "none";
  job.world_size = std::max(1, facts.placement.world_size);  // what the launcher claims; only this rank is known
  job.ranks = {facts};
  RankStatus s;
  s.rank = facts.placement.rank;
  s.host = facts.identity.hostname;
  s.pid = facts.identity.pid;
  s.last_phase = Phase::Report;
  s.heard = true;
  s.delivered = true;
  job.status = {s};
  job.barrier.note = "a single process: no launcher started other ranks";
  job.allreduce.note = job.barrier.note;
  return job;
}

Report assemble_report(const Options& options, Profile profile, const JobFacts& job, std::vector<CheckResult> per_rank,
                       const CompatMatrix* matrix) {
  Report report;
  report.version = PREFLIGHT_VERSION;
  report.profile = profile;
  report.world_size = job.world_size;
  int nodes = 0;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    bool first = true;
    for (std::size_t k = 0; k < i; ++k) first = first && !same_host(job.ranks[k], job.ranks[i]);
    nodes += first ? 1 : 0;
  }
  const RankFacts* lead = job.ranks.empty() ? nullptr : &job.ranks.front();
  report.nodes = std::max(1, lead != nullptr && lead->placement.nodes && job.source == "none" ? *lead->placement.nodes : nodes);
  report.launcher = lead == nullptr || lead->placement.launcher.empty() ? "none" : lead->placement.launcher;

  for (CheckResult& r : per_rank) widen_to_host(r, job);
  static const RankFacts kNoFacts;
  const CheckContext ctx{lead != nullptr ? *lead : kNoFacts, options, profile, matrix, &job};
  for (const CheckSpec* spec : all_checks()) {
    if (spec->scope != Scope::Job || !selected(options, spec->id)) continue;
    CheckResult r = result_of(*spec, run_check(*spec, ctx));
    for (const RankFacts& f : job.ranks) r.ranks.push_back(f.placement.rank);
    for (const RankFacts& f : job.ranks) {
      if (std::find(r.hosts.begin(), r.hosts.end(), f.identity.hostname) == r.hosts.end()) r.hosts.push_back(f.identity.hostname);
    }
    per_rank.push_back(std::move(r));
  }
  report.results = group_results(std::move(per_rank), options.verbose && job.world_size > 1);
  report.ranks = job.ranks;
  report.source = job.source;
  for (const RankStatus& s : job.status) {
    if (!s.delivered) report.missing.push_back(s);
  }
  report.reach_target = job.reach_target;
  report.reach_note = job.reach_note;
  report.barrier = job.barrier;
  report.allreduce = job.allreduce;
  return report;
}

}  // namespace preflight
