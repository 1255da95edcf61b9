// SPDX-License-Identifier: MIT
// comm.allreduce (job, node): an all_reduce of exact integers across the job (NCCL across the GPUs,
// MPI on CPU-only nodes) or, in the node profile, across the node's local GPUs: correct on every
// rank, finished before its deadline, and with a bus bandwidth (algbw * 2(n-1)/n, as nccl-tests
// reports it) at or above --min-busbw.
#include <algorithm>
#include <array>

#include "checks/check.hpp"
#include "checks/comm_ranks.hpp"
#include "core/text.hpp"

namespace preflight {
namespace comm_allreduce_check {
namespace {

/// The size measured, and the size asked for where they differ (they should not: a size the
/// transports cannot run is refused on the command line).
std::string size_text(const CommResult& c, const Options& o) {
  std::string s = format_bytes(c.bytes);
  const std::uint64_t requested = o.allreduce_bytes_for(c.transport);
  if (c.bytes != 0 && c.bytes != requested) {
    s += o.allreduce_bytes ? " (--allreduce-bytes asked for " + format_bytes(requested) + ")"
                           : " (the default over " + c.transport + " is " + format_bytes(requested) + ")";
  }
  return s;
}

// What was measured, with {algbw}, {busbw}, {size}, {participants}, {transport}, {repeats} and {time}.
#define PREFLIGHT_MEASURED                                                                    \
  "algbw {algbw} GB/s, busbw {busbw} GB/s for {size} across {participants} over {transport} " \
  "(best of {repeats}, {time})"

std::string transport_of(const CommResult& c) { return c.transport.empty() ? std::string("?") : c.transport; }

nlohmann::json measured_params(const CommResult& c, const Options& o) {
  const std::string who = c.transport == "nccl" ? std::to_string(c.ranks) + (c.ranks == 1 ? " GPU" : " GPUs")
                                                : std::to_string(c.ranks) + (c.ranks == 1 ? " rank" : " ranks");
  return {{"algbw", fixed(c.algbw_gbps, 2)},   {"busbw", fixed(c.busbw_gbps, 2)},
          {"size", size_text(c, o)},           {"participants", who},
          {"transport", transport_of(c)},      {"repeats", c.repeats},
          {"time", format_duration(c.seconds)}};
}

/// `params` with {errors}: " ({error_list})" where the participants' errors (quoted, joined) are
/// not empty, else "".
nlohmann::json with_errors(nlohmann::json params, std::string errors) {
  params["errors"] = part_if(!errors.empty(), " ({error_list})");
  if (!errors.empty()) params["error_list"] = std::move(errors);
  return params;
}

/// The nccl-tests run that measures what this all_reduce measured, like with like: the same size
/// (-b = -e), data checked (-c 1), the same GPUs: all of the node's in one process (-g N) in the
/// node profile, one GPU per process (-g 1) under the job's launcher.
std::string nccl_tests_command(const CommResult& c, bool node_local) {
  const std::string size = std::to_string(c.bytes);
  const std::string args = " -b " + size + " -e " + size + " -c 1 -n " + std::to_string(std::max(1, c.repeats));
  if (node_local) return "all_reduce_perf" + args + " -g " + std::to_string(c.ranks);
  return "mpirun -np " + std::to_string(c.ranks) + " all_reduce_perf" + args + " -g 1";
}

constexpr std::string_view kMpiNote =
    "measured over MPI in host memory (a CPU-only node): this is the hosts' network and memory, not a GPU fabric";

#define PREFLIGHT_NCCL_DEBUG                                                                                     \
  " Rerun the job's first collective with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see the transport NCCL " \
  "picks; see net.socket_ifname, net.ib and topo.p2p for the cause."
constexpr std::string_view kNcclDebug = PREFLIGHT_NCCL_DEBUG;

/// "rank 3 (GPU 3): allreduce: …" of a node-local all_reduce as "GPU 3's helper: allreduce: …":
/// in the node profile the participants are the local GPUs' helpers, not ranks of a launcher.
std::string helper_error(const std::string& e) {
  if (!e.starts_with("rank ")) return e;
  const auto open = e.find(" (GPU ");
  const auto close = e.find("): ");
  if (open == std::string::npos || close == std::string::npos || close < open) return e;
  return "GPU " + e.substr(open + 6, close - open - 6) + "'s helper: " + e.substr(close + 3);
}

std::string gpu_list(const std::vector<int>& gpus) {
  std::vector<int> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  return (sorted.size() == 1 ? "GPU " : "GPUs ") + range_list(sorted);
}

/// The per-rank errors with the same message said once, naming every rank (or, on one node, every
/// GPU's helper) that gave it: "GPUs 0–7's helpers: init: ncclCommInitRankConfig: …" where eight
/// helpers failed alike. An error without a "who): " prefix stays as it is.
std::string grouped_errors(const std::vector<std::string>& errors, bool node_local) {
  struct Group {
    std::string message;
    std::vector<std::string> who;
    std::vector<int> gpus;  // node_local: the GPUs of `who`, when every one names its GPU
    bool all_gpus = true;
  };
  std::vector<Group> groups;
  for (const std::string& e : errors) {
    const std::size_t close = e.starts_with("rank ") ? e.find("): ") : std::string::npos;
    const std::string who = close == std::string::npos ? std::string() : e.substr(0, close + 1);
    const std::string message = close == std::string::npos ? e : e.substr(close + 3);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.message == message; });
    if (g == groups.end() || who.empty()) g = groups.insert(groups.end(), Group{message, {}, {}, true});
    if (who.empty()) continue;
    g->who.push_back(who);
    const std::size_t at = who.find(" (GPU ");
    if (at == std::string::npos) {
      g->all_gpus = false;
    } else {
      try {
        g->gpus.push_back(std::stoi(who.substr(at + 6)));
      } catch (const std::exception&) {
        g->all_gpus = false;
      }
    }
  }
  std::vector<std::string> out;
  for (const Group& g : groups) {
    if (g.who.empty()) {
      out.push_back(g.message);
    } else if (node_local && g.all_gpus) {
      out.push_back(gpu_list(g.gpus) + (g.gpus.size() == 1 ? "'s helper: " : "'s helpers: ") + g.message);
    } else {
      std::string names;
      const std::size_t shown = std::min<std::size_t>(g.who.size(), 3);
      for (std::size_t i = 0; i < shown; ++i) names += (i == 0 ? "" : ", ") + g.who[i];
      if (g.who.size() > shown) names += " and " + std::to_string(g.who.size() - shown) + " more ranks";
      out.push_back(names + ": " + g.message);
    }
  }
  return join(out, "; ");
}

constexpr FindingSpec kNotGathered = {"comm.allreduce/not-gathered", Status::Skip,
                                      "no all_reduce was run in this process (nothing was gathered)", ""};
constexpr FindingSpec kMerged = {"comm.allreduce/merged", Status::Skip,
                                 "the all_reduce runs only in a live job (these results were merged from files)", ""};
constexpr FindingSpec kNotConnected = {"comm.allreduce/not-connected", Status::Unknown,
                                       "the all_reduce was not run: " PREFLIGHT_COMM_NOT_CONNECTED,
                                       PREFLIGHT_COMM_CONNECT_FIX};
constexpr FindingSpec kMpiWorldOfOne = {"comm.allreduce/mpi-world-of-one", Status::Unknown,
                                        "the all_reduce was not run: " PREFLIGHT_COMM_MPI_WORLD_OF_ONE,
                                        PREFLIGHT_COMM_CONNECT_FIX};
// {reason}: why the NCCL all_reduce the job needs could not run.
constexpr FindingSpec kNcclBlocked = {
    "comm.allreduce/nccl-blocked", Status::Fail, "{reason}",
    "Fix what is named first (launch.gpu_binding, gpu.count or nccl.library say how); the job's own first NCCL "
    "collective fails the same way."};
// {reason}: the fact the NCCL all_reduce needs that a probe did not find out within its deadline.
constexpr FindingSpec kNcclUndetermined = {
    "comm.allreduce/nccl-undetermined", Status::Unknown, "{reason}",
    "Give the run more time (--timeout; the check named says how much) so the facts the all_reduce needs are "
    "found out; nothing here says the GPUs or NCCL are at fault."};
// {lost}: the hosts and ranks rank 0's liveness watch lost; {look_at}: what to look at on their hosts.
constexpr FindingSpec kRanksLost = {"comm.allreduce/ranks-lost", Status::Fail,
                                    "the all_reduce over {transport} could not complete: {lost}", "{look_at}."};
constexpr FindingSpec kRanksLostBefore = {"comm.allreduce/ranks-lost-before", Status::Fail,
                                          "the all_reduce was not run: {lost}", "{look_at}."};
// {note}: " ({reason})", or "".
constexpr FindingSpec kRanksMissing = {
    "comm.allreduce/ranks-missing", Status::Fail,
    "the all_reduce was not run: {count} of {world} ranks did not arrive earlier: {named}{note}", "{look_at}."};
// {note}: ": {reason}", or "".
constexpr FindingSpec kNotRun = {"comm.allreduce/not-run", Status::Skip, "no all_reduce was run{note}", ""};
// {who}: the ranks (the GPUs in the node profile; their numbers in {wrong}); {errors}: " ({error_list})", or "".
#define PREFLIGHT_WRONG_RESULT \
  "the all_reduce result was wrong on {count} of {ranks} participants: {who}{errors} over {transport}"
constexpr FindingSpec kWrongResultNccl = {
    "comm.allreduce/wrong-result-nccl", Status::Fail, PREFLIGHT_WRONG_RESULT,
    "Silent data corruption in the GPU path: rerun with NCCL_P2P_DISABLE=1, then NCCL_SHM_DISABLE=1, then "
    "NCCL_IB_DISABLE=1 to find the transport that corrupts; check the GPUs named (`nvidia-smi -q -d ECC,ERRORS`, "
    "`dmesg | grep -i xid`) and PCIe ACS (topo.pcie_acs); drain the node until it passes."};
constexpr FindingSpec kWrongResultMpi = {
    "comm.allreduce/wrong-result-mpi", Status::Fail, PREFLIGHT_WRONG_RESULT,
    "MPI delivered wrong sums: check that every rank runs the same MPI build and the hosts named (memory errors: "
    "`dmesg`, `edac-util`); drain the host until it passes."};
#undef PREFLIGHT_WRONG_RESULT
// {hung}: "; the helpers of {hung_gpus} hung ({hung_count} of {ranks})…", or ""; {errors}: " ({error_list})", or "".
constexpr FindingSpec kNodeHang = {
    "comm.allreduce/node-hang", Status::Fail,
    "the NCCL all_reduce across the node's {ranks} GPUs (one contained helper per GPU) did not finish: stopped after "
    "{time}{hung}{errors}",
    "A collective that hangs between the GPUs of one node is almost always the peer path between them: see topo.p2p "
    "(its real peer copies name the pair) and topo.pcie_acs (ACS or an IOMMU redirecting peer traffic); rerun with "
    "NCCL_P2P_DISABLE=1 — if it then completes, P2P/NVLink between these GPUs is broken (`nvidia-smi topo -p2p rw`, "
    "`nvidia-smi nvlink --status`, the fabric manager on NVSwitch systems); check `dmesg | grep -i -e xid -e nvrm` for "
    "the GPUs named, and drain the node until it passes."};
// The deadline passed in a job. {errors}: " ({error_list})", or ""; {nccl_debug}: kNcclDebug over NCCL, or "".
constexpr FindingSpec kExpiredUnnamed = {
    "comm.allreduce/expired-unnamed", Status::Fail,
    "the all_reduce did not complete within {waited} over {transport} (no rank was named as missing){errors}",
    "See the errors in the detail.{nccl_debug}"};
constexpr FindingSpec kFabric = {
    "comm.allreduce/fabric", Status::Fail,
    "the all_reduce did not complete within {waited} over {transport}: every rank reached it and is alive ({alive}): "
    "the fabric between the ranks, not a stuck rank{errors}",
    "The collective's transport does not carry data between these ranks: a firewall between the hosts or an interface "
    "the others cannot route to.{nccl_debug}"};
// {alive}: "; alive and waiting: {waiting}", or "".
constexpr FindingSpec kExpired = {
    "comm.allreduce/expired", Status::Fail,
    "the all_reduce did not complete within {waited} over {transport}: {count} of {world} ranks did not finish: "
    "{named}{alive}{errors}",
    "{look_at}.{nccl_debug}"};
// {error}: the errors quoted, or "no error message".
constexpr FindingSpec kErrorNccl = {
    "comm.allreduce/error-nccl", Status::Fail, "the all_reduce over {transport} failed: {error}",
    "Fix the first error quoted: a rank that never joined the communicator (its helper could not start, crashed "
    "or could not load NCCL) is the cause, and the ranks that waited for it are not (a process or descriptor limit "
    "shows in host.limits); an init failure is usually the network or the library (nccl.library, "
    "env.nccl)." PREFLIGHT_NCCL_DEBUG};
constexpr FindingSpec kErrorMpi = {"comm.allreduce/error-mpi", Status::Fail,
                                   "the all_reduce over {transport} failed: {error}",
                                   "Fix the MPI error quoted; check that every rank runs the same MPI build."};
constexpr FindingSpec kBusbwUnmeasured = {
    "comm.allreduce/busbw-unmeasured", Status::Unknown,
    "the all_reduce was correct, but its bandwidth was not measured ({repeats} timed repeats): --min-busbw {floor} "
    "GB/s cannot be judged",
    "Give the run more time (--timeout) so the timed repeats can run."};
// {command}: the nccl-tests command that measures what was measured here.
constexpr FindingSpec kBusbwLow = {
    "comm.allreduce/busbw-low", Status::Fail, "all_reduce busbw is below --min-busbw {floor} GB/s: " PREFLIGHT_MEASURED,
    "Find the slow link: compare with nccl-tests at what was measured here, `{command}` (its busbw column is the "
    "figure compared); rerun with NCCL_DEBUG=INFO and look for NET/Socket where IB was expected, P2P disabled "
    "between GPUs (topo.p2p), PCIe ACS (topo.pcie_acs), or a NIC across the socket (net.gpu_nic_affinity)."};
// {floor_note}: " (≥ --min-busbw {floor} GB/s)", or ""; {mpi_note}: "; " and kMpiNote over MPI, or "".
constexpr FindingSpec kCorrect = {
    "comm.allreduce/correct", Status::Pass,
    "the all_reduce was correct on every participant: " PREFLIGHT_MEASURED "{floor_note}{mpi_note}", ""};
constexpr FindingSpec kCorrectAlone = {
    "comm.allreduce/correct-alone", Status::Pass,
    "the all_reduce was correct on a single participant over {transport} (no bandwidth between peers to "
    "measure){mpi_note}",
    ""};
// A GPU-fabric floor does not apply to host memory over MPI: that part is skipped, never failed.
constexpr FindingSpec kCorrectFloorNotForMpi = {
    "comm.allreduce/correct-floor-not-for-mpi", Status::Pass,
    "the all_reduce was correct on every participant: " PREFLIGHT_MEASURED
    "{mpi_note}; --min-busbw {floor} GB/s: SKIP, a floor for a GPU fabric does not apply to MPI in host memory",
    ""};
#undef PREFLIGHT_NCCL_DEBUG
#undef PREFLIGHT_MEASURED

constexpr std::array kFindings = {kNotGathered,
                                  kMerged,
                                  kNotConnected,
                                  kMpiWorldOfOne,
                                  kNcclBlocked,
                                  kNcclUndetermined,
                                  kRanksLost,
                                  kRanksLostBefore,
                                  kRanksMissing,
                                  kNotRun,
                                  kWrongResultNccl,
                                  kWrongResultMpi,
                                  kNodeHang,
                                  kExpiredUnnamed,
                                  kFabric,
                                  kExpired,
                                  kErrorNccl,
                                  kErrorMpi,
                                  kBusbwUnmeasured,
                                  kBusbwLow,
                                  kCorrect,
                                  kCorrectAlone,
                                  kCorrectFloorNotForMpi};

Verdict run(const CheckContext& ctx) {
  const JobFacts* job = ctx.job;
  if (job == nullptr) return Verdict::of(kNotGathered);
  if (job->source == "merge") return Verdict::of(kMerged);
  const JobFacts& j = *job;
  const CommResult& c = j.allreduce;
  nlohmann::json ev = {{"bytes", c.bytes},
                       {"requested_bytes", ctx.options.allreduce_bytes_for(c.transport)},
                       {"ranks", c.ranks},
                       {"algbw_gbps", c.algbw_gbps},
                       {"busbw_gbps", c.busbw_gbps},
                       {"seconds", c.seconds},
                       {"transport", c.transport},
                       {"repeats", c.repeats},
                       {"attempted", c.attempted},
                       {"completed", c.completed},
                       {"expired", c.expired},
                       {"deadline_s", c.deadline_s},
                       {"note", c.note},
                       {"missing", c.missing},
                       {"wrong", c.wrong},
                       {"errors", c.errors},
                       {"min_busbw_gbps", ctx.options.min_busbw_gbps ? nlohmann::json(*ctx.options.min_busbw_gbps)
                                                                     : nlohmann::json(nullptr)}};
  const bool live_job = j.source == "mpi" && j.world_size > 1;
  // The ranks the launcher claims were never connected: one story with launch.ranks.
  if (const std::optional<comm::Unconnected> u = comm::unconnected(j)) {
    return Verdict::of(u->mpi_world_of_one ? kMpiWorldOfOne : kNotConnected, u->params, ev);
  }

  // The NCCL all_reduce the job needs could not run (GPUs exist but a rank has no GPU of its own, or
  // NCCL cannot be loaded): a failure with its reason, never a host-memory stand-in.
  if (c.blocked) {
    const std::string reason = c.note.empty() ? std::string("the NCCL all_reduce could not run") : c.note;
    return Verdict::of(c.undetermined ? kNcclUndetermined : kNcclBlocked, {{"reason", reason}}, ev)
        .because("launch.gpu_binding,nccl.library,driver.loaded");
  }
  const bool node_local = c.transport == "nccl" && !live_job;  // the node profile: one helper per local GPU

  if (const std::string lost = j.describe_lost(); live_job && !lost.empty() && !c.completed) {
    // Rank 0's liveness watch saw processes end (or a host stop answering): that is the story.
    nlohmann::json params = {{"lost", lost}};
    comm::add_look_at(params, j, j.lost());
    if (c.attempted) params["transport"] = transport_of(c);
    return Verdict::of(c.attempted ? kRanksLost : kRanksLostBefore, std::move(params), ev);
  }

  if (!c.attempted) {
    const std::vector<int> missing = c.missing.empty() ? (live_job ? j.undelivered() : std::vector<int>{}) : c.missing;
    if (!missing.empty()) {
      const comm::Partition p = comm::partition(j, missing, Phase::Allreduce);
      const std::vector<int>& named = p.stuck.empty() ? missing : p.stuck;
      nlohmann::json params = {{"count", missing.size()},
                               {"world", j.world_size},
                               {"named", comm::describe(j, named)},
                               {"note", part_if(!c.note.empty(), " ({reason})")}};
      if (!c.note.empty()) params["reason"] = c.note;
      comm::add_look_at(params, j, named);
      return Verdict::of(kRanksMissing, std::move(params), ev);
    }
    nlohmann::json params = {{"note", part_if(!c.note.empty(), ": {reason}")}};
    if (!c.note.empty()) params["reason"] = c.note;
    return Verdict::of(kNotRun, std::move(params), ev);
  }

  if (!c.wrong.empty()) {
    std::vector<std::string> who;
    for (int r : c.wrong)
      who.push_back(c.transport == "nccl" && !live_job ? "GPU " + std::to_string(r) : j.describe_rank(r));
    return Verdict::of(c.transport == "nccl" ? kWrongResultNccl : kWrongResultMpi,
                       with_errors({{"count", c.wrong.size()},
                                    {"wrong", c.wrong},
                                    {"ranks", c.ranks},
                                    {"who", join(who, "; ")},
                                    {"transport", transport_of(c)}},
                                   join(c.errors, "; ")),
                       ev);
  }

  if (c.expired && node_local) {
    const std::vector<int>& hung = c.missing;
    std::string hung_part;
    if (!hung.empty()) {
      hung_part = std::string("; the helper") + (hung.size() == 1 ? " of " : "s of ") +
                  "{hung_gpus} hung ({hung_count} of {ranks})";
      if (static_cast<int>(hung.size()) == c.ranks) hung_part += ": every communicator was aborted after its deadline";
    }
    nlohmann::json params = {
        {"ranks", c.ranks}, {"time", format_duration(c.seconds)}, {"hung", template_param(hung_part)}};
    if (!hung.empty()) {
      params["hung_gpus"] = gpu_list(hung);
      params["hung_count"] = hung.size();
    }
    return Verdict::of(kNodeHang, with_errors(std::move(params), grouped_errors(c.errors, true)), ev);
  }

  if (c.expired) {
    const comm::Partition p = comm::partition(j, c.missing, Phase::Allreduce);
    nlohmann::json params = with_errors({{"waited", format_duration(c.deadline_s > 0 ? c.deadline_s : c.seconds)},
                                         {"transport", transport_of(c)},
                                         {"nccl_debug", part_if(c.transport == "nccl", std::string(kNcclDebug))}},
                                        join(c.errors, "; "));
    const FindingSpec* spec = &kExpired;
    if (c.missing.empty()) {
      spec = &kExpiredUnnamed;
    } else if (p.stuck.empty()) {
      spec = &kFabric;
      params["alive"] = comm::describe(j, p.alive);
    } else {
      params["count"] = c.missing.size();
      params["world"] = j.world_size;
      params["named"] = comm::describe(j, p.stuck);
      params["alive"] = part_if(!p.alive.empty(), "; alive and waiting: {waiting}");
      if (!p.alive.empty()) params["waiting"] = comm::describe(j, p.alive);
      comm::add_look_at(params, j, p.stuck);
    }
    return Verdict::of(*spec, std::move(params), ev)
        .because(p.stuck.empty() ? "net.socket_ifname,net.reachability" : "");
  }

  if (!c.completed || !c.errors.empty()) {
    // The note is the first error (and how many more) where the errors are all there is to say.
    const bool note_from_errors = !c.errors.empty() && c.note.starts_with(c.errors.front());
    std::string what = note_from_errors ? std::string() : node_local ? helper_error(c.note) : c.note;
    if (!c.errors.empty()) what += (what.empty() ? "" : "; ") + grouped_errors(c.errors, node_local);
    // NCCL's SHM transport names its segment ("/dev/shm/nccl-…", "shared memory"): a full or
    // small /dev/shm explains it where shm.capacity finds fault with it.
    const bool shm = what.find("/dev/shm") != std::string::npos || what.find("shared memory") != std::string::npos;
    const std::string error = what.empty() ? std::string("no error message") : what;
    return Verdict::of(c.transport == "nccl" ? kErrorNccl : kErrorMpi,
                       {{"transport", transport_of(c)}, {"error", error}}, ev)
        .because(shm ? "shm.capacity" : "nccl.library,net.socket_ifname");
  }

  // Correct and complete: the bandwidth.
  const bool mpi = c.transport == "mpi";
  const nlohmann::json mpi_note = part_if(mpi, "; " + std::string(kMpiNote));
  if (c.ranks <= 1) {
    return Verdict::of(kCorrectAlone, {{"transport", transport_of(c)}, {"mpi_note", mpi_note}}, ev);
  }
  const std::optional<double> floor = ctx.options.min_busbw_gbps;
  if (floor && mpi) {
    // A GPU-fabric floor does not apply to host memory over MPI: that part is skipped, with the
    // reason, never failed.
    ev["min_busbw_skipped"] = "the all_reduce ran over MPI in host memory (no rank has a GPU)";
    nlohmann::json params = measured_params(c, ctx.options);
    params["mpi_note"] = mpi_note;
    params["floor"] = general(*floor);
    return Verdict::of(kCorrectFloorNotForMpi, std::move(params), ev);
  }
  if (floor && (c.repeats <= 0 || !(c.busbw_gbps > 0))) {
    return Verdict::of(kBusbwUnmeasured, {{"repeats", c.repeats}, {"floor", general(*floor)}}, ev);
  }
  nlohmann::json params = measured_params(c, ctx.options);
  if (floor && c.busbw_gbps < *floor) {
    params["floor"] = general(*floor);
    params["command"] = nccl_tests_command(c, node_local);
    return Verdict::of(kBusbwLow, std::move(params), ev);
  }
  params["floor_note"] = part_if(floor.has_value(), " (≥ --min-busbw {floor} GB/s)");
  if (floor) params["floor"] = general(*floor);
  params["mpi_note"] = mpi_note;
  return Verdict::of(kCorrect, std::move(params), ev);
}

constexpr std::string_view kExplain = R"(What it reads
  How the all_reduce phase went: an element-wise sum of exact integers (every participant knows
  the expected result exactly), with NCCL across the GPUs (non-blocking communicators with a deadline
  and abort; each rank's helper on the GPU launch.gpu_binding says it uses: its only visible GPU,
  else the one at LOCAL_RANK) or MPI on CPU-only nodes (no rank has a GPU); in the node profile
  (no launcher) across every local GPU,
  and only when this check is selected (--only/--skip): the GPUs are not exercised for nothing.
  Its message size, participants, the timed repeats (the best is kept), algbw (bytes / time) and
  busbw (algbw * 2(n-1)/n, the figure nccl-tests reports); --min-busbw GBPS.
  The size is exactly --allreduce-bytes on every transport (16 B to 8 GiB in whole 8-byte
  elements, anything else is refused at the command line with exit 2: the sum is of 8-byte
  integers, at least two, and every GPU holds a send and a receive buffer of that size, over MPI
  every rank in host memory). Without it: 32 MiB over NCCL, where the bus bandwidth shows; 1 MiB
  over MPI, where the collective and its sums are checked and the bandwidth is not judged. The size measured is in the summary ("for 16 B"), the evidence
  (bytes, and requested_bytes) and the Prometheus sample preflight_allreduce_bytes.

Failures
  FAIL     the result was wrong on some ranks or GPUs (named, with what was wrong): silent data
           corruption in the GPU path or the host.
  FAIL     a rank's process ended, or its host stopped answering, before the all_reduce completed
           (rank 0's liveness watch, as in comm.barrier): names the host when every rank of it went,
           else the rank.
  FAIL     the deadline expired: names the ranks that did not finish (host, pid, last phase), or says
           that all were alive (the fabric between them). In the node profile the participants are the
           local GPUs' contained helpers, not ranks: it names the GPUs whose helper hung, says when every
           communicator was aborted, gives the time it really ran, and points at the peer path
           (topo.p2p, topo.pcie_acs, NCCL_P2P_DISABLE=1 to confirm).
  FAIL     GPUs exist but the NCCL all_reduce cannot run: a rank has no GPU of its own (see
           launch.gpu_binding), a rank or the node cannot load NCCL (nccl.library). Never replaced by
           an all_reduce in host memory: MPI stands in only where no rank has a GPU at all.
  FAIL     the collective returned an error (e.g. ncclCommInitRank failed), quoted. Where one
           GPU's helper never joined the communicator (it could not start, crashed or could not
           load NCCL before its init), it is quoted first and the others are stopped at once: they
           are named as having waited for it, not as hung.
  FAIL     it was not run because ranks were missing earlier: names them.
  FAIL     busbw is below --min-busbw (the measured algbw, busbw, size, participants, transport),
           after the job measured it again (up to three rounds; the best round counts).
  UNKNOWN  --min-busbw is given but no timed repeat ran.
  UNKNOWN  not run because what it needs was not found out in time: a rank's NCCL probe or CUDA
           device list ran out of its deadline or of preflight's budget (nccl.library, driver.loaded
           say which and the --timeout that fits). Never a FAIL: nothing says NCCL or a GPU is bad.
  UNKNOWN  the launcher claims more ranks than preflight could connect (srun without --mpi=pmix):
           not run, the same story as launch.ranks. Only a launcher that started this process
           counts: variables left in the environment (OMPI_COMM_WORLD_* without mpirun's PMIx
           variables) make no job, and this process alone is judged as alone (SKIP, or the node's
           own all_reduce).
  PASS     over MPI (a CPU-only job) with --min-busbw: the floor is for a GPU fabric and does not
           apply to host memory; that part is SKIP with the reason (evidence min_busbw_skipped),
           never a FAIL.
  SKIP     not run (no GPU in the node profile, or the reason given); results merged from files.
  SKIP     under --sysroot: the GPUs judged are the captured node's, and an all_reduce needs the
           node's own (it is never run on the judging machine's GPUs).
  Over MPI the figures are the hosts' network and memory, not a GPU fabric; the summary says so.

Fix
  Wrong data: NCCL_P2P_DISABLE=1 / NCCL_SHM_DISABLE=1 / NCCL_IB_DISABLE=1 in turn to find the path,
  nvidia-smi -q -d ECC,ERRORS, dmesg | grep -i xid; drain the node.
  Slow: all_reduce_perf from nccl-tests measuring what was measured here, like with like: the same
  size (-b B -e B), data checked (-c 1), the same repeats (-n), and the same GPUs: -g N for the N
  GPUs of a node in one process (the node profile), `mpirun -np W all_reduce_perf … -g 1` for the
  job's W ranks; NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see the transport; topo.p2p,
  topo.pcie_acs, net.gpu_nic_affinity for the cause.)";

}  // namespace

extern const CheckSpec kCommAllreduce = {
    "comm.allreduce",
    Scope::Job,
    "an all_reduce of exact integers is correct on every rank and fast enough",
    kExplain,
    kInNode | kInJob,
    "an image build has no job to check",
    &run,
    "allreduce",
    false,
    // nccl.library explains it only by the findings that stop NCCL from loading or running here, not
    // by a WARN about a release's known issue (folding under it would hide the all_reduce's FAIL).
    "launch.gpu_binding,driver.loaded,shm.capacity,net.socket_ifname,net.reachability,nccl.library/cpu-torch,"
    "nccl.library/torch-nccl-missing,nccl.library/not-found,nccl.library/load-failed,nccl.library/missing-symbols,"
    "nccl.library/cuda-build-too-new,nccl.library/driver-too-old,nccl.library/known-issue-env,"
    "nccl.library/not-probed,nccl.library/out-of-budget,nccl.library/not-read",
    {},
    nullptr,
    kFindings};

}  // namespace comm_allreduce_check
}  // namespace preflight
