// SPDX-License-Identifier: MIT
#pragma once
// The waits of a poll loop that must not block (a deadline has to be kept) but must not keep a core
// busy either: the first polls come back at once (an event that completes within microseconds is
// not delayed), then each wait doubles up to a ceiling, and a wait never runs past the deadline.
// Pure: it says how long to wait; the caller sleeps.

#include <algorithm>
#include <chrono>

namespace preflight {

class Backoff {
 public:
  using Duration = std::chrono::microseconds;

  /// `eager` polls without a wait, then `first`, doubling to `ceiling`.
  constexpr Backoff(unsigned eager, Duration first, Duration ceiling) noexcept
      : m_eager(eager), m_first(first), m_ceiling(std::max(first, ceiling)) {}

  /// The wait before the next poll (zero for the eager ones), never longer than `left`, the time
  /// to the deadline (zero or less: no wait, the caller's deadline test ends the loop).
  [[nodiscard]] Duration next(Duration left = Duration::max()) noexcept {
    Duration wait{0};
    if (m_polls >= m_eager) {
      wait = m_current.count() == 0 ? m_first : std::min(m_current * 2, m_ceiling);
      m_current = wait;
    }
    ++m_polls;
    return std::max(Duration{0}, std::min(wait, left));
  }

  /// The wait that next() returns at most.
  [[nodiscard]] constexpr Duration ceiling() const noexcept { return m_ceiling; }
  [[nodiscard]] constexpr unsigned polls() const noexcept { return m_polls; }

 private:
  unsigned m_eager;
  Duration m_first;
  Duration m_ceiling;
  Duration m_current{0};
  unsigned m_polls = 0;
};

/// What preflight's GPU and launcher loops use: 64 eager polls, then 50 µs doubling to 2 ms. A
/// completion is seen at most 2 ms late, and a loop waiting seconds polls about 500 times a second.
[[nodiscard]] constexpr Backoff poll_backoff() noexcept {
  return Backoff(64, std::chrono::microseconds(50), std::chrono::milliseconds(2));
}

}  // namespace preflight
