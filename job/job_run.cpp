// SPDX-License-Identifier: MIT
#include "job/job_run.hpp"
#include "core/exit_code.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "core/deadlines.hpp"
#include "core/gpu_binding.hpp"
#include "core/text.hpp"
#include "job/allreduce_plan.hpp"
#include "job/job_report.hpp"
#include "job/nccl_allreduce.hpp"
#include "job/node_exchange.hpp"
#include "job/phases.hpp"
#include "job/run.hpp"
#include "job/test_faults.hpp"
#include "job/transport_start.hpp"
#include "sys/os.hpp"
#include "transport/liveness.hpp"
#include "transport/payload.hpp"
#include "transport/pmix_join.hpp"
#include "transport/reach.hpp"
#include "transport/transport.hpp"

namespace preflight {
namespace {

using std::chrono::duration;
using std::chrono::duration_cast;

double since(TimePoint t) { return duration<double>(Clock::now() - t).count(); }

constexpr int kBusbwRounds = 3;  // a result below --min-busbw is measured again before it fails
// How long the other ranks wait, once rank 0 is gone, for rank 1 to write its report in rank 0's place.
constexpr std::chrono::milliseconds kRank1ReportGrace{4000};

class JobRun {
 public:
  JobRun(const Options& options, TimePoint start, const EnvSnapshot& env, const CompatMatrix* matrix,
         const JobHooks& hooks)
      : m_options(options),
        m_start(start),
        m_env(env),
        m_matrix(matrix),
        m_hooks(hooks),
        m_deadlines(PhaseDeadlines::from(start, options.timeout_s)),
        m_faults(test_faults(env)) {}

  int run() {
    start_transport();
    return after_start();
  }

 private:
  /// From the transport's start to the exit code: the probes, the job's phases, the report.
  int after_start() {
    m_root = m_transport->rank() == 0;
    if (m_mpi) {
      // The launcher's world from the start: a report cut short before the gather (the launcher
      // ended the job, a rank died) names its ranks, never "a world of 1".
      m_job.world_size = m_transport->size();
      if (m_root) {
        m_job.status = m_transport->statuses();
        m_job.place_unheard(m_join.placement);
      }
    }
    if (m_root && m_hooks.progress) {
      Transport* transport = m_transport.get();
      m_progress = m_hooks.progress(transport->size(), [transport] { return transport->ranks_arrived(); });
    }

    RankFacts seed;
    if (m_join.state == JoinOutcome::State::NoServer) {  // launch.env
      (m_join.own_limits ? seed.placement.launcher_unreachable : seed.placement.launcher_gone) = m_join.why;
    }
    if (m_mpi) {
      seed.placement.mpi = m_transport->view();
      // A collective on the world: every rank takes part, whatever its own host's rank count (a
      // rank alone on its host skipping it would pair the others' gather with its next collective).
      if (m_transport->size() > 1) {
        auto node_cvd = visible_devices();
        if (seed.placement.mpi->local_size > 1) seed.placement.mpi->node_cvd = std::move(node_cvd);
      }
    }
    enter(Phase::Probe);
    // The node's facts once per host: its local rank 0 probes them and sends them to the host's
    // other ranks, which wait for them and probe only what is their own (or what differs for them).
    const bool shared_node = m_mpi && m_transport->view().local_size > 1;
    const bool node_leader = !m_mpi || m_transport->view().local_rank == 0;
    std::shared_ptr<const RankFacts> leader_facts;
    TimePoint probe_deadline = m_deadlines.probe;
    if (shared_node && !node_leader) {
      NodeFactsOutcome received = receive_node_facts(*m_transport, m_deadlines.probe + m_deadlines.grace);
      if (!received.incident.empty()) m_incidents.push_back(std::move(received.incident));
      leader_facts = std::move(received.facts);
      // Facts that arrived at the deadline (a leader's probe hung) still leave this rank's own
      // probes a moment, so that what hangs is named where it hangs.
      probe_deadline = std::max(probe_deadline, Clock::now() + m_deadlines.grace);
    }
    ProbeRun probes = run_probes(
        m_options, m_env, probe_deadline, std::move(seed), [] { return termination_requested(); },
        [this](const std::string& probe) {
          if (m_progress) m_progress->detail("probe " + probe);
        },
        {}, leader_facts);
    if (shared_node && node_leader) {
      const TimePoint deadline = std::max(m_deadlines.probe, Clock::now()) + m_deadlines.grace;
      if (std::string incident = send_node_facts(*m_transport, probes.facts, deadline); !incident.empty()) {
        m_incidents.push_back(std::move(incident));
      }
    }
    m_gpu_kept = std::move(probes.kept);  // the GPU hold, until the all_reduce phase ends
    m_probe_expired = probes.expired;
    if (probes.expired) m_incidents.push_back("rank " + std::to_string(m_transport->rank()) + ": " + probes.incident);
    m_facts = std::move(probes.facts);
    m_profile = effective_profile(m_options, m_facts);
    const bool leader = !m_mpi || m_transport->view().local_rank == 0;
    m_mine = judge_rank(m_options, m_profile, m_facts, leader, m_matrix);
    if (unjoined()) report_unjoined();
    if (m_init_expired) report_init_expired();

    enter(Phase::Reach);
    reach_rank0();

    write_own_file();

    enter(Phase::Gather);
    gather();
    m_listener.reset();  // every rank has tried its connection by now

    enter(Phase::Barrier);
    barrier();

    enter(Phase::Allreduce);
    allreduce();
    m_gpu_kept.clear();  // the job's GPU work is done: the hold helper lets the GPUs go

    enter(Phase::Report);
    return report();
  }

  void start_transport() {
    TransportCalls calls = TransportCalls::real();
    calls.init_expired = [this](const JoinOutcome& join) { init_expired(join); };
    const int pmix_rank = static_cast<int>(parse_int(m_env.get("PMIX_RANK").value_or("")).value_or(-1));
    const bool stop = pmix_rank >= 0 && pmix_rank == m_faults.stop_before_mpi_init;
    const bool kill = pmix_rank >= 0 && pmix_rank == m_faults.kill_before_mpi_init;
    // Rank 0 of a launched job catches the launcher's SIGTERM from the start: a rank that dies
    // in the join or in MPI_Init makes the launcher end the job, at once, and rank 0 then writes
    // its report (init_expired) before it goes.
    if (pmix_rank == 0) install_termination_handler();
    calls.init_mpi = [init = calls.init_mpi, stop, kill](TimePoint deadline, bool singleton, const std::string& peers,
                                                         std::string& error) {
      if (stop || kill) ::raise(kill ? SIGKILL : SIGSTOP);  // the test binary: a rank lost in MPI_Init
      return init(deadline, singleton, peers, error);
    };
    if (m_faults.shared_memory_split) {  // the test binary: the path of a launcher without PMIx's peers
      calls.join = [join = calls.join](const EnvSnapshot& env, TimePoint fence, TimePoint query, TimePoint patience) {
        JoinOutcome out = join(env, fence, query, patience);
        out.local_peers.clear();
        return out;
      };
    }
    TransportStart started = preflight::start_transport(m_options.mpi, m_options.timeout_s, m_env, m_deadlines, calls);
    m_join = std::move(started.join);
    if (m_join.state == JoinOutcome::State::Incomplete) return unjoined_start();
    m_transport = std::move(started.transport);
    m_mpi = started.mpi;
    m_job.source = m_mpi ? "mpi" : "none";
    if (!started.incident.empty()) m_incidents.push_back(std::move(started.incident));
    m_alone_in_live_job = started.alone_in_a_live_job;
    if (m_alone_in_live_job) install_termination_handler();  // the launcher's SIGTERM ends the wait
  }

  /// Alone while the launcher and the job's other ranks may be running (transport_start.hpp): an
  /// exit now, non-zero as it often is, would have the launcher end the job before the rank that
  /// reports does. So this rank waits until the run's deadline, or until the launcher stops it.
  void wait_for_the_job() const {
    if (!m_alone_in_live_job) return;
    const double left = std::max(0.0, duration<double>(m_deadlines.end - Clock::now()).count());
    std::fprintf(stderr,
                 "preflight: pid %d ran alone (MPI could not start here) while the job's other ranks may be running: "
                 "it waits until the run's deadline (%.0f s more), so that the launcher does not end the job before "
                 "the reporting rank reports\n",
                 static_cast<int>(::getpid()), left);
    std::fflush(stderr);
    while (Clock::now() < m_deadlines.end && !termination_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  /// Some rank never reached the PMIx join: the lowest rank that did runs its own probes alone and
  /// reports (report_unjoined); the others wait for it to end the job.
  void unjoined_start() {
    if (!m_join.reporter) {
      std::fprintf(stderr,
                   "preflight: rank %d (pid %d): not every rank started before the deadline; a lower rank reports "
                   "which, and ends the job (exit 4)\n",
                   m_join.rank, static_cast<int>(::getpid()));
      pmix_join_abort(ExitCode::Deadline, "preflight: ranks of the job never started");
    }
    install_termination_handler();
    m_transport = make_local_transport();
    m_job.source = "mpi";
    m_job.world_size = m_join.size;
    m_job.status = m_join.ranks;
  }

  /// MPI_Init did not return by its deadline (the init watchdog's thread, while MPI_Init still
  /// waits in the main thread). When every rank had met at the join before it, rank 0 knows who
  /// started where: it probes its own node alone and reports, naming the ranks and their hosts;
  /// the other ranks wait for the launcher to end the job. Without a completed join, the
  /// watchdog's own line and exit 4.
  [[noreturn]] void init_expired(const JoinOutcome& join) {
    const bool reporter = join.state == JoinOutcome::State::Complete && join.rank == 0 && !join.ranks.empty();
    std::fprintf(stderr,
                 "preflight: rank %d (pid %d): MPI initialisation did not finish within %.1f s of the start: a rank "
                 "did not start, stopped or died in it, or the launcher cannot reach a host%s\n",
                 join.rank, static_cast<int>(::getpid()), since(m_start),
                 reporter                                     ? "; this rank reports (exit 4)"
                 : join.state == JoinOutcome::State::Complete ? "; rank 0 reports which ranks started (exit 4)"
                                                              : ". Exit 4.");
    std::fflush(stderr);
    if (!reporter) {
      if (join.state == JoinOutcome::State::Complete) {
        // Rank 0 reports and then has the launcher end the job; an exit now could end it first.
        while (Clock::now() < m_deadlines.end + m_deadlines.grace && !termination_requested()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
      ::_exit(to_int(ExitCode::Deadline));
    }
    install_termination_handler();
    m_join = join;
    m_init_expired = true;
    m_init_waited_s = since(m_start);
    if (termination_requested()) m_job.launcher_ended_s = m_init_waited_s;
    m_transport = make_local_transport();
    m_job.source = "mpi";
    m_job.world_size = join.size;
    m_job.status = join.ranks;
    after_start();  // ends in report_init_expired
    ::_exit(to_int(ExitCode::Deadline));
  }

  /// The report of a job whose MPI initialisation never finished: rank 0's own node, and the ranks
  /// that had started (all of them), none of which delivered.
  [[noreturn]] void report_init_expired() {
    m_job.ranks = {m_facts};
    m_results = m_mine;
    std::map<std::string, std::vector<int>> hosts;
    for (RankStatus& s : m_job.status) {
      if (s.rank == 0) s.delivered = true;
      hosts[s.host.empty() ? std::string("?") : s.host].push_back(s.rank);
    }
    const std::string note = "not run: MPI initialisation did not finish";
    m_job.barrier.note = note;
    m_job.allreduce.note = note;
    std::string where;
    for (const auto& [host, ranks] : hosts) {
      std::vector<std::string> numbers;
      for (int r : ranks) numbers.push_back(std::to_string(r));
      where += (where.empty() ? "" : "; ") + host + " (" + (ranks.size() == 1 ? "rank " : "ranks ") +
               join(numbers, ", ") + ")";
    }
    if (m_job.launcher_ended_s) {
      expire("init: the launcher ended the job " + fixed(m_init_waited_s, 1) +
             " s after the start, during MPI initialisation (MPI_Init), after all " + std::to_string(m_job.world_size) +
             " ranks had started and met before it: a rank died or failed in MPI_Init (the launcher's own "
             "message names it). The ranks had started on: " +
             where);
    }
    expire("init: MPI initialisation (MPI_Init) did not finish within " + fixed(m_init_waited_s, 1) +
           " s of the start although all " + std::to_string(m_job.world_size) +
           " ranks had started and met before it: a rank stopped, died or hung inside MPI_Init, or the "
           "launcher's connections between the hosts failed (look for the launcher's own message, and for a "
           "host that stopped answering). The ranks had started on: " +
           where + ". If MPI_Init is only slow here (many ranks, a slow fabric), a larger --timeout gives it longer");
  }

  /// The reporter of a job whose ranks did not all start: its own node's verdicts, the job's
  /// checks over the ranks that joined, and the incident naming the others and their hosts.
  [[noreturn]] void report_unjoined() {
    m_job.ranks = {m_facts};
    m_results = m_mine;
    std::vector<int> missing;
    for (RankStatus& s : m_job.status) {
      if (s.rank == m_join.rank) s.delivered = true;
      if (!s.heard) missing.push_back(s.rank);
    }
    const std::string note = "not run: " + describe(missing) + " never started";
    m_job.barrier.note = note;
    m_job.allreduce.note = note;
    m_job.barrier.missing = missing;  // the ranks that started are not to blame
    m_job.allreduce.missing = missing;
    expire(describe_unjoined(m_join, duration<double>(m_deadlines.init - m_start).count()));
  }

  /// Every rank's CUDA_VISIBLE_DEVICES to the other ranks of its host (through rank 0), before the
  /// probes: local rank 0 runs the node's peer copies across the union of the GPUs they will use.
  /// nullopt when the exchange gave no usable table (the peer copies then see local rank 0's GPUs
  /// only, and topo.p2p says which pairs were not copied). Rank 0 starts its liveness watch first
  /// and offers it to the others in the table.
  std::optional<NodeVisibleDevices> visible_devices() {
    const TimePoint deadline = std::max(m_deadlines.init, Clock::now() + std::chrono::seconds(2));
    if (m_root) watch_ranks();
    const nlohmann::json offer = m_watch ? nlohmann::json(m_watch->offer()) : nlohmann::json();
    const std::string host = live_os().hostname().value_or("");
    VisibleDevicesOutcome out =
        exchange_visible_devices(*m_transport, host, m_env.get("CUDA_VISIBLE_DEVICES"), offer, deadline + grace());
    if (!out.completed) {
      if (!m_root) give_up("rank 0 did not send the node's CUDA_VISIBLE_DEVICES table");
      expire_missing(Phase::Init,
                     "init: the ranks' CUDA_VISIBLE_DEVICES exchange did not complete within " + fmt_s(deadline));
    }
    if (!out.watch.is_null()) {
      try {
        m_rank0_offer = out.watch.get<LivenessOffer>();
        liveness_connect(m_rank0_offer, m_transport->rank(), host);
        // Connected before the probes start (a millisecond on a working network, a second at
        // most): a rank that dies in them is then seen ending, in its phase.
        liveness_wait_connected(std::min(Clock::now() + std::chrono::seconds(1), m_deadlines.probe));
        if (liveness_rank0_state() != Rank0State::Unknown) watch_rank0();
      } catch (const std::exception&) {
        // not watched: rank 0 waits for this rank's deadlines as before
      }
    }
    return std::move(out.node);
  }

  /// Any other rank, connected to rank 0's liveness watch: rank 0's process ending without its
  /// "reported" ends this rank's waits at once (give_up), and the launcher's SIGTERM that follows
  /// it does not end this rank (the launcher ends a job whose process died): rank 1 then writes
  /// the report in rank 0's place. While rank 0 is there, SIGTERM ends the rank as before.
  void watch_rank0() {
    set_liveness_check([] { return liveness_rank0_state() != Rank0State::Gone; });
    // Rank 0's end reaches this rank before the launcher's signal, which goes through the
    // launcher's daemons: 50 ms for it, in the handler.
    install_rank_termination_handler([] { return liveness_rank0_gone_within(50); });
  }

  /// Rank 0: the liveness watch (transport/liveness.hpp), offered to the other ranks in the exchange.
  /// TCP_USER_TIMEOUT: a host silent this long is gone (3 s at the default --timeout, 10 s at most).
  void watch_ranks() {
    m_watch = std::make_unique<LivenessWatch>();
    const auto unacked = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::clamp(seconds_of(m_options.timeout_s * 0.05), seconds_of(3.0), seconds_of(10.0)));
    std::string error;
    if (!m_watch->open(m_transport->size(), unacked, error)) {
      m_incidents.push_back("rank 0 could not watch the other ranks' processes (" + error +
                            "): a rank that dies is seen only at the phase's deadline");
      m_watch.reset();
      return;
    }
    set_liveness_check([watch = m_watch.get()] { return watch->quiet(); });
  }

  Clock::duration grace() const { return m_deadlines.grace_for(m_root); }

  void enter(Phase phase) {
    const TimePoint now = Clock::now();
    if (m_phase != Phase::Init) m_phase_seconds[to_string(m_phase)] = duration<double>(now - m_phase_start).count();
    m_phase_start = now;
    m_phase = phase;
    if (m_progress) m_progress->phase(phase == Phase::Allreduce ? "all_reduce" : to_string(phase));
    m_transport->announce(phase);
    if (m_mpi && !m_root) liveness_phase(phase);  // rank 0 hears it without calling MPI
    if (m_watch) m_watch->phase(phase);           // and the others hear rank 0's
    if (m_faults.stop_rank == m_transport->rank() && m_faults.stop_phase == phase) ::raise(SIGSTOP);
    if (m_faults.kill_rank == m_transport->rank() && m_faults.kill_phase == phase) ::raise(SIGKILL);
  }

  /// --json-per-rank DIR: this rank's own facts and verdicts, written before anything waits on
  /// other ranks, so that a run that cannot gather still leaves every rank's result for `merge`.
  void write_own_file() {
    if (m_options.json_per_rank_dir.empty() || !m_hooks.write_rank_file) return;
    JobFacts alone = single_rank_job(m_facts);
    alone.world_size = m_mpi ? m_transport->size() : alone.world_size;
    alone.source = m_mpi ? "mpi" : "none";
    Report own = assemble_report(m_options, m_profile, std::move(alone), m_mine, m_matrix);
    own.incidents = m_incidents;
    own.deadline_expired = m_probe_expired;
    own.duration_ms = since(m_start) * 1000.0;
    try {
      if (const std::string refused = m_hooks.write_rank_file(own); !refused.empty()) {
        std::fprintf(stderr, "preflight: rank %d: --json-per-rank: %s; this rank ends with exit 2\n",
                     m_transport->rank(), refused.c_str());
        m_rank_file_refused = true;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "preflight: rank %d: --json-per-rank: %s\n", m_transport->rank(), e.what());
    }
  }

  /// Rank 0 listens on the address NCCL's bootstrap would use there; every rank (rank 0 too)
  /// opens a bounded TCP connection to it. The result travels in the rank's facts.
  void reach_rank0() {
    if (!m_mpi) return;
    std::string offer;
    if (m_root) {
      std::string why;
      std::optional<ReachTarget> target = bootstrap_target(m_facts, why);
      if (target) {
        m_listener = std::make_unique<ReachListener>();
        std::string error;
        if (m_listener->listen(target->address, error)) {
          target->port = m_listener->port();
          m_job.reach_target = target;
        } else {
          m_job.reach_note = "rank 0 could not listen on " + target->address + ": " + error;
          m_listener.reset();
        }
      } else {
        m_job.reach_note = why;
      }
      nlohmann::json j = nlohmann::json::object();
      if (m_job.reach_target) j["target"] = *m_job.reach_target;
      offer = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    const std::optional<std::string> got = m_transport->broadcast(offer, m_deadlines.reach + grace());
    if (!got) {
      if (!m_root) give_up("rank 0 did not send its bootstrap address");
      expire_missing(Phase::Reach,
                     "reach: rank 0's bootstrap address did not reach every rank within " + fmt_s(m_deadlines.reach));
    }
    std::optional<ReachTarget> target;
    try {
      const nlohmann::json j = nlohmann::json::parse(*got);
      if (j.contains("target")) target = j.at("target").get<ReachTarget>();
    } catch (const std::exception&) {
      target.reset();
    }
    if (!target) return;  // rank 0 had none: net.reachability says why (job.reach_note)
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(m_deadlines.reach - Clock::now());
    const auto timeout = std::clamp(left, std::chrono::milliseconds(200), std::chrono::milliseconds(2000));
    m_facts.net.reach = reach(*target, timeout);
  }

  /// Ranks that did not get to `phase` or went silent in it (heartbeats stopped), for messages.
  std::vector<int> missing_in(Phase phase) {
    refresh_status();
    return ranks_behind(m_job.status, phase);
  }

  std::string describe(const std::vector<int>& ranks) const {
    std::string names;
    for (int r : ranks) names += (names.empty() ? "" : "; ") + m_job.describe_rank(r);
    return names;
  }

  [[noreturn]] void expire_missing(Phase phase, const std::string& what) {
    const std::vector<int> missing = missing_in(phase);
    const std::string note =
        "not run: " + (missing.empty() ? what : describe(missing) + " did not get past " + to_string(phase));
    m_job.barrier.note = note;
    m_job.allreduce.note = note;
    expire(what + (missing.empty() ? std::string() : ": " + describe(missing)));
  }

  std::string payload_bytes() {
    RankPayload p;
    p.rank = m_transport->rank();
    p.facts = m_facts;
    p.results = m_mine;
    p.incidents = m_incidents;
    std::string bytes = encode_payload(p);
    if (m_faults.bad_rank != p.rank) return bytes;
    if (m_faults.bad_kind == "garbage") return std::string(4096, '\x5a');
    if (m_faults.bad_kind == "oversized") return std::string(kMaxPayloadBytes + 1, '\0');
    if (m_faults.bad_kind == "truncated") return bytes.substr(0, bytes.size() / 2);
    if (m_faults.bad_kind == "wrong-rank") {
      p.rank += 1;
      return encode_payload(p);
    }
    return bytes;
  }

  void gather() {
    if (!m_mpi) {
      m_job = single_rank_job(m_facts);
      m_results = m_mine;
      return;
    }
    m_job.world_size = m_transport->size();
    if (m_root) {
      m_job.status = m_transport->statuses();
      m_job.place_unheard(m_join.placement);
    }
    GatherOutcome g = gather_phase(*m_transport, m_root ? std::string() : payload_bytes(), m_facts, m_mine,
                                   m_job.status, m_deadlines.gather + grace());
    if (!m_root) {
      if (!g.sent) give_up("rank 0 did not take this rank's facts");
      return;
    }
    m_job.ranks = std::move(g.ranks);
    m_results = std::move(g.results);
    for (std::string& i : g.incidents) m_incidents.push_back(std::move(i));
    m_remote_expired = m_remote_expired || g.remote_expired;
    refresh_status();
    if (const std::vector<int>& lost = g.lost; !lost.empty()) {
      const std::string names = describe(lost);
      const std::string note = "not run: " + names + " did not deliver its facts before the gather deadline";
      m_job.barrier.note = note;
      m_job.allreduce.note = note;
      expire("gather: " + std::to_string(lost.size()) + " of " + std::to_string(m_job.world_size) +
             " ranks did not deliver their facts within " + fmt_s(m_deadlines.gather) + ": " + names);
    }
  }

  void barrier() {
    if (!m_mpi) return;  // one process: nothing to wait for
    const TimePoint t0 = Clock::now();
    const BarrierOutcome done = barrier_phase(*m_transport, m_deadlines.barrier + grace());
    if (!m_root) {
      if (!done.completed) give_up("the barrier did not complete");
      return;
    }
    CommResult& b = m_job.barrier;
    b.attempted = true;
    b.transport = "mpi";
    b.seconds = done.seconds;
    b.deadline_s = duration<double>(m_deadlines.barrier - t0).count();
    b.completed = done.completed;
    if (done.completed) return;
    b.expired = true;
    b.interrupted = done.interrupted;
    if (!done.peer_error.empty()) {
      b.note = done.peer_error;   // a peer hung up: the barrier failed, it did not run out of time
      b.expired = b.interrupted;  // unless the launcher was ending the job anyway
    }
    b.missing = missing_in(Phase::Barrier);
    const std::string names = describe(b.missing);
    m_job.allreduce.note = "not run: the barrier did not complete";
    if (!b.expired)
      expire("barrier: failed after " + fixed(b.seconds, 1) + " s: " + b.note + (names.empty() ? "" : ": " + names));
    expire(
        "barrier: did not complete within " + fmt_s(m_deadlines.barrier) +
        (names.empty() ? std::string(wait_interrupted() ? "" : "; every rank reached it and is alive") : ": " + names));
  }

  /// The all_reduce of the job: NCCL in contained helpers when every rank has a GPU and an NCCL
  /// (the library the job will load), MPI in host memory otherwise; in one process without MPI,
  /// NCCL across the node's GPUs. Measured again (up to kBusbwRounds) before a result below
  /// --min-busbw is reported.
  void allreduce() {
    if (!m_mpi) {
      local_allreduce();
      return;
    }
    const TimePoint deadline = m_deadlines.allreduce + grace();
    for (int round = 1;; ++round) {
      const TimePoint t0 = Clock::now();
      std::string plan_text;
      if (m_root) plan_text = encode_plan(plan_allreduce(m_options, m_profile, m_job, m_facts, m_deadlines.allreduce));
      const std::optional<std::string> plan_got = m_transport->broadcast(plan_text, deadline);
      if (!plan_got) {
        if (!m_root) give_up("rank 0 did not send the all_reduce plan");
        expire_allreduce(t0, m_options.allreduce_bytes_for("mpi"), false);
      }
      const AllreducePlan plan = decode_plan(*plan_got);
      if (plan.mode == AllreducePlan::Mode::Skipped) {
        m_job.allreduce.note = "not run: comm.allreduce is not selected (--only/--skip)";
        return;
      }
      NcclRankOutcome mine;
      if (plan.mode == AllreducePlan::Mode::Nccl) {
        mine = nccl_round(plan);
      } else if (plan.mode == AllreducePlan::Mode::Mpi) {
        mine = mpi_allreduce_round(*m_transport, plan.bytes, deadline);
      } else {
        mine.ok = false;
        mine.step = "plan";
        mine.error = plan.error;
      }
      if (mine.expired && !m_root) give_up("the all_reduce did not complete");
      const std::optional<std::vector<std::string>> records = m_transport->gather(to_record(mine), deadline);
      if (!records) {
        if (!m_root) give_up("rank 0 did not collect the all_reduce results");
        expire_allreduce(t0, plan.bytes, plan.mode == AllreducePlan::Mode::Nccl);
      }
      bool again = false;
      if (m_root) {
        std::vector<NcclRankOutcome> outcomes;
        for (std::size_t r = 0; r < records->size(); ++r)
          outcomes.push_back(from_record((*records)[r], static_cast<int>(r)));
        judge_allreduce(outcomes, plan, t0);
        const CommResult& a = m_job.allreduce;
        again =
            round < kBusbwRounds && a.completed && m_options.min_busbw_gbps && a.busbw_gbps < *m_options.min_busbw_gbps;
      }
      const std::optional<std::string> decision = m_transport->broadcast(again ? "again" : "done", deadline);
      if (!decision) {
        if (!m_root) give_up("rank 0 did not say whether to repeat the all_reduce");
        expire("all_reduce: the ranks did not take the decision to repeat it within " + fmt_s(m_deadlines.allreduce));
      }
      if (*decision != "again") return;
    }
  }

  NcclRankOutcome nccl_round(const AllreducePlan& plan) {
    NcclAllreduceRequest req;
    req.id_hex = plan.id;
    req.root = plan.root;
    req.nccl_lib = nccl_library(m_options, m_facts);
    req.rank = m_transport->rank();
    req.nranks = m_transport->size();
    req.device = rank_gpus(m_facts).ordinal.value_or(m_facts.placement.local_rank);  // as launch.gpu_binding judges it
    req.bytes = plan.bytes;
    req.deadline =
        std::max(std::chrono::milliseconds(200),
                 std::chrono::duration_cast<std::chrono::milliseconds>(m_deadlines.allreduce - Clock::now()));
    return run_nccl_allreduce(req);
  }

  void judge_allreduce(const std::vector<NcclRankOutcome>& outcomes, const AllreducePlan& plan, TimePoint t0) {
    const std::uint64_t bytes = plan.bytes;
    CommResult& a = m_job.allreduce;
    const CommResult previous = a;
    const int repeats = outcomes.empty() ? 0 : outcomes.front().repeats;
    a = combine_nccl_outcomes(outcomes, m_transport->size(), bytes, repeats, since(t0),
                              duration<double>(m_deadlines.allreduce - t0).count());
    a.attempted = true;
    a.transport = plan.mode == AllreducePlan::Mode::Mpi ? "mpi" : "nccl";
    if (plan.mode == AllreducePlan::Mode::Mpi) {
      a.note = "MPI all_reduce of " + std::to_string(bytes) + " bytes of int64 in host memory (" +
               (plan.why.empty() ? std::string("no GPU") : plan.why) + ")";
    } else if (plan.mode != AllreducePlan::Mode::Nccl) {
      a.completed = false;
      a.blocked = true;
      a.undetermined = plan.undetermined;
      a.errors.clear();  // each rank only echoes the plan's error
      a.note = plan.error;
    }
    for (std::string& e : a.errors) {
      for (int r : a.wrong) {
        const std::string prefix = "rank " + std::to_string(r) + " ";
        if (e.rfind(prefix, 0) == 0) e = m_job.describe_rank(r) + e.substr(prefix.size() - 1);
      }
    }
    if (previous.attempted && previous.completed && previous.busbw_gbps > a.busbw_gbps) {
      // Keep the best round: a slow moment must not fail the run.
      a.algbw_gbps = previous.algbw_gbps;
      a.busbw_gbps = previous.busbw_gbps;
    }
    if (previous.attempted) a.repeats += previous.repeats;
    // Every round's XID windows count (gpu.xid): an XID in the first round is not undone by a second.
    a.xid_watches.insert(a.xid_watches.begin(), previous.xid_watches.begin(), previous.xid_watches.end());
  }

  [[noreturn]] void expire_allreduce(TimePoint t0, std::uint64_t bytes, bool nccl) {
    CommResult& a = m_job.allreduce;
    a.attempted = true;
    a.expired = true;
    a.transport = nccl ? "nccl" : "mpi";
    a.bytes = bytes;
    a.ranks = m_transport->size();
    a.seconds = since(t0);
    a.deadline_s = duration<double>(m_deadlines.allreduce - t0).count();
    a.missing = missing_in(Phase::Allreduce);
    expire("all_reduce: did not complete within " + fmt_s(m_deadlines.allreduce) +
           (a.missing.empty() ? std::string(wait_interrupted() ? "" : "; every rank reached it and is alive")
                              : ": " + describe(a.missing)));
  }

  /// One process without MPI (the node profile): NCCL across the node's GPUs, one helper each.
  void local_allreduce() {
    if (m_profile != Profile::Node) return;
    if (!selected(m_options, "comm.allreduce")) return;  // GPU work nobody asked for (--only/--skip)
    const auto* devices = m_facts.gpu.driver.cuda_devices.value();
    CommResult& a = m_job.allreduce;
    if (devices == nullptr || devices->empty()) {
      a.note = "no CUDA device on this node: the all_reduce across local GPUs needs one";
      return;
    }
    if (!m_options.sysroot.empty()) {
      // The GPUs judged are the captured node's: an all_reduce would run on this machine's.
      a.note = "not run under --sysroot: the all_reduce needs the node's own GPUs (run preflight on the node)";
      return;
    }
    if (!m_facts.gpu.nccl.ok()) {
      a.blocked = true;
      a.undetermined = undetermined(m_facts.gpu.nccl.error());
      a.transport = "nccl";
      a.ranks = static_cast<int>(devices->size());
      a.note = "the NCCL all_reduce across the node's " + std::to_string(devices->size()) + " GPUs " +
               (a.undetermined ? "was not run: whether NCCL loads here was not found out in time ("
                               : "cannot run: NCCL cannot be loaded here (") +
               m_facts.gpu.nccl.why() + "; see nccl.library)";
      return;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(m_deadlines.allreduce - Clock::now());
    a = nccl_allreduce_local_gpus(static_cast<int>(devices->size()), m_options.allreduce_bytes_for("nccl"), 5,
                                  nccl_library(m_options, m_facts), std::max(left, std::chrono::milliseconds(500)));
    for (RankXidWatch& w : a.xid_watches) w.rank = m_facts.placement.rank;  // every helper ran on this node
  }

  int report() {
    int code = to_int(ExitCode::Ok);
    if (m_root) {
      refresh_status();
      Report r = make_report(false);
      code = m_hooks.emit(r, exit_code(r, m_options.strict));
      set_liveness_check(nullptr);
      if (m_watch) m_watch->close();  // the verdict is out: the ranks' ends from here on are the job's end
    }
    std::optional<std::string> agreed =
        m_transport->broadcast(std::to_string(code), m_deadlines.end + grace() + std::chrono::seconds(2));
    if (!agreed && m_root) agreed = std::to_string(code);  // the report is written; a rank lost now changes nothing
    if (!agreed) give_up("rank 0 did not send the run's exit code");
    code = static_cast<int>(parse_int(*agreed).value_or(to_int(ExitCode::Internal)));
    if (m_rank_file_refused && code != to_int(ExitCode::Deadline) && code != to_int(ExitCode::Internal)) {
      code = to_int(ExitCode::Usage);  // a path another user planted is a usage error, as before the run
    }
    wait_for_the_job();
    if (m_probe_expired) {
      // A probe thread is still stuck somewhere; do not wait for it at exit.
      m_transport->finalize();
      std::fflush(nullptr);
      ::_exit(code == to_int(ExitCode::Ok) ? to_int(ExitCode::Deadline) : code);
    }
    m_transport->finalize();
    return code;
  }

  Report make_report(bool expired) {
    if (m_progress) m_progress->stop();  // the line is cleared before anything else prints
    if (m_results.empty()) m_results = m_mine;
    if (m_job.ranks.empty()) m_job.ranks.push_back(m_facts);
    if (!m_job.status.empty() && !without_mpi())
      m_job.status.front().delivered = true;  // rank 0's own facts are always at hand
    m_job.phase_seconds = m_phase_seconds;
    if (m_mpi && termination_requested()) m_job.launcher_ended_s = since(m_start);
    if (m_phase != Phase::Init && m_phase != Phase::Report) {
      m_job.phase_seconds[to_string(m_phase)] = duration<double>(Clock::now() - m_phase_start).count();  // cut short
    }
    Report r = assemble_report(m_options, m_profile, m_job, m_results, m_matrix);
    r.incidents = m_incidents;
    r.deadline_expired = expired || m_probe_expired || m_remote_expired;
    r.duration_ms = since(m_start) * 1000.0;
    return r;
  }

  void refresh_status() {
    if (without_mpi()) return;  // the join's table is all there is
    std::vector<RankStatus> fresh = m_transport->statuses();
    for (std::size_t i = 0; i < fresh.size() && i < m_job.status.size(); ++i) {
      fresh[i].delivered = m_job.status[i].delivered;
      fresh[i].payload_error = m_job.status[i].payload_error;
    }
    if (m_watch) {
      for (const LivenessLoss& loss : m_watch->losses()) {
        if (loss.rank < 0 || loss.rank >= static_cast<int>(fresh.size())) continue;
        RankStatus& s = fresh[static_cast<std::size_t>(loss.rank)];
        if (!s.lost.empty()) continue;
        s.lost = loss.kind;
        s.lost_at_s = duration<double>(loss.at - m_start).count();
        s.parting = loss.parting;
      }
      // What the ranks said on their connections: news of ranks whose MPI notices rank 0 has not
      // read (it reads them only when it calls MPI, and not while it probes).
      for (const LivenessHeard& h : m_watch->heard()) {
        if (h.rank <= 0 || h.rank >= static_cast<int>(fresh.size())) continue;
        RankStatus& s = fresh[static_cast<std::size_t>(h.rank)];
        if (!s.heard) {
          s.heard = true;
          s.host = h.host;
          s.pid = h.pid;
          s.silent_s = duration<double>(Clock::now() - h.at).count();
        }
        s.last_phase = std::max(s.last_phase, h.phase);
      }
    }
    if (!fresh.empty()) m_job.status = std::move(fresh);
    m_job.place_unheard(m_join.placement);
  }

  /// Rank 0 at an expired deadline: the report with what is known, then the end of the job.
  [[noreturn]] void expire(std::string what) {
    if (m_watch && wait_interrupted()) {
      // The liveness watch, or the launcher ending the job (which it does when a process died, and
      // sometimes before rank 0 saw that process end), cut the wait short. The processes of a host
      // that went down end within milliseconds of each other: a moment for the watch to see them
      // all, so the host is named whole — at most 100 ms (a loaded host takes tens of ms to end a
      // killed process; 30 ms missed it), short of the second Open MPI waits after its SIGTERM.
      for (int round = 0; round < 50; ++round) {
        refresh_status();
        if (!m_job.lost().empty() && hosts_lost_whole()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (const std::string lost = m_job.describe_lost(); !lost.empty()) {
        what = std::string(m_phase == Phase::Allreduce ? "all_reduce" : to_string(m_phase)) + ": cut short after " +
               fixed(since(m_start), 1) + " s: " + lost;
      }
    }
    m_incidents.push_back(what);
    m_hooks.emit(make_report(true),
                 to_int(ExitCode::Deadline));  // a report that cannot be written does not change the deadline's code
    if (m_watch) m_watch->reported();          // no other rank reports in rank 0's place now
    std::fflush(nullptr);
    if (without_mpi()) pmix_join_abort(ExitCode::Deadline, "preflight: " + what.substr(0, 200));
    m_transport->abort(ExitCode::Deadline);
    ::_exit(to_int(ExitCode::Deadline));  // abort() does not return; the compiler cannot see that through the interface
  }

  /// Whether every host with a lost rank has lost all its ranks (then the story is complete).
  bool hosts_lost_whole() const {
    std::map<std::string, std::pair<int, int>> hosts;  // host -> (ranks, lost)
    const std::string own = m_job.status.empty() ? std::string() : m_job.status.front().host;
    for (const RankStatus& s : m_job.status) {
      if (!s.heard || s.host.empty() || s.host == own) continue;  // rank 0's own host is not gone
      auto& [all, lost] = hosts[s.host];
      ++all;
      lost += s.lost.empty() ? 0 : 1;
    }
    return std::all_of(hosts.begin(), hosts.end(),
                       [](const auto& h) { return h.second.second == 0 || h.second.second == h.second.first; });
  }

  /// A non-root rank whose wait for rank 0 expired (rank 0 itself is stuck or gone).
  [[noreturn]] void give_up(const std::string& what) {
    if (liveness_rank0_state() == Rank0State::Gone) end_without_rank0(what);
    liveness_say("gave up in phase " + std::string(to_string(m_phase)) + ": " + what);
    std::fprintf(stderr, "preflight: rank %d (pid %d): %s in phase %s before its deadline; ending the job (exit 4)\n",
                 m_transport->rank(), static_cast<int>(::getpid()), what.c_str(), to_string(m_phase));
    std::fflush(nullptr);
    m_transport->abort(ExitCode::Deadline);
    ::_exit(to_int(ExitCode::Deadline));
  }

  /// Any other rank whose wait ended because rank 0's process is gone (its liveness connection
  /// ended without "reported"): nothing to abort (the launcher ends the job, or the ranks' own
  /// exits do). Rank 1 first writes the report in rank 0's place.
  [[noreturn]] void end_without_rank0(const std::string& what) {
    if (m_transport->rank() == 1) {
      report_in_rank0s_place(what);
    } else {
      std::fprintf(stderr,
                   "preflight: rank %d (pid %d): rank 0's process ended (phase %s); rank 1 reports in its place "
                   "(exit 4)\n",
                   m_transport->rank(), static_cast<int>(::getpid()), to_string(m_phase));
      std::fflush(nullptr);
      // This rank's own exit (4) would make the launcher end the job, rank 1 with it, before rank 1
      // has written its report: linger until the launcher ends this rank (after rank 1 is done) or
      // kRank1ReportGrace has passed.
      const TimePoint until = Clock::now() + kRank1ReportGrace;
      while (Clock::now() < until && !termination_requested())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fflush(nullptr);
    ::_exit(to_int(ExitCode::Deadline));
  }

  /// The phase rank 0 last said it entered; before its first word, the probes: its offer came with
  /// the exchange that ends MPI initialisation, and rank 0 enters the probes right after it.
  static Phase rank0_phase() { return liveness_rank0_phase().value_or(Phase::Probe); }

  /// Rank 1's report when rank 0 died: its own verdicts, the launcher's world, and whose report it is.
  void report_in_rank0s_place(const std::string& what) {
    JobFacts job = single_rank_job(m_facts);
    job.source = "mpi";
    job.world_size = m_transport->size();
    if (termination_requested()) job.launcher_ended_s = since(m_start);
    job.status.clear();
    for (int r = 0; r < job.world_size; ++r) {
      RankStatus s;
      s.rank = r;
      if (r == m_transport->rank()) {
        s.heard = s.delivered = true;
        s.host = m_facts.identity.hostname;
        s.pid = static_cast<int>(::getpid());
        s.last_phase = m_phase;
      } else if (r == 0) {  // what its liveness offer and connection said of it
        s.heard = m_rank0_offer.pid > 0;
        s.host = m_rank0_offer.host;
        s.pid = m_rank0_offer.pid;
        s.last_phase = rank0_phase();
        s.lost = "ended";
        s.lost_at_s = since(m_start);
      }
      job.status.push_back(std::move(s));
    }
    job.place_unheard(m_join.placement);  // rank 0's host, where the launcher said
    const std::string note = "not run: rank 0, which runs it, ended before it";
    job.barrier.note = note;
    job.allreduce.note = note;
    Report r = assemble_report(m_options, m_profile, std::move(job), m_mine, m_matrix);
    r.incidents = m_incidents;
    std::string host0 =
        m_rank0_offer.host.empty() && !m_join.placement.empty() ? m_join.placement.front() : m_rank0_offer.host;
    if (!host0.empty()) host0 = " (on " + host0 + ")";
    host0 += std::string(" in phase ") + to_string(rank0_phase());
    r.incidents.push_back("rank 0's process" + host0 + " ended " + fixed(since(m_start), 1) +
                          " s after the start, before its report (its connection to rank 1 closed" +
                          (termination_requested() ? ", and the launcher is ending the job" : "") +
                          "): this report is rank 1's (pid " + std::to_string(::getpid()) +
                          "), in rank 0's place: its own verdicts, and the job's checks without the other ranks' "
                          "facts (rank 1 was in phase " +
                          to_string(m_phase) + ": " + what + ")");
    r.deadline_expired = true;
    r.duration_ms = since(m_start) * 1000.0;
    m_hooks.emit(r, to_int(ExitCode::Deadline));
  }

  /// "7.5 s of the start", or what ended the wait early.
  std::string fmt_s(TimePoint deadline) const { return m_deadlines.describe(deadline); }

  const Options& m_options;
  TimePoint m_start;
  const EnvSnapshot& m_env;
  const CompatMatrix* m_matrix;
  const JobHooks& m_hooks;
  PhaseDeadlines m_deadlines;
  TestFaults m_faults;

  std::unique_ptr<Transport> m_transport;
  std::unique_ptr<ReachListener> m_listener;  // rank 0, from the reach phase to the end of the gather
  std::unique_ptr<LivenessWatch> m_watch;     // rank 0, from MPI_Init to the report
  bool m_mpi = false;
  bool m_root = true;
  bool m_alone_in_live_job = false;  // MPI could not start here while the launcher's job may be live
  JoinOutcome m_join;  // the PMIx join before MPI_Init
  LivenessOffer m_rank0_offer;       // any other rank: rank 0's liveness watch, its pid and host
  bool m_rank_file_refused = false;  // --json-per-rank: this rank's file was a planted path
  /// Some rank never started and this rank reports, without MPI (the join's outcome says so).
  bool unjoined() const { return m_join.state == JoinOutcome::State::Incomplete && m_join.reporter; }
  /// Reporting for a launched job without MPI: its ranks did not all join, or MPI_Init expired.
  bool without_mpi() const { return unjoined() || m_init_expired; }
  bool m_init_expired = false;  // init_expired: this rank reports a job whose MPI_Init never finished
  double m_init_waited_s = 0;
  Phase m_phase = Phase::Init;
  std::unique_ptr<JobProgress> m_progress;  // rank 0
  TimePoint m_phase_start = Clock::now();
  std::map<std::string, double> m_phase_seconds;  // rank 0: how long each finished phase took
  RankFacts m_facts;
  Profile m_profile = Profile::Node;
  bool m_probe_expired = false;
  std::vector<std::shared_ptr<const void>> m_gpu_kept;  // ProbeRun::kept, dropped after the all_reduce phase
  bool m_remote_expired = false;       // another rank's probes hit their deadline
  std::vector<CheckResult> m_mine;     // this rank's verdicts
  std::vector<CheckResult> m_results;  // rank 0: every rank's verdicts
  std::vector<std::string> m_incidents;
  JobFacts m_job;
};

}  // namespace

int run_job(const Options& options, TimePoint start, const EnvSnapshot& env, const CompatMatrix* matrix,
            const JobHooks& hooks) {
  JobRun run(options, start, env, matrix, hooks);
  return run.run();
}

}  // namespace preflight
