// SPDX-License-Identifier: MIT
#include "cli/progress.hpp"

#include <unistd.h>

#include "cli/output.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

constexpr auto kShowAfter = std::chrono::seconds(1);
constexpr auto kRedraw = std::chrono::milliseconds(200);

}  // namespace

bool progress_wanted(const Options& options, const EnvSnapshot& env) {
  if (options.progress == "always") return true;
  if (options.progress == "never") return false;
  return is_terminal(STDERR_FILENO, env);
}

bool utf8_terminal(const EnvSnapshot& env) {
  return utf8_locale(env.get("LC_ALL"), env.get("LC_CTYPE"), env.get("LANG"));
}

std::string progress_text(const std::string& phase, const std::string& detail, int arrived, int world, double seconds,
                          const std::string& unit) {
  std::string out = "preflight: " + phase;
  if (!detail.empty()) out += " (" + detail + ")";
  if (world > 1) out += " · " + std::to_string(arrived) + "/" + std::to_string(world) + " " + unit;
  return out + " · " + fixed(seconds, 1) + " s";
}

ProgressLine::ProgressLine(bool enabled, int world, std::function<int()> arrived, int fd, std::string unit, bool utf8)
    : m_enabled(enabled),
      m_world(world),
      m_arrived(std::move(arrived)),
      m_fd(fd),
      m_unit(std::move(unit)),
      m_utf8(utf8) {
  if (m_enabled) m_thread = std::thread([this] { loop(); });
}

ProgressLine::~ProgressLine() { stop(); }

void ProgressLine::phase(const std::string& name) {
  std::lock_guard lock(m_mutex);
  m_phase = name;
  m_detail.clear();
  m_since = std::chrono::steady_clock::now();
}

void ProgressLine::detail(const std::string& what) {
  std::lock_guard lock(m_mutex);
  m_detail = what;
}

void ProgressLine::stop() {
  {
    std::lock_guard lock(m_mutex);
    if (m_stopped) return;
    m_stopped = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) m_thread.join();
  if (m_drawn) (void)write_all(m_fd, "\r\033[K");  // a terminal that went away: the line is cosmetic
}

void ProgressLine::loop() {
  std::unique_lock lock(m_mutex);
  while (!m_cv.wait_for(lock, kRedraw, [this] { return m_stopped; })) {
    const auto now = std::chrono::steady_clock::now();
    if (m_phase.empty() || now - m_since < kShowAfter) continue;
    const std::string line = progress_text(m_phase, m_detail, m_arrived ? m_arrived() : 0, m_world,
                                           std::chrono::duration<double>(now - m_since).count(), m_unit);
    (void)write_all(m_fd, "\r\033[K" + (m_utf8 ? line : ascii_only(line)));
    m_drawn = true;
  }
}

}  // namespace preflight
