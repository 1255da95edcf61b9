// SPDX-License-Identifier: MIT
// The join before MPI_Init (transport/pmix_join.hpp). The only file that includes <pmix.h>; every PMIx
// call that waits on other ranks is the non-blocking form, and its callback (run on PMIx's progress
// thread) wakes a condition variable that this thread waits on with a deadline.
#include "transport/pmix_join.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/deadlines.hpp"
#include "core/text.hpp"

#ifdef PREFLIGHT_HAVE_PMIX
#include <pmix.h>
#endif

namespace preflight {

std::string describe_unjoined(const JoinOutcome& outcome, double deadline_s) {
  const double timeout_s = std::round(deadline_s / PhaseShares::init);  // the join waits the init phase
  std::vector<int> missing;
  std::map<std::string, std::vector<int>> by_host;  // the launcher's host -> ranks that never joined
  for (const RankStatus& s : outcome.ranks) {
    if (s.heard) continue;
    missing.push_back(s.rank);
    by_host[s.host].push_back(s.rank);
  }
  const auto list = [](const std::vector<int>& ranks) {
    std::string out;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (i == 8 && ranks.size() > 9) return out + ", … (" + std::to_string(ranks.size()) + " in all)";
      out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
    }
    return out;
  };
  std::string where;
  for (const auto& [host, ranks] : by_host) {
    where += where.empty() ? "" : "; ";
    where += (ranks.size() == 1 ? "rank " : "ranks ") + list(ranks) +
             (host.empty() ? std::string(" (the launcher did not say on which host)") : " on " + host);
  }
  const int joined = outcome.size - static_cast<int>(missing.size());
  return "init: " + std::to_string(missing.size()) + " of " + std::to_string(outcome.size) + " ranks never started (" +
         where + "): they did not reach MPI initialisation within " + fixed(deadline_s, 1) +
         " s of the start, while the other " + std::to_string(joined) +
         " waited for them. A node stuck in start-up, a binary or file system that hangs on that host, or a "
         "launcher that could not start the process there; MPI_Init would have waited for them without end. If "
         "they are only late (a host still booting or mounting its file systems), give them longer: the ranks meet "
         "within " +
         general(PhaseShares::init * 100, 3) + "% of --timeout (--timeout " + general(2 * timeout_s, 6) + " waits " +
         fixed(2 * deadline_s, 1) + " s)";
}

std::vector<int> parse_local_peers(std::string_view text, int rank, int size) {
  std::vector<int> peers;
  if (text.empty() || size < 1) return {};
  for (std::string_view item : split(text, ',')) {
    const std::optional<std::int64_t> r = parse_int(trim(item));
    if (!r || *r < 0 || *r >= size) return {};
    peers.push_back(static_cast<int>(*r));
  }
  std::sort(peers.begin(), peers.end());
  if (std::adjacent_find(peers.begin(), peers.end()) != peers.end()) return {};
  if (!std::binary_search(peers.begin(), peers.end(), rank)) return {};
  return peers;
}

std::string pmix_client_environment(const EnvSnapshot& env) {
  // The names libpmix's client reads (pmix_client.c: the newest URI it understands first).
  static constexpr std::array<const char*, 6> kUris = {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
                                                       "PMIX_SERVER_URI21", "PMIX_SERVER_URI2", "PMIX_SERVER_URI"};
  const bool uri =
      std::any_of(kUris.begin(), kUris.end(), [&](const char* name) { return !env.get(name).value_or("").empty(); });
  if (!env.has("PMIX_NAMESPACE") || !env.has("PMIX_RANK") || !uri) {
    return "no PMIx server in the environment (PMIX_NAMESPACE, PMIX_RANK and a PMIX_SERVER_URI*)";
  }
  const std::string ns = env.get("PMIX_NAMESPACE").value_or("");
  if (ns.empty() || ns.size() > 255 || !std::all_of(ns.begin(), ns.end(), [](char c) { return c > ' ' && c < 0x7f; })) {
    return "PMIX_NAMESPACE is not a PMIx namespace (1-255 printable characters)";
  }
  const std::string rank = env.get("PMIX_RANK").value_or("");
  if (rank.empty() || rank.size() > 9 ||
      !std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "PMIX_RANK is not a rank number";
  }
  return {};
}

std::optional<PmixServerAddress> parse_pmix_server_uri(std::string_view value) {
  const std::size_t semi = value.rfind(';');
  const std::string_view uri = semi == std::string_view::npos ? value : value.substr(semi + 1);
  PmixServerAddress out;
  out.uri = std::string(uri);
  std::string_view rest;
  if (uri.starts_with("tcp4://")) {
    rest = uri.substr(7);
    const std::size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    out.host = std::string(rest.substr(0, colon));
    rest = rest.substr(colon + 1);
  } else if (uri.starts_with("tcp6://[")) {
    rest = uri.substr(8);
    const std::size_t close = rest.find("]:");
    if (close == std::string_view::npos || close == 0) return std::nullopt;
    out.host = std::string(rest.substr(0, close));
    rest = rest.substr(close + 2);
  } else {
    return std::nullopt;
  }
  const auto port = parse_int(rest);
  if (!port || *port < 1 || *port > 65535) return std::nullopt;
  out.port = static_cast<int>(*port);
  return out;
}

std::string pmix_server_connect_failure(const EnvSnapshot& env) {
  std::optional<PmixServerAddress> address;
  for (const char* name : {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3", "PMIX_SERVER_URI21",
                           "PMIX_SERVER_URI2", "PMIX_SERVER_URI"}) {
    if (const std::optional<std::string> v = env.get(name); v && !v->empty()) {
      address = parse_pmix_server_uri(*v);
      break;
    }
  }
  const bool v6 = address && address->uri.starts_with("tcp6");
  const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return "this process cannot open a socket: " + errno_words(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (!address) return {};
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<std::uint16_t>(address->port));
    if (::inet_pton(AF_INET6, address->host.c_str(), &a->sin6_addr) != 1) return {};
    len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<std::uint16_t>(address->port));
    if (::inet_pton(AF_INET, address->host.c_str(), &a->sin_addr) != 1) return {};
    len = sizeof(sockaddr_in);
  }
  int err = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int ready = ::poll(&p, 1, 1000);
      socklen_t size = sizeof err;
      if (ready == 1) {
        err = 0;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &size);
      } else {
        err = ETIMEDOUT;
      }
    }
  }
  if (err == 0) return {};
  return "a connection to " + printable(address->uri, 120) + " fails: " + errno_words(err);
}

#ifdef PREFLIGHT_HAVE_PMIX
namespace {

struct Pending;

/// The outstanding non-blocking PMIx requests of this process. Never destroyed: a request left
/// behind at a deadline may still call back while the process reports and exits.
struct Requests {
  std::mutex mutex;
  std::condition_variable cv;
  int done = 0;
  /// Every query's record, kept (and reachable, for the leak checker) to the end: PMIx may call
  /// back into it at any time until it is finalised.
  std::vector<Pending*> kept;
};
Requests& requests() {
  static auto* r = new Requests;
  return *r;
}

struct Pending {
  bool done = false;
  pmix_status_t status = PMIX_ERROR;
  std::string value;
  // What PMIx_Get_nb or PMIx_Fence_nb was given: the library reads them after the call returns
  // (a request whose arguments lived on the caller's stack reached the server as "UNSUPPORTED
  // TYPE"), so they live as long as the request's record does.
  pmix_proc_t proc{};
  pmix_info_t info{};
};

void finished(Pending& p, pmix_status_t status, const pmix_value_t* value) {
  Requests& r = requests();
  {
    std::lock_guard lock(r.mutex);
    p.status = status;
    if (status == PMIX_SUCCESS && value != nullptr && value->type == PMIX_STRING && value->data.string != nullptr) {
      p.value = value->data.string;
    }
    p.done = true;
    ++r.done;
  }
  r.cv.notify_all();
}

extern "C" void on_fence(pmix_status_t status, void* cbdata) {
  finished(*static_cast<Pending*>(cbdata), status, nullptr);
}
extern "C" void on_value(pmix_status_t status, pmix_value_t* value, void* cbdata) {
  finished(*static_cast<Pending*>(cbdata), status, value);
}

/// Waits until `enough(pending)` holds (under the lock) or the deadline passes.
template <typename Enough>
void wait_for(TimePoint deadline, Enough enough) {
  Requests& r = requests();
  std::unique_lock lock(r.mutex);
  r.cv.wait_until(lock, deadline, enough);
}

bool is_done(const Pending& p) {
  std::lock_guard lock(requests().mutex);
  return p.done;
}

constexpr const char* kKey = "preflight.joined";

std::string pmix_host_name() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0) return "?";
  return buf.data();
}

/// The host the launcher placed `rank` on (job data every client holds: no round trip).
std::string placed_on(const char* nspace, int rank) {
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, nspace, static_cast<pmix_rank_t>(rank));
  pmix_info_t info;
  bool immediate = true;
  PMIX_INFO_LOAD(&info, PMIX_IMMEDIATE, &immediate, PMIX_BOOL);
  pmix_value_t* value = nullptr;
  std::string host;
  if (PMIx_Get(&proc, PMIX_HOSTNAME, &info, 1, &value) == PMIX_SUCCESS && value != nullptr) {
    if (value->type == PMIX_STRING && value->data.string != nullptr) host = value->data.string;
    PMIX_VALUE_RELEASE(value);
  }
  PMIX_INFO_DESTRUCT(&info);
  return host;
}

bool answered(const Pending* p) { return p->done && p->status == PMIX_SUCCESS && !p->value.empty(); }

/// Asks for the key of every rank in `ranks` at once, without waiting; each answer is the rank's
/// "host pid", or nothing when the rank never put it (PMIx's own timeout, or the deadline, first).
std::map<int, Pending*> ask(const char* nspace, const std::vector<int>& ranks, TimePoint deadline) {
  std::map<int, Pending*> out;
  const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
  int timeout = std::max(1, static_cast<int>(left + 0.999));
  for (int r : ranks) {
    auto* p = new Pending;  // owned by the request until it calls back; never freed (see Requests)
    PMIX_PROC_LOAD(&p->proc, nspace, static_cast<pmix_rank_t>(r));
    PMIX_INFO_LOAD(&p->info, PMIX_TIMEOUT, &timeout, PMIX_INT);
    {
      std::lock_guard lock(requests().mutex);
      requests().kept.push_back(p);
    }
    if (PMIx_Get_nb(&p->proc, kKey, &p->info, 1, on_value, p) != PMIX_SUCCESS) {
      std::lock_guard lock(requests().mutex);
      p->done = true;  // not asked: no callback will come
    }
    out[r] = p;
  }
  return out;
}

/// Waits until every answer for a rank below `below` is in, or (`any`) one of them answered, or
/// the deadline passes.
void wait_answers(const std::map<int, Pending*>& asked, int below, bool any, TimePoint deadline) {
  wait_for(deadline, [&] {
    bool all = true;
    for (const auto& [r, p] : asked) {
      if (r >= below) break;
      if (any && answered(p)) return true;
      all = all && p->done;
    }
    return all;
  });
}

/// `answered` read outside a wait.
bool answered_now(const Pending* p) {
  std::lock_guard lock(requests().mutex);
  return answered(p);
}

/// One status per rank: heard, with its own host and pid, when it put its key (`asked` holds the
/// answers for every rank but this one); else not heard, with the host the launcher placed it on.
std::vector<RankStatus> roster(const JoinOutcome& out, const char* nspace, const std::string& mine,
                               const std::map<int, Pending*>& asked) {
  std::vector<RankStatus> ranks;
  for (int r = 0; r < out.size; ++r) {
    RankStatus s;
    s.rank = r;
    s.last_phase = Phase::Init;
    std::string said = r == out.rank ? mine : std::string();
    if (r != out.rank) {
      const Pending* p = asked.at(r);
      if (answered_now(p)) {
        std::lock_guard lock(requests().mutex);
        said = p->value;
      }
    }
    if (!said.empty()) {
      s.heard = true;
      const auto space = said.rfind(' ');
      s.host = said.substr(0, space);
      if (space != std::string::npos) s.pid = static_cast<int>(std::strtol(said.c_str() + space + 1, nullptr, 10));
    } else {
      s.host = placed_on(nspace, r);
    }
    ranks.push_back(std::move(s));
  }
  return ranks;
}

}  // namespace

JoinOutcome pmix_join(const EnvSnapshot& env, TimePoint fence_deadline, TimePoint query_deadline, TimePoint patience) {
  JoinOutcome out;
  if (std::string why = pmix_client_environment(env); !why.empty()) {
    out.why = std::move(why);
    return out;
  }
  const TimePoint start = Clock::now();
  pmix_proc_t me;
  if (const pmix_status_t rc = PMIx_Init(&me, nullptr, 0); rc != PMIX_SUCCESS) {
    out.state = JoinOutcome::State::NoServer;
    // PMIx_Init says only that it failed: a plain connection names the errno.
    const std::string failure = pmix_server_connect_failure(env);
    const bool own = failure.starts_with("this process");  // out of descriptors, not stale variables
    out.own_limits = own;
    out.why = std::string("the PMIx server that PMIX_SERVER_URI* names does not answer (PMIx_Init: ") +
              PMIx_Error_string(rc) + (failure.empty() ? "" : "; " + failure) + ")" +
              (own ? ": this process's own limits, not the launcher (see host.limits)"
                   : ": PMIX_* variables left from another job, or a launcher that is gone");
    return out;
  }
  out.rank = static_cast<int>(me.rank);
  out.nspace = me.nspace;
  {
    pmix_proc_t wildcard;
    PMIX_PROC_LOAD(&wildcard, me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* value = nullptr;
    if (PMIx_Get(&wildcard, PMIX_JOB_SIZE, nullptr, 0, &value) == PMIX_SUCCESS && value != nullptr) {
      if (value->type == PMIX_UINT32) out.size = static_cast<int>(value->data.uint32);
      PMIX_VALUE_RELEASE(value);
    }
    // The job's ranks on this node, as the launcher placed them (job data: no other rank is asked).
    value = nullptr;
    if (PMIx_Get(&wildcard, PMIX_LOCAL_PEERS, nullptr, 0, &value) == PMIX_SUCCESS && value != nullptr) {
      if (value->type == PMIX_STRING && value->data.string != nullptr) out.local_peers = value->data.string;
      PMIX_VALUE_RELEASE(value);
    }
  }
  const std::string mine = pmix_host_name() + " " + std::to_string(::getpid());
  pmix_value_t value;
  PMIX_VALUE_LOAD(&value, mine.c_str(), PMIX_STRING);
  const pmix_status_t put = PMIx_Put(PMIX_GLOBAL, kKey, &value);
  PMIX_VALUE_DESTRUCT(&value);
  if (put != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS) {
    out.why = "PMIx_Put/PMIx_Commit failed";
    PMIx_Finalize(nullptr, 0);
    return out;
  }

  auto* fence = new Pending;  // see Requests: may call back after the deadline
  {
    std::lock_guard lock(requests().mutex);
    requests().kept.push_back(fence);
  }
  PMIX_PROC_LOAD(&fence->proc, me.nspace, PMIX_RANK_WILDCARD);
  // With the data collected: Slurm's PMIx plugin completes a fence that collects nothing at once,
  // without waiting for the other hosts (a barrier only with SLURM_PMIX_FENCE_BARRIER); collecting
  // makes it wait for every rank's contribution under every launcher.
  bool yes = true;
  PMIX_INFO_LOAD(&fence->info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  const pmix_status_t fenced = PMIx_Fence_nb(&fence->proc, 1, &fence->info, 1, on_fence, fence);
  if (const pmix_status_t rc = fenced; rc != PMIX_SUCCESS) {
    out.why = std::string("PMIx_Fence_nb: ") + PMIx_Error_string(rc);
    PMIx_Finalize(nullptr, 0);
    return out;
  }
  wait_for(fence_deadline, [&] { return fence->done; });
  out.waited_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (is_done(*fence) && fence->status == PMIX_SUCCESS) {
    out.state = JoinOutcome::State::Complete;
    constexpr int kPlacedAtMost = 4096;  // one local lookup each: a moment, not a phase, at most
    if (out.rank == 0 && out.size <= kPlacedAtMost) {
      for (int r = 0; r < out.size; ++r) out.placement.push_back(placed_on(me.nspace, r));
      // Every rank's "host pid", collected by the fence (local lookups): who started where, for a
      // report written should MPI_Init itself not finish (JobRun's init_expired).
      std::vector<int> others;
      for (int r = 1; r < out.size; ++r) others.push_back(r);
      const TimePoint asked_by = Clock::now() + std::chrono::seconds(1);
      const auto got = ask(me.nspace, others, asked_by);
      wait_answers(got, out.size, false, asked_by);
      out.ranks = roster(out, me.nspace, mine, got);
    } else if (out.rank == 1) {
      out.placement.push_back(placed_on(me.nspace, 0));  // for a report in rank 0's place (JobRun)
    }
    return out;
  }
  out.state = JoinOutcome::State::Incomplete;

  // Who reports: rank 0 when it joined; else the lowest of the first 16 ranks that did (the others
  // do not ask, so a large job does not ask N² questions). Another rank keeps waiting at the fence
  // until `patience`: a rank that arrived late completes it, and this rank then goes on into
  // MPI_Init like the reporter, which may have seen the fence complete a moment before its own
  // deadline.
  constexpr int kReporterCandidates = 16;
  const auto wait_at_fence = [&] {
    wait_for(patience, [&] { return fence->done; });
    out.waited_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (is_done(*fence) && fence->status == PMIX_SUCCESS) out.state = JoinOutcome::State::Complete;
    return out;
  };
  if (out.rank >= kReporterCandidates) return wait_at_fence();
  std::vector<int> others;
  for (int r = 0; r < out.size; ++r) {
    if (r != out.rank) others.push_back(r);
  }
  const auto got = ask(me.nspace, others, query_deadline);  // every rank at once: the reporter needs them all
  if (out.rank != 0) {
    wait_answers(got, out.rank, true, query_deadline);
    const bool lower_joined = std::any_of(got.begin(), got.end(),
                                          [&](const auto& g) { return g.first < out.rank && answered_now(g.second); });
    if (lower_joined) return wait_at_fence();  // that rank reports
  }
  out.reporter = true;
  wait_answers(got, out.size, false, query_deadline);
  out.ranks = roster(out, me.nspace, mine, got);
  return out;
}

void pmix_join_release() { PMIx_Finalize(nullptr, 0); }

void pmix_join_abort(ExitCode code, const std::string& message) {
  std::fflush(nullptr);
  // PMIx_Abort waits for the launcher, which normally kills this process first; bounded either way.
  std::thread([code] {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    ::_exit(to_int(code));
  }).detach();
  PMIx_Abort(to_int(code), message.c_str(), nullptr, 0);
  ::_exit(to_int(code));
}

#else  // built without PMIx

JoinOutcome pmix_join(const EnvSnapshot&, TimePoint, TimePoint, TimePoint) {
  JoinOutcome out;
  out.why = "built without PMIx (pkg-config pmix not found)";
  return out;
}
void pmix_join_release() {}
void pmix_join_abort(ExitCode code, const std::string&) {
  std::fflush(nullptr);
  ::_exit(to_int(code));
}

#endif

}  // namespace preflight
