// SPDX-License-Identifier: MIT
#include "transport/liveness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "core/text.hpp"
#include "transport/reach.hpp"

namespace preflight {
namespace {

using Ms = std::chrono::milliseconds;

constexpr int kPingMs = 500;           // rank 0 writes a byte to every connection this often
constexpr int kConnectMs = 1000;       // a rank tries each of rank 0's addresses this long
constexpr std::size_t kMaxLine = 512;  // a hello or a parting line
constexpr int kBacklog = 4096;

std::string random_token() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 4; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
    out += buf;
  }
  return out;
}

bool is_bridge(const std::string& name) {
  return name.rfind("docker", 0) == 0 || name.rfind("virbr", 0) == 0 || name.rfind("br-", 0) == 0 ||
         name.rfind("veth", 0) == 0 || name.rfind("cni", 0) == 0;
}

/// A connection of rank 0's that may be written without blocking or raising SIGPIPE.
bool send_all(int fd, const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

/// What a connection's error says of the rank at its other end.
const char* loss_kind(int error) { return error == ETIMEDOUT || error == EHOSTUNREACH ? "unreachable" : "ended"; }

std::atomic<int> g_connection{-1};  // another rank's connection to rank 0, once made
std::atomic<int> g_reserved{-1};    // the low descriptor it takes (liveness_reserve_descriptor)
std::atomic<bool> g_connect_done{false};  // the connecting thread is done, connected or not
std::atomic<int> g_phase{-1};             // the phase this rank last entered (liveness_phase)
std::atomic<int> g_rank0{0};              // 0: nothing known, 1: rank 0 reported, 2: its connection ended
std::atomic<int> g_rank0_phase{-1};       // the phase rank 0 last said it entered
std::string g_phase_tail;  // " PID HOST\n" of this rank's phase lines, set before the connecting thread starts

/// "phase NAME PID HOST\n" for this rank's current phase; "" before the first phase.
std::string phase_line() {
  const int phase = g_phase.load();
  if (phase < 0 || phase >= kPhaseCount) return {};
  return std::string("phase ") + to_string(static_cast<Phase>(phase)) + g_phase_tail;
}

/// A host name as a phase line may carry it: letters, digits, '.', '-' and '_' only, 64 bytes at most.
bool plain_host(std::string_view host) {
  return !host.empty() && host.size() <= 64 && std::all_of(host.begin(), host.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '.' || ch == '-' || ch == '_';
  });
}

}  // namespace

void to_json(nlohmann::json& j, const LivenessOffer& o) {
  j = {{"addresses", o.addresses}, {"port", o.port}, {"token", o.token}, {"pid", o.pid}, {"host", o.host}};
}
void from_json(const nlohmann::json& j, LivenessOffer& o) {
  o.addresses = j.at("addresses").get<std::vector<std::string>>();
  o.port = j.at("port").get<int>();
  o.token = j.at("token").get<std::string>();
  o.pid = j.value("pid", 0);
  o.host = j.value("host", std::string());
}

std::vector<std::string> liveness_address_order(const std::vector<std::pair<std::string, std::string>>& interfaces,
                                                bool ipv6, std::size_t most) {
  // Rank: 0 an interface NCCL would consider, 1 a container or VM bridge, 2 loopback; IPv4 first.
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [name, address] : interfaces) {
    const bool v6 = address.find(':') != std::string::npos;
    if (v6 && !ipv6) continue;
    std::string lower = address;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (v6 && (lower.rfind("fe8", 0) == 0 || lower.rfind("fe9", 0) == 0 || lower.rfind("fea", 0) == 0 ||
               lower.rfind("feb", 0) == 0)) {
      continue;  // link-local: needs a scope
    }
    const bool loopback = name == "lo" || lower.rfind("127.", 0) == 0 || lower == "::1";
    const int rank = (loopback ? 4 : is_bridge(name) ? 2 : 0) + (v6 ? 1 : 0);
    ranked.emplace_back(rank, address);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [rank, address] : ranked) {
    if (out.size() >= most) break;
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(address);
  }
  return out;
}

// ---- rank 0 ---------------------------------------------------------------------------------------

LivenessWatch::~LivenessWatch() { close(); }

bool LivenessWatch::open(int world, std::chrono::milliseconds unacked, std::string& error) {
  close();
  m_world = world;
  m_unacked_ms = static_cast<int>(unacked.count());
  // One descriptor per rank: lift the soft limit to the hard one (1024 is a common soft limit).
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  bool ipv6 = true;
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    const int zero = 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 any{};
    any.sin6_family = AF_INET6;
    any.sin6_addr = in6addr_any;
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&any), sizeof any) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {  // no IPv6 here
    ipv6 = false;
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&any), sizeof any) != 0) {
      error = std::string("bind: ") + std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return false;
    }
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::listen(fd, kBacklog) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0 ||
      ::pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    error = std::string("listen: ") + std::strerror(errno);
    ::close(fd);
    m_wake[0] = m_wake[1] = -1;
    return false;
  }
  m_fd = fd;
  m_offer.port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                             : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  m_offer.token = random_token();
  m_offer.pid = static_cast<int>(::getpid());
  if (char name[256] = {}; ::gethostname(name, sizeof name - 1) == 0) m_offer.host = name;
  std::vector<std::pair<std::string, std::string>> interfaces;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_RUNNING) == 0) continue;
      char text[INET6_ADDRSTRLEN] = {};
      if (i->ifa_addr->sa_family == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, text, sizeof text);
      } else {
        continue;
      }
      interfaces.emplace_back(i->ifa_name, text);
    }
    ::freeifaddrs(list);
  }
  m_offer.addresses = liveness_address_order(interfaces, ipv6);
  if (m_offer.addresses.empty()) {
    error = "no interface with an address is up";
    close();
    return false;
  }
  m_thread = std::thread([this] { loop(); });
  return true;
}

std::vector<LivenessLoss> LivenessWatch::losses() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_losses;
}

int LivenessWatch::watched() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_watched;
}

// lost() and take_lines(): the watching thread, with m_mutex held.
void LivenessWatch::lost(Conn& c, const std::string& kind) {
  if (c.rank > 0) {
    m_losses.push_back(LivenessLoss{c.rank, kind, Clock::now(), c.parting});
    note_rank_lost();
  }
  ::close(c.fd);
  c.fd = -1;
}

void LivenessWatch::take_lines(Conn& c) {
  for (std::size_t nl; (nl = c.buffer.find('\n')) != std::string::npos;) {
    const std::string line = c.buffer.substr(0, nl);
    c.buffer.erase(0, nl + 1);
    if (c.rank < 0) {
      const std::vector<std::string_view> words = split(line, ' ');
      const std::optional<std::int64_t> rank = words.size() == 3 ? parse_int(words[2]) : std::nullopt;
      if (words.size() != 3 || words[0] != "hello" || words[1] != m_offer.token || !rank || *rank < 1 ||
          *rank >= m_world) {
        ::close(c.fd);  // not one of this job's ranks
        c.fd = -1;
        return;
      }
      c.rank = static_cast<int>(*rank);
      ++m_watched;
      if (m_phase_digit != 0) (void)send_all(c.fd, std::string(1, m_phase_digit));  // rank 0's phase so far
    } else if (line.rfind("bye ", 0) == 0) {
      c.parting = line.substr(4);
    } else if (line.rfind("phase ", 0) == 0) {
      take_phase(c.rank, line);
    }
  }
  if (c.buffer.size() > kMaxLine) {  // no line: not ours
    if (c.rank < 0) {
      ::close(c.fd);
      c.fd = -1;
    } else {
      c.buffer.clear();
    }
  }
}

void LivenessWatch::take_phase(int rank, const std::string& line) {
  const std::vector<std::string_view> words = split(line, ' ');
  if (words.size() != 4) return;
  const std::optional<Phase> phase = phase_from_string(words[1]);
  const std::optional<std::int64_t> pid = parse_int(words[2]);
  if (!phase || !pid || *pid <= 0 || *pid > std::numeric_limits<int>::max() || !plain_host(words[3])) return;
  auto it = std::find_if(m_heard.begin(), m_heard.end(), [rank](const LivenessHeard& h) { return h.rank == rank; });
  if (it == m_heard.end()) it = m_heard.insert(m_heard.end(), LivenessHeard{rank, *phase, 0, {}, {}});
  it->phase = std::max(it->phase, *phase);
  it->pid = static_cast<int>(*pid);
  it->host = std::string(words[3]);
  it->at = Clock::now();
}

std::vector<LivenessHeard> LivenessWatch::heard() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_heard;
}

void LivenessWatch::loop() {
  auto next_ping = Clock::now() + Ms(kPingMs);
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({m_wake[0], POLLIN, 0});
    fds.push_back({m_fd, POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      for (const Conn& c : m_conns) fds.push_back({c.fd, POLLIN, 0});
    }
    const int wait_ms =
        static_cast<int>(std::max<long long>(0, std::chrono::duration_cast<Ms>(next_ping - Clock::now()).count()));
    const int rc = ::poll(fds.data(), fds.size(), wait_ms);
    if (rc < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    std::lock_guard<std::mutex> lock(m_mutex);
    // The connections polled are m_conns[0 .. fds.size() - 2): accepted ones are appended after.
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Conn& c = m_conns[i - 2];
      char buf[1024];
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        c.buffer.append(buf, static_cast<std::size_t>(n));
        take_lines(c);
      } else if (n == 0) {
        lost(c, "ended");
      } else if (errno != EAGAIN && errno != EINTR) {
        lost(c, loss_kind(errno));
      }
    }
    if (rc > 0 && (fds[1].revents & POLLIN) != 0) {
      for (int k = 0; k < kBacklog; ++k) {
        const int c = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0) break;  // EAGAIN, or out of descriptors: those ranks are not watched
        const int one = 1;
        ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::setsockopt(c, IPPROTO_TCP, TCP_USER_TIMEOUT, &m_unacked_ms, sizeof m_unacked_ms);
        m_conns.push_back(Conn{c, -1, {}, {}});
      }
    }
    if (Clock::now() >= next_ping) {
      for (Conn& c : m_conns) {
        if (c.fd < 0 || c.rank < 0) continue;
        if (!send_all(c.fd, ".") && errno != EAGAIN) {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
          lost(c, loss_kind(err != 0 ? err : errno));
        }
      }
      next_ping = Clock::now() + Ms(kPingMs);
    }
    drop_closed();
  }
}

void LivenessWatch::drop_closed() {
  m_conns.erase(std::remove_if(m_conns.begin(), m_conns.end(), [](const Conn& c) { return c.fd < 0; }), m_conns.end());
}

bool LivenessWatch::quiet() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  std::vector<pollfd> fds;
  std::vector<const Conn*> conns;
  for (const Conn& c : m_conns) {
    if (c.fd >= 0 && c.rank >= 0) {
      fds.push_back({c.fd, POLLIN, 0});
      conns.push_back(&c);
    }
  }
  if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return true;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    if ((fds[i].revents & (POLLERR | POLLHUP)) != 0) return false;
    // Phase lines are news, not an ending: only the connection's end or a parting line is.
    char buf[1024];
    const ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
    if (n < 0) continue;
    const std::string pending = conns[i]->buffer + std::string(buf, static_cast<std::size_t>(n));
    if (pending.rfind("bye ", 0) == 0 || pending.find("\nbye ") != std::string::npos) return false;
  }
  return true;
}

void LivenessWatch::tell_watched(char byte) {
  std::lock_guard<std::mutex> lock(m_mutex);
  for (const Conn& c : m_conns) {
    if (c.fd >= 0 && c.rank >= 0) (void)send_all(c.fd, std::string(1, byte));
  }
}

void LivenessWatch::phase(Phase phase) {
  const char digit = static_cast<char>('0' + static_cast<int>(phase));
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_phase_digit = digit;
  }
  tell_watched(digit);
}

void LivenessWatch::reported() { tell_watched('R'); }  // pings are '.', phases digits

void LivenessWatch::close() {
  reported();
  if (m_thread.joinable()) {
    const char byte = 1;
    while (::write(m_wake[1], &byte, 1) < 0 && errno == EINTR) {}
    m_thread.join();
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  for (Conn& c : m_conns) {
    if (c.fd >= 0) ::close(c.fd);
  }
  m_conns.clear();
  for (int* fd : {&m_fd, &m_wake[0], &m_wake[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

// ---- the other ranks ------------------------------------------------------------------------------

void liveness_reserve_descriptor() {
  if (g_reserved.load() >= 0) return;
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) g_reserved.store(fd);
}

void liveness_connect(const LivenessOffer& offer, int rank, const std::string& host) {
  g_phase_tail = " " + std::to_string(::getpid()) + " " + (plain_host(host) ? host : std::string("?")) + "\n";
  g_connect_done.store(false);
  std::thread([offer, rank] {
    struct Done {
      ~Done() { g_connect_done.store(true); }
    } done;
    for (const std::string& address : offer.addresses) {
      int error = 0;
      std::string why;
      const int fd = connect_within(address, offer.port, Ms(kConnectMs), error, why);
      if (fd < 0) continue;
      if (!send_all(fd, "hello " + offer.token + " " + std::to_string(rank) + "\n")) {
        ::close(fd);
        continue;
      }
      int held = fd;
      if (const int low = g_reserved.exchange(-1); low >= 0) {
        // onto the low descriptor kept for it, so that it closes first when the process ends
        if (::dup3(fd, low, O_CLOEXEC) == low) {
          ::close(fd);
          held = low;
        } else {
          ::close(low);
        }
      }
      g_connection.store(held);  // held until the process ends: its end is the message
      // The phase entered while this thread connected (liveness_phase found no connection yet).
      if (const std::string line = phase_line(); !line.empty()) send_all(held, line);
      return;
    }
  }).detach();
}

void liveness_wait_connected(TimePoint until) {
  while (g_connection.load() < 0 && !g_connect_done.load() && Clock::now() < until) {
    std::this_thread::sleep_for(Ms(1));
  }
}

void liveness_phase(Phase phase) {
  g_phase.store(static_cast<int>(phase));
  const int fd = g_connection.load();
  if (fd < 0) return;  // the connecting thread sends it after its hello
  if (const std::string line = phase_line(); !line.empty()) send_all(fd, line);
}

void liveness_say(const std::string& parting) {
  const int fd = g_connection.load();
  if (fd < 0) return;
  std::string line = parting.substr(0, kMaxLine - 8);
  std::replace(line.begin(), line.end(), '\n', ' ');
  send_all(fd, "bye " + line + "\n");
}

Rank0State liveness_rank0_state() {
  const int fd = g_connection.load();
  if (fd < 0) return Rank0State::Unknown;
  if (g_rank0.load() == 0) {
    const int saved = errno;
    char buf[256];
    for (int round = 0; round < 64; ++round) {  // rank 0's pings ('.') are read and dropped
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        bool reported = false;
        for (ssize_t i = 0; i < n; ++i) {
          if (buf[i] == 'R') reported = true;
          if (buf[i] >= '0' && buf[i] < '0' + kPhaseCount) g_rank0_phase.store(buf[i] - '0');
        }
        if (reported) {
          g_rank0.store(1);
          break;
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) g_rank0.store(2);
      break;
    }
    errno = saved;
  }
  switch (g_rank0.load()) {
    case 1: return Rank0State::Reported;
    case 2: return Rank0State::Gone;
    default: return Rank0State::Alive;
  }
}

std::optional<Phase> liveness_rank0_phase() {
  const int phase = g_rank0_phase.load();
  if (phase < 0) return std::nullopt;
  return static_cast<Phase>(phase);
}

bool liveness_rank0_gone_within(int ms) {
  for (int waited = 0;; waited += 5) {
    const Rank0State state = liveness_rank0_state();
    if (state != Rank0State::Alive) return state == Rank0State::Gone;
    if (waited >= ms) return false;
    const timespec pause{0, 5 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
}

}  // namespace preflight
