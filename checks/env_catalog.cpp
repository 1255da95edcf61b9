// SPDX-License-Identifier: MIT
#include "checks/env_catalog.hpp"

#include "core/version.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "core/text.hpp"
#include "matrix/embedded.hpp"

namespace preflight {
namespace {

constexpr std::string_view kHeader = "name\tconsumer\ttype\tdefault\trule\tnote";
constexpr std::size_t kColumns = 6;

std::string dash_empty(std::string_view field) { return field == "-" ? std::string() : std::string(field); }

// Applies one rule tag; false if the tag is unknown.
bool apply_rule(std::string_view rule, EnvVarSpec& spec) {
  if (rule == "-") return true;
  if (rule == "debug_only") return spec.debug_only = true;
  if (rule == "no_effect") return spec.no_effect = true;
  if (rule == "dcgm_bad") return spec.dcgm_bad = true;
  if (rule.starts_with("alias_of=")) {
    spec.alias_of = std::string(rule.substr(9));
    return is_env_name(spec.alias_of);
  }
  if (rule.starts_with("note_if=")) {
    for (std::string_view v : split(rule.substr(8), '|')) spec.note_if.emplace_back(v);
    return true;
  }
  if (rule.starts_with("versions=")) {
    spec.versions = std::string(rule.substr(9));
    return spec.versions.find("..") != std::string::npos && spec.versions != "..";
  }
  if (rule.starts_with("torch_from=")) {
    spec.torch_from = std::string(rule.substr(11));
    return Version::parse(spec.torch_from).has_value();
  }
  if (rule.starts_with("unit=")) {
    const std::string_view unit = rule.substr(5);
    spec.grammar.unit = unit == "bytes"     ? Grammar::Unit::Bytes
                        : unit == "seconds" ? Grammar::Unit::Seconds
                        : unit == "ms"      ? Grammar::Unit::Milliseconds
                                            : Grammar::Unit::None;
    return spec.grammar.unit != Grammar::Unit::None;
  }
  if (rule == "agree=fail" || rule == "agree=warn") {
    spec.agree = rule == "agree=fail" ? EnvVarSpec::Agree::Fail : EnvVarSpec::Agree::Warn;
    return !spec.is_prefix();
  }
  if (rule.starts_with("warn_if=")) {
    for (std::string_view v : split(rule.substr(8), '|')) spec.warn_if.emplace_back(v);
    return true;
  }
  return false;
}

std::optional<EnvVarSpec> parse_row(std::string_view line, int number, std::string& error) {
  const std::vector<std::string_view> f = split(line, '\t');
  const auto fail = [&](const std::string& what) {
    error = "line " + std::to_string(number) + ": " + what;
    return std::nullopt;
  };
  if (f.size() != kColumns)
    return fail("expected " + std::to_string(kColumns) + " tab-separated columns, got " + std::to_string(f.size()));
  EnvVarSpec spec;
  spec.name = std::string(f[0]);
  spec.consumer = std::string(f[1]);
  spec.type = std::string(f[2]);
  spec.default_value = dash_empty(f[3]);
  spec.note = dash_empty(f[5]);
  spec.line = number;
  const std::string_view bare = spec.is_prefix() ? f[0].substr(0, f[0].size() - 1) : f[0];
  if (!is_env_name(bare)) return fail("'" + printable(f[0]) + "' is not a variable name");
  if (spec.consumer.empty()) return fail("empty consumer");
  const std::optional<Grammar> grammar = parse_grammar(spec.type, spec.consumer == "torch");
  if (!grammar) return fail("unknown type '" + printable(spec.type) + "'");
  spec.grammar = *grammar;
  spec.grammar.reader = spec.consumer == "nccl"    ? "NCCL"
                        : spec.consumer == "torch" ? "torch"
                        : spec.consumer == "cuda"  ? "CUDA"
                        : spec.consumer == "gloo"  ? "Gloo"
                                                   : spec.consumer;
  for (std::string_view rule : split(f[4], ',')) {
    if (!apply_rule(rule, spec)) return fail("unknown rule '" + printable(rule) + "'");
  }
  return spec;
}

}  // namespace

bool EnvVarSpec::matches(std::string_view var) const {
  return is_prefix() ? var.starts_with(std::string_view(name).substr(0, name.size() - 1)) : var == name;
}

const EnvVarSpec* EnvCatalog::find(std::string_view name) const {
  const EnvVarSpec* best = nullptr;
  for (const EnvVarSpec& spec : m_vars) {
    if (!spec.matches(name)) continue;
    if (!spec.is_prefix()) return &spec;
    if (best == nullptr || spec.name.size() > best->name.size()) best = &spec;
  }
  return best;
}

std::vector<std::string> EnvCatalog::suggestions(std::string_view name, std::size_t max_distance) const {
  const std::string_view family = name.substr(0, name.find('_') + 1);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const EnvVarSpec& spec : m_vars) {
    if (spec.is_prefix() || spec.no_effect || !spec.name.starts_with(family)) continue;
    // The distance is at least the difference in length: a long name (an environment variable's
    // name may be kilobytes) is not compared letter by letter with every name of its family.
    const std::size_t gap =
        name.size() > spec.name.size() ? name.size() - spec.name.size() : spec.name.size() - name.size();
    if (gap > max_distance) continue;
    const std::size_t d = edit_distance(name, spec.name);
    if (d <= max_distance) scored.emplace_back(d, spec.name);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (auto& [d, n] : scored) out.push_back(std::move(n));
  return out;
}

std::optional<EnvCatalog> parse_env_catalog(std::string_view text, std::string& error) {
  std::vector<EnvVarSpec> vars;
  std::set<std::string, std::less<>> seen;
  bool header_seen = false;
  int number = 0;
  for (std::string_view line : split(text, '\n')) {
    ++number;
    if (line.empty() || line.front() == '#') continue;
    if (!header_seen) {
      if (line != kHeader) {
        error = "line " + std::to_string(number) + ": expected the header '" + std::string(kHeader) + "'";
        return std::nullopt;
      }
      header_seen = true;
      continue;
    }
    std::optional<EnvVarSpec> spec = parse_row(line, number, error);
    if (!spec) return std::nullopt;
    if (!seen.insert(spec->name).second) {
      error = "line " + std::to_string(number) + ": duplicate name " + spec->name;
      return std::nullopt;
    }
    vars.push_back(std::move(*spec));
  }
  if (vars.empty()) {
    error = "no variables";
    return std::nullopt;
  }
  for (const EnvVarSpec& spec : vars) {
    if (!spec.alias_of.empty() && seen.find(spec.alias_of) == seen.end()) {
      error = "line " + std::to_string(spec.line) + ": alias_of names unknown variable " + spec.alias_of;
      return std::nullopt;
    }
  }
  return EnvCatalog(std::move(vars));
}

const EnvCatalog& builtin_env_catalog() {
  static const EnvCatalog catalog = [] {
    std::string error;
    std::optional<EnvCatalog> parsed = parse_env_catalog(embedded_matrix_file("env_vars.tsv"), error);
    if (!parsed) throw std::runtime_error("built-in matrix/env_vars.tsv is malformed: " + error);
    return std::move(*parsed);
  }();
  return catalog;
}

std::optional<EffectiveValue> effective_value(const RankFacts& facts, std::string_view name) {
  if (const std::optional<std::string> v = facts.env.get(name)) return EffectiveValue{*v, {}, 0};
  if (const std::optional<ConfSetting> s = first_conf_setting(facts.nccl_conf, name))
    return EffectiveValue{s->entry->value, s->file->path, s->entry->line};
  return std::nullopt;
}

}  // namespace preflight
