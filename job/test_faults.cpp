// SPDX-License-Identifier: MIT
#include "job/test_faults.hpp"

#include <atomic>

namespace preflight {
namespace {
std::atomic<TestFaultsReader> g_reader{nullptr};
}  // namespace

void install_test_faults(TestFaultsReader reader) { g_reader.store(reader); }

TestFaults test_faults(const EnvSnapshot& env) {
  const TestFaultsReader reader = g_reader.load();
  return reader != nullptr ? reader(env) : TestFaults{};
}

}  // namespace preflight
