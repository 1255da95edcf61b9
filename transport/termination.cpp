// SPDX-License-Identifier: MIT
#include <atomic>
#include <csignal>
#include <functional>
#include <utility>

#include "transport/transport.hpp"

namespace preflight {
namespace {
volatile std::sig_atomic_t g_terminate = 0;
std::atomic<bool> g_rank_lost{false};
extern "C" void on_terminate(int) { g_terminate = 1; }
bool (*g_survive)() = nullptr;
extern "C" void on_rank_terminate(int sig) {
  if (g_survive != nullptr && g_survive()) {
    g_terminate = 1;
    return;
  }
  std::signal(sig, SIG_DFL);  // the end the launcher asked for, as without a handler
  std::raise(sig);
}
}  // namespace

void install_termination_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_terminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  // Open MPI's daemon ends a job whose process died with SIGCONT, then SIGTERM, then SIGKILL, a
  // second apart; SIGCONT is the first word of it (rank 0 is never stopped on purpose).
  sigaction(SIGCONT, &sa, nullptr);
}

void install_rank_termination_handler(bool (*survive)()) {
  g_survive = survive;
  struct sigaction sa {};
  sa.sa_handler = on_rank_terminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
}

bool termination_requested() { return g_terminate != 0; }

}  // namespace preflight

namespace preflight {
namespace {
std::function<bool()> g_liveness_quiet;  // the thread that calls MPI only
}  // namespace
void note_rank_lost() { g_rank_lost.store(true); }
void set_liveness_check(std::function<bool()> quiet) { g_liveness_quiet = std::move(quiet); }
bool rank_lost() { return g_rank_lost.load() || (g_liveness_quiet && !g_liveness_quiet()); }
bool wait_interrupted() { return termination_requested() || rank_lost(); }
}  // namespace preflight
