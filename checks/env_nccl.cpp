// SPDX-License-Identifier: MIT
// env.nccl: the NCCL / PyTorch / Gloo / CUDA variables of this rank, read with the grammar each
// consumer really uses, including the values NCCL takes from its configuration files.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "checks/check.hpp"
#include "checks/env_catalog.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

using nlohmann::json;

constexpr std::string_view kLintedPrefixes[] = {"NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "GLOO_", "CUDA_"};

// One variable as the job will see it, and where its value came from.
struct Setting {
  std::string name;
  std::string value;
  std::string file;  // "" for the environment
  int line = 0;

  bool from_file() const { return !file.empty(); }
  std::string source() const { return from_file() ? file + ":" + std::to_string(line) : "environment"; }
  std::string shown() const { return name + "=" + printable(value, 80) + " (" + source() + ")"; }
};

struct Finding {
  Status status;
  std::string summary;
  std::string remedy;
};

bool linted(const EnvCatalog& catalog, std::string_view name) {
  return std::any_of(std::begin(kLintedPrefixes), std::end(kLintedPrefixes), [&](std::string_view p) { return name.starts_with(p); }) ||
         catalog.find(name) != nullptr;
}

std::string shell_word(std::string_view value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("_-.,:/@%+=^").find(static_cast<char>(c)) != std::string_view::npos;
  });
  return plain ? std::string(value) : "'" + printable(value, 80) + "'";
}

std::string set_remedy(const Setting& s, std::string_view value) {
  const std::string assignment = s.name + "=" + shell_word(value);
  return s.from_file() ? "Write " + assignment + " on line " + std::to_string(s.line) + " of " + s.file + "."
                       : "export " + assignment + ";";
}

std::string where(const Setting& s) {
  return s.from_file() ? " on line " + std::to_string(s.line) + " of " + s.file : " in the job's environment";
}

std::string unset_remedy(const Setting& s) {
  return s.from_file() ? "Delete line " + std::to_string(s.line) + " of " + s.file + "." : "unset " + s.name + ";";
}

std::string expected_text(const Grammar& g) {
  switch (g.kind) {
    case Grammar::Kind::TorchBool: return "1 or 0";
    case Grammar::Kind::Enum:
    case Grammar::Kind::List: return "one of " + join(g.choices, ", ");
    case Grammar::Kind::Int:
    case Grammar::Kind::TorchInt:
      return g.min ? "an integer in " + std::to_string(*g.min) + ".." + std::to_string(*g.max) : "a decimal integer";
    case Grammar::Kind::String:
    case Grammar::Kind::Path: break;
  }
  return "a valid value";
}

// The environment wins; then the files in NCCL's order, the first file that sets a name winning
// (NCCL applies each line with setenv(name, value, 0)).
std::map<std::string, Setting> effective_settings(const RankFacts& facts, const EnvCatalog& catalog) {
  std::map<std::string, Setting> out;
  for (const auto& [name, value] : facts.env.all()) {
    if (linted(catalog, name)) out.emplace(name, Setting{name, value, {}, 0});
  }
  for (const ConfFile& file : facts.nccl_conf.files) {
    const ConfFileContents* contents = file.contents.value();
    if (contents == nullptr) continue;
    for (const ConfEntry& e : contents->entries) {
      if (is_env_name(e.name) && linted(catalog, e.name)) out.emplace(e.name, Setting{e.name, e.value, file.path, e.line});
    }
  }
  return out;
}

class EnvLint {
 public:
  EnvLint(const EnvCatalog& catalog, const std::map<std::string, Setting>& settings)
      : m_catalog(catalog), m_settings(settings) {}

  std::vector<Finding> findings;
  std::string consumer = "unknown";
  std::string reads_as;

  void lint(const Setting& s) {
    const EnvVarSpec* spec = m_catalog.find(s.name);
    if (spec == nullptr) return unknown_name(s);
    consumer = spec->consumer;
    if (spec->no_effect) {
      reads_as = "not read";
      add(Status::Warn, s.shown() + " has no effect: " + spec->note, unset_remedy(s));
    }
    if (spec->dcgm_bad) add(Status::Warn, s.name + " is set (" + s.source() + "): " + spec->note, unset_remedy(s));
    if (spec->debug_only) add(Status::Warn, s.shown() + " forces a debugging setting: " + spec->note, unset_remedy(s));
    if (!spec->alias_of.empty()) legacy_alias(s, *spec);
    if (!spec->no_effect) value(s, *spec);
  }

 private:
  void add(Status status, std::string summary, std::string remedy) {
    findings.push_back({status, std::move(summary), std::move(remedy)});
  }

  void unknown_name(const Setting& s) {
    const bool nccl = s.name.starts_with("NCCL_");
    consumer = nccl ? "nccl" : s.name.starts_with("TORCH_") ? "torch" : s.name.starts_with("GLOO_") ? "gloo" : "cuda";
    reads_as = nccl ? "not read" : "";
    const std::vector<std::string> close = m_catalog.suggestions(s.name, std::max<std::size_t>(2, s.name.size() / 8));
    // PyTorch adds TORCH_NCCL_ variables often: only a near miss of a known name is worth a WARN.
    if (!nccl && !(s.name.starts_with("TORCH_NCCL_") && !close.empty())) return;
    std::string summary = s.shown() + " is not a variable " + (nccl ? "NCCL" : "PyTorch") + " reads";
    std::string remedy = unset_remedy(s);
    if (!close.empty()) {
      summary += "; did you mean " + close.front() + "?";
      Setting renamed = s;
      renamed.name = close.front();
      remedy = s.from_file() ? "Rename " + s.name + " to " + close.front() + " on line " + std::to_string(s.line) + " of " + s.file + "."
                             : "unset " + s.name + "; " + set_remedy(renamed, s.value);
    }
    add(Status::Warn, std::move(summary), std::move(remedy));
  }

  void legacy_alias(const Setting& s, const EnvVarSpec& spec) {
    const auto current = m_settings.find(spec.alias_of);
    Setting renamed = s;
    renamed.name = spec.alias_of;
    add(Status::Warn,
        s.shown() + " is the deprecated PyTorch name of " + spec.alias_of + " (NCCL itself does not read it)",
        unset_remedy(s) + " " + set_remedy(renamed, s.value));
    if (current != m_settings.end() && current->second.value != s.value) {
      add(Status::Warn,
          s.name + " and " + spec.alias_of + " are both set and differ; torch uses " + current->second.shown(),
          unset_remedy(s));
    }
  }

  void value(const Setting& s, const EnvVarSpec& spec) {
    const ValueReading r = read_value(spec.grammar, s.value);
    reads_as = r.reads_as;
    const std::string who = spec.consumer == "torch" ? "torch" : spec.consumer == "cuda" ? "CUDA" : spec.consumer == "nccl" ? "NCCL" : spec.consumer;
    if (r.status != Status::Pass) {
      std::string summary = s.shown() + ": " + r.problem;
      if (!spec.note.empty()) summary += " (" + spec.name + ": " + spec.note + ")";
      const std::string remedy = !r.fix.empty() ? set_remedy(s, r.fix)
                                                : "Set " + s.name + " to " + expected_text(spec.grammar) + where(s) + ", or remove it.";
      add(r.status, std::move(summary), remedy);
      return;
    }
    const EnvVarSpec& rules = alias_target_rules(spec);
    if (std::find(rules.warn_if.begin(), rules.warn_if.end(), r.canonical) != rules.warn_if.end()) {
      const std::string deflt = rules.default_value.empty() ? "" : " (the default is " + rules.default_value + ")";
      add(Status::Warn, s.shown() + ": " + who + " reads " + r.reads_as + "; " + rules.note, unset_remedy(s) + deflt);
    }
  }

  // A legacy alias is still read by torch when the new name is unset: the new name's rules apply.
  const EnvVarSpec& alias_target_rules(const EnvVarSpec& spec) const {
    if (spec.alias_of.empty() || m_settings.count(spec.alias_of) != 0) return spec;
    const EnvVarSpec* target = m_catalog.find(spec.alias_of);
    return target != nullptr ? *target : spec;
  }

  const EnvCatalog& m_catalog;
  const std::map<std::string, Setting>& m_settings;
};

std::string line_list(const std::vector<int>& lines) {
  std::vector<std::string> parts;
  for (int l : lines) parts.push_back(std::to_string(l));
  return join(parts, ", ");
}

// What NCCL will do with one configuration file that it cannot apply as its author meant.
json lint_conf_file(const ConfFile& file, VerdictBuilder& b) {
  json ev = {{"path", file.path}, {"role", file.role}};
  const ConfFileContents* contents = file.contents.value();
  if (contents == nullptr) {
    const ProbeError& err = *file.contents.error();
    ev["state"] = to_string(err.code);
    ev["detail"] = err.detail;
    if (err.code == ProbeErrc::NotFound && file.role == "NCCL_CONF_FILE") {
      b.add(Status::Warn, "NCCL_CONF_FILE=" + printable(file.path) + " does not exist: NCCL applies no user configuration (and skips ~/.nccl.conf)",
            "Point NCCL_CONF_FILE at the file you meant, or unset it.");
    } else if (err.code == ProbeErrc::PermissionDenied) {
      b.add(Status::Warn, printable(file.path) + " is not readable (permission denied): NCCL, running as this user, silently skips it",
            "chmod a+r " + printable(file.path) + " (or remove it if its settings are not wanted).");
    } else if (err.code != ProbeErrc::NotFound) {
      b.add(Status::Unknown, "could not read " + printable(file.path) + " (" + err.detail + "): the values NCCL takes from it are unknown",
            "Make " + printable(file.path) + " a readable text file, or remove it.");
    }
    return ev;
  }
  ev["state"] = "read";
  ev["entries"] = contents->entries.size();
  ev["malformed_lines"] = contents->malformed_lines;
  if (!contents->malformed_lines.empty()) {
    b.add(Status::Warn, printable(file.path) + " line(s) " + line_list(contents->malformed_lines) + " have no NAME=VALUE form: NCCL skips them",
          "Write NAME=VALUE on those lines of " + printable(file.path) + ", or start them with '#' in column 1.");
  }
  for (const ConfEntry& e : contents->entries) {
    if (is_env_name(e.name)) continue;
    const std::string bare(trim(e.name));
    b.add(Status::Warn,
          printable(file.path) + ":" + std::to_string(e.line) + " sets '" + printable(e.name) +
              "': NCCL keeps spaces and other characters around '=' as part of the name, so nothing reads it",
          "Write " + (is_env_name(bare) ? bare : std::string("NAME")) + "=" + printable(trim(e.value)) + " without spaces on line " +
              std::to_string(e.line) + " of " + printable(file.path) + ".");
  }
  return ev;
}

Verdict run(const CheckContext& ctx) {
  const EnvCatalog& catalog = builtin_env_catalog();
  const std::map<std::string, Setting> settings = effective_settings(ctx.facts, catalog);
  VerdictBuilder b;
  json files = json::array();
  for (const ConfFile& file : ctx.facts.nccl_conf.files) files.push_back(lint_conf_file(file, b));

  json variables = json::array();
  for (const auto& [name, setting] : settings) {
    EnvLint lint(catalog, settings);
    lint.lint(setting);
    Status worst_status = Status::Pass;
    for (Finding& f : lint.findings) {
      worst_status = worst(worst_status, f.status);
      b.add(f.status, std::move(f.summary), std::move(f.remedy));
    }
    variables.push_back({{"name", printable(name)}, {"value", printable(setting.value, 200)}, {"source", printable(setting.source())},
                         {"consumer", lint.consumer}, {"reads_as", printable(lint.reads_as, 200)}, {"status", to_string(worst_status)}});
  }
  if (b.status() == Status::Pass) {
    b.note(settings.empty() ? "no NCCL/torch/CUDA variables set"
                            : std::to_string(settings.size()) + " NCCL/torch/CUDA variable(s) set; every value reads as written");
  }
  b.evidence()["variables"] = std::move(variables);
  b.evidence()["conf_files"] = std::move(files);
  if (!ctx.facts.nccl_conf.home_from.empty()) b.evidence()["home_from"] = ctx.facts.nccl_conf.home_from;
  return b.build();
}

}  // namespace

extern const CheckSpec kEnvNccl = {
    "env.nccl", Scope::Rank,
    "NCCL, PyTorch, Gloo and CUDA variables read as their consumers will read them",
    R"(What it reads
  This rank's NCCL_*, TORCH_NCCL_*, TORCH_DISTRIBUTED_*, GLOO_* and CUDA_* variables, and the values
  NCCL takes from its configuration files: $NCCL_CONF_FILE if set, else ~/.nccl.conf (the home
  directory from /etc/passwd, as NCCL's getpwuid does, else $HOME), then /etc/nccl.conf. NCCL
  applies file lines with setenv(name, value, 0): the environment wins, then the first file that
  sets a name. Each value is parsed with its consumer's grammar (matrix/env_vars.tsv, built in).

Failures
  FAIL     an NCCL integer written as a yes-word that strtoll(value, 0) reads as the opposite:
           NCCL_P2P_DISABLE=true is 0, so P2P stays enabled.
  FAIL     a PyTorch boolean outside 1/0, true/false, yes/no, y/n, t/f; a PyTorch integer that is
           not one; TORCH_NCCL_ASYNC_ERROR_HANDLING outside 0..3; TORCH_DISTRIBUTED_DEBUG outside
           OFF/INFO/DETAIL — torch raises at init.
  WARN     other integers NCCL misreads: 010 is octal 8, 1abc is 1, no/off are 0 by accident,
           overflow means the default; values outside a sensible range (NCCL_IB_TIMEOUT > 24).
  WARN     enum values NCCL or CUDA ignore (NCCL_P2P_LEVEL=nvl: wrong case; unknown names), legacy
           integer levels, unknown names in NCCL_ALGO / NCCL_PROTO / NCCL_DEBUG_SUBSYS.
  WARN     unknown NCCL_* names (typos, with a did-you-mean) and names nothing reads
           (NCCL_TIMEOUT does not exist: set the timeout in init_process_group).
  WARN     legacy PyTorch names (NCCL_ASYNC_ERROR_HANDLING, NCCL_BLOCKING_WAIT, NCCL_DESYNC_DEBUG).
  WARN     settings that hide failures or slow the job: TORCH_NCCL_ASYNC_ERROR_HANDLING=0 (a failed
           collective hangs instead of ending the job), TORCH_NCCL_ENABLE_MONITORING=0,
           TORCH_DISTRIBUTED_DEBUG=DETAIL, NCCL_DEBUG=INFO/TRACE, CUDA_LAUNCH_BLOCKING=1,
           NCCL_ALGO / NCCL_PROTO (debugging only).
  WARN     variables on DCGM diag's must-not-be-set list (CUDA_INJECTION64_PATH, ...).
  WARN     control characters (CRLF files) in a value; a leading '~' in a path.
  WARN     in a configuration file: lines without '=', spaces around '=' (NCCL keeps them, so
           nothing reads the variable), an NCCL_CONF_FILE that does not exist, a file NCCL cannot
           read (permission denied: NCCL skips it silently).
  UNKNOWN  a configuration file that exists but could not be read for another reason.

Fix
  The remedy names the exact assignment (export NCCL_P2P_DISABLE=1; unset NCCL_TIMEOUT) or the
  file and line to change.)",
    kInAll, "", &run, "nccl_conf"};

}  // namespace preflight
