// SPDX-License-Identifier: MIT
// The exit codes of preflight (README.md#exit-codes): every process of a run, every command and the
// GPU helper's callers agree on these, and nothing else spells them as numbers.
#pragma once

namespace preflight {

enum class ExitCode : int {
  Ok = 0,        // no FAIL and no UNKNOWN (WARN allowed unless --strict)
  Fail = 1,      // at least one FAIL (with --strict, a WARN too)
  Usage = 2,     // usage or configuration error: nothing was checked (or a report path planted during the run)
  Unknown = 3,   // no FAIL, but at least one UNKNOWN
  Deadline = 4,  // a deadline expired (--timeout); the report still names what did not finish
  Internal = 5,  // an internal error, or the report could not be written
};

/// The process exit status of `code`.
constexpr int to_int(ExitCode code) noexcept { return static_cast<int>(code); }

}  // namespace preflight
