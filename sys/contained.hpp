// SPDX-License-Identifier: MIT
// Contained work: run a helper executable in its own process (and process group), feed it stdin,
// collect stdout/stderr, enforce a deadline with SIGKILL. Everything that initialises the NVIDIA
// driver runs this way (CUDA is not fork-safe, a driver can crash or hang): the helper is started
// with posix_spawn, never fork, and preflight itself never crashes or hangs because of it.
//
// run_contained() never throws on child misbehaviour (crash, hang, garbage, floods, a missing
// executable); every such case is an outcome with a one-line describe() for verdicts.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/probed.hpp"

namespace preflight {

struct ContainedRequest {
  std::string executable;         ///< path of the helper (not searched on PATH)
  std::vector<std::string> args;  ///< arguments after argv[0]; argv[0] is `executable`
  /// "NAME=value" entries added to / overriding the current environment; a bare "NAME" removes it.
  std::vector<std::string> extra_env;
  std::string stdin_data;  ///< written to the helper's stdin, which is then closed
  std::chrono::milliseconds deadline{std::chrono::seconds(5)};
  std::size_t max_output = std::size_t{1} << 20;  ///< stdout beyond this kills the helper; stderr is cut here
  /// After SIGKILL, how long to wait for the kernel to reap the helper (a process stuck in the
  /// driver can be unkillable for a while); preflight gives up rather than hang.
  std::chrono::milliseconds kill_grace{std::chrono::seconds(2)};
  /// A descriptor the caller makes readable (a byte on a pipe) to stop the helper before its
  /// deadline, when its work has become pointless (a peer it waits for failed): its process group
  /// is killed and the outcome is Cancelled. -1: none. Not owned.
  int cancel_fd = -1;
};

enum class ContainedOutcome {
  Exited,          ///< the helper exited by itself (see exit_code)
  Signaled,        ///< the helper died from a signal (see signal)
  TimedOut,        ///< the deadline passed; the helper's process group was killed
  SpawnFailed,     ///< the helper could not be started (see spawn_errno)
  OutputTooLarge,  ///< stdout exceeded max_output; the helper's process group was killed
  Cancelled,       ///< the caller's cancel_fd became readable; the helper's process group was killed
};

const char* to_string(ContainedOutcome outcome);

/// A helper's output as JSON Lines: `on_event(event, doc)` for every line that is a JSON object
/// with a string "event". A line that is not, one the handler rejects (returns false), or one whose
/// handler throws nlohmann::json::exception counts as bad.
struct EventLines {
  std::size_t lines = 0;  // non-empty lines
  std::size_t bad = 0;
};
EventLines for_each_event(std::string_view out,
                          const std::function<bool(const std::string& event, const nlohmann::json& doc)>& on_event);

struct ContainedResult {
  ContainedOutcome outcome = ContainedOutcome::SpawnFailed;
  int exit_code = -1;       ///< Exited: the status
  int signal = 0;           ///< Signaled: the signal number
  std::string signal_name;  ///< Signaled: "SIGSEGV"
  int spawn_errno = 0;      ///< SpawnFailed: the error
  double elapsed_s = 0.0;   ///< from spawn to exit (or to the kill)
  double deadline_s = 0.0;  ///< the request's deadline, for messages
  std::size_t max_output = 0;
  std::string out;  ///< stdout, at most max_output bytes
  std::string err;  ///< stderr, at most max_output bytes
  bool err_truncated = false;
  bool reaped = true;  ///< false only if the helper survived SIGKILL for kill_grace
  long pid = -1;       ///< the helper's pid (already reaped), -1 if it never started

  /// Exited with status 0.
  bool clean() const { return outcome == ContainedOutcome::Exited && exit_code == 0; }

  /// One line for verdicts: "crashed with SIGSEGV after 0.2 s", "did not finish within 5.0 s
  /// (killed)", "exited with status 3", "could not start: No such file or directory".
  std::string describe() const;

  /// The last non-empty line of stderr, printable, or "" (for "exited with status 3: <why>").
  std::string stderr_tail(std::size_t max_len = 160) const;

  /// The failure as a probe error: Timeout, Crashed, NotFound/PermissionDenied/Unreadable for a
  /// spawn failure, ApiError for a non-zero exit, ParseError for a flood. Only for !clean().
  ProbeError to_probe_error() const;
};

ContainedResult run_contained(const ContainedRequest& request);

/// "SIGSEGV", "SIGKILL", ... or "signal 42".
std::string signal_name(int signal);

/// Where the helper executable `name` lives: $PREFLIGHT_HELPER_DIR/name if that variable is set
/// (even if the file is missing there, so the failure names it); else next to the running binary;
/// else <binary dir>/../libexec/preflight/name. If neither exists, the path next to the binary is
/// returned (run_contained then reports "could not start: No such file or directory").
std::string helper_path(std::string_view name);

/// The same search with explicit inputs (for tests): `exe_path` is the running binary,
/// `override_dir` the value of PREFLIGHT_HELPER_DIR (empty: unset).
std::string helper_path(std::string_view name, std::string_view exe_path, std::string_view override_dir);

/// The helper protocol: one JSON document on stdout, exit status 0. Anything else is an error
/// string: describe() (plus the last stderr line) when the helper did not exit cleanly, "nothing on
/// the helper's pipe" when stdout is empty, "garbage on the helper's pipe: '<excerpt>' (...)" when
/// it is not exactly one JSON document (binary junk, truncated, trailing text).
struct ContainedJson {
  nlohmann::json value;  ///< valid when error is empty
  std::string error;
  bool ok() const { return error.empty(); }
};
ContainedJson parse_contained_json(const ContainedResult& result);

}  // namespace preflight
