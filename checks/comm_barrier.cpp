// SPDX-License-Identifier: MIT
// comm.barrier (job): a barrier across every rank of the job, with a deadline. When it expires the
// ranks that did not arrive are named with their host, pid and the last phase they reached: the
// stuck ones (silent, or stopped before the barrier) first.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "checks/check.hpp"
#include "checks/comm_ranks.hpp"
#include "core/text.hpp"

namespace preflight {
namespace comm_barrier_check {
namespace {

std::string secs(double s) { return format_duration(s); }

#define PREFLIGHT_REAL_JOB                                                                                       \
  " For the training job itself, run with NCCL_DEBUG=INFO (and TORCH_DISTRIBUTED_DEBUG=DETAIL) to see where it " \
  "stops; `py-spy dump --pid PID` on a hung Python rank shows its stack."

constexpr FindingSpec kSingleProcess = {"comm.barrier/single-process", Status::Skip,
                                        "a single process: there is no barrier between ranks to run", ""};
constexpr FindingSpec kMerged = {"comm.barrier/merged", Status::Skip,
                                 "the barrier runs only in a live job (these results were merged from files)", ""};
constexpr FindingSpec kNotConnected = {"comm.barrier/not-connected", Status::Unknown,
                                       "the barrier was not run: " PREFLIGHT_COMM_NOT_CONNECTED,
                                       PREFLIGHT_COMM_CONNECT_FIX};
constexpr FindingSpec kMpiWorldOfOne = {"comm.barrier/mpi-world-of-one", Status::Unknown,
                                        "the barrier was not run: " PREFLIGHT_COMM_MPI_WORLD_OF_ONE,
                                        PREFLIGHT_COMM_CONNECT_FIX};
// {deadline}: " (deadline {deadline_time})", or "".
constexpr FindingSpec kCompleted = {"comm.barrier/completed", Status::Pass,
                                    "a barrier across {world} ranks completed in {time}{deadline}", ""};
// {lost}: the hosts and ranks rank 0's liveness watch lost; {look_at}: what to look at on their hosts.
constexpr FindingSpec kRanksLost = {"comm.barrier/ranks-lost", Status::Fail, "the barrier could not complete: {lost}",
                                    "{look_at}."};
constexpr FindingSpec kRanksLostBefore = {"comm.barrier/ranks-lost-before", Status::Fail,
                                          "the barrier was not run: {lost}", "{look_at}."};
// {note}: ": {reason}", or "".
constexpr FindingSpec kNotRun = {"comm.barrier/not-run", Status::Unknown, "the barrier was not run{note}",
                                 "See the detail; rerun preflight under the same launcher as the job."};
// {alive}: "; still alive: {waiting}", or ""; {note}: " ({reason})", or "".
constexpr FindingSpec kRanksMissing = {
    "comm.barrier/ranks-missing", Status::Fail,
    "the barrier was not run: {count} of {world} ranks did not arrive earlier: {named}{alive}{note}",
    "{look_at}." PREFLIGHT_REAL_JOB};
// {heard}: " (last heard: {last_heard})" ("gpu-b 900 ms ago, …"; per host in {silent_s}), or "".
constexpr FindingSpec kInterrupted = {
    "comm.barrier/interrupted", Status::Fail,
    "the barrier was interrupted after {time}: the launcher ended the job, which it does when a rank or its host dies; "
    "every rank had arrived{heard}",
    "Read the launcher's message next to this report (mpirun: \"ORTE has lost communication with a remote daemon\" or "
    "\"exited on signal 9\"; srun: \"task N: Killed\"): it names the rank or host that died; on that host, "
    "`dmesg | grep -iE 'oom|killed process'` and the node's health (a reboot, a network link "
    "down)." PREFLIGHT_REAL_JOB};
// {alive}: " (waiting: {waiting})", or "".
constexpr FindingSpec kFabric = {
    "comm.barrier/fabric", Status::Fail,
    "the barrier did not complete within {waited}, yet every rank arrived and is alive{alive}: the fabric between "
    "ranks (MPI's transport), not a stuck rank",
    "Check the network MPI uses between the hosts: a firewall between them, or MPI choosing an interface the others "
    "cannot route to (Open MPI: `--mca btl_tcp_if_include <if>` / `--mca oob_tcp_if_include <if>`, UCX: "
    "`UCX_NET_DEVICES`); rerun with `--mca btl_base_verbose 100`." PREFLIGHT_REAL_JOB};
// {alive}: "; alive and waiting: …", or "".
constexpr FindingSpec kExpired = {
    "comm.barrier/expired", Status::Fail,
    "the barrier did not complete within {waited}: {count} of {world} ranks did not arrive: {named}{alive}",
    "{look_at}." PREFLIGHT_REAL_JOB};
// {error}: ": {reason}" (MPI's error), or " without an error message"; {missing}: " (did not arrive: {named})", or "".
constexpr FindingSpec kError = {
    "comm.barrier/error", Status::Fail, "the barrier across {world} ranks failed{error}{missing}",
    "The MPI library reported the error above: check that every rank runs the same MPI build and that the hosts "
    "reach each other on the network MPI uses (rerun with `--mca btl_base_verbose 100`)." PREFLIGHT_REAL_JOB};
#undef PREFLIGHT_REAL_JOB

constexpr std::array kFindings = {kSingleProcess, kMerged,          kNotConnected, kMpiWorldOfOne, kCompleted,
                                  kRanksLost,     kRanksLostBefore, kNotRun,       kRanksMissing,  kInterrupted,
                                  kFabric,        kExpired,         kError};

nlohmann::json ranks_json(const JobFacts& j, const std::vector<int>& ranks) {
  nlohmann::json out = nlohmann::json::array();
  for (int r : ranks) {
    nlohmann::json e = {{"rank", r}, {"describe", j.describe_rank(r)}};
    if (const RankStatus* s = comm::status_of(j, r)) {
      e["host"] = s->host;
      e["pid"] = s->pid;
      e["last_phase"] = to_string(s->last_phase);
      e["heard"] = s->heard;
      e["silent_s"] = s->silent_s;
    }
    out.push_back(std::move(e));
  }
  return out;
}

Verdict run(const CheckContext& ctx) {
  const JobFacts* job = ctx.job;
  if (job == nullptr || (job->source == "none" && job->world_size <= 1)) return Verdict::of(kSingleProcess);
  if (job->source == "merge") return Verdict::of(kMerged);
  const JobFacts& j = *job;
  const CommResult& c = j.barrier;
  nlohmann::json ev = {{"transport", c.transport},  {"attempted", c.attempted}, {"completed", c.completed},
                       {"expired", c.expired},      {"seconds", c.seconds},     {"deadline_s", c.deadline_s},
                       {"world_size", j.world_size}};
  if (!c.note.empty()) ev["note"] = c.note;
  // The ranks the launcher claims were never connected: one story with launch.ranks, not "no launcher".
  if (const std::optional<comm::Unconnected> u = comm::unconnected(j)) {
    return Verdict::of(u->mpi_world_of_one ? kMpiWorldOfOne : kNotConnected, u->params, std::move(ev));
  }

  if (c.attempted && c.completed) {
    nlohmann::json params = {{"world", j.world_size},
                             {"time", secs(c.seconds)},
                             {"deadline", part_if(c.deadline_s > 0, " (deadline {deadline_time})")}};
    if (c.deadline_s > 0) params["deadline_time"] = secs(c.deadline_s);
    return Verdict::of(kCompleted, std::move(params), std::move(ev));
  }

  // The ranks that did not arrive: those the barrier names, else those that never delivered.
  std::vector<int> missing = c.missing.empty() ? j.undelivered() : c.missing;
  const comm::Partition p = comm::partition(j, missing, Phase::Barrier);
  ev["missing"] = ranks_json(j, missing);
  ev["stuck"] = p.stuck;
  ev["alive"] = p.alive;

  if (const std::string lost = j.describe_lost(); !lost.empty()) {
    // Rank 0's liveness watch saw processes end (or a host stop answering): that is the story.
    nlohmann::json params = {{"lost", lost}};
    comm::add_look_at(params, j, j.lost());
    return Verdict::of(c.attempted ? kRanksLost : kRanksLostBefore, std::move(params), std::move(ev));
  }

  if (!c.attempted) {
    if (missing.empty()) {
      nlohmann::json params = {{"note", part_if(!c.note.empty(), ": {reason}")}};
      if (!c.note.empty()) params["reason"] = c.note;
      return Verdict::of(kNotRun, std::move(params), std::move(ev));
    }
    const std::vector<int>& named = p.stuck.empty() ? missing : p.stuck;
    const bool alive = !p.stuck.empty() && !p.alive.empty();
    nlohmann::json params = {{"count", missing.size()},
                             {"world", j.world_size},
                             {"named", comm::describe(j, named)},
                             {"alive", part_if(alive, "; still alive: {waiting}")},
                             {"note", part_if(!c.note.empty(), " ({reason})")}};
    if (alive) params["waiting"] = comm::describe(j, p.alive);
    if (!c.note.empty()) params["reason"] = c.note;
    comm::add_look_at(params, j, named);
    return Verdict::of(kRanksMissing, std::move(params), std::move(ev));
  }

  if (c.expired) {
    const std::string waited = secs(c.deadline_s > 0 ? c.deadline_s : c.seconds);
    if (p.stuck.empty() && c.interrupted) {
      // The launcher ended the job before the deadline: a rank, or its whole host, died. The ranks
      // were heard from too recently to tell which; the launcher's own message names it.
      // Per host, the longest silence of its ranks: a host that died is usually the most silent.
      std::map<std::string, double> silent;
      for (const RankStatus& s : j.status) {
        if (s.rank == 0 || s.host.empty()) continue;
        silent[s.host] = std::max(silent[s.host], s.silent_s);
      }
      std::vector<std::pair<std::string, double>> order(silent.begin(), silent.end());
      std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      std::string heard;
      nlohmann::json silent_s = nlohmann::json::object();
      for (const auto& [host, s] : order) {
        heard += (heard.empty() ? "" : ", ") + host + " " + secs(s) + " ago";
        silent_s[host] = s;
      }
      nlohmann::json params = {{"time", secs(c.seconds)},
                               {"heard", part_if(!heard.empty(), " (last heard: {last_heard})")}};
      if (!heard.empty()) {
        params["last_heard"] = heard;
        params["silent_s"] = std::move(silent_s);
      }
      return Verdict::of(kInterrupted, std::move(params), std::move(ev));
    }
    if (p.stuck.empty()) {
      // Every rank reached the barrier and is still alive: the ranks are fine, the messages are not.
      nlohmann::json params = {{"waited", waited}, {"alive", part_if(!p.alive.empty(), " (waiting: {waiting})")}};
      if (!p.alive.empty()) params["waiting"] = comm::describe(j, p.alive);
      return Verdict::of(kFabric, std::move(params), std::move(ev));
    }
    nlohmann::json params = {{"waited", waited},
                             {"count", missing.size()},
                             {"world", j.world_size},
                             {"named", comm::describe(j, p.stuck)},
                             {"alive", part_if(!p.alive.empty(), "; alive and waiting: {waiting}")}};
    if (!p.alive.empty()) params["waiting"] = comm::describe(j, p.alive);
    comm::add_look_at(params, j, p.stuck);
    return Verdict::of(kExpired, std::move(params), std::move(ev));
  }

  // Attempted, neither completed nor expired: the barrier call itself failed.
  nlohmann::json params = {
      {"world", j.world_size},
      {"error", template_param(c.note.empty() ? std::string(" without an error message") : ": {reason}")},
      {"missing", part_if(!missing.empty(), " (did not arrive: {named})")}};
  if (!c.note.empty()) params["reason"] = c.note;
  if (!missing.empty()) params["named"] = comm::describe(j, missing);
  return Verdict::of(kError, std::move(params), std::move(ev));
}

constexpr std::string_view kExplain = R"(What it reads
  How the barrier phase went, as rank 0 saw it: completed, expired (the phase's deadline passed) or
  failed, its time and deadline, and the ranks that did not arrive; for each of those, what rank 0
  last heard from it: host, pid, the last phase it reached (init, probe, reach, gather, barrier, ...)
  and how long it has been silent. Ranks waiting in a phase send a heartbeat every half second, so a
  rank silent for more than 1.5 s, or one whose last phase is before "barrier", is stuck. And what
  rank 0's liveness watch saw: every other rank holds one TCP connection to rank 0 until it exits,
  so a rank whose process ended (its connection closed) or whose host stopped acknowledging is seen
  at once, and the wait ends there.

Failures
  FAIL     a rank's process ended, or its host stopped answering, before the barrier completed (or
           before it could run): names the host when every rank of it went (every process of
           node2 ended, ranks 2, 3), else the rank, with when rank 0 saw it.
  FAIL     the deadline expired: names every rank that did not arrive (host, pid, last phase), the
           stuck ones first.
  FAIL     the deadline expired although every rank arrived and is alive: the fabric between the
           ranks (MPI's transport), not a stuck rank.
  FAIL     the barrier was not run because ranks were missing earlier (the gather expired, or ranks
           that never started, with the host the launcher placed them on): names them
           the same way.
  FAIL     the barrier returned an error (the MPI error is quoted).
  UNKNOWN  the barrier was not run for another reason (quoted).
  UNKNOWN  the launcher claims more ranks than preflight could connect (srun without --mpi=pmix, or
           MPI started as a world of 1): the same story as launch.ranks, never "no launcher".
  SKIP     a single process (no launcher, or only variables left in the environment, such as
           OMPI_COMM_WORLD_* without mpirun's PMIx variables); results merged from files (the
           barrier runs only live).

Fix
  A rank that ended: the launcher's output names its exit code or signal; on its host,
  journalctl -k | grep -iE 'oom|killed process|segfault'. A host gone: its console or BMC, sinfo -R.
  On the host of a stuck rank, see where it stopped: gdb -p PID -batch -ex 'thread apply all bt',
  cat /proc/PID/stack; a probe stuck in the NVIDIA driver (state D): dmesg | grep -i xid.
  All alive but no barrier: the network MPI uses (--mca btl_tcp_if_include IF, UCX_NET_DEVICES,
  firewalls between the hosts).
  For the training job: NCCL_DEBUG=INFO, TORCH_DISTRIBUTED_DEBUG=DETAIL, py-spy dump --pid PID.)";

}  // namespace

extern const CheckSpec kCommBarrier = {"comm.barrier",
                                       Scope::Job,
                                       "a barrier across all ranks completes within its deadline",
                                       kExplain,
                                       kInJob,
                                       "an image build has no job to check",
                                       &run,
                                       "barrier",
                                       false,
                                       {},
                                       {},
                                       nullptr,
                                       kFindings};

}  // namespace comm_barrier_check
}  // namespace preflight
