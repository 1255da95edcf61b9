// SPDX-License-Identifier: MIT
#include "core/job.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "core/text.hpp"

namespace preflight {
namespace {
constexpr std::array<const char*, kPhaseCount> kPhaseNames = {"init",    "probe",     "reach", "gather",
                                                              "barrier", "allreduce", "report"};
}  // namespace

const char* to_string(Phase p) {
  const auto i = static_cast<std::size_t>(p);
  return i < kPhaseNames.size() ? kPhaseNames[i] : "unknown";
}

std::optional<Phase> phase_from_string(std::string_view text) {
  for (std::size_t i = 0; i < kPhaseNames.size(); ++i) {
    if (text == kPhaseNames[i]) return static_cast<Phase>(i);
  }
  return std::nullopt;
}

const RankFacts* JobFacts::facts_of(int rank) const {
  for (const RankFacts& f : ranks) {
    if (f.placement.rank == rank) return &f;
  }
  return nullptr;
}

std::vector<int> JobFacts::undelivered() const {
  std::vector<int> out;
  for (const RankStatus& s : status) {
    if (!s.delivered) out.push_back(s.rank);
  }
  return out;
}

void JobFacts::place_unheard(const std::vector<std::string>& placement) {
  for (RankStatus& s : status) {
    if (s.heard || !s.host.empty() || s.rank < 0 || s.rank >= static_cast<int>(placement.size())) continue;
    s.host = placement[static_cast<std::size_t>(s.rank)];
  }
}

std::string JobFacts::describe_rank(int rank) const {
  for (const RankStatus& s : status) {
    if (s.rank != rank) continue;
    if (!s.heard) {
      // A host for a rank never heard from is where the launcher placed it (the PMIx join).
      return "rank " + std::to_string(rank) +
             (s.host.empty() ? " (never heard from)" : " (never heard from; placed on " + s.host + ")");
    }
    std::string out = "rank " + std::to_string(rank) + " (" + (s.host.empty() ? std::string("?") : s.host) + ", pid " +
                      std::to_string(s.pid) + ", last phase " + to_string(s.last_phase);
    if (s.lost == "ended") {
      out += ", its process ended at " + fixed(s.lost_at_s, 1) + " s";
    } else if (s.lost == "unreachable") {
      out += ", its host stopped answering at " + fixed(s.lost_at_s, 1) + " s";
    } else if (s.silent_s >= 1.5) {
      out += ", silent " + fixed(s.silent_s, 1) + " s";
    }
    if (!s.parting.empty()) out += ", saying \"" + s.parting + "\"";
    return out + ")";
  }
  return "rank " + std::to_string(rank);
}

std::vector<int> JobFacts::lost() const {
  std::vector<int> out;
  for (const RankStatus& s : status) {
    if (!s.lost.empty()) out.push_back(s.rank);
  }
  return out;
}

std::string JobFacts::describe_lost() const {
  // host -> its ranks (heard from, so the host is known), and which of them were lost
  std::map<std::string, std::vector<const RankStatus*>> by_host;
  for (const RankStatus& s : status) {
    if (s.heard && !s.host.empty()) by_host[s.host].push_back(&s);
  }
  std::vector<std::string> parts;
  std::vector<int> told;
  for (const auto& [host, on_host] : by_host) {
    std::vector<const RankStatus*> gone;
    for (const RankStatus* s : on_host) {
      if (!s->lost.empty()) gone.push_back(s);
    }
    if (gone.empty() || gone.size() != on_host.size()) continue;
    std::vector<std::string> numbers;
    double first = gone.front()->lost_at_s;
    double last = first;
    bool all_ended = true;
    bool all_unreachable = true;
    Phase phase = gone.front()->last_phase;
    for (const RankStatus* s : gone) {
      numbers.push_back(std::to_string(s->rank));
      first = std::min(first, s->lost_at_s);
      last = std::max(last, s->lost_at_s);
      all_ended = all_ended && s->lost == "ended";
      all_unreachable = all_unreachable && s->lost == "unreachable";
      phase = std::min(phase, s->last_phase);
      told.push_back(s->rank);
    }
    const std::string when = fixed(first, 1) + (last - first >= 0.05 ? "–" + fixed(last, 1) : std::string()) + " s";
    const std::string which = (gone.size() == 1 ? "rank " : "ranks ") + join(numbers, ", ");
    std::string what;
    if (all_ended) {
      what = "every process of " + host + " ended (" + which + ") at " + when +
             ": the host went down or its processes were killed";
    } else if (all_unreachable) {
      what = host + " stopped answering (" + which + ") at " + when + ": the host is down or its network is cut";
    } else {
      what = host + " is gone: its ranks ended or stopped answering (" + which + ") at " + when;
    }
    parts.push_back(what + ", in phase " + to_string(phase));
  }
  for (const RankStatus& s : status) {
    if (s.lost.empty() || std::find(told.begin(), told.end(), s.rank) != told.end()) continue;
    parts.push_back(describe_rank(s.rank));
  }
  return join(parts, "; ");
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

PREFLIGHT_JSON_DEFINE(RankXidWatch, rank, watch)
PREFLIGHT_JSON_DEFINE(CommResult, attempted, completed, expired, interrupted, transport, note, blocked, seconds,
                      deadline_s, missing, wrong, errors, bytes, ranks, repeats, algbw_gbps, busbw_gbps, xid_watches)
PREFLIGHT_JSON_DEFINE(ReachTarget, interface, address, port)

}  // namespace preflight
