// SPDX-License-Identifier: MIT
// The catalog of environment variables the job's libraries read (matrix/env_vars.tsv): for each,
// who reads it, its value grammar, and the lint rules that apply. The built-in copy is embedded in
// the binary; checks get it from builtin_env_catalog(), never from a file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/env_grammar.hpp"
#include "core/facts.hpp"

namespace preflight {

struct EnvVarSpec {
  std::string name;      // "NCCL_P2P_DISABLE"; a trailing '*' makes it a prefix ("NCCL_TESTS_*")
  std::string consumer;  // nccl, torch, gloo, cuda, build, container, nccl-tests
  std::string type;      // the grammar as written: "int:0..1"
  Grammar grammar;
  std::string default_value;         // "" when the library decides at run time
  std::vector<std::string> warn_if;  // canonical readings that are WARN (rule warn_if=A|B)
  std::vector<std::string> note_if;  // readings worth a note, never a WARN (rule note_if=A|B: NCCL_DEBUG=INFO)
  // The NCCL releases that read it (rule versions=A..B, either end open: "2.29..", "..2.4"): said
  // when the loaded library does not read the name. Empty: the catalog's own release (2.28.9).
  std::string versions;
  // The first PyTorch release that reads it (rule torch_from=2.2: the TORCH_NCCL_* names PyTorch
  // 2.2.0 renamed from NCCL_*, pytorch/pytorch#114077): an older torch reads only its legacy name.
  std::string torch_from;
  bool debug_only = false;  // rule debug_only: NCCL's docs say not to keep it set in production
  bool no_effect = false;   // rule no_effect: nothing reads it (removed, renamed or never existed)
  bool dcgm_bad = false;    // rule dcgm_bad: on DCGM diag's list of variables that must not be set
  std::string alias_of;     // rule alias_of=NAME: a legacy name of NAME
  // rule agree=fail|warn: every rank of a communicator must read the same value (fail: NCCL hangs or
  // refuses when they differ; warn: the ranks only behave differently). cluster.consistency compares it.
  enum class Agree { No, Fail, Warn } agree = Agree::No;
  std::string note;
  int line = 0;  // in the catalog file

  bool is_prefix() const { return !name.empty() && name.back() == '*'; }
  bool matches(std::string_view var) const;
};

class EnvCatalog {
 public:
  explicit EnvCatalog(std::vector<EnvVarSpec> vars) : m_vars(std::move(vars)) {}
  const std::vector<EnvVarSpec>& vars() const { return m_vars; }
  /// The row for a variable: an exact name first, then the longest matching prefix row.
  const EnvVarSpec* find(std::string_view name) const;
  /// The closest known exact names sharing `name`'s first word ("NCCL_"), at most max_distance
  /// edits away, closest first.
  std::vector<std::string> suggestions(std::string_view name, std::size_t max_distance) const;

 private:
  std::vector<EnvVarSpec> m_vars;
};

/// Parses the catalog text; nullopt with `error` naming the line on any malformed row, unknown
/// grammar or rule, or duplicate name.
std::optional<EnvCatalog> parse_env_catalog(std::string_view text, std::string& error);

/// The embedded matrix/env_vars.tsv, parsed once. Throws std::runtime_error if it is malformed
/// (a build defect: a unit test keeps it from shipping).
const EnvCatalog& builtin_env_catalog();

/// The value a rank's NCCL or torch reads for `name` and where it came from: the environment wins,
/// then NCCL's configuration files in NCCL's order (the first that sets it). nullopt: not set.
struct EffectiveValue {
  std::string value;
  std::string file;  // "" for the environment
  int line = 0;
};
std::optional<EffectiveValue> effective_value(const RankFacts& facts, std::string_view name);

}  // namespace preflight
