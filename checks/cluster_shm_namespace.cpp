// SPDX-License-Identifier: MIT
// cluster.shm_namespace (job): the ranks of one host (hostname + boot id) see one /dev/shm. NCCL
// compares the st_dev of /dev/shm between ranks of a host: where it differs (separate containers,
// separate IPC namespaces) it disables the SHM and P2P transports between them and goes through the
// network instead — or fails when there is none.
#include <algorithm>
#include <array>
#include <map>
#include <sstream>
#include <unordered_map>

#include "checks/check.hpp"
#include "core/text.hpp"

namespace preflight {
namespace cluster_shm_namespace_check {
namespace {

// {devices}: each /dev/shm with the ranks that see it ("ranks 0–1: st_dev 0x1a; ranks 2–3: st_dev 0x99, tmpfs …").
constexpr FindingSpec kSeparateShm = {
    "cluster.shm_namespace/separate-shm", Status::Fail,
    "{host}: the ranks see {count} different /dev/shm ({devices}): they run in separate containers or IPC namespaces, "
    "so NCCL disables its SHM and P2P transports between them and falls back to the network",
    "Run the ranks of a host in one IPC namespace with one /dev/shm: one container for all local ranks, or "
    "`docker run --ipc=host …` for each; in Kubernetes one pod per node (or `hostIPC: true`), or a shared emptyDir "
    "volume with `medium: Memory` mounted at /dev/shm in every container."};
constexpr FindingSpec kShmUnreadable = {
    "cluster.shm_namespace/shm-unreadable", Status::Unknown,
    "{host}: /dev/shm could not be read on {ranks} ({why}): whether it shares /dev/shm with the host's other ranks is "
    "not known",
    "Make /dev/shm readable in every rank's container (it must exist and be a tmpfs: see shm.capacity), then rerun."};
constexpr FindingSpec kShared = {"cluster.shm_namespace/shared", Status::Pass,
                                 "the ranks of each host share one /dev/shm ({hosts} host(s) with several ranks)", ""};

constexpr std::array kFindings = {kSeparateShm, kShmUnreadable, kShared};

std::string host_key(const RankFacts& f) { return f.identity.hostname + "\n" + f.identity.boot_id; }
std::string host_of(const RankFacts& f) { return f.identity.hostname.empty() ? "?" : f.identity.hostname; }

std::string dev_text(std::uint64_t dev) {
  std::ostringstream s;
  s << "0x" << std::hex << dev;
  return s.str();
}

std::string ranks_text(const std::vector<const RankFacts*>& ranks) {
  std::vector<int> numbers;
  for (const RankFacts* f : ranks) numbers.push_back(f->placement.rank);
  std::sort(numbers.begin(), numbers.end());
  return (numbers.size() == 1 ? "rank " : "ranks ") + range_list(numbers);
}

/// "tmpfs shm (rw,nosuid,size=65536k)" where the mount was read.
std::string mount_text(const RankFacts& f) {
  const MountEntry* m = f.shm.mount.value();
  if (m == nullptr) return {};
  return ", " + m->fstype + " " + m->source + (m->options.empty() ? std::string() : " (" + m->options + ")");
}

Verdict run(const CheckContext& ctx) {
  const std::vector<const RankFacts*> ranks = job_ranks(ctx);
  // Hosts in the order of their first rank.
  std::vector<std::pair<std::string, std::vector<const RankFacts*>>> hosts;
  std::unordered_map<std::string, std::size_t> host_index;
  for (const RankFacts* f : ranks) {
    std::string key = host_key(*f);
    const auto [it, added] = host_index.try_emplace(key, hosts.size());
    if (added) {
      hosts.emplace_back(std::move(key), std::vector<const RankFacts*>{f});
    } else {
      hosts[it->second].second.push_back(f);
    }
  }
  VerdictBuilder b;
  nlohmann::json hosts_ev = nlohmann::json::array();
  int shared_hosts = 0;
  for (const auto& [key, members] : hosts) {
    const std::string host = host_of(*members.front());
    nlohmann::json rank_ev = nlohmann::json::array();
    std::map<std::uint64_t, std::vector<const RankFacts*>> by_dev;
    std::vector<const RankFacts*> unreadable;
    for (const RankFacts* f : members) {
      nlohmann::json r = {{"rank", f->placement.rank}};
      if (const FsUsage* u = f->shm.usage.value()) {
        by_dev[u->st_dev].push_back(f);
        r["st_dev"] = u->st_dev;
      } else {
        unreadable.push_back(f);
        r["error"] = f->shm.usage.why();
      }
      if (const MountEntry* m = f->shm.mount.value()) r["mount"] = {{"source", m->source}, {"options", m->options}};
      rank_ev.push_back(std::move(r));
    }
    hosts_ev.push_back({{"host", host}, {"ranks", std::move(rank_ev)}});
    if (members.size() < 2) continue;
    ++shared_hosts;
    if (by_dev.size() > 1) {
      std::vector<std::string> parts;
      for (const auto& [dev, users] : by_dev) {
        parts.push_back(ranks_text(users) + ": st_dev " + dev_text(dev) + mount_text(*users.front()));
      }
      b.add(kSeparateShm, {{"host", host}, {"count", by_dev.size()}, {"devices", join(parts, "; ")}});
    }
    if (!unreadable.empty()) {
      b.add(kShmUnreadable,
            {{"host", host}, {"ranks", ranks_text(unreadable)}, {"why", unreadable.front()->shm.usage.why()}});
    }
  }
  b.evidence()["hosts"] = std::move(hosts_ev);
  if (b.status() == Status::Pass) {
    if (shared_hosts == 0) {
      b.note("one rank per host: no /dev/shm is shared between ranks (" + std::to_string(hosts.size()) + " host(s))");
    } else {
      b.add(kShared, {{"hosts", shared_hosts}});
    }
  }
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  Every delivered rank's host identity (hostname + boot id) and the stat() of its /dev/shm (st_dev:
  what NCCL compares between the ranks of a host), with the mount's source and options from
  /proc/self/mountinfo for the message.

Failures
  FAIL     ranks of one host see different /dev/shm (different st_dev): they run in separate containers
           or IPC namespaces. NCCL then disables the SHM and P2P transports between them: intra-node
           traffic goes through the NIC (slow), or the job fails where no network transport exists.
  UNKNOWN  a rank on a host with several ranks could not stat /dev/shm.
  PASS     every host's ranks share one /dev/shm; with one rank per host there is nothing to share.

Fix
  One container for all local ranks, or `docker run --ipc=host` for each; Kubernetes: one pod per node,
  `hostIPC: true`, or an emptyDir { medium: Memory } volume mounted at /dev/shm in every container.)";

}  // namespace

extern const CheckSpec kClusterShmNamespace = {"cluster.shm_namespace",
                                               Scope::Job,
                                               "ranks of one host share one /dev/shm (one IPC namespace)",
                                               kExplain,
                                               kInJob,
                                               "an image build has no job to check",
                                               &run,
                                               "gather,shm",
                                               false,
                                               {},
                                               {},
                                               nullptr,
                                               kFindings};

}  // namespace cluster_shm_namespace_check
}  // namespace preflight
