// SPDX-License-Identifier: MIT
// The progress line on a terminal: for any phase that lasts longer than a second, rank 0 shows on
// stderr which phase it is in, what it is doing there (the probe that runs) and how many ranks
// have reported, redrawn in place a few times a second and cleared before the report prints.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/env.hpp"
#include "core/options.hpp"
#include "job/job_run.hpp"

namespace preflight {

/// Whether the progress line is shown: --progress always|never, else (auto) when stderr is a
/// terminal and TERM is not "dumb".
bool progress_wanted(const Options& options, const EnvSnapshot& env);

/// Whether the text for a person may use UTF-8: the locale the environment names says so, or names
/// none (core/text.hpp utf8_locale). LC_ALL=C: the report and this line are ASCII (ascii_only).
bool utf8_terminal(const EnvSnapshot& env);

/// The text of the line: "preflight: gather · 12/16 ranks reported · 3.4 s". `world` 1 leaves the
/// count out; `detail` (the probe that runs) follows the phase when there is one; `unit` names
/// what is counted.
std::string progress_text(const std::string& phase, const std::string& detail, int arrived, int world, double seconds,
                          const std::string& unit = "ranks reported");

class ProgressLine final : public JobProgress {
 public:
  /// `arrived`: ranks that reached the current phase, read from the drawing thread (it must be
  /// safe there). Disabled, it draws nothing and starts no thread.
  /// `utf8` false: the line is drawn in ASCII.
  ProgressLine(bool enabled, int world, std::function<int()> arrived, int fd = 2, std::string unit = "ranks reported",
               bool utf8 = true);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void phase(const std::string& name) override;
  void detail(const std::string& what) override;
  /// Stops drawing and clears the line (before the report or any message is printed).
  void stop() override;

 private:
  void loop();

  const bool m_enabled;
  const int m_world;
  const std::function<int()> m_arrived;
  const int m_fd;
  const std::string m_unit;
  const bool m_utf8;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::string m_phase;
  std::string m_detail;
  std::chrono::steady_clock::time_point m_since = std::chrono::steady_clock::now();
  bool m_stopped = false;
  bool m_drawn = false;
  std::thread m_thread;
};

}  // namespace preflight
