// SPDX-License-Identifier: MIT
// The MPI transport: the only file that includes <mpi.h>. Every wait is a non-blocking MPI call
// polled until it completes or its deadline passes; while waiting, a non-root rank sends rank 0 a
// heartbeat notice every half second, and rank 0 takes in the notices, so that at a deadline rank 0
// knows which ranks are alive (waiting like everyone else) and which went silent, in which phase.
#define OMPI_SKIP_MPICXX 1  // the C API only: no Open MPI C++ bindings
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>

#include "core/exit_code.hpp"
#include "transport/pmix_join.hpp"
#include "transport/transport.hpp"

namespace preflight {
namespace {

// Tags on MPI_COMM_WORLD: point-to-point messages match by tag, and the collectives travel apart
// from them, so one communicator serves all (each communicator made costs a context-id agreement
// of every rank: several rounds across the hosts).
constexpr int kTagNotice = 1;
constexpr int kTagPayload = 2;
constexpr int kTagNodeFacts = 3;
constexpr auto kHeartbeat = std::chrono::milliseconds(500);
constexpr std::size_t kHardCapBytes = 256u << 20;  // a payload above it is not even received

/// A phase notice on the wire: fixed size, plain bytes.
struct WireNotice {
  std::int32_t rank;
  std::int32_t phase;
  std::int32_t pid;
  std::int32_t seq;  // 1, 2, ... per sender: rank 0 knows when it has them all
  char host[64];
};

std::string host_name() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0) return "?";
  return buf.data();
}

/// The longest sleep between two MPI_Test calls of a wait: 80 µs doubled this many times.
enum class PauseCap {
  /// 5.1 ms: a wait that may last while other ranks probe (many per core when oversubscribed),
  /// which leaves them the CPU.
  Patient = 6,
  /// 320 µs: a collective that moves data in many steps (the all_reduce: a ring of 2 × (ranks - 1)
  /// over TCP), which advances only when its ranks call MPI_Test: at 5 ms a step, 16 ranks' 1 MiB
  /// all_reduce across 4 hosts took 0.40 s instead of 0.15 s.
  Brisk = 2,
};

/// Polls between MPI_Test calls: spin briefly, then sleep, doubling the sleep up to `cap`.
void pause_briefly(int& polls, PauseCap cap = PauseCap::Patient) {
  ++polls;
  if (polls < 50) {
    std::this_thread::yield();
    return;
  }
  const int doublings = std::min(polls - 50, static_cast<int>(cap));
  std::this_thread::sleep_for(std::chrono::microseconds(80) * (1 << doublings));
}

class MpiTransport final : public Transport {
 public:
  MpiTransport(MpiView view, std::vector<int> node_ranks)
      : m_view(std::move(view)),
        m_node_ranks(std::move(node_ranks)),
        m_host(host_name()),
        m_pid(static_cast<int>(::getpid())) {
    if (m_view.rank == 0) {
      m_status.resize(static_cast<std::size_t>(m_view.size));
      m_heard_at.assign(static_cast<std::size_t>(m_view.size), Clock::time_point{});
      m_received.assign(static_cast<std::size_t>(m_view.size), 0);
      for (int r = 0; r < m_view.size; ++r) m_status[static_cast<std::size_t>(r)].rank = r;
      post_notice_receive();
    }
  }

  int rank() const override { return m_view.rank; }
  int size() const override { return m_view.size; }
  MpiView view() const override { return m_view; }

  int ranks_arrived() const override { return m_arrived.load(std::memory_order_relaxed); }

  void announce(Phase phase) override {
    m_phase = phase;
    if (m_view.rank == 0) {
      m_arrived.store(1, std::memory_order_relaxed);
      count_arrived();
      RankStatus& s = m_status.front();
      s.host = m_host;
      s.pid = m_pid;
      s.heard = true;
      s.last_phase = std::max(s.last_phase, phase);
      m_heard_at.front() = Clock::now();
      return;
    }
    send_notice();
  }

  std::vector<RankStatus> statuses() override {
    if (m_view.rank != 0) return {};
    drain_notices();
    std::vector<RankStatus> out = m_status;
    const auto now = Clock::now();
    for (std::size_t r = 1; r < out.size(); ++r) {
      if (out[r].heard) out[r].silent_s = std::chrono::duration<double>(now - m_heard_at[r]).count();
    }
    return out;
  }

  std::optional<std::string> broadcast(const std::string& data, TimePoint deadline) override {
    Buffer& b = m_buffers.emplace_back();
    if (m_view.rank == 0) {
      b.length = data.size();
      b.data = data;
    }
    return sized_message(b, deadline, [](void* p, int count, MPI_Datatype type, MPI_Request* req) {
      MPI_Ibcast(p, count, type, 0, MPI_COMM_WORLD, req);
    });
  }

  std::optional<std::string> node_broadcast(const std::string& data, TimePoint deadline) override {
    // Point to point from the node's leader (its lowest rank): its size, then its bytes, to each
    // of the node's other ranks (messages of one sender and tag arrive in order).
    if (m_node_ranks.size() <= 1) return data;
    const int leader = m_node_ranks.front();
    if (m_view.rank == leader) {
      if (data.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) return std::nullopt;
      Buffer& send = m_buffers.emplace_back();
      send.length = data.size();
      send.data = data;
      send.requests.reserve(2 * (m_node_ranks.size() - 1));
      for (std::size_t i = 1; i < m_node_ranks.size(); ++i) {
        MPI_Request& length = send.requests.emplace_back(MPI_REQUEST_NULL);
        MPI_Isend(&send.length, 1, MPI_UINT64_T, m_node_ranks[i], kTagNodeFacts, MPI_COMM_WORLD, &length);
        MPI_Request& bytes = send.requests.emplace_back(MPI_REQUEST_NULL);
        MPI_Isend(send.data.data(), static_cast<int>(send.data.size()), MPI_BYTE, m_node_ranks[i], kTagNodeFacts,
                  MPI_COMM_WORLD, &bytes);
      }
      for (MPI_Request& req : send.requests) {
        if (!wait(req, deadline)) return std::nullopt;
      }
      return data;
    }
    return sized_message(m_buffers.emplace_back(), deadline,
                         [leader](void* p, int count, MPI_Datatype type, MPI_Request* req) {
                           MPI_Irecv(p, count, type, leader, kTagNodeFacts, MPI_COMM_WORLD, req);
                         });
  }

  bool send_payload(const std::string& bytes, TimePoint deadline) override {
    MPI_Request req = MPI_REQUEST_NULL;
    m_payload = bytes;  // must outlive the request, even one left behind at a deadline
    MPI_Isend(m_payload.data(), static_cast<int>(m_payload.size()), MPI_BYTE, 0, kTagPayload, MPI_COMM_WORLD, &req);
    return wait(req, deadline);
  }

  void collect_payloads(TimePoint deadline, std::size_t max_bytes,
                        const std::function<void(int, std::string, std::size_t)>& arrived) override {
    int remaining = m_view.size - 1;
    int polls = 0;
    auto beat = Clock::now();
    m_collecting = true;
    m_arrived.store(1, std::memory_order_relaxed);
    while (remaining > 0 && Clock::now() < deadline && !wait_interrupted()) {
      int flag = 0;
      MPI_Message msg = MPI_MESSAGE_NULL;
      MPI_Status st;
      MPI_Improbe(MPI_ANY_SOURCE, kTagPayload, MPI_COMM_WORLD, &flag, &msg, &st);
      if (flag == 0) {
        if (Clock::now() - beat > kHeartbeat / 5) {
          drain_notices();
          beat = Clock::now();
        }
        pause_briefly(polls);
        continue;
      }
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      const auto announced = static_cast<std::size_t>(std::max(count, 0));
      std::string bytes;
      if (announced <= kHardCapBytes) {
        // Taken whole (a truncated receive is not safe with every transport), judged by size after.
        bytes.resize(announced);
        MPI_Mrecv(bytes.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        if (announced > max_bytes) bytes.clear();
      }
      // Over the hard cap the message is left unreceived: its sender gives up at its deadline.
      --remaining;
      m_arrived.store(m_view.size - remaining, std::memory_order_relaxed);
      arrived(st.MPI_SOURCE, std::move(bytes), announced);
    }
    m_collecting = false;
    drain_notices();
  }

  std::string last_error() const override { return m_last_error; }

  bool barrier(TimePoint deadline) override {
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    return wait(req, deadline);
  }

  bool allreduce_sum(std::vector<std::int64_t>& values, TimePoint deadline) override {
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD,
                   &req);
    return wait(req, deadline, PauseCap::Brisk);
  }

  std::optional<std::vector<std::string>> gather(const std::string& record, TimePoint deadline) override {
    const auto n = record.size();
    std::string all(m_view.rank == 0 ? n * static_cast<std::size_t>(m_view.size) : 0, '\0');
    MPI_Request req = MPI_REQUEST_NULL;
    m_gather_send = record;
    MPI_Igather(m_gather_send.data(), static_cast<int>(n), MPI_BYTE, all.data(), static_cast<int>(n), MPI_BYTE, 0,
                MPI_COMM_WORLD, &req);
    if (!wait(req, deadline)) return std::nullopt;
    std::vector<std::string> out;
    if (m_view.rank != 0) return out;
    for (int r = 0; r < m_view.size; ++r) out.push_back(all.substr(static_cast<std::size_t>(r) * n, n));
    return out;
  }

  [[noreturn]] void abort(ExitCode code) override {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, to_int(code));
    ::_exit(to_int(code));
  }

  void finalize() override {
    // Rank 0 takes in every notice still on its way (each rank says how many it sent), so no send
    // is left pending when MPI_Finalize runs.
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    std::vector<int> counts(static_cast<std::size_t>(m_view.rank == 0 ? m_view.size : 1), 0);
    MPI_Request req = MPI_REQUEST_NULL;
    m_quiet = true;  // no heartbeats from here on: the count below must stay true
    int sent = m_seq;
    MPI_Igather(&sent, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    if (wait(req, deadline) && m_view.rank == 0) m_expected = counts;
    if (m_view.rank == 0) {
      while (Clock::now() < deadline && !all_notices_in()) {
        drain_notices();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (m_recv_req != MPI_REQUEST_NULL) {
        MPI_Cancel(&m_recv_req);
        MPI_Wait(&m_recv_req, MPI_STATUS_IGNORE);
      }
    } else {
      while (!m_sent.empty() && Clock::now() < deadline) reap_sends();
    }
    MPI_Finalize();
  }

 private:
  struct PendingSend {
    WireNotice notice{};
    MPI_Request request = MPI_REQUEST_NULL;
  };

  bool wait(MPI_Request& req, TimePoint deadline, PauseCap cap = PauseCap::Patient) {
    int polls = 0;
    auto beat = Clock::now();
    for (;;) {
      int done = 0;
      // Asked before MPI is: a peer's end seen by MPI's TCP transport ends this process at once.
      if (wait_interrupted()) return false;
      // With MPI_ERRORS_RETURN a request whose peer hung up completes with an error: that is a
      // failure of the collective, not its completion.
      if (const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING] = {};
        int length = 0;
        MPI_Error_string(rc, text, &length);
        m_last_error = "MPI reported: " + std::string(text, static_cast<std::size_t>(std::max(length, 0)));
        return false;
      }
      if (done != 0) return true;
      const auto now = Clock::now();
      if (now >= deadline || wait_interrupted()) return false;  // left behind: the run ends with abort
      if (m_view.rank == 0) {
        if (now - beat > kHeartbeat / 5) {
          drain_notices();
          beat = now;
        }
      } else if (!m_quiet && now - beat > kHeartbeat) {
        send_notice();
        beat = now;
      }
      pause_briefly(polls, cap);
    }
  }

  void send_notice() {
    reap_sends();
    m_sent.emplace_back();
    PendingSend& p = m_sent.back();
    p.notice.rank = m_view.rank;
    p.notice.phase = static_cast<std::int32_t>(m_phase);
    p.notice.pid = m_pid;
    p.notice.seq = ++m_seq;
    std::snprintf(p.notice.host, sizeof p.notice.host, "%s", m_host.c_str());
    MPI_Isend(&p.notice, sizeof(WireNotice), MPI_BYTE, 0, kTagNotice, MPI_COMM_WORLD, &p.request);
  }

  void reap_sends() {
    while (!m_sent.empty()) {
      int done = 0;
      MPI_Test(&m_sent.front().request, &done, MPI_STATUS_IGNORE);
      if (done == 0) return;
      m_sent.pop_front();
    }
  }

  void post_notice_receive() {
    MPI_Irecv(&m_incoming, sizeof(WireNotice), MPI_BYTE, MPI_ANY_SOURCE, kTagNotice, MPI_COMM_WORLD, &m_recv_req);
  }

  void drain_notices() {
    // Once another rank is seen gone (or the launcher is ending the job), rank 0 calls MPI no more
    // until its report is out: Open MPI's TCP transport ends the process when it sees a peer's
    // connection close.
    if (wait_interrupted()) return;
    for (int i = 0; i < 100000 && m_recv_req != MPI_REQUEST_NULL; ++i) {
      int done = 0;
      MPI_Status st;
      MPI_Test(&m_recv_req, &done, &st);
      if (done == 0) break;
      const int from = st.MPI_SOURCE;
      if (from > 0 && from < m_view.size) {
        RankStatus& s = m_status[static_cast<std::size_t>(from)];
        m_incoming.host[sizeof m_incoming.host - 1] = '\0';
        s.host = m_incoming.host;
        s.pid = m_incoming.pid;
        s.heard = true;
        if (m_incoming.phase >= 0 && m_incoming.phase < kPhaseCount) {
          s.last_phase = std::max(s.last_phase, static_cast<Phase>(m_incoming.phase));
        }
        m_heard_at[static_cast<std::size_t>(from)] = Clock::now();
        m_received[static_cast<std::size_t>(from)] =
            std::max(m_received[static_cast<std::size_t>(from)], m_incoming.seq);
      }
      post_notice_receive();
    }
    count_arrived();
  }

  /// Rank 0: the ranks whose last notice is from its current phase or later (the progress line).
  void count_arrived() {
    if (m_collecting || m_status.empty()) return;
    int n = 0;
    for (const RankStatus& s : m_status) n += s.last_phase >= m_phase ? 1 : 0;
    m_arrived.store(std::max(n, 1), std::memory_order_relaxed);
  }

  bool all_notices_in() const {
    if (m_expected.size() != m_received.size()) return true;  // nothing expected: nothing to wait for
    for (std::size_t r = 1; r < m_received.size(); ++r) {
      if (m_received[r] < m_expected[r]) return false;
    }
    return true;
  }

  MpiView m_view;
  std::vector<int> m_node_ranks;  // the world ranks on this node, ascending (the leader first)
  /// A broadcast's length and bytes (and the leader's send requests), kept to the end: a request
  /// left behind at a deadline may still complete into them. A deque: elements stay where they are.
  struct Buffer {
    std::uint64_t length = 0;
    std::string data;
    std::vector<MPI_Request> requests;
  };
  std::deque<Buffer> m_buffers;

  /// A message of a length, then that many bytes, each part moved by `post(buffer, count, type,
  /// request)` (an MPI_Ibcast from rank 0, or an MPI_Irecv from the node's leader) into `b`, which
  /// is kept to the end: a request left behind at a deadline may still complete into it. `b.data`
  /// already of the length (the broadcast's root) is sent as it is.
  template <typename Post>
  std::optional<std::string> sized_message(Buffer& b, TimePoint deadline, const Post& post) {
    MPI_Request req = MPI_REQUEST_NULL;
    post(&b.length, 1, MPI_UINT64_T, &req);
    if (!wait(req, deadline)) return std::nullopt;
    if (b.length > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) return std::nullopt;
    if (b.data.size() != b.length) b.data.assign(static_cast<std::size_t>(b.length), '\0');
    if (b.length == 0) return b.data;
    post(b.data.data(), static_cast<int>(b.length), MPI_BYTE, &req);
    if (!wait(req, deadline)) return std::nullopt;
    return b.data;
  }

  std::string m_host;
  int m_pid;
  Phase m_phase = Phase::Init;
  int m_seq = 0;
  bool m_quiet = false;
  std::deque<PendingSend> m_sent;  // deque: elements stay where they are while requests are live
  std::string m_payload;
  std::string m_last_error;  // what MPI said when a request failed (last_error())
  std::string m_gather_send;
  // rank 0
  std::vector<RankStatus> m_status;
  std::vector<Clock::time_point> m_heard_at;
  std::vector<int> m_received;
  std::vector<int> m_expected;
  WireNotice m_incoming{};
  std::atomic<int> m_arrived{0};
  bool m_collecting = false;  // collect_payloads counts deliveries, not phases
  MPI_Request m_recv_req = MPI_REQUEST_NULL;
};

std::mutex g_init_expired_mutex;
std::function<void()> g_init_expired;  // set_init_expired_handler

/// Ends the process when MPI_Init (and the splits after it) do not return before the deadline.
class InitWatchdog {
 public:
  explicit InitWatchdog(TimePoint deadline) {
    m_thread = std::thread([this, deadline] {
      std::unique_lock lock(m_mutex);
      std::function<void()> handler;
      // The launcher's SIGTERM (a rank died in MPI_Init; caught where a handler reports) ends the
      // wait too: polled, as the signal handler only sets a flag.
      while (true) {
        if (m_cv.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(50)),
                            [this] { return m_done; }))
          return;
        if (Clock::now() >= deadline) break;
        if (termination_requested()) {
          std::lock_guard held(g_init_expired_mutex);
          if (g_init_expired) break;
        }
      }
      lock.unlock();  // the destructor may wait for this thread, never the other way round
      {
        std::lock_guard held(g_init_expired_mutex);
        handler = g_init_expired;
      }
      if (handler) handler();  // ends the process
      std::fprintf(stderr,
                   "preflight: MPI initialisation did not finish before its deadline (pid %d on %s): a rank did not "
                   "start or the launcher cannot reach it. Exit 4.\n",
                   static_cast<int>(::getpid()), host_name().c_str());
      std::fflush(nullptr);
      ::_exit(to_int(ExitCode::Deadline));
    });
  }
  ~InitWatchdog() {
    {
      std::lock_guard lock(m_mutex);
      m_done = true;
    }
    m_cv.notify_all();
    m_thread.join();
  }
  InitWatchdog(const InitWatchdog&) = delete;
  InitWatchdog& operator=(const InitWatchdog&) = delete;

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_done = false;
  std::thread m_thread;
};

/// The world ranks that share this rank's node, ascending, as MPI_COMM_TYPE_SHARED says.
bool node_ranks_of_shared_memory(int rank, std::vector<int>& out) {
  MPI_Comm local = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local) != MPI_SUCCESS)
    return false;
  int n = 0;
  MPI_Comm_size(local, &n);
  MPI_Group local_group = MPI_GROUP_NULL;
  MPI_Group world_group = MPI_GROUP_NULL;
  MPI_Comm_group(local, &local_group);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  std::vector<int> in(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i;
  out.assign(static_cast<std::size_t>(n), MPI_UNDEFINED);
  const bool ok = MPI_Group_translate_ranks(local_group, n, in.data(), world_group, out.data()) == MPI_SUCCESS;
  MPI_Group_free(&local_group);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&local);
  std::sort(out.begin(), out.end());
  return ok && !out.empty() && std::find(out.begin(), out.end(), MPI_UNDEFINED) == out.end();
}

std::string library_version() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> buf{};
  int len = 0;
  MPI_Get_library_version(buf.data(), &len);
  std::string v(buf.data(), static_cast<std::size_t>(std::clamp(len, 0, static_cast<int>(buf.size()))));
  const auto nl = v.find('\n');
  if (nl != std::string::npos) v.resize(nl);
  while (!v.empty() && (v.back() == '\0' || v.back() == ' ')) v.pop_back();
  return v;
}

}  // namespace

bool mpi_launch_detected(const EnvSnapshot& env, std::string& why) {
  // mpirun gives every process it starts the PMIx variables its MPI_Init connects through:
  // OMPI_COMM_WORLD_* without them were left in the environment (core/launch.cpp says the same).
  const bool pmix = env.has("PMIX_RANK") || env.has("PMIX_NAMESPACE");
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK"}) {
    if (env.has(name) && pmix) {
      why = std::string(name) + " is set";
      return true;
    }
  }
  why = env.has("OMPI_COMM_WORLD_SIZE")
            ? "OMPI_COMM_WORLD_SIZE is set without PMIX_RANK or PMIX_NAMESPACE, which mpirun gives every process it "
              "starts: left in the environment, not a launch"
            : "no MPI launcher variables (OMPI_COMM_WORLD_SIZE, PMIX_RANK)";
  return false;
}

void set_init_expired_handler(std::function<void()> handler) {
  std::lock_guard lock(g_init_expired_mutex);
  g_init_expired = std::move(handler);
}

std::unique_ptr<Transport> init_mpi_transport(TimePoint deadline, bool singleton, const std::string& local_peers,
                                              std::string& error) {
  InitWatchdog watchdog(deadline);
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    error = "MPI_Init_thread failed";
    return nullptr;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MpiView view;
  view.singleton = singleton;
  MPI_Comm_rank(MPI_COMM_WORLD, &view.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &view.size);
  std::vector<int> node_ranks = parse_local_peers(local_peers, view.rank, view.size);
  view.locality = "pmix_local_peers";
  if (node_ranks.empty()) {
    view.locality = "mpi_comm_type_shared";
    if (!node_ranks_of_shared_memory(view.rank, node_ranks)) {
      error = "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed";
      return nullptr;
    }
  }
  view.local_rank =
      static_cast<int>(std::lower_bound(node_ranks.begin(), node_ranks.end(), view.rank) - node_ranks.begin());
  view.local_size = static_cast<int>(node_ranks.size());
  int leader = view.local_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &view.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  view.library = library_version();
  return std::make_unique<MpiTransport>(std::move(view), std::move(node_ranks));
}

}  // namespace preflight
