// SPDX-License-Identifier: MIT
#include "core/job.hpp"

#include <algorithm>
#include <array>

#include "core/text.hpp"

namespace preflight {
namespace {
constexpr std::array<const char*, kPhaseCount> kPhaseNames = {"init", "probe", "reach", "gather", "barrier", "allreduce",
                                                               "report"};
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

std::string JobFacts::describe_rank(int rank) const {
  for (const RankStatus& s : status) {
    if (s.rank != rank) continue;
    if (!s.heard) {
      // A host for a rank never heard from is where the launcher placed it (the PMIx join).
      return "rank " + std::to_string(rank) + (s.host.empty() ? " (never heard from)" : " (never heard from; placed on " + s.host + ")");
    }
    std::string out = "rank " + std::to_string(rank) + " (" + (s.host.empty() ? std::string("?") : s.host) + ", pid " +
                      std::to_string(s.pid) + ", last phase " + to_string(s.last_phase);
    if (s.silent_s >= 1.5) out += ", silent " + fixed(s.silent_s, 1) + " s";
    return out + ")";
  }
  return "rank " + std::to_string(rank);
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
PREFLIGHT_JSON_DEFINE(CommResult, attempted, completed, expired, interrupted, transport, note, blocked, seconds, deadline_s,
                      missing, wrong, errors, bytes, ranks, repeats, algbw_gbps, busbw_gbps, xid_watches)
PREFLIGHT_JSON_DEFINE(ReachTarget, interface, address, port)

}  // namespace preflight
