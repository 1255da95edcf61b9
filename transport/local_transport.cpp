// SPDX-License-Identifier: MIT
// The one-process transport: rank 0 of 1, no MPI. Collectives over one rank complete at once.
#include <unistd.h>

#include <array>
#include <cstdlib>

#include "core/exit_code.hpp"
#include "transport/transport.hpp"

namespace preflight {
namespace {

class LocalTransport final : public Transport {
 public:
  LocalTransport() {
    std::array<char, 256> buf{};
    m_status.host = ::gethostname(buf.data(), buf.size() - 1) == 0 ? buf.data() : "?";
    m_status.pid = static_cast<int>(::getpid());
    m_status.heard = true;
  }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  MpiView view() const override { return MpiView{}; }
  void announce(Phase phase) override { m_status.last_phase = phase; }
  std::vector<RankStatus> statuses() override { return {m_status}; }
  int ranks_arrived() const override { return 1; }
  std::optional<std::string> broadcast(const std::string& data, TimePoint) override { return data; }
  std::optional<std::string> node_broadcast(const std::string& data, TimePoint) override { return data; }
  bool send_payload(const std::string&, TimePoint) override { return true; }
  void collect_payloads(TimePoint, std::size_t, const std::function<void(int, std::string, std::size_t)>&) override {}
  bool barrier(TimePoint) override { return true; }
  bool allreduce_sum(std::vector<std::int64_t>&, TimePoint) override { return true; }
  std::optional<std::vector<std::string>> gather(const std::string& record, TimePoint) override {
    return std::vector<std::string>{record};
  }
  [[noreturn]] void abort(ExitCode code) override {
    std::fflush(nullptr);
    ::_exit(to_int(code));
  }
  void finalize() override {}

 private:
  RankStatus m_status;
};

}  // namespace

std::unique_ptr<Transport> make_local_transport() { return std::make_unique<LocalTransport>(); }

}  // namespace preflight
