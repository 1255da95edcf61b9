// SPDX-License-Identifier: MIT
// How each consumer of an environment variable really parses its value (NCCL, PyTorch, CUDA), and
// how NCCL reads its configuration files. Pure functions: the env.nccl check and the nccl_conf probe
// build on them, and the unit tests pin every rule to the consumer's source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts/nccl_conf.hpp"
#include "core/verdict.hpp"
#include "core/version.hpp"

namespace preflight {

/// What NCCL uses for an integer parameter: strtoll(value, nullptr, 0); an empty value or one that
/// sets errno (overflow) means NCCL's default, returned as nullopt. "true" -> 0, "010" -> 8,
/// "0x10" -> 16, "1abc" -> 1, " 1" -> 1 (src/misc/param.cc, ncclLoadParam).
std::optional<std::int64_t> nccl_int_value(std::string_view value);

/// A value nobody can misread as an integer: -?(0x[0-9a-fA-F]+|0|[1-9][0-9]*).
bool is_clean_int(std::string_view value);

/// The evident intent of a yes/no word (true/yes/on/y/t, false/no/off/n/f; any case), else nullopt.
std::optional<bool> boolean_word_intent(std::string_view value);

/// PyTorch's getCvarBool: y/yes/1/t/true and n/no/0/f/false, case-insensitive, nothing trimmed;
/// nullopt where torch raises (TORCH_CHECK) at ProcessGroupNCCL construction.
std::optional<bool> torch_bool_value(std::string_view value);

/// PyTorch's getCvarInt (std::stoi): leading white space skipped, sign, decimal digits, the rest
/// ignored; nullopt where stoi throws (no digits, out of int range) and torch raises.
std::optional<int> torch_int_value(std::string_view value);

/// One variable's value grammar, from the catalog's type column:
///   int[:MIN..MAX]        NCCL integer (strtoll); outside the range is WARN
///   torch_bool            PyTorch boolean
///   torch_int[:MIN..MAX]  PyTorch integer; outside the range is FAIL
///   enum:A|B / ienum:A|B  one of the names (ienum: any case); all-digit choices are legacy
///   list:A|B              comma list of names (any case), optional leading '^'
///   select:A|B            NCCL_ALGO / NCCL_PROTO: NCCL's parseList, whose grammar is the loaded
///                         release's (read_nccl_selection)
///   string / path         free text (path: no '~' expansion)
///   int:MIN..MAX/STEP     also a multiple of STEP (NCCL's thread counts)
///   hostport              <host>:<port> or [<ipv6>]:<port> (NCCL_COMM_ID); anything else FAILs
struct Grammar {
  enum class Kind { Int, TorchBool, TorchInt, Enum, List, Select, String, Path, HostPort };
  /// What a number stands for (the catalog's rule unit=…): lets a value written with a unit
  /// ("8M", "10m") be turned into the integer its writer meant.
  enum class Unit { None, Bytes, Seconds, Milliseconds };
  Kind kind = Kind::String;
  bool any_case = false;
  std::vector<std::string> choices;
  std::optional<std::int64_t> min, max, step;
  bool invalid_raises = false;  // the consumer throws on a value it cannot parse (PyTorch)
  std::string reader = "NCCL";  // who parses it, for messages: "NCCL", "torch", "CUDA", "Gloo"
  Unit unit = Unit::None;
};
std::optional<Grammar> parse_grammar(std::string_view type, bool invalid_raises);

/// The integer a person meant by a value written with a unit or a suffix the readers do not parse:
/// bytes "8M"/"8MiB"/"8 MB" -> 8388608 (binary multiples, as NCCL's sizes are powers of two),
/// seconds "10m" -> 600, "2h" -> 7200, "30s" -> 30, milliseconds "5s" -> 5000; a plain integer
/// with white space around it is itself. nullopt where no unit of `unit` is evident ("three").
std::optional<std::int64_t> intended_integer(std::string_view value, Grammar::Unit unit);

/// A value as its consumer will read it.
struct ValueReading {
  Status status = Status::Pass;
  std::string reads_as;   // what the consumer uses, for people: "0", "true", "INFO", "default"
  std::string canonical;  // for rule comparisons: decimal integer, "1"/"0", the matched choice
  std::string problem;    // why it is not PASS: "NCCL reads 'true' as 0 (strtoll)"
  std::string fix;        // the value to write instead, where one is evident ("1" for "true")
};
ValueReading read_value(const Grammar& grammar, std::string_view value);
/// The same, with the NCCL release the job loads (Select grammars follow it).
ValueReading read_value(const Grammar& grammar, std::string_view value, const std::optional<Version>& nccl);

/// NCCL's collectives, the prefixes of NCCL_ALGO and NCCL_PROTO's per-collective entries (src/init.cc
/// ncclFuncStr, the same from 2.24.3-1 to 2.29).
inline constexpr std::string_view kNcclFunctions[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
/// The first NCCL release whose parseList (src/graph/tuning.cc) takes "func:list;func:list" and
/// refuses what it does not know: 2.24.3-1. Before it the value is one comma list whose unknown
/// names are skipped.
inline constexpr std::string_view kNcclStrictSelectionSince = "2.24.3";
/// NCCL_ALGO / NCCL_PROTO as the given NCCL release's parseList reads them:
///   from 2.24.3: ';'-separated entries, each "[func:][^]name,name"; only the first may lack its
///     func; an unknown func or name, or a later entry without func, is ncclInvalidUsage and every
///     communicator init fails: FAIL.
///   before: the whole value one "[^]name,name" list; unknown names are skipped (WARN), and a list
///     without '^' that names nothing known enables nothing: every collective fails with "no
///     algorithm/protocol available" (FAIL).
/// Either way a collective left with nothing enabled FAILs. `nccl` unknown: the newest rule, and the
/// problem says it was assumed.
ValueReading read_nccl_selection(const Grammar& grammar, std::string_view value, const std::optional<Version>& nccl);

/// One NCCL configuration file, read the way NCCL's setEnvFile does: a line starting with '#' is a
/// comment; the trailing '\n' is removed (a '\r' stays); the name is everything before the first '=',
/// the value everything after it, both cut at 1023 bytes and at a NUL byte; nothing is trimmed, so
/// "NAME = v" sets "NAME " to " v". Lines without '=' are skipped (malformed_lines, unless blank or
/// a comment after white space).
/// NCCL >= 2.30 also removes a '\r' before the '\n' (strip_cr).
ConfFileContents parse_nccl_conf(std::string_view text, bool strip_cr = false);

/// A name the C library's setenv() accepts and a program can read back: [A-Za-z_][A-Za-z0-9_]*.
bool is_env_name(std::string_view name);

/// The home directory /etc/passwd gives uid (NCCL uses getpwuid(getuid())->pw_dir), or nullopt.
std::optional<std::string> passwd_home(std::string_view passwd, unsigned uid);
/// The one line of /etc/passwd that passwd_home() reads for uid, with its newline ("" when there is
/// none): what a capture keeps of the file, so that it holds no other account.
std::string passwd_entry(std::string_view passwd, unsigned uid);

}  // namespace preflight
