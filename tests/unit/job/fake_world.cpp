// SPDX-License-Identifier: MIT
#include "job/fake_world.hpp"

#include <algorithm>

namespace preflight::testing {

/// Every collective is keyed by its kind and by how many of that kind the rank called before (the
/// n-th barrier of each rank meets the n-th barrier of the others, as in MPI).
struct FakeWorld::Shared {
  std::mutex mutex;
  std::condition_variable changed;
  int n = 0;
  int per_node = 0;
  std::vector<Rank> ranks;
  std::vector<RankStatus> status;
  std::map<int, std::string> broadcasts;                         // seq -> rank 0's data
  std::map<std::pair<int, int>, std::string> node_broadcasts;    // (node, seq) -> the leader's data
  std::map<int, std::string> payloads;                           // rank -> what it sent rank 0
  std::map<int, int> barriers;                                   // seq -> ranks arrived
  std::map<int, std::map<int, std::vector<std::int64_t>>> sums;  // seq -> rank -> contribution
  std::map<int, std::map<int, std::string>> gathers;             // seq -> rank -> record

  bool dead(int r) const { return ranks[static_cast<std::size_t>(r)].behaviour == Behaviour::Dead; }
  /// The first dead rank, or -1.
  int first_dead() const {
    for (int r = 0; r < n; ++r) {
      if (dead(r)) return r;
    }
    return -1;
  }
};

namespace {

using Behaviour = FakeWorld::Behaviour;

class FakeTransport final : public Transport {
 public:
  FakeTransport(std::shared_ptr<FakeWorld::Shared> shared, int rank) : m_shared(std::move(shared)), m_rank(rank) {}

  int rank() const override {
    std::lock_guard<std::mutex> lock(m_shared->mutex);
    const FakeWorld::Rank& me = m_shared->ranks[index()];
    return me.behaviour == Behaviour::Lying && me.claims >= 0 ? me.claims : m_rank;
  }
  int size() const override { return m_shared->n; }
  MpiView view() const override {
    MpiView v;
    v.rank = m_rank;
    v.size = m_shared->n;
    v.local_rank = m_rank % m_shared->per_node;
    v.local_size = std::min(m_shared->per_node, m_shared->n - node() * m_shared->per_node);
    v.nodes = (m_shared->n + m_shared->per_node - 1) / m_shared->per_node;
    v.library = "FakeWorld";
    return v;
  }

  void announce(Phase phase) override {
    std::lock_guard<std::mutex> lock(m_shared->mutex);
    RankStatus& s = m_shared->status[index()];
    s.last_phase = phase;
    s.heard = true;
    m_shared->changed.notify_all();
  }
  std::vector<RankStatus> statuses() override {
    if (m_rank != 0) return {};
    std::lock_guard<std::mutex> lock(m_shared->mutex);
    return m_shared->status;
  }
  int ranks_arrived() const override {
    if (m_rank != 0) return 0;
    std::lock_guard<std::mutex> lock(m_shared->mutex);
    const Phase now = m_shared->status.front().last_phase;
    return static_cast<int>(std::count_if(m_shared->status.begin(), m_shared->status.end(),
                                          [&](const RankStatus& s) { return s.heard && s.last_phase >= now; }));
  }

  std::optional<std::string> broadcast(const std::string& data, TimePoint deadline) override {
    delay();
    std::unique_lock<std::mutex> lock(m_shared->mutex);
    const int seq = m_broadcasts++;
    if (m_rank == 0) {
      m_shared->broadcasts[seq] = data;
      m_shared->changed.notify_all();
      return data;
    }
    if (!wait(lock, deadline, [&] { return m_shared->broadcasts.count(seq) != 0; })) return std::nullopt;
    return m_shared->broadcasts[seq];
  }

  std::optional<std::string> node_broadcast(const std::string& data, TimePoint deadline) override {
    delay();
    std::unique_lock<std::mutex> lock(m_shared->mutex);
    const std::pair<int, int> key{node(), m_node_broadcasts++};
    if (m_rank % m_shared->per_node == 0) {
      m_shared->node_broadcasts[key] = data;
      m_shared->changed.notify_all();
      return data;
    }
    if (!wait(lock, deadline, [&] { return m_shared->node_broadcasts.count(key) != 0; })) return std::nullopt;
    return m_shared->node_broadcasts[key];
  }

  bool send_payload(const std::string& bytes, TimePoint) override {
    delay();
    std::lock_guard<std::mutex> lock(m_shared->mutex);
    if (m_shared->dead(0)) {
      m_error = "rank 0's process ended";
      return false;
    }
    m_shared->payloads[m_rank] = bytes;
    m_shared->changed.notify_all();
    return true;
  }

  void collect_payloads(TimePoint deadline, std::size_t max_bytes,
                        const std::function<void(int, std::string, std::size_t)>& arrived) override {
    std::vector<bool> taken(static_cast<std::size_t>(m_shared->n), false);
    taken[0] = true;
    for (;;) {
      std::vector<std::pair<int, std::string>> fresh;
      {
        std::unique_lock<std::mutex> lock(m_shared->mutex);
        const auto waiting = [&] {
          for (const auto& [r, bytes] : m_shared->payloads) {
            if (!taken[static_cast<std::size_t>(r)]) return true;
          }
          return false;
        };
        if (std::all_of(taken.begin(), taken.end(), [](bool t) { return t; })) return;
        if (!wait(lock, deadline, waiting)) return;
        for (const auto& [r, bytes] : m_shared->payloads) {
          if (taken[static_cast<std::size_t>(r)]) continue;
          taken[static_cast<std::size_t>(r)] = true;
          fresh.emplace_back(r, bytes);
        }
      }
      for (auto& [r, bytes] : fresh) {
        const std::size_t size = bytes.size();
        arrived(r, size > max_bytes ? std::string() : std::move(bytes), size);
      }
    }
  }

  bool barrier(TimePoint deadline) override {
    delay();
    std::unique_lock<std::mutex> lock(m_shared->mutex);
    const int seq = m_barriers++;
    ++m_shared->barriers[seq];
    m_shared->changed.notify_all();
    return collective(lock, deadline, [&] { return m_shared->barriers[seq] == m_shared->n; });
  }

  bool allreduce_sum(std::vector<std::int64_t>& values, TimePoint deadline) override {
    delay();
    std::unique_lock<std::mutex> lock(m_shared->mutex);
    const auto& parts = deposit(m_shared->sums, m_sums, values);
    if (!collective(lock, deadline, everyone_in(parts))) return false;
    std::fill(values.begin(), values.end(), 0);
    for (const auto& [r, part] : parts) {
      for (std::size_t i = 0; i < values.size() && i < part.size(); ++i) values[i] += part[i];
    }
    return true;
  }

  std::optional<std::vector<std::string>> gather(const std::string& record, TimePoint deadline) override {
    delay();
    std::unique_lock<std::mutex> lock(m_shared->mutex);
    const auto& records = deposit(m_shared->gathers, m_gathers, record);
    if (m_rank != 0) return std::vector<std::string>{};
    if (!collective(lock, deadline, everyone_in(records))) return std::nullopt;
    std::vector<std::string> out;
    for (const auto& [r, rec] : records) out.push_back(rec);
    return out;
  }

  std::string last_error() const override { return m_error; }
  [[noreturn]] void abort(ExitCode code) override { throw FakeWorld::Aborted{code}; }
  void finalize() override {}

 private:
  std::size_t index() const { return static_cast<std::size_t>(m_rank); }
  int node() const { return m_rank / m_shared->per_node; }

  /// Under the world's lock: this rank's part of the collective numbered by `seq` (which moves on),
  /// told to the ranks waiting for it. Returns every part deposited so far (rank -> part).
  template <class Part>
  const std::map<int, Part>& deposit(std::map<int, std::map<int, Part>>& by_seq, int& seq, const Part& part) {
    auto& parts = by_seq[seq++];
    parts[m_rank] = part;
    m_shared->changed.notify_all();
    return parts;
  }
  /// Whether every rank has deposited its part.
  template <class Part>
  std::function<bool()> everyone_in(const std::map<int, Part>& parts) const {
    return [this, &parts] { return static_cast<int>(parts.size()) == m_shared->n; };
  }

  void delay() const {
    std::chrono::milliseconds d{0};
    {
      std::lock_guard<std::mutex> lock(m_shared->mutex);
      const FakeWorld::Rank& me = m_shared->ranks[index()];
      if (me.behaviour == Behaviour::Slow) d = me.delay;
    }
    if (d.count() > 0) std::this_thread::sleep_for(d);
  }

  template <class Pred>
  bool wait(std::unique_lock<std::mutex>& lock, TimePoint deadline, Pred done) {
    return m_shared->changed.wait_until(lock, deadline, done);
  }

  /// A wait every rank must take part in: fails at once, naming the rank, when one of them is dead.
  template <class Pred>
  bool collective(std::unique_lock<std::mutex>& lock, TimePoint deadline, Pred done) {
    if (const int dead = m_shared->first_dead(); dead >= 0) {
      m_error = "rank " + std::to_string(dead) + "'s process ended (its connection closed)";
      return false;
    }
    return wait(lock, deadline, done);
  }

  std::shared_ptr<FakeWorld::Shared> m_shared;
  int m_rank;
  int m_broadcasts = 0, m_node_broadcasts = 0, m_barriers = 0, m_sums = 0, m_gathers = 0;
  std::string m_error;
};

}  // namespace

FakeWorld::FakeWorld(int n, int per_node) : m_shared(std::make_shared<Shared>()) {
  m_shared->n = n;
  m_shared->per_node = per_node > 0 ? per_node : n;
  m_shared->ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    RankStatus s;
    s.rank = r;
    s.host = "node" + std::to_string(r / m_shared->per_node + 1);
    s.pid = 1000 + r;
    m_shared->status.push_back(s);
    m_transports.push_back(std::make_unique<FakeTransport>(m_shared, r));
  }
}

FakeWorld::~FakeWorld() = default;

FakeWorld& FakeWorld::set(int rank, Rank how) {
  std::lock_guard<std::mutex> lock(m_shared->mutex);
  m_shared->ranks.at(static_cast<std::size_t>(rank)) = how;
  RankStatus& s = m_shared->status.at(static_cast<std::size_t>(rank));
  s.lost = how.behaviour == Behaviour::Dead ? "ended" : "";
  return *this;
}

bool FakeWorld::takes_part(int rank) const {
  std::lock_guard<std::mutex> lock(m_shared->mutex);
  const Behaviour b = m_shared->ranks.at(static_cast<std::size_t>(rank)).behaviour;
  return b != Behaviour::Silent && b != Behaviour::Dead;
}

}  // namespace preflight::testing
