// SPDX-License-Identifier: MIT
// net.reachability (job): every rank opened a TCP connection (bounded in time) to rank 0's NCCL
// bootstrap address, the interface and address NCCL on rank 0 would put into its unique id. A rank
// that cannot is a job that hangs or fails in ncclCommInitRank.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/nccl_socket.hpp"
#include "core/text.hpp"

namespace preflight {
namespace net_reachability_check {
namespace {

std::string host_of(const JobFacts& j, int rank) {
  if (const RankFacts* f = j.facts_of(rank); f != nullptr && !f->identity.hostname.empty()) return f->identity.hostname;
  for (const RankStatus& s : j.status) {
    if (s.rank == rank && !s.host.empty()) return s.host;
  }
  return "?";
}

std::string ranks_text(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + range_list(ranks);
}

/// NCCL's bootstrap choice replayed on rank 0's facts; nullopt when its interfaces are not known.
std::optional<SocketSelection> rank0_selection(const JobFacts& j) {
  const RankFacts* f0 = j.facts_of(0);
  if (f0 == nullptr) return std::nullopt;
  const std::vector<NetInterface>* ifs = f0->net.interfaces.value();
  if (ifs == nullptr || f0->net.interfaces.source() == kInterfacesSysfsSource) return std::nullopt;
  const auto opt = [&](std::string_view name) -> std::optional<std::string> {
    if (auto s = nccl_setting(*f0, name)) return s->value;
    return std::nullopt;
  };
  return nccl_socket_select(*ifs, opt("NCCL_SOCKET_IFNAME"), opt("NCCL_SOCKET_FAMILY"), opt("NCCL_COMM_ID"));
}

std::string rule_text(const SocketSelection& sel) {
  return sel.from_env ? "NCCL_SOCKET_IFNAME=" + printable(sel.rule)
                      : "NCCL's default order (" + join(sel.tried, ", ") + ")";
}

// Where every rank connected: rank 0's bootstrap address, with the interface ("eth0 on ") and host.
#define PREFLIGHT_WHERE "rank 0's NCCL bootstrap address {target} ({iface_on}{host})"

constexpr FindingSpec kSingleProcess = {"net.reachability/single-process", Status::Skip,
                                        "a single process: there is no other rank to reach rank 0", ""};
constexpr FindingSpec kMergedWithoutResults = {
    "net.reachability/merged-without-results", Status::Skip,
    "reachability is tested only in a live job, and the merged files hold no reach results", ""};
constexpr FindingSpec kRank0NoInterface = {
    "net.reachability/rank0-no-interface", Status::Fail,
    "rank 0 ({host}) has no interface NCCL's bootstrap can use: {selected_by} selects no running interface with an "
    "address, so NCCL fails with \"Bootstrap : no socket interface found\" before any rank can connect{note}",
    "On {host}, set NCCL_SOCKET_IFNAME to a running interface with an address that every node can route to (see "
    "`ip -br addr` and net.socket_ifname), the same on every rank."};
constexpr FindingSpec kNotRun = {
    "net.reachability/not-run", Status::Unknown, "the reachability test was not run: {why}",
    "See net.socket_ifname on rank 0 ({host}) for the interface NCCL would use; rerun preflight under the job's "
    "launcher."};
constexpr FindingSpec kUnreachable = {
    "net.reachability/unreachable", Status::Fail,
    "{failed} of {total} ranks cannot open a TCP connection to " PREFLIGHT_WHERE ": {failures}",
    "{explanation}{pick}: if the other hosts cannot route to that network, set NCCL_SOCKET_IFNAME to the interface the "
    "nodes share (the same on every rank; `ip -br addr`). On a failing host, `ip route get {address}` shows the "
    "route; on {host}, allow TCP from the other nodes (NCCL's bootstrap listens on ephemeral ports): `nft list "
    "ruleset` / `iptables -S INPUT`."};
constexpr FindingSpec kNoResult = {
    "net.reachability/no-result", Status::Unknown,
    "{silent} delivered no reachability result: whether they reach " PREFLIGHT_WHERE " is unknown",
    "Rerun preflight under the job's launcher; see the launch and barrier checks for what stopped those ranks."};
constexpr FindingSpec kNoFacts = {"net.reachability/no-facts", Status::Unknown,
                                  "no facts arrived from {missing}: whether they reach " PREFLIGHT_WHERE " is unknown",
                                  "See comm.barrier and launch.ranks for where those ranks stopped."};
constexpr FindingSpec kLoopback = {
    "net.reachability/loopback", Status::Fail,
    "rank 0's NCCL bootstrap address {target} is loopback in a job across {hosts} hosts: ranks on the other hosts "
    "connect to themselves",
    "Set NCCL_SOCKET_IFNAME to the interface the nodes share (not lo), the same on every rank."};
constexpr FindingSpec kReached = {
    "net.reachability/reached", Status::Pass,
    "all {reached} ranks opened a TCP connection to " PREFLIGHT_WHERE " (slowest {slowest})", ""};
#undef PREFLIGHT_WHERE

constexpr std::array kFindings = {
    kSingleProcess, kMergedWithoutResults, kRank0NoInterface, kNotRun, kUnreachable, kNoResult, kNoFacts, kLoopback,
    kReached};

Verdict run(const CheckContext& ctx) {
  const JobFacts* job = ctx.job;
  if (job == nullptr || (job->source == "none" && job->world_size <= 1)) {
    return Verdict::of(kSingleProcess);
  }
  const JobFacts& j = *job;
  const bool merged = j.source == "merge";

  // The ranks to judge: the status table of a live job (every rank of the world), the files of a merge.
  std::vector<int> ranks;
  if (!merged && !j.status.empty()) {
    for (const RankStatus& s : j.status) ranks.push_back(s.rank);
  } else {
    for (const RankFacts& f : j.ranks) ranks.push_back(f.placement.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());

  if (merged) {
    const bool any =
        std::any_of(j.ranks.begin(), j.ranks.end(), [](const RankFacts& f) { return f.net.reach.has_value(); });
    if (!any) return Verdict::of(kMergedWithoutResults);
  }

  VerdictBuilder b;
  nlohmann::json& ev = b.evidence();
  const std::optional<SocketSelection> sel = rank0_selection(j);
  const std::string host0 = host_of(j, 0);
  if (j.reach_target) ev["target"] = *j.reach_target;
  if (!j.reach_note.empty()) ev["reach_note"] = j.reach_note;
  if (sel) ev["rank0_selection"] = {{"rule", sel->rule}, {"from_env", sel->from_env}, {"tried", sel->tried}};

  if (!merged && !j.reach_target) {
    if (sel && sel->matches.empty()) {
      return Verdict::of(kRank0NoInterface,
                         {{"host", host0},
                          {"selected_by", rule_text(*sel)},
                          {"note", part_if(!j.reach_note.empty(), " ({reach_note})")},
                          {"reach_note", j.reach_note}},
                         std::move(ev))
          .because("net.socket_ifname");
    }
    return Verdict::of(
        kNotRun,
        {{"why", j.reach_note.empty() ? std::string("rank 0 offered no address") : j.reach_note}, {"host", host0}},
        std::move(ev));
  }

  // Every rank's result.
  std::string target =
      j.reach_target ? j.reach_target->address + ":" + std::to_string(j.reach_target->port) : std::string();
  if (j.reach_target && j.reach_target->address.find(':') != std::string::npos) {
    target = "[" + j.reach_target->address + "]:" + std::to_string(j.reach_target->port);
  }
  std::map<std::pair<std::string, std::string>, std::vector<int>> failed;  // (host, error) -> ranks
  std::vector<int> no_result, undelivered, ok;
  std::set<std::string> hosts;
  double slowest = 0;
  nlohmann::json results = nlohmann::json::array();
  for (int r : ranks) {
    const RankFacts* f = j.facts_of(r);
    const std::string host = host_of(j, r);
    if (host != "?") hosts.insert(host);
    if (f == nullptr) {
      undelivered.push_back(r);
      continue;
    }
    if (!f->net.reach || !f->net.reach->attempted) {
      no_result.push_back(r);
      continue;
    }
    const ReachResult& rr = *f->net.reach;
    if (target.empty()) target = rr.target;
    results.push_back({{"rank", r},
                       {"host", host},
                       {"ok", rr.ok},
                       {"target", rr.target},
                       {"source", rr.source},
                       {"error", rr.error},
                       {"ms", rr.ms}});
    if (rr.ok) {
      ok.push_back(r);
      slowest = std::max(slowest, rr.ms);
    } else {
      failed[{host, rr.error.empty() ? std::string("no error recorded") : rr.error}].push_back(r);
    }
  }
  ev["results"] = results;
  const std::string iface = j.reach_target ? j.reach_target->interface : std::string();
  // The parameters of "rank 0's NCCL bootstrap address …" in every finding below.
  nlohmann::json at = {{"target", target.empty() ? std::string("?") : target},
                       {"iface_on", part_if(!iface.empty(), "{interface} on ")},
                       {"host", host0}};
  if (!iface.empty()) at["interface"] = iface;
  const auto with = [&](nlohmann::json more) {
    nlohmann::json p = at;
    p.update(more);
    return p;
  };

  if (!failed.empty()) {
    std::vector<std::string> parts;
    std::size_t count = 0;
    bool timeout = false, refused = false, unreachable = false;
    for (const auto& [key, rs] : failed) {
      parts.push_back(ranks_text(rs) + " (" + key.first + "): " + key.second);
      count += rs.size();
      timeout = timeout || key.second.starts_with("no answer");
      refused = refused || key.second.find("ECONNREFUSED") != std::string::npos;
      unreachable = unreachable || key.second.find("UNREACH") != std::string::npos;
    }
    std::string why;
    if (timeout) why += "No answer means a firewall drops the SYN or there is no route. ";
    if (refused) why += "Refused means a firewall rejects the port or nothing listened there. ";
    if (unreachable) why += "Unreachable means these hosts have no route to that network. ";
    const std::string addr = j.reach_target ? j.reach_target->address : target;
    const std::string pick =
        sel && !sel->matches.empty()
            ? "Rank 0 picked " + sel->matches.front().interface + " (" + sel->matches.front().address.address +
                  ") by " + rule_text(*sel)
            : "Rank 0 picked " + (iface.empty() ? std::string("its interface") : j.reach_target->interface);
    b.add(kUnreachable, with({{"failed", count},
                              {"total", ranks.size()},
                              {"failures", join(parts, "; ")},
                              {"explanation", template_param(why)},
                              {"pick", pick},
                              {"address", addr}}));
  }
  if (!no_result.empty()) {
    std::vector<std::string> named;
    for (int r : no_result) named.push_back(std::to_string(r) + " (" + host_of(j, r) + ")");
    b.add(kNoResult, with({{"silent", (no_result.size() == 1 ? "rank " : "ranks ") + join(named, ", ")}}));
  }
  if (!undelivered.empty() && !merged) {
    std::vector<std::string> named;
    for (int r : undelivered) named.push_back(j.describe_rank(r));
    b.add(kNoFacts, with({{"missing", join(named, "; ")}}));
  }
  if (hosts.size() > 1 && !target.empty() && j.reach_target && is_loopback_ip(j.reach_target->address)) {
    b.add(kLoopback, with({{"hosts", hosts.size()}}));
  }
  std::size_t failed_count = 0;
  for (const auto& entry : failed) failed_count += entry.second.size();
  ev["failed"] = failed_count;
  ev["no_result"] = no_result;
  ev["undelivered"] = undelivered;
  ev["slowest_ms"] = slowest;
  if (b.status() == Status::Pass) {
    b.add(kReached, with({{"reached", ok.size()}, {"slowest", format_duration(slowest / 1e3)}}));
  }
  Verdict v = b.build();
  // Unreachable or loopback: explained by rank 0's interface choice when net.socket_ifname finds
  // fault with it (the report keeps the cause only where that check is not PASS).
  if (v.status == Status::Fail) v.cause = "net.socket_ifname";
  return v;
}

constexpr std::string_view kExplain = R"(What it reads
  The address rank 0's NCCL would put into its unique id for the bootstrap: the first interface of
  NCCL's selection on rank 0 (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY, or the default order ib, the
  NCCL_COMM_ID subnet, others, docker, lo, virbr) and its first address. Rank 0 listened there on an
  ephemeral port; every rank opened one TCP connection to it with a non-blocking connect and a
  deadline, and reported the result (error, local address used, time).

Failures
  FAIL     ranks cannot connect: names them, their hosts, the target and the error (no answer within
           the deadline: a firewall drops it or no route; refused: a firewall rejects it; unreachable:
           no route), and the interface rank 0 picked.
  FAIL     rank 0 has no interface NCCL's bootstrap can use: NCCL fails before anything connects.
           (Decided from rank 0's facts, replaying NCCL's selection: the job cannot start.)
  FAIL     the bootstrap address is loopback in a job across several hosts.
  UNKNOWN  no target was offered for another reason (quoted), or a rank delivered no result or no
           facts at all (named).
  SKIP     a single process; merged files without reach results (the test runs only live).

Fix
  NCCL_SOCKET_IFNAME=<the interface the nodes share>, the same on every rank (ip -br addr);
  ip route get <rank 0's address> on a failing host; allow TCP between the nodes on rank 0's host
  (NCCL's bootstrap uses ephemeral ports): nft list ruleset, iptables -S INPUT.)";

}  // namespace

extern const CheckSpec kNetReachability = {"net.reachability",
                                           Scope::Job,
                                           "every rank reaches rank 0's NCCL bootstrap address over TCP",
                                           kExplain,
                                           kInJob,
                                           "an image build has no job to check",
                                           &run,
                                           "reach",
                                           false,
                                           "net.socket_ifname",
                                           "a reachable bootstrap address",
                                           nullptr,
                                           kFindings};

}  // namespace net_reachability_check
}  // namespace preflight
