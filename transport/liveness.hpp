// SPDX-License-Identifier: MIT
// Whether the other ranks' processes are still there, seen by rank 0 without MPI.
//
// MPI tells rank 0 nothing when another rank's process ends: a rank killed with SIGKILL (the OOM
// killer) or a host that goes down leaves rank 0 waiting in a collective until its deadline or
// until the launcher ends the job — and a launcher that loses a whole host may end rank 0 before
// it wrote anything. So, right after MPI_Init, every other rank opens one TCP connection to rank 0
// and keeps it open until it exits (close-on-exec: the rank's helpers do not hold it).
//  - A process that ends, however it ends, has its connection closed by its kernel: rank 0 reads
//    end-of-file within milliseconds — "ended".
//  - A host that is gone (powered off, kernel panic) or cut off sends nothing: rank 0 writes one
//    byte to every connection twice a second and sets TCP_USER_TIMEOUT, so a connection whose
//    bytes stay unacknowledged fails with ETIMEDOUT — "unreachable".
//  - A rank stopped (SIGSTOP) or stuck in a system call is neither: its kernel still acknowledges.
//  - A rank that gives up on its own first says why ("bye ...") before it ends the job.
//  - Each rank also says which phase it enters ("phase NAME PID HOST"), over this connection and not
//    through MPI: rank 0 reads MPI's notices only when it calls MPI, and a rank that dies or is cut
//    off while rank 0 probes would otherwise be "never heard from", its phase unknown.
// Either loss ends rank 0's waits at once (wait_interrupted()), and the report names the rank, or
// the host when all its ranks went. Ranks that could not connect (a firewall between the hosts)
// are simply not watched.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "transport/transport.hpp"

namespace preflight {

/// What rank 0 offers the other ranks: where to connect, and the token that proves a connection
/// comes from this job.
struct LivenessOffer {
  std::vector<std::string> addresses;  // rank 0's numeric addresses, the most likely to work first
  int port = 0;
  std::string token;
  int pid = 0;  // rank 0's process and host: for a report in its place, should it die
  std::string host;
};
void to_json(nlohmann::json& j, const LivenessOffer& o);
void from_json(const nlohmann::json& j, LivenessOffer& o);

/// One rank rank 0 lost.
struct LivenessLoss {
  int rank = 0;
  std::string kind;     // "ended" (its connection closed) or "unreachable" (its host stopped acknowledging)
  TimePoint at{};       // when rank 0 saw it
  std::string parting;  // what the rank said before it ended ("gave up: ..."), if anything
};

/// What one rank last said of itself on its connection.
struct LivenessHeard {
  int rank = 0;
  Phase phase = Phase::Init;
  int pid = 0;
  std::string host;
  TimePoint at{};  // when rank 0 read it
};

/// The order in which a rank tries rank 0's addresses: interfaces NCCL would consider first, then
/// container bridges, then loopback (pure; tested). Each input is "name address"; link-local IPv6
/// addresses are left out (they need a scope the other host does not share).
std::vector<std::string> liveness_address_order(const std::vector<std::pair<std::string, std::string>>& interfaces,
                                                bool ipv6, std::size_t most = 8);

/// Rank 0's side: listens on every address, takes each rank's connection, and watches them.
class LivenessWatch {
 public:
  LivenessWatch() = default;
  ~LivenessWatch();
  LivenessWatch(const LivenessWatch&) = delete;
  LivenessWatch& operator=(const LivenessWatch&) = delete;

  /// Listens on an ephemeral port of every address (IPv6 and IPv4, or IPv4 alone) and starts the
  /// watching thread. `world` bounds the ranks accepted; `unacked` is TCP_USER_TIMEOUT. False with
  /// the reason in `error`.
  bool open(int world, std::chrono::milliseconds unacked, std::string& error);
  const LivenessOffer& offer() const { return m_offer; }
  /// Every loss so far, in the order seen (safe from any thread).
  std::vector<LivenessLoss> losses() const;
  /// Ranks that connected (and proved the token) so far.
  int watched() const;
  /// The phase each watched rank last announced, with its pid and host (safe from any thread).
  std::vector<LivenessHeard> heard() const;
  /// From the thread that calls MPI, right before each MPI progress call: false when a watched
  /// connection has something to read (its end, or a parting line) that the watching thread has
  /// not taken yet. Open MPI's TCP transport ends rank 0 (ob1's error handler: _exit) when it
  /// sees a peer's connection close, so rank 0 must stop calling MPI the moment the ending shows.
  bool quiet() const;
  /// Tells every watched rank (and each that connects later) the phase rank 0 entered: one digit,
  /// its index, for a report in rank 0's place.
  void phase(Phase phase);
  /// Tells every watched rank that rank 0's report is out (the byte 'R'): a rank that sees rank
  /// 0's connection end after it does not report in its place.
  void reported();
  /// Stops watching (reported() first): later ends of processes are the job's normal end.
  void close();

 private:
  struct Conn {
    int fd = -1;
    int rank = -1;  // -1 until its hello arrived
    std::string buffer;
    std::string parting;
  };
  std::vector<LivenessHeard> m_heard;  // by the order the ranks first announced a phase
  void loop();
  void drop_closed();
  void lost(Conn& c, const std::string& kind);
  void take_lines(Conn& c);
  void take_phase(int rank, const std::string& line);
  void tell_watched(char byte);  // one byte to every watched rank (a phase digit, 'R')

  int m_fd = -1;
  int m_wake[2] = {-1, -1};
  int m_world = 0;
  int m_unacked_ms = 0;
  LivenessOffer m_offer;
  mutable std::mutex m_mutex;  // m_conns' descriptors (quiet() polls them), m_losses, m_watched
  std::vector<Conn> m_conns;
  std::vector<LivenessLoss> m_losses;
  int m_watched = 0;
  char m_phase_digit = 0;  // the phase rank 0 is in ('0' + its index), once it entered one
  std::thread m_thread;
};

/// Any rank, at the start of the process (before MPI_Init opens its own sockets): keeps the lowest
/// free descriptor for the liveness connection. A process's descriptors are closed in ascending
/// order when it ends, so this connection's end reaches rank 0 before that of MPI's connections.
void liveness_reserve_descriptor();
/// Any other rank: connects to `offer` in a background thread (each address tried for up to a
/// second, in order) and keeps the connection until the process ends. Returns at once. `host` is
/// the name the rank's phase lines carry.
void liveness_connect(const LivenessOffer& offer, int rank, const std::string& host);
/// Any other rank: waits until its connection is made and its hello sent, or every address failed,
/// or `until` (a rank that dies right after MPI_Init is then still seen ending, with its phase).
void liveness_wait_connected(TimePoint until);
/// Any other rank: what its connection says of rank 0. Unknown: never connected; Alive: connected,
/// nothing more; Reported: rank 0's report is out; Gone: the connection ended without that (rank
/// 0's process ended, or its host reset the connection). Reads what rank 0 sent without blocking;
/// async-signal-safe.
enum class Rank0State { Unknown, Alive, Reported, Gone };
Rank0State liveness_rank0_state();
/// The phase rank 0 last said it entered (nullopt before the first); read by liveness_rank0_state().
std::optional<Phase> liveness_rank0_phase();
/// The same, for a signal handler: Gone within `ms` milliseconds (its end may still be on its way).
bool liveness_rank0_gone_within(int ms);
/// Any other rank, as it enters a phase: one line to rank 0 ("phase NAME PID HOST"), at once if
/// connected, else right after the connection's hello.
void liveness_phase(Phase phase);
/// Any other rank, before it ends the job on its own: one line to rank 0 saying why.
void liveness_say(const std::string& parting);

}  // namespace preflight
