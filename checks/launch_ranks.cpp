// SPDX-License-Identifier: MIT
// launch.ranks (job): the world rank 0 gathered has the ranks and nodes expected, every rank exactly
// once, spread evenly over the hosts. A host is its hostname with its boot id (NCCL's host identity).
#include <algorithm>
#include <array>
#include <map>

#include "checks/check.hpp"
#include "checks/comm_ranks.hpp"
#include "core/launch.hpp"
#include "core/text.hpp"

namespace preflight {
namespace launch_ranks_check {
namespace {

constexpr std::size_t kNamed = 8;  // ranks named one by one in a summary; the rest are counted

std::string rank_host_key(const RankFacts& f) { return f.identity.hostname + "\n" + f.identity.boot_id; }
std::string host_name(const RankFacts& f) { return f.identity.hostname.empty() ? "?" : f.identity.hostname; }
std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The fix where the ranks could not be gathered, with `np` the launcher to name.
#define PREFLIGHT_CONNECT_FIX(np)                                                                                    \
  "Start preflight so its ranks connect: `srun --mpi=pmix …` (see `srun --mpi=list`), or " np                        \
  " of the MPI "                                                                                                     \
  "preflight was built with; where they cannot connect, run `preflight --json-per-rank DIR` on every rank and then " \
  "`preflight merge DIR/*.json`."

constexpr FindingSpec kNotGathered = {
    "launch.ranks/not-gathered", Status::Unknown,
    "the launcher ({launcher}) claims a world of {world} ranks, but preflight ran as a single process: the ranks could "
    "not be gathered (no MPI or PMI connection between them: e.g. srun without --mpi=pmix, or an mpirun of another MPI "
    "than preflight's)",
    PREFLIGHT_CONNECT_FIX("`mpirun -np {world} …`")};
constexpr FindingSpec kMpiWorldOfOne = {
    "launch.ranks/mpi-world-of-one", Status::Unknown,
    "MPI started as a world of 1 while {variable}={size} ({launcher}): the ranks could not be gathered (MPI is not "
    "connected to the launcher: e.g. srun without --mpi=pmix)",
    PREFLIGHT_CONNECT_FIX("the mpirun")};
#undef PREFLIGHT_CONNECT_FIX
constexpr FindingSpec kSingleProcess = {
    "launch.ranks/single-process", Status::Skip,
    "preflight ran as a single process (no launcher, a world of 1): no ranks to compare; --expect-world-size and "
    "--expect-nodes check the world's size",
    ""};
constexpr FindingSpec kDuplicateRank = {
    "launch.ranks/duplicate-rank", Status::Fail, "rank {rank} was delivered {times} times ({processes})",
    "Each rank must be one process: do not start preflight twice per rank (a wrapper that itself runs mpirun/srun, or "
    "torchrun inside srun with --ntasks-per-node > 1), and in `preflight merge` give each rank's file once."};
constexpr FindingSpec kOutsideWorld = {
    "launch.ranks/outside-world", Status::Fail, "facts arrived for rank(s) {ranks} outside the world of {world}",
    "The files or ranks come from different runs: rerun every rank in one job (merge only one run's files)."};
// {on_way}: "; {on_way_count} still on the way when the report was made ({on_way_named})", or "".
constexpr FindingSpec kRanksEnded = {"launch.ranks/ranks-ended", Status::Fail,
                                     "{count} {ranks_word} of {world} ended before delivering facts: {named}{on_way}",
                                     "{look_at}."};
// {waiting}: "; {waited_count} started and waited for them, so their facts were not gathered: {waited_named}", or "".
constexpr FindingSpec kRanksNeverStarted = {
    "launch.ranks/ranks-never-started", Status::Fail, "{count} {ranks_word} of {world} never started: {named}{waiting}",
    "Look at the host the named rank was placed on: the launcher could not start the process there, or it hangs before "
    "preflight's first step (a node stuck in start-up, a file system that does not answer: `ls` the binary's directory "
    "there, `dmesg`, the launcher's output); rerun preflight on that host alone. A host that is only slow to start "
    "(still booting, mounting its file systems) needs a larger --timeout: the ranks meet within 30% of it."};
constexpr FindingSpec kRanksMissing = {
    "launch.ranks/ranks-missing", Status::Fail,
    "{count} {ranks_word} of {world} did not deliver facts: {named}{waiting}",
    "Look at the named rank's host: a process stuck in the phase named (a hung driver call, a full disk, a SIGSTOP), "
    "killed (out of memory: `dmesg | grep -i oom`), or whose payload was refused (the detail); rerun preflight on that "
    "host alone to see its own report."};
constexpr FindingSpec kLauncherEnded = {
    "launch.ranks/launcher-ended", Status::Fail,
    "the launcher ({launcher}) ended the job {time} after the start, before {count} {ranks_word} of its {world} "
    "delivered facts: {named}; a launcher does that when one of the job's processes dies (it names which, next to "
    "this report)",
    "Find the process that died first in the launcher's own message (mpirun: \"Process name: … Exit code\" or "
    "\"Signal\"; srun: \"error: … task N: Killed\" or \"Exited with exit code\"), and look at its host: killed "
    "(out of memory: `dmesg | grep -i oom`), crashed, or out of a limit (`ulimit -a` in the job script); rerun "
    "preflight on that host alone to see its own report."};
constexpr FindingSpec kWorldSizeMismatch = {
    "launch.ranks/world-size-mismatch", Status::Fail,
    "world size {world} ({source}), --expect-world-size {expected_world_size}",
    "Start the job with {expected_world_size} ranks (`mpirun -np {expected_world_size} …`, "
    "`srun --ntasks={expected_world_size} …`), or correct --expect-world-size."};
// {counting}: " (counting the ranks that delivered)" when ranks are missing, or "".
constexpr FindingSpec kNodesMismatch = {
    "launch.ranks/nodes-mismatch", Status::Fail,
    "{nodes} {nodes_word} ({hosts}), --expect-nodes {expected_nodes}{counting}",
    "Start the job on {expected_nodes} nodes (`srun --nodes={expected_nodes} …`, an mpirun hostfile with "
    "{expected_nodes} hosts), or correct --expect-nodes."};
constexpr FindingSpec kUnevenRanks = {
    "launch.ranks/uneven-ranks", Status::Warn, "uneven ranks per node: {counts}",
    "Place the same number of ranks on every node (`mpirun --map-by ppr:N:node`, `srun --ntasks-per-node=N`): the "
    "node with more ranks is the slowest and every collective waits for it, and LOCAL_RANK-based GPU selection differs "
    "between nodes."};

constexpr std::array kFindings = {kNotGathered,   kMpiWorldOfOne,     kSingleProcess,     kDuplicateRank,
                                  kOutsideWorld,  kRanksEnded,        kRanksNeverStarted, kRanksMissing,
                                  kLauncherEnded, kWorldSizeMismatch, kNodesMismatch,     kUnevenRanks};

const char* ranks_word(std::size_t n) { return n == 1 ? "rank" : "ranks"; }

struct Host {
  std::string name;
  std::vector<int> ranks;
};

Verdict judge(const JobFacts& job, const RankFacts& lead, const Options& o) {
  VerdictBuilder b;
  nlohmann::json& ev = b.evidence();
  const int world = job.world_size;
  ev["source"] = job.source;
  ev["world_size"] = world;
  ev["delivered"] = job.ranks.size();
  ev["expect_world_size"] = o.expect_world_size ? nlohmann::json(*o.expect_world_size) : nlohmann::json();
  ev["expect_nodes"] = o.expect_nodes ? nlohmann::json(*o.expect_nodes) : nlohmann::json();

  // Hosts, in the order of their first rank.
  std::vector<Host> hosts;
  std::map<std::string, std::size_t> host_index;
  std::map<int, std::vector<const RankFacts*>> by_rank;
  for (const RankFacts& f : job.ranks) {
    auto [it, inserted] = host_index.emplace(rank_host_key(f), hosts.size());
    if (inserted) hosts.push_back(Host{host_name(f), {}});
    hosts[it->second].ranks.push_back(f.placement.rank);
    by_rank[f.placement.rank].push_back(&f);
  }
  nlohmann::json hosts_ev = nlohmann::json::array();
  for (const Host& h : hosts) hosts_ev.push_back({{"host", h.name}, {"ranks", h.ranks}});
  ev["hosts"] = std::move(hosts_ev);

  const std::string launcher = lead.placement.launcher;
  const bool gathered = job.source != "none";
  if (!gathered && world > 1) {
    b.add(kNotGathered, {{"launcher", launcher}, {"world", world}});
    return b.build();
  }
  if (gathered && job.source == "mpi" && world == 1) {
    // MPI did not connect to the launcher: each process became its own world of 1.
    const LaunchView view = detect_launchers(lead.env);
    if (const LauncherClaim* active = view.active(); active != nullptr && active->size && active->size->value > 1) {
      b.add(kMpiWorldOfOne,
            {{"variable", active->size->variable}, {"size", active->size->value}, {"launcher", active->launcher}});
      return b.build();
    }
  }
  if (!gathered && !o.expect_world_size && !o.expect_nodes) {
    return Verdict::of(kSingleProcess, {}, std::move(ev));
  }

  // Duplicates: two delivered facts claim one rank.
  for (const auto& [rank, claims] : by_rank) {
    if (claims.size() < 2) continue;
    std::vector<std::string> who;
    for (const RankFacts* f : claims) who.push_back(host_name(*f) + " pid " + std::to_string(f->identity.pid));
    b.add(kDuplicateRank, {{"rank", rank}, {"times", claims.size()}, {"processes", join(who, ", ")}});
  }
  // Ranks outside the world.
  std::vector<int> outside;
  for (const auto& [rank, claims] : by_rank) {
    if (rank < 0 || rank >= world) outside.push_back(rank);
  }
  if (!outside.empty()) {
    std::vector<std::string> names;
    for (int r : outside) names.push_back(std::to_string(r));
    b.add(kOutsideWorld, {{"ranks", join(names, ", ")}, {"world", world}});
  }
  // Missing ranks.
  const std::vector<int> missing = job.undelivered();
  ev["undelivered"] = missing;
  // A rank heard from only at the start (the join before MPI_Init) started and waited for the
  // others: it is named apart from the ranks that never started or stopped later.
  std::vector<int> absent;
  std::vector<int> waited;
  for (int r : missing) {
    const bool waiting = std::any_of(job.status.begin(), job.status.end(), [&](const RankStatus& st) {
      return st.rank == r && st.heard && st.last_phase == Phase::Init && st.payload_error.empty();
    });
    (waiting ? waited : absent).push_back(r);
  }
  if (absent.empty()) std::swap(absent, waited);  // only ranks that waited: still missing facts, never a PASS
  // Rank 0's liveness watch saw some of them end: those are the story; the others were still on
  // their way when rank 0 stopped waiting, and are named apart.
  std::vector<int> gone;
  std::vector<int> on_way;
  for (int r : absent) {
    const RankStatus* st = comm::status_of(job, r);
    (st != nullptr && !st->lost.empty() ? gone : on_way).push_back(r);
  }
  if (!gone.empty()) {
    std::string named;
    for (std::size_t i = 0; i < gone.size() && i < kNamed; ++i)
      named += (named.empty() ? "" : "; ") + job.describe_rank(gone[i]);
    if (gone.size() > kNamed) named += "; and " + std::to_string(gone.size() - kNamed) + " more";
    nlohmann::json params = {
        {"count", gone.size()},
        {"ranks_word", ranks_word(gone.size())},
        {"world", world},
        {"named", job.describe_lost().empty() ? named : job.describe_lost()},
        {"on_way",
         part_if(!on_way.empty(), "; {on_way_count} still on the way when the report was made ({on_way_named})")}};
    if (!on_way.empty()) {
      params["on_way_count"] = plural(on_way.size(), "rank was", "ranks were");
      params["on_way_named"] =
          comm::describe(job, std::vector<int>(on_way.begin(),
                                               on_way.begin() + static_cast<long>(std::min(on_way.size(), kNamed)))) +
          (on_way.size() > kNamed ? "; and " + std::to_string(on_way.size() - kNamed) + " more" : std::string());
      params["on_way_ranks"] = on_way;
    }
    comm::add_look_at(params, job, gone);
    b.add(kRanksEnded, std::move(params));
    absent.clear();
  }
  if (!absent.empty()) {
    // The first kNamed ranks by describe_rank (with a refused payload's reason), the rest counted.
    const auto name_ranks = [&](const std::vector<int>& ranks) {
      std::vector<std::string> names;
      for (std::size_t i = 0; i < ranks.size() && i < kNamed; ++i) {
        std::string name = job.describe_rank(ranks[i]);
        for (const RankStatus& st : job.status) {
          if (st.rank == ranks[i] && !st.payload_error.empty()) name += ": its " + st.payload_error.substr(0, 300);
        }
        names.push_back(std::move(name));
      }
      if (ranks.size() > kNamed) names.push_back("and " + std::to_string(ranks.size() - kNamed) + " more");
      return join(names, "; ");
    };
    const bool never_started = !waited.empty();
    nlohmann::json params = {
        {"count", absent.size()},
        {"ranks_word", ranks_word(absent.size())},
        {"world", world},
        {"named", name_ranks(absent)},
        {"waiting", part_if(never_started, std::string("; {waited_count} started and waited for ") +
                                               (absent.size() == 1 ? "it" : "them") +
                                               ", so their facts were not gathered: {waited_named}")}};
    if (never_started) {
      params["waited_count"] = plural(waited.size(), "rank", "ranks");
      params["waited_named"] = name_ranks(waited);
      params["waited_ranks"] = waited;
    }
    if (job.launcher_ended_s && !never_started) {
      // Not stuck: the launcher ended the job while they were on their way (a process died).
      params["time"] = format_duration(*job.launcher_ended_s);
      params["launcher"] =
          lead.placement.launcher.empty() ? std::string("not named by its variables") : lead.placement.launcher;
      ev["launcher_ended_s"] = *job.launcher_ended_s;
      b.add(kLauncherEnded, std::move(params));
    } else {
      b.add(never_started ? kRanksNeverStarted : kRanksMissing, std::move(params));
    }
  }
  // World size and nodes against the expectations.
  if (o.expect_world_size && *o.expect_world_size != world) {
    b.add(kWorldSizeMismatch, {{"world", world},
                               {"source", gathered ? job.source : std::string("a single process")},
                               {"expected_world_size", *o.expect_world_size}});
  }
  const int nodes = static_cast<int>(hosts.size());
  ev["nodes"] = nodes;
  if (o.expect_nodes && *o.expect_nodes != nodes) {
    std::vector<std::string> names;
    for (const Host& h : hosts) names.push_back(h.name);
    b.add(kNodesMismatch, {{"nodes", nodes},
                           {"nodes_word", nodes == 1 ? "node" : "nodes"},
                           {"hosts", join(names, ", ")},
                           {"expected_nodes", *o.expect_nodes},
                           {"counting", part_if(!missing.empty(), " (counting the ranks that delivered)")}});
  }
  // Uneven ranks per node (judged only on a complete world: a missing rank is reported above).
  if (missing.empty() && hosts.size() > 1) {
    std::map<std::size_t, std::vector<std::string>> by_count;
    for (const Host& h : hosts) by_count[h.ranks.size()].push_back(h.name);
    if (by_count.size() > 1) {
      std::vector<std::string> parts;
      for (const auto& [count, names] : by_count)
        parts.push_back(join(names, ", ") + ": " + plural(count, "rank", "ranks"));
      b.add(kUnevenRanks, {{"counts", join(parts, "; ")}});
    }
  }
  if (b.status() == Status::Pass) {
    b.note(plural(static_cast<std::size_t>(world), "rank", "ranks") + " on " + plural(hosts.size(), "node", "nodes") +
           (hosts.size() > 1 || world > 1
                ? ", " + std::to_string(hosts.empty() ? 0 : hosts.front().ranks.size()) + " per node"
                : std::string()) +
           ", each rank delivered once" + (gathered ? " (" + job.source + ")" : std::string()));
  }
  return b.build();
}

Verdict run(const CheckContext& ctx) {
  // Alone (profile node) the check runs for the expectations only: --expect-world-size 4 on one
  // process is a world of 1, a FAIL, not "no job to check".
  // Unless a launcher that really started this process claims ranks that were not connected (MPI a
  // world of 1 under an mpirun of another MPI than preflight's): comm.barrier and comm.allreduce then
  // say "see launch.ranks", and this is where the story is told (comm::unconnected decides for all).
  const bool unconnected = ctx.job != nullptr && comm::unconnected(*ctx.job).has_value();
  if (ctx.profile == Profile::Node && !ctx.options.expect_world_size && !ctx.options.expect_nodes && !unconnected) {
    // The same words as every other job check's SKIP (run_check), so the report says it once;
    // explain names --expect-world-size / --expect-nodes.
    return Verdict::skip(
        "no job to check: preflight runs alone (profile node); start it the way the job starts "
        "(mpirun, srun) to check the job");
  }
  if (ctx.job != nullptr) return judge(*ctx.job, ctx.facts, ctx.options);
  return judge(single_rank_job(ctx.facts), ctx.facts, ctx.options);
}

constexpr std::string_view kExplain = R"(What it reads
  The job rank 0 gathered (MPI) or `preflight merge` rebuilt: the world size, every rank's status
  (delivered or not, host, pid, the last phase it reached), each delivered rank's rank number and
  host identity (hostname + boot id, the identity NCCL uses); --expect-world-size and --expect-nodes.
  Run alone (no gather), the launcher's claimed world size.

Failures
  FAIL     ranks ended (their process, or their host) before delivering their facts: named as a host
           when every rank of it went, apart from the ranks still on their way when rank 0 stopped
           waiting.
  FAIL     the world size differs from --expect-world-size.
  FAIL     the number of nodes (distinct hostname + boot id) differs from --expect-nodes.
  FAIL     a rank was delivered twice (two processes claim one rank), or a rank number lies outside
           the world (files of different runs merged).
  FAIL     ranks that did not deliver their facts, each named with its host, pid and last phase.
  FAIL     the launcher ended the job (its SIGTERM, or Open MPI's SIGCONT before it, reached rank 0)
           before ranks delivered their facts: the time, the launcher's world size and the ranks not
           heard from; the launcher's own message names the process that died. Never "a world of 1".
           Where rank 0's own process died, rank 1 writes the report in its place and says so.
  FAIL     ranks that never started (under a PMIx launcher the ranks meet before MPI_Init, with a
           deadline of 30% of --timeout): each named with the host the launcher placed it on; the
           ranks that started and waited for them are named apart, not blamed. The lowest rank that
           started writes the report (exit 4).
  FAIL     every rank started, but MPI initialisation (MPI_Init) did not finish by its deadline, or
           the launcher ended the job during it (a rank stopped or died in MPI_Init, a host's link
           failed): rank 0 writes the report from the join before MPI_Init, naming each rank with
           its host and pid (exit 4).
  WARN     uneven ranks per node (hosts and counts named): the fullest node sets the pace.
  UNKNOWN  the launcher claims more than one rank but preflight ran as a single process, or MPI
           started as a world of 1: the ranks could not be gathered (no MPI/PMI connection, e.g. srun
           without --mpi=pmix).
  SKIP     a single process with no launcher and no expectation: nothing to compare (variables left
           in the environment, such as OMPI_COMM_WORLD_* without mpirun's PMIx variables, are no
           launcher: launch.env warns of them). Alone (profile node) with --expect-world-size or
           --expect-nodes it is judged: a world of 1 on 1 node; and where the launcher that started
           it claims more ranks than MPI connected (the UNKNOWN above, which comm.* refer to).

Fix
  mpirun -np N --map-by ppr:R:node preflight   |   srun --mpi=pmix --nodes=M --ntasks-per-node=R preflight
  Where ranks cannot connect: preflight --json-per-rank DIR on every rank, then preflight merge DIR/*.json.
  A missing rank: read its host's dmesg (OOM, Xid) and rerun preflight there alone.)";

}  // namespace

extern const CheckSpec kLaunchRanks = {"launch.ranks",
                                       Scope::Job,
                                       "the world has the expected ranks and nodes, each rank once, evenly spread",
                                       kExplain,
                                       kInNode | kInJob,
                                       "an image build has no job to check",
                                       &run,
                                       "gather",
                                       false,
                                       {},
                                       {},
                                       nullptr,
                                       kFindings};

}  // namespace launch_ranks_check
}  // namespace preflight
