// SPDX-License-Identifier: MIT
#include <csignal>

#include "dist/transport.hpp"

namespace preflight {
namespace {
volatile std::sig_atomic_t g_terminate = 0;
extern "C" void on_terminate(int) { g_terminate = 1; }
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

bool termination_requested() { return g_terminate != 0; }

}  // namespace preflight
