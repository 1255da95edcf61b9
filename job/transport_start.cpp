// SPDX-License-Identifier: MIT
#include "job/transport_start.hpp"

#include <algorithm>

#include "transport/liveness.hpp"

namespace preflight {

TransportCalls TransportCalls::real() {
  TransportCalls c;
  c.launch_detected = mpi_launch_detected;
  c.join = pmix_join;
  c.release_join = pmix_join_release;
  c.before_mpi = liveness_reserve_descriptor;
  c.init_mpi = init_mpi_transport;
  c.local = make_local_transport;
  c.on_mpi_root = install_termination_handler;
  return c;
}

TransportStart start_transport(const std::string& mpi_option, double timeout_s, const EnvSnapshot& env,
                               const PhaseDeadlines& deadlines, const TransportCalls& calls) {
  TransportStart out;
  std::string why;
  const bool launched = calls.launch_detected(env, why);
  const bool want = mpi_option == "on" || (mpi_option == "auto" && launched);
  if (want) {
    std::string error;
    calls.before_mpi();
    if (launched) {
      // Under a PMIx launcher every rank meets the others at a fence with a deadline before
      // MPI_Init, which would otherwise wait forever for a rank that never started.
      const auto window = std::clamp(seconds_of(timeout_s * 0.05), seconds_of(0.3), seconds_of(2.0));
      out.join = calls.join(env, deadlines.init - window, deadlines.init, deadlines.end + deadlines.grace);
      if (out.join.state == JoinOutcome::State::Incomplete) return out;
      if (out.join.state == JoinOutcome::State::NoServer) error = out.join.why;  // MPI_Init would abort
    }
    const bool joined = out.join.state == JoinOutcome::State::Complete;
    const TimePoint init_deadline = joined ? std::max(deadlines.init, Clock::now() + deadlines.grace) : deadlines.init;
    if (error.empty()) {
      if (calls.init_expired) set_init_expired_handler([&calls, &out] { calls.init_expired(out.join); });
      out.transport = calls.init_mpi(init_deadline, !launched, out.join.local_peers, error);
      set_init_expired_handler(nullptr);
    }
    if (joined) calls.release_join();
    if (out.transport) {
      if (out.transport->rank() == 0) calls.on_mpi_root();
      out.mpi = true;
      return out;
    }
    out.incident = "MPI could not start (" + error + "): this rank ran alone";
    out.alone_in_a_live_job = launched && (out.join.state != JoinOutcome::State::NoServer || out.join.own_limits);
  }
  out.transport = calls.local();
  return out;
}

}  // namespace preflight
