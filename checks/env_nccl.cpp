// SPDX-License-Identifier: MIT
// env.nccl: the NCCL / PyTorch / Gloo / CUDA variables of this rank, read with the grammar each
// consumer really uses, including the values NCCL takes from its configuration files.
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include <strings.h>

#include <cstdlib>
#include <functional>

#include "checks/check.hpp"
#include "checks/env_catalog.hpp"
#include "checks/finding_parts.hpp"
#include "core/text.hpp"
#include "core/version.hpp"
#include "matrix/compat_matrix.hpp"

namespace preflight {
namespace env_nccl_check {
namespace {

using nlohmann::json;

constexpr std::string_view kLintedPrefixes[] = {"NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_",
                                                "GLOO_", "CUDA_",       "PYTORCH_"};

// The NCCL_* names the job's NCCL reads: its library's and its plugins' strings, where they could
// be read; else nullptr and the catalog stands in.
struct NcclReaders {
  const std::vector<std::string>* library = nullptr;
  std::vector<const NcclPlugin*> plugins;
  std::string library_text;  // "NCCL 2.30.7 (/usr/lib/libnccl.so.2)"

  bool available() const { return library != nullptr; }
  bool reads(std::string_view name) const {
    if (library != nullptr && std::binary_search(library->begin(), library->end(), name)) return true;
    return std::any_of(plugins.begin(), plugins.end(),
                       [&](const NcclPlugin* p) { return std::binary_search(p->names.begin(), p->names.end(), name); });
  }
};

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

// The findings about one variable. Each fix is one parameter, the remedy for that variable: {unset}
// (`unset NAME`, or the line of the file to delete), {rename} (to the name meant), {set} (the value meant,
// or the form it needs). Shell remedies of several findings become one command line (see run()).
constexpr FindingSpec kNoEffect = {"env.nccl/no-effect", Status::Warn, "{setting} has no effect: {note}{releases}",
                                   "{unset}"};
constexpr FindingSpec kDcgmListed = {"env.nccl/dcgm-listed", Status::Warn, "{name} is set ({source}): {note}",
                                     "{unset}"};
constexpr FindingSpec kDebugSetting = {"env.nccl/debug-setting", Status::Warn,
                                       "{setting} forces a debugging setting: {note}", "{unset}"};
// A name the catalog knows that the loaded NCCL does not read: {releases} says which do ({read_from},
// {read_to}); {nothing_reads} is ": {variable_note}" (why) for a name no release reads, and then {unset} has no "(or
// load an NCCL release that reads it)".
constexpr FindingSpec kOtherReleaseName = {"env.nccl/other-release-name", Status::Warn,
                                           "{setting} is not read by {library}{releases}{nothing_reads}", "{unset}"};
// {suggestion}: "; did you mean {close}?", with " (which is set too)" when that name is set as well, or "".
constexpr FindingSpec kNotInLibrary = {"env.nccl/not-in-library", Status::Warn,
                                       "{setting} is not a variable {library} reads{suggestion}", "{rename}"};
constexpr FindingSpec kUnknownNcclName = {"env.nccl/unknown-nccl-name", Status::Warn,
                                          "{setting} is not a variable NCCL reads (no readable libnccl.so.2: judged by "
                                          "the catalog of NCCL 2.28.9){suggestion}",
                                          "{rename}"};
constexpr FindingSpec kUnknownTorchName = {"env.nccl/unknown-torch-name", Status::Warn,
                                           "{setting} is not a variable PyTorch reads{suggestion}", "{rename}"};
constexpr FindingSpec kLegacyName = {
    "env.nccl/legacy-name", Status::Warn,
    "{setting} is the deprecated PyTorch name of {current} (NCCL itself does not read it)", "{rename}"};
// The job's torch predates the name: it reads the legacy one ({legacy}) only.
constexpr FindingSpec kTorchReadsLegacy = {
    "env.nccl/torch-reads-legacy", Status::Warn,
    "{setting} has no effect: torch {torch} reads {legacy} (this name is read from torch {torch_from} on)", "{set}"};
constexpr FindingSpec kLegacyNameDiffers = {
    "env.nccl/legacy-name-differs", Status::Warn,
    "{name} and {current} are both set and differ; torch uses {current_setting}", "{unset}"};
// {about}: " (NAME: <the catalog's note>)", or "".
constexpr FindingSpec kInvalidValue = {"env.nccl/invalid-value", Status::Fail, "{setting}: {problem}{about}", "{set}"};
constexpr FindingSpec kMisreadValue = {"env.nccl/misread-value", Status::Warn, "{setting}: {problem}{about}", "{set}"};
// {default}: " (the default is {default_value})", or "".
constexpr FindingSpec kDiscouragedValue = {"env.nccl/discouraged-value", Status::Warn,
                                           "{setting}: {reader} reads {reads_as}; {rule_note}{default}", "{unset}"};
constexpr FindingSpec kAllocConfRejected = {"env.nccl/alloc-conf-rejected", Status::Fail, "{setting}: {problem}",
                                            "{set}"};
constexpr FindingSpec kAllocConfMisread = {"env.nccl/alloc-conf-misread", Status::Warn, "{setting}: {problem}",
                                           "{set}"};

// NCCL's configuration files.
constexpr FindingSpec kConfFileMissing = {
    "env.nccl/conf-file-missing", Status::Warn,
    "NCCL_CONF_FILE={path} does not exist: NCCL applies no user configuration (and skips ~/.nccl.conf)",
    "Point NCCL_CONF_FILE at the file you meant, or unset it."};
constexpr FindingSpec kConfFileDenied = {
    "env.nccl/conf-file-denied", Status::Warn,
    "{path} is not readable (permission denied): NCCL, running as this user, silently skips it",
    "chmod a+r {path} (or remove it if its settings are not wanted)."};
constexpr FindingSpec kConfFileUnread = {"env.nccl/conf-file-unread", Status::Unknown,
                                         "could not read {path} ({detail}): the values NCCL takes from it are unknown",
                                         "Make {path} a readable text file, or remove it."};
constexpr FindingSpec kConfMalformedLines = {
    "env.nccl/conf-malformed-lines", Status::Warn, "{path} line(s) {lines} have no NAME=VALUE form: NCCL skips them",
    "Write NAME=VALUE on those lines of {path}, or start them with '#' in column 1."};
constexpr FindingSpec kConfSpacedName = {
    "env.nccl/conf-spaced-name", Status::Warn,
    "{path}:{line} sets '{entry}': NCCL keeps spaces and other characters around '=' as part of the name, so nothing "
    "reads it",
    "Write {bare}={value} without spaces on line {line} of {path}."};

// What NCCL does with the values that pick its network and the files it loads.
#define PREFLIGHT_NO_NET_PLUGIN "NCCL init fails (\"Failed to initialize any NET plugin\")"
constexpr FindingSpec kPluginMissing = {
    "env.nccl/plugin-missing", Status::Warn,
    "{setting}: no {tried} where libnccl's dlopen looks; NCCL goes on without the {kind} plugin ({fallback})",
    "Install the {kind} plugin where the loader finds it (LD_LIBRARY_PATH), give its full path, or unset {variable}."};
constexpr FindingSpec kNetIbDisabled = {
    "env.nccl/net-ib-disabled", Status::Fail,
    "{setting} with NCCL_IB_DISABLE set: the IB transport is off, so no network matches and " PREFLIGHT_NO_NET_PLUGIN,
    "{unset}"};
constexpr FindingSpec kNetIbWithoutRdma = {
    "env.nccl/net-ib-without-rdma", Status::Fail,
    "{setting} but this node has no RDMA device (/sys/class/infiniband): NCCL's IB transport finds no device and "
    "init fails (\"Failed to initialize any NET plugin\")",
    "Unset NCCL_NET (NCCL picks Socket), set NCCL_NET=Socket, or run where the RDMA devices are visible "
    "(--device=/dev/infiniband in a container)."};
// {hint}: "; did you mean Socket?", "; did you mean IB?", or "".
constexpr FindingSpec kNetUnknown = {
    "env.nccl/net-unknown", Status::Fail,
    "{setting} names no network NCCL has here (IB and Socket are built in; no net plugin is "
    "found){hint}: " PREFLIGHT_NO_NET_PLUGIN,
    "Set NCCL_NET to IB or Socket (any case), install the plugin that provides '{net}', or unset NCCL_NET."};
#undef PREFLIGHT_NO_NET_PLUGIN
constexpr FindingSpec kIbHcaWithoutRdma = {
    "env.nccl/ib-hca-without-rdma", Status::Warn,
    "{setting} asks for InfiniBand/RoCE devices, but this node has none: NCCL uses sockets",
    "Run where the RDMA devices are visible (--device=/dev/infiniband in a container), or unset NCCL_IB_HCA."};
// {why}: "does not exist" or "cannot be read (<state>)".
constexpr FindingSpec kGraphFileUnreadable = {
    "env.nccl/graph-file-unreadable", Status::Fail,
    "{setting}: {path} {why}; NCCL fails the graph search (ncclSystemError, \"Could not open XML graph file\") and "
    "init fails",
    "Point NCCL_GRAPH_FILE at a readable graph XML, or unset it."};
constexpr FindingSpec kTopoFileUnreadable = {"env.nccl/topo-file-unreadable", Status::Warn,
                                             "{setting}: {path} {why}; NCCL ignores it and detects the topology itself",
                                             "Point {variable} at a readable topology XML, or unset it."};

// Thousands of names no library reads (a generated environment) would make one line of megabytes:
// the first kUnknownNamedAtMost are findings of their own, the rest one finding that counts them.
constexpr std::size_t kUnknownNamedAtMost = 16;
constexpr FindingSpec kMoreUnknownNames = {
    "env.nccl/more-unknown-names", Status::Warn,
    "and {count} more variables that nothing of the job reads ({first}, …): each in this check's evidence",
    "Unset those the job does not mean to set (this check's evidence lists them all: --format json)."};

constexpr std::array kFindings = {kNoEffect,         kDcgmListed,          kDebugSetting,       kOtherReleaseName,
                                  kNotInLibrary,     kUnknownNcclName,     kUnknownTorchName,   kLegacyName,
                                  kTorchReadsLegacy, kLegacyNameDiffers,   kInvalidValue,       kMisreadValue,
                                  kDiscouragedValue, kAllocConfRejected,   kAllocConfMisread,   kConfFileMissing,
                                  kConfFileDenied,   kConfFileUnread,      kConfMalformedLines, kConfSpacedName,
                                  kPluginMissing,    kNetIbDisabled,       kNetIbWithoutRdma,   kNetUnknown,
                                  kIbHcaWithoutRdma, kGraphFileUnreadable, kTopoFileUnreadable, kMoreUnknownNames};

// A finding about one variable: its row and its parameters.
struct VarFinding {
  const FindingSpec* spec;
  json params;

  Status status() const { return spec->status; }
  std::string remedy() const { return render_template(spec->fix, params); }
  // Its fix is one parameter ("{unset}"): another remedy in its place.
  void set_remedy(std::string text) {
    params[std::string(spec->fix.substr(1, spec->fix.size() - 2))] = std::move(text);
  }
};

bool linted(const EnvCatalog& catalog, std::string_view name) {
  return std::any_of(std::begin(kLintedPrefixes), std::end(kLintedPrefixes),
                     [&](std::string_view p) { return name.starts_with(p); }) ||
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
                       : "export " + assignment;
}

std::string where(const Setting& s) {
  return s.from_file() ? " on line " + std::to_string(s.line) + " of " + s.file : " in the job's environment";
}

std::string unset_remedy(const Setting& s) {
  return s.from_file() ? "Delete line " + std::to_string(s.line) + " of " + s.file + "." : "unset " + s.name;
}

std::string expected_text(const Grammar& g) {
  switch (g.kind) {
    case Grammar::Kind::TorchBool: return "1 or 0";
    case Grammar::Kind::Enum:
    case Grammar::Kind::List: return "one of " + join(g.choices, ", ");
    case Grammar::Kind::Select:
      return "a comma list of " + join(g.choices, ", ") +
             " (optionally per collective: AllReduce:" + g.choices.front() + ";Broadcast:^" + g.choices.back() + ")";
    case Grammar::Kind::Int:
    case Grammar::Kind::TorchInt:
      return std::string(g.min ? "a decimal integer in " + std::to_string(*g.min) + ".." + std::to_string(*g.max)
                               : "a decimal integer") +
             (g.step ? " (a multiple of " + std::to_string(*g.step) + ")" : "") +
             (g.unit == Grammar::Unit::Bytes          ? " (bytes, without a unit)"
              : g.unit == Grammar::Unit::Seconds      ? " (seconds, without a unit)"
              : g.unit == Grammar::Unit::Milliseconds ? " (milliseconds, without a unit)"
                                                      : "");
    case Grammar::Kind::HostPort: return "<host>:<port>";
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
      if (is_env_name(e.name) && linted(catalog, e.name))
        out.emplace(e.name, Setting{e.name, e.value, file.path, e.line});
    }
  }
  return out;
}

// Whether a set value is the mitigation of a known problem of the loaded NCCL: then it is advice
// followed, not a debugging leftover.
using MitigationLookup = std::function<std::string(const std::string& name, const std::string& value)>;

class EnvLint {
 public:
  EnvLint(const EnvCatalog& catalog, const std::map<std::string, Setting>& settings, const NcclReaders& readers,
          MitigationLookup mitigation, std::optional<Version> nccl_version, const FrameworkBuild* torch)
      : m_catalog(catalog),
        m_settings(settings),
        m_readers(readers),
        m_mitigation(std::move(mitigation)),
        m_nccl_version(std::move(nccl_version)),
        m_torch(torch) {}

  std::vector<VarFinding> findings;
  std::vector<std::string> notes;
  std::string consumer = "unknown";
  std::string reads_as;

  void lint(const Setting& s) {
    const EnvVarSpec* spec = m_catalog.find(s.name);
    const bool nccl_name = s.name.starts_with("NCCL_") && (spec == nullptr || spec->consumer == "nccl");
    if (nccl_name && m_readers.available()) {
      consumer = "nccl";
      if (!m_readers.reads(s.name)) return not_read_here(s, spec);
      if (spec == nullptr) return;  // read by this NCCL; its grammar is not in the catalog
    }
    if (spec == nullptr) return unknown_name(s);
    consumer = spec->consumer;
    if (const EnvVarSpec* legacy = torch_reads_legacy(*spec)) return renamed_later(s, *spec, *legacy);
    // A name the loaded NCCL reads is not "removed", whatever the catalog's release says.
    const bool no_effect = spec->no_effect && !(nccl_name && m_readers.available());
    if (no_effect) {
      reads_as = "not read";
      json params = spec->versions.empty() ? json{{"releases", part_if(false, "")}} : releases_params(*spec);
      params.update({{"setting", s.shown()}, {"note", spec->note}, {"unset", unset_remedy(s)}});
      add(kNoEffect, std::move(params));
    }
    if (spec->dcgm_bad) {
      add(kDcgmListed, {{"name", s.name}, {"source", s.source()}, {"note", spec->note}, {"unset", unset_remedy(s)}});
    }
    if (spec->debug_only) {
      if (const std::string issue = m_mitigation(s.name, s.value); !issue.empty()) {
        notes.push_back(s.name + "=" + printable(s.value, 80) + " mitigates " + issue + " (nccl.library): keep it");
      } else {
        add(kDebugSetting, {{"setting", s.shown()}, {"note", spec->note}, {"unset", unset_remedy(s)}});
      }
    }
    if (!spec->alias_of.empty() && !torch_reads_legacy(m_catalog.find(spec->alias_of))) legacy_alias(s, *spec);
    if (!no_effect) value(s, *spec);
  }

 private:
  void add(const FindingSpec& spec, json params) { findings.push_back({&spec, std::move(params)}); }

  /// {releases}: which NCCL releases read the variable, over {read_from} and {read_to} (the catalog's range).
  static json releases_params(const EnvVarSpec& spec) {
    if (spec.versions.empty()) return {{"releases", template_param(" (the catalog's NCCL 2.28.9 reads it)")}};
    const std::size_t dots = spec.versions.find("..");
    const std::string from = spec.versions.substr(0, dots), to = spec.versions.substr(dots + 2);
    json p = {{"read_from", from}, {"read_to", to}};
    if (from.empty())
      p["releases"] = template_param(" (NCCL <= {read_to} read it)");
    else if (to.empty())
      p["releases"] = template_param(" (NCCL >= {read_from} reads it)");
    else
      p["releases"] =
          template_param(from == to ? " (only NCCL {read_from} read it)" : " (NCCL {read_from} to {read_to} read it)");
    return p;
  }

  std::vector<std::string> close_names(std::string_view name) const {
    const std::size_t distance = std::max<std::size_t>(2, name.size() / 8);
    std::vector<std::pair<std::size_t, std::string>> scored;
    if (m_readers.available() && name.starts_with("NCCL_")) {
      for (const std::string& n : *m_readers.library) {
        const std::size_t gap = n.size() > name.size() ? n.size() - name.size() : name.size() - n.size();
        if (gap > distance) continue;
        const std::size_t d = edit_distance(name, n);
        if (d <= distance) scored.emplace_back(d, n);
      }
      std::sort(scored.begin(), scored.end());
      std::vector<std::string> out;
      for (auto& [d, n] : scored) out.push_back(std::move(n));
      return out;
    }
    return m_catalog.suggestions(name, distance);
  }

  // An NCCL_* name the loaded library (and its plugins) do not contain.
  void not_read_here(const Setting& s, const EnvVarSpec* spec) {
    reads_as = "not read";
    const std::vector<std::string> close = close_names(s.name);
    if (spec != nullptr && close.empty()) {
      json params = releases_params(*spec);
      params.update({{"setting", s.shown()},
                     {"library", m_readers.library_text},
                     {"nothing_reads", part_if(spec->no_effect, ": {variable_note}")},
                     {"unset", unset_remedy(s) + (spec->no_effect ? "" : " (or load an NCCL release that reads it)")}});
      if (spec->no_effect) params["variable_note"] = spec->note;
      add(kOtherReleaseName, std::move(params));
      return;
    }
    rename_or_unset(s, kNotInLibrary, {{"setting", s.shown()}, {"library", m_readers.library_text}}, close);
  }

  void rename_or_unset(const Setting& s, const FindingSpec& spec, json params, const std::vector<std::string>& close) {
    json suggestion = part_if(false, "");
    std::string remedy = unset_remedy(s);
    if (!close.empty()) params["close"] = close.front();
    if (!close.empty() && m_settings.count(close.front()) != 0) {
      // The right name is set as well: moving the value there would overwrite it.
      suggestion = template_param("; did you mean {close}? (which is set too)");
    } else if (!close.empty()) {
      suggestion = template_param("; did you mean {close}?");
      Setting renamed = s;
      renamed.name = close.front();
      remedy = s.from_file() ? "Rename " + s.name + " to " + close.front() + " on line " + std::to_string(s.line) +
                                   " of " + s.file + "."
                             : "unset " + s.name + "; " + set_remedy(renamed, s.value);
    }
    params["suggestion"] = std::move(suggestion);
    params["rename"] = std::move(remedy);
    add(spec, std::move(params));
  }

  void unknown_name(const Setting& s) {
    const bool nccl = s.name.starts_with("NCCL_");
    const bool pytorch = s.name.starts_with("PYTORCH_");
    consumer = nccl                                      ? "nccl"
               : s.name.starts_with("TORCH_") || pytorch ? "torch"
               : s.name.starts_with("GLOO_")             ? "gloo"
                                                         : "cuda";
    reads_as = nccl ? "not read" : "";
    const std::vector<std::string> close = close_names(s.name);
    // PyTorch adds TORCH_NCCL_ / PYTORCH_ variables often: only a near miss of a known name is worth a WARN.
    if (!nccl && !((s.name.starts_with("TORCH_NCCL_") || pytorch) && !close.empty())) return;
    rename_or_unset(s, nccl ? kUnknownNcclName : kUnknownTorchName, {{"setting", s.shown()}}, close);
  }

  // The job's torch is older than the release that reads `spec`'s name (torch_from): the legacy name
  // it reads instead, else nullptr.
  const EnvVarSpec* torch_reads_legacy(const EnvVarSpec* spec) const {
    if (spec == nullptr || spec->torch_from.empty() || m_torch == nullptr) return nullptr;
    const std::optional<Version> have = Version::parse(m_torch->version.substr(0, m_torch->version.find('+')));
    const std::optional<Version> from = Version::parse(spec->torch_from);
    if (!have || !from || !(*have < *from)) return nullptr;
    for (const EnvVarSpec& v : m_catalog.vars()) {
      if (v.alias_of == spec->name) return &v;
    }
    return nullptr;
  }
  const EnvVarSpec* torch_reads_legacy(const EnvVarSpec& spec) const { return torch_reads_legacy(&spec); }

  void renamed_later(const Setting& s, const EnvVarSpec& spec, const EnvVarSpec& legacy) {
    reads_as = "not read";
    Setting meant = s;
    meant.name = legacy.name;
    add(kTorchReadsLegacy, {{"setting", s.shown()},
                            {"torch", m_torch->version},
                            {"torch_from", spec.torch_from},
                            {"legacy", legacy.name},
                            {"set", set_remedy(meant, s.value)}});
  }

  void legacy_alias(const Setting& s, const EnvVarSpec& spec) {
    const auto current = m_settings.find(spec.alias_of);
    Setting renamed = s;
    renamed.name = spec.alias_of;
    add(kLegacyName, {{"setting", s.shown()},
                      {"current", spec.alias_of},
                      {"rename", unset_remedy(s) + (s.from_file() ? " " : "; ") + set_remedy(renamed, s.value)}});
    if (current != m_settings.end() && current->second.value != s.value) {
      add(kLegacyNameDiffers, {{"name", s.name},
                               {"current", spec.alias_of},
                               {"current_setting", current->second.shown()},
                               {"unset", unset_remedy(s)}});
    }
  }

  void value(const Setting& s, const EnvVarSpec& spec) {
    const EnvVarSpec& rules = alias_target_rules(spec);
    ValueReading r = read_value(spec.grammar, s.value, m_nccl_version);
    reads_as = r.reads_as;
    const std::string& who = spec.grammar.reader;
    // Never propose a value this check would warn about.
    if (!r.fix.empty() && std::find(rules.warn_if.begin(), rules.warn_if.end(),
                                    read_value(spec.grammar, r.fix).canonical) != rules.warn_if.end()) {
      r.fix.clear();
    }
    if (r.status != Status::Pass) {
      const std::string remedy =
          !r.fix.empty() ? set_remedy(s, r.fix)
                         : "Set " + s.name + " to " + expected_text(spec.grammar) + where(s) + ", or remove it.";
      add(r.status == Status::Fail ? kInvalidValue : kMisreadValue,
          {{"setting", s.shown()},
           {"problem", r.problem},
           {"about", part_if(!spec.note.empty(), " ({variable}: {variable_note})")},
           {"variable", spec.name},
           {"variable_note", spec.note},
           {"set", remedy}});
      return;
    }
    if (std::find(rules.warn_if.begin(), rules.warn_if.end(), r.canonical) != rules.warn_if.end()) {
      add(kDiscouragedValue, {{"setting", s.shown()},
                              {"reader", who},
                              {"reads_as", r.reads_as},
                              {"rule_note", rules.note},
                              {"default", part_if(!rules.default_value.empty(), " (the default is {default_value})")},
                              {"default_value", rules.default_value},
                              {"unset", unset_remedy(s)}});
    }
    if (std::find(rules.note_if.begin(), rules.note_if.end(), r.canonical) != rules.note_if.end()) {
      notes.push_back(s.name + "=" + printable(s.value, 80) + " (" + s.source() + "): " + rules.note);
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
  const NcclReaders& m_readers;
  MitigationLookup m_mitigation;
  std::optional<Version> m_nccl_version;  // the loaded NCCL's: its grammar for NCCL_ALGO / NCCL_PROTO
  const FrameworkBuild* m_torch;          // the torch the job imports: which of torch's names it reads
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
      b.add(kConfFileMissing, {{"path", printable(file.path)}});
    } else if (err.code == ProbeErrc::PermissionDenied) {
      b.add(kConfFileDenied, {{"path", printable(file.path)}});
    } else if (err.code != ProbeErrc::NotFound) {
      b.add(kConfFileUnread, {{"path", printable(file.path)}, {"detail", err.detail}});
    }
    return ev;
  }
  ev["state"] = "read";
  ev["entries"] = contents->entries.size();
  ev["malformed_lines"] = contents->malformed_lines;
  if (!contents->malformed_lines.empty()) {
    b.add(kConfMalformedLines, {{"path", printable(file.path)}, {"lines", line_list(contents->malformed_lines)}});
  }
  for (const ConfEntry& e : contents->entries) {
    if (is_env_name(e.name)) continue;
    const std::string bare(trim(e.name));
    b.add(kConfSpacedName, {{"path", printable(file.path)},
                            {"line", e.line},
                            {"entry", printable(e.name)},
                            {"bare", is_env_name(bare) ? bare : std::string("NAME")},
                            {"value", printable(trim(e.value))}});
  }
  return ev;
}

// PyTorch's caching-allocator settings (PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF,
// PYTORCH_ALLOC_CONF) as c10/core/AllocatorConfig.cpp and c10/cuda/CUDAAllocatorConfig.cpp read
// them at the first CUDA allocation: tokens split at ',', ':', '[' and ']' with white space
// dropped; key ':' value pairs separated by ','; an unknown key, a boolean other than True/False,
// a number std::stoull/std::stod cannot read or a value its TORCH_CHECK rejects raises.
struct AllocFinding {
  Status status = Status::Pass;
  std::string problem;
  std::string fix;  // the whole value rewritten, where the intent is evident
};

enum class AllocValue { Bool, SizeMb, MinSizeMb, Fraction, PowerOf2, Backend, Divisions };

const std::vector<std::pair<std::string_view, AllocValue>>& alloc_keys() {
  static const std::vector<std::pair<std::string_view, AllocValue>> keys = {
      {"max_split_size_mb", AllocValue::MinSizeMb},
      {"max_non_split_rounding_mb", AllocValue::MinSizeMb},
      {"garbage_collection_threshold", AllocValue::Fraction},
      {"roundup_power2_divisions", AllocValue::Divisions},
      {"expandable_segments", AllocValue::Bool},
      {"pinned_use_background_threads", AllocValue::Bool},
      {"backend", AllocValue::Backend},
      {"release_lock_on_cudamalloc", AllocValue::Bool},
      {"release_lock_on_hipmalloc", AllocValue::Bool},
      {"pinned_use_cuda_host_register", AllocValue::Bool},
      {"pinned_use_hip_host_register", AllocValue::Bool},
      {"pinned_num_register_threads", AllocValue::PowerOf2},
      {"pinned_reserve_segment_size_mb", AllocValue::SizeMb},
      {"graph_capture_record_stream_reuse", AllocValue::Bool},
      {"per_process_memory_fraction", AllocValue::Fraction},
  };
  return keys;
}

std::vector<std::string> alloc_tokens(std::string_view value) {
  std::vector<std::string> out;
  std::string buf;
  for (char c : value) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!buf.empty()) out.push_back(std::move(buf));
      buf.clear();
      out.emplace_back(1, c);
    } else if (std::isspace(static_cast<unsigned char>(c)) == 0) {
      buf += c;
    }
    if (out.size() > 4096) break;
  }
  if (!buf.empty()) out.push_back(std::move(buf));
  return out;
}

AllocFinding read_alloc_conf(std::string_view value, std::string_view name) {
  const std::vector<std::string> t = alloc_tokens(value);
  AllocFinding out;
  const auto raise = [&](std::string why) {
    out.status = Status::Fail;
    out.problem = std::move(why) + "; torch raises at the first CUDA allocation (c10 AllocatorConfig)";
    return out;
  };
  std::vector<std::string> fixed = t;
  bool can_fix = true;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& key = t[i];
    const auto known =
        std::find_if(alloc_keys().begin(), alloc_keys().end(), [&](const auto& k) { return k.first == key; });
    if (known == alloc_keys().end()) {
      std::string best;
      std::size_t best_d = 4;
      for (const auto& k : alloc_keys()) {
        const std::size_t d = edit_distance(key, k.first);
        if (d < best_d) best_d = d, best = k.first;
      }
      return raise("'" + printable(key, 60) + "' is not an allocator key" +
                   (best.empty() ? " (keys are key:value pairs such as expandable_segments:True)"
                                 : "; did you mean " + best + "?"));
    }
    if (i + 2 >= t.size() || t[i + 1] != ":") return raise(key + " has no ':value'");
    i += 2;
    const std::string& v = t[i];
    switch (known->second) {
      case AllocValue::Bool:
        if (v != "True" && v != "False") {
          const std::string lower = to_lower(v);
          const bool yes = edit_distance(lower, "true") <= 2 || lower == "1" || lower == "yes";
          const bool no = edit_distance(lower, "false") <= 2 || lower == "0" || lower == "no";
          if (yes != no) {
            fixed[i] = yes ? "True" : "False";
          } else {
            can_fix = false;
          }
          raise(key + ":" + printable(v, 40) + " is not True or False (case-sensitive)");
          if (can_fix) {
            for (const std::string& part : fixed) out.fix += part;
          }
          return out;
        }
        break;
      case AllocValue::SizeMb:
      case AllocValue::MinSizeMb:
      case AllocValue::PowerOf2: {
        if (v.empty() || std::isdigit(static_cast<unsigned char>(v.front())) == 0) {
          return raise(key + ":" + printable(v, 40) + " is not a number (std::stoull)");
        }
        const std::optional<std::int64_t> n = parse_int(v);
        const std::int64_t number = n ? *n : std::strtoll(v.c_str(), nullptr, 10);
        if (known->second == AllocValue::MinSizeMb && number < 20)
          return raise(key + ":" + v + " is below the minimum of 20 (MB)");
        if (known->second == AllocValue::SizeMb && number <= 0) return raise(key + ":" + v + " must be greater than 0");
        if (known->second == AllocValue::PowerOf2 && (number <= 0 || (number & (number - 1)) != 0)) {
          return raise(key + ":" + v + " is not a power of 2");
        }
        if (!n && out.status == Status::Pass) {
          out.status = Status::Warn;
          out.problem =
              key + ":" + printable(v, 40) + " is read as " + std::to_string(number) + " (the rest is ignored)";
        }
        break;
      }
      case AllocValue::Fraction: {
        char* end = nullptr;
        const std::string c(v);
        const double d = std::strtod(c.c_str(), &end);
        if (end == c.c_str()) return raise(key + ":" + printable(v, 40) + " is not a number (std::stod)");
        if (!(d > 0.0 && d < 1.0) && key == "garbage_collection_threshold")
          return raise(key + ":" + v + " is outside (0.0, 1.0)");
        if (!(d >= 0.0 && d <= 1.0)) return raise(key + ":" + v + " is outside [0.0, 1.0]");
        break;
      }
      case AllocValue::Backend: {
        const std::string async = name.find("HIP") != std::string_view::npos ? "hipMallocAsync" : "cudaMallocAsync";
        if (v != "native" && v != "cudaMallocAsync" && v != "hipMallocAsync") {
          return raise("backend:" + printable(v, 40) + " is not native or " + async);
        }
        break;
      }
      case AllocValue::Divisions:
        if (v == "[") {
          std::size_t guard = 0;
          while (i + 1 < t.size() && t[i] != "]" && ++guard < 256) ++i;
          if (t[i] != "]") return raise(key + " has an unterminated [ ] list");
        } else if (v.empty() || std::isdigit(static_cast<unsigned char>(v.front())) == 0) {
          return raise(key + ":" + printable(v, 40) + " is not a number");
        } else if (const std::int64_t d = std::strtoll(v.c_str(), nullptr, 10); d <= 0 || (d & (d - 1)) != 0) {
          return raise(key + ":" + printable(v, 40) + " is not a power of 2");
        }
        break;
    }
    if (i + 1 < t.size() && t[i + 1] != ",")
      return raise("'" + printable(t[i + 1], 40) + "' follows " + key + " where ',' is expected");
    if (i + 1 < t.size()) ++i;
  }
  return out;
}

// What NCCL does with the values that pick its network and the files it loads.
void lint_nccl_runtime(const CheckContext& ctx, const std::map<std::string, Setting>& settings, VerdictBuilder& b) {
  const NcclConfFacts& conf = ctx.facts.nccl_conf;
  const auto setting = [&](const char* name) -> const Setting* {
    const auto it = settings.find(name);
    return it == settings.end() ? nullptr : &it->second;
  };
  const Probed<std::vector<IbDevice>>& ib = ctx.facts.net.ib_devices;
  const bool ib_known = ib.ok() || (ib.error() != nullptr && ib.error()->code == ProbeErrc::NotFound);
  const bool has_rdma = ib.ok() && !ib.value()->empty();
  bool external_net = false;
  for (const NcclPlugin& p : conf.names.plugins) {
    if (p.kind == "net" && !p.path.empty()) external_net = true;
    if (p.variable.empty() || !p.path.empty()) continue;
    const Setting* s = setting(p.variable.c_str());
    const std::string shown = s != nullptr ? s->shown() : p.variable + "=" + printable(p.requested);
    b.add(kPluginMissing, {{"setting", shown},
                           {"tried", join(p.tried, " or ")},
                           {"kind", p.kind},
                           {"fallback", p.kind == "net" ? "its own IB/Socket transports" : "its defaults"},
                           {"variable", p.variable}});
  }
  if (const Setting* net = setting("NCCL_NET")) {
    const std::string v(trim(net->value));
    const bool ib_disabled = [&] {
      const Setting* d = setting("NCCL_IB_DISABLE");
      const std::optional<std::int64_t> n = d != nullptr ? nccl_int_value(d->value) : std::nullopt;
      return n && *n != 0;
    }();
    if (::strcasecmp(v.c_str(), "IB") == 0) {
      if (ib_disabled) {
        b.add(kNetIbDisabled, {{"setting", net->shown()}, {"unset", unset_remedy(*setting("NCCL_IB_DISABLE"))}});
      } else if (ib_known && !has_rdma) {
        b.add(kNetIbWithoutRdma, {{"setting", net->shown()}});
      }
    } else if (::strcasecmp(v.c_str(), "Socket") != 0 && !external_net) {
      std::string close;
      if (edit_distance(to_lower(v), "socket") <= 2)
        close = "Socket";
      else if (edit_distance(to_lower(v), "ib") <= 1 || to_lower(v) == "infiniband" || to_lower(v) == "roce")
        close = "IB";
      json params = {{"setting", net->shown()},
                     {"hint", part_if(!close.empty(), "; did you mean {close}?")},
                     {"net", printable(v)}};
      if (!close.empty()) params["close"] = close;
      b.add(kNetUnknown, std::move(params));
    }
  }
  if (const Setting* hca = setting("NCCL_IB_HCA"); hca != nullptr && ib_known && !has_rdma) {
    b.add(kIbHcaWithoutRdma, {{"setting", hca->shown()}});
  }
  for (const NcclNamedFile& f : conf.named_files) {
    if (f.state == "ok") continue;
    const Setting* s = setting(f.variable.c_str());
    const std::string shown = s != nullptr ? s->shown() : f.variable + "=" + printable(f.path);
    const std::string why = f.state == "not_found" ? "does not exist" : "cannot be read (" + f.state + ")";
    const json params = {{"setting", shown}, {"path", printable(f.path)}, {"why", why}, {"variable", f.variable}};
    b.add(f.variable == "NCCL_GRAPH_FILE" ? kGraphFileUnreadable : kTopoFileUnreadable, params);
  }
}

// A remedy the user runs in a shell, as opposed to a sentence about a file.
bool shell_command(const std::string& remedy) { return remedy.starts_with("export ") || remedy.starts_with("unset "); }

Verdict run(const CheckContext& ctx) {
  const EnvCatalog& catalog = builtin_env_catalog();
  const std::map<std::string, Setting> settings = effective_settings(ctx.facts, catalog);
  VerdictBuilder b;
  json files = json::array();
  for (const ConfFile& file : ctx.facts.nccl_conf.files) files.push_back(lint_conf_file(file, b));

  const NcclNames& names = ctx.facts.nccl_conf.names;
  NcclReaders readers;
  json names_ev = {{"library", names.library}};
  if (const std::vector<std::string>* lib = names.names.value()) {
    readers.library = lib;
    readers.library_text =
        "NCCL" + (names.version.empty() ? std::string() : " " + names.version) + " (" + names.library + ")";
    for (const NcclPlugin& p : names.plugins) {
      if (!p.path.empty()) readers.plugins.push_back(&p);
    }
    names_ev["from"] = "library";
    names_ev["count"] = lib->size();
  } else {
    names_ev["from"] = "catalog";
    names_ev["why"] = "NCCL_* names judged by the built-in catalog (NCCL 2.28.9): " + names.names.why();
  }
  names_ev["plugins"] = names.plugins;

  const CompatMatrix& matrix = compat_matrix(ctx);
  const NcclLibrary* lib = ctx.facts.gpu.nccl.value();
  const std::optional<Version> nccl_version = lib != nullptr ? Version::parse(lib->version) : std::nullopt;
  const MitigationLookup mitigation = [&](const std::string& name, const std::string& value) -> std::string {
    if (!nccl_version) return {};
    const std::vector<NvmlGpu>* gpus = ctx.facts.gpu.driver.nvml_gpus.value();
    for (const NcclIssueRow* row : matrix.nccl_issues_for(*nccl_version)) {
      // A GPU-specific problem on a node whose GPUs are all known and none is that GPU: no mitigation needed.
      if (row->condition.starts_with("gpu:") && gpus != nullptr && !gpus->empty() &&
          std::none_of(gpus->begin(), gpus->end(), [&](const NvmlGpu& g) {
            return g.name.empty() || to_lower(g.name).find(to_lower(row->condition.substr(4))) != std::string::npos;
          })) {
        continue;
      }
      if (!row->mitigated_by([&](const std::string& n) -> std::optional<std::string> {
                return n == name ? std::optional<std::string>(value) : std::nullopt;
              })
               .empty()) {
        return "known problem " + row->id;
      }
    }
    return {};
  };

  // The torch the job imports: its release decides which of torch's names it reads.
  const std::vector<FrameworkBuild>& fws = ctx.facts.gpu.runtime.frameworks;
  const auto torch_it = std::find_if(fws.begin(), fws.end(), [](const FrameworkBuild& f) { return f.name == "torch"; });
  const FrameworkBuild* torch = torch_it != fws.end() ? &*torch_it : nullptr;

  std::vector<VarFinding> all;
  std::vector<std::string> notes;
  json variables = json::array();
  std::size_t unknown_names = 0;
  std::vector<std::string> not_named;  // the first of those past kUnknownNamedAtMost
  for (const auto& [name, setting] : settings) {
    EnvLint lint(catalog, settings, readers, mitigation, nccl_version, torch);
    lint.lint(setting);
    const EnvVarSpec* spec = catalog.find(name);
    if (spec != nullptr && name.find("ALLOC_CONF") != std::string::npos && spec->consumer == "torch") {
      const AllocFinding a = read_alloc_conf(setting.value, name);
      if (a.status != Status::Pass) {
        lint.findings.push_back({a.status == Status::Fail ? &kAllocConfRejected : &kAllocConfMisread,
                                 {{"setting", setting.shown()},
                                  {"problem", a.problem},
                                  {"set", !a.fix.empty() ? set_remedy(setting, a.fix)
                                                         : "Write " + name +
                                                               " as key:value pairs separated by ',' "
                                                               "(expandable_segments:True,max_split_size_mb:512)" +
                                                               where(setting) + ", or remove it."}}});
      }
    }
    Status worst_status = Status::Pass;
    for (VarFinding& f : lint.findings) {
      worst_status = worst(worst_status, f.status());
      const bool unknown = f.spec == &kNotInLibrary || f.spec == &kUnknownNcclName || f.spec == &kUnknownTorchName;
      if (unknown && ++unknown_names > kUnknownNamedAtMost) {
        if (not_named.size() < 3) not_named.push_back(printable(name, 64));
        continue;
      }
      all.push_back(std::move(f));
    }
    for (std::string& n : lint.notes) notes.push_back(std::move(n));
    variables.push_back({{"name", printable(name)},
                         {"value", printable(setting.value, 200)},
                         {"source", printable(setting.source())},
                         {"consumer", lint.consumer},
                         {"reads_as", printable(lint.reads_as, 200)},
                         {"status", to_string(worst_status)}});
  }
  if (unknown_names > kUnknownNamedAtMost) {
    all.push_back(
        {&kMoreUnknownNames, {{"count", unknown_names - kUnknownNamedAtMost}, {"first", join(not_named, ", ")}}});
  }
  // Shell remedies become one command line ("unset A; export B=1"), given to the first finding the
  // report prints; the others' own commands are part of it.
  std::vector<std::size_t> order;
  for (Status level : {Status::Fail, Status::Unknown, Status::Warn}) {
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].status() == level) order.push_back(i);
    }
  }
  std::vector<std::string> commands;
  for (std::size_t i : order) {
    const std::string remedy = all[i].remedy();
    if (shell_command(remedy) && std::find(commands.begin(), commands.end(), remedy) == commands.end()) {
      commands.push_back(remedy);
    }
  }
  if (commands.size() > 1) {
    for (std::size_t i : order) {
      if (shell_command(all[i].remedy())) {
        all[i].set_remedy(join(commands, "; "));
        break;
      }
    }
  }
  for (VarFinding& f : all) b.add(*f.spec, std::move(f.params));
  lint_nccl_runtime(ctx, settings, b);
  for (const std::string& n : notes) b.note(n);
  if (b.status() == Status::Pass && notes.empty()) {
    b.note(settings.empty()
               ? "no NCCL/torch/CUDA variables set"
               : std::to_string(settings.size()) + " NCCL/torch/CUDA variable(s) set; every value reads as written");
  }
  b.evidence()["variables"] = std::move(variables);
  b.evidence()["conf_files"] = std::move(files);
  b.evidence()["nccl_names"] = std::move(names_ev);
  if (!notes.empty()) b.evidence()["notes"] = notes;
  if (!ctx.facts.nccl_conf.named_files.empty()) b.evidence()["named_files"] = ctx.facts.nccl_conf.named_files;
  if (!ctx.facts.nccl_conf.home_from.empty()) b.evidence()["home_from"] = ctx.facts.nccl_conf.home_from;
  return b.build();
}

}  // namespace

extern const CheckSpec kEnvNccl = {"env.nccl",
                                   Scope::Rank,
                                   "NCCL, PyTorch, Gloo and CUDA variables read as their consumers will read them",
                                   R"(What it reads
  This rank's NCCL_*, TORCH_NCCL_*, TORCH_DISTRIBUTED_*, GLOO_*, CUDA_* and PYTORCH_*ALLOC_CONF
  variables, and the values NCCL takes from its configuration files: $NCCL_CONF_FILE if set, else
  ~/.nccl.conf (the home directory from /etc/passwd, as NCCL's getpwuid does, else $HOME; NCCL >=
  2.30 takes $HOME and strips a '\r' before each line's end), then /etc/nccl.conf. NCCL applies
  file lines with setenv(name, value, 0): the environment wins, then the first file that sets it. Each value is parsed with its reader's grammar (matrix/
  env_vars.tsv, built in; each range's source is in its row's note).
  The NCCL_* names that count are the ones the job's NCCL reads: the strings of the .rodata
  section of the libnccl.so.2 nccl.library found (read, not loaded; at most 64 MiB), and of the
  net/tuner/profiler plugins it will dlopen (NCCL_NET_PLUGIN, NCCL_TUNER_PLUGIN,
  NCCL_PROFILER_PLUGIN: the name as given, then libnccl-<kind>-<name>.so; unset, libnccl-<kind>.so;
  searched as dlopen from libnccl does). Without a readable libnccl the catalog (NCCL 2.28.9 and
  the names of 2.29/2.30) stands in, and the evidence (nccl_names) says why. Also: whether the
  node has RDMA devices, and whether NCCL_TOPO_FILE and NCCL_GRAPH_FILE exist.

Failures
  FAIL     an NCCL integer written as a yes-word that strtoll(value, 0) reads as the opposite:
           NCCL_P2P_DISABLE=true is 0, so P2P stays enabled.
  FAIL     a PyTorch boolean outside 1/0, true/false, yes/no, y/n, t/f; a PyTorch integer that
           std::stoi cannot read; TORCH_DISTRIBUTED_DEBUG outside OFF/INFO/DETAIL — torch raises.
  FAIL     PYTORCH_CUDA_ALLOC_CONF / PYTORCH_HIP_ALLOC_CONF / PYTORCH_ALLOC_CONF that torch's
           allocator rejects at the first allocation: an unknown key (with a did-you-mean), a
           boolean other than True/False (expandable_segments:Ture), a number stoull cannot read
           (max_split_size_mb:abc), max_split_size_mb below 20, a threshold outside (0, 1).
  FAIL     values that break NCCL init: NCCL_NET=IB on a node without RDMA devices (or with
           NCCL_IB_DISABLE set), NCCL_NET naming a network neither IB, Socket nor a plugin found
           (Sockets: did you mean Socket?), NCCL_GRAPH_FILE naming a file that does not exist,
           NCCL_COMM_ID that is not <host>:<port> or [<ipv6>]:<port>.
  WARN     other integers NCCL misreads: 010 is octal 8, 1abc is 1, 8M is 8, no/off are 0 by
           accident, overflow means the default; values outside what the reader uses
           (NCCL_NTHREADS 64..512 in steps of 32, NCCL_LL128_NTHREADS 160..640, NCCL_IB_SL 0..15,
           NCCL_IB_TC 0..255, NCCL_CROSS_NIC 0..2, NCCL_BUFFSIZE <= 0, NCCL_IB_TIMEOUT > 31);
           torch integers outside their meaning (TORCH_NCCL_ASYNC_ERROR_HANDLING=5: getCvarInt
           applies no range, so this WARNs; TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC has no range at all).
  WARN     enum values NCCL or CUDA ignore (NCCL_P2P_LEVEL=nvl: wrong case; unknown names), legacy
           integer levels, unknown names in NCCL_DEBUG_SUBSYS; unknown names in NCCL_ALGO /
           NCCL_PROTO where the loaded NCCL is older than 2.24.3 (its parseList skips them).
  FAIL     NCCL_ALGO / NCCL_PROTO as the loaded NCCL's parseList reads them: from 2.24.3 an unknown
           name or collective, or an entry after the first without its collective
           ("allreduce:ring;bogus:tree", "Ring,Foo", "LL129") is ncclInvalidUsage at every
           communicator init; before 2.24.3 a value that enables nothing known ("allreduce:tree",
           the per-collective syntax it does not have); any release: a collective left with
           nothing enabled ("^LL,LL128,Simple"). Without a loaded NCCL the 2.24.3+ rule is
           applied and the finding says so.
  WARN     NCCL_* names the loaded NCCL does not read (typos, with a did-you-mean among its own
           names; names other releases read, saying which: NCCL_LL_THRESHOLD, NCCL <= 2.4), names
           nothing reads (NCCL_TIMEOUT: set the timeout in init_process_group), typos of PyTorch
           names (PYTORCH_CUDA_ALLOC_CONFIG: did you mean PYTORCH_CUDA_ALLOC_CONF?). The first 16
           such names are a finding each; the rest one finding that counts them ("and 9984 more
           ..."), every name still in the evidence.
  WARN     legacy PyTorch names (NCCL_ASYNC_ERROR_HANDLING, NCCL_BLOCKING_WAIT, NCCL_DESYNC_DEBUG)
           with a torch that reads the TORCH_NCCL_* names (2.2.0 on); with an older torch the
           legacy name is the one it reads, and a TORCH_NCCL_* spelling has no effect (WARN,
           naming the name that torch reads). The torch is the one the job imports (cuda.runtime).
  WARN     settings that hide failures or slow the job: TORCH_NCCL_ASYNC_ERROR_HANDLING=0 (a failed
           collective hangs instead of ending the job), TORCH_NCCL_ENABLE_MONITORING=0,
           TORCH_DISTRIBUTED_DEBUG=DETAIL, CUDA_LAUNCH_BLOCKING=1, NCCL_ALGO / NCCL_PROTO (debugging
           only) — except a setting that mitigates a known problem of the loaded NCCL
           (NCCL_PROTO=^LL128 on NCCL 2.18.1): a note "mitigates known problem ...", no WARN.
           NCCL_DEBUG=INFO/TRACE is a note in the summary and the evidence, never a WARN.
  WARN     NCCL_NET_PLUGIN / NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN naming a plugin that is not
           where libnccl's dlopen looks (NCCL goes on without it), NCCL_TOPO_FILE naming a missing
           file (NCCL detects the topology itself), NCCL_IB_HCA on a node without RDMA devices.
  WARN     variables on DCGM diag's must-not-be-set list (CUDA_INJECTION64_PATH, ...).
  WARN     control characters (CRLF files) in a value; a leading '~' in a path.
  WARN     in a configuration file: lines without '=', spaces around '=' (NCCL keeps them, so
           nothing reads the variable), an NCCL_CONF_FILE that does not exist, a file NCCL cannot
           read (permission denied: NCCL skips it silently).
  UNKNOWN  a configuration file that exists but could not be read for another reason.

Fix
  The remedy proposes what the writer meant: the unit converted (NCCL_BUFFSIZE=8M: export
  NCCL_BUFFSIZE=8388608; TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=10m: 600), the yes-word as 1/0, the
  decimal of an octal-looking value; where no intent is evident (NCCL_IB_GID_INDEX=three) it
  names the form needed. It never proposes a value this check warns about. Shell remedies are one
  command line (export NCCL_P2P_DISABLE=1; unset NCCL_TIMEOUT); file remedies name the line.)",
                                   kInAll,
                                   "",
                                   &run,
                                   "nccl_conf,nccl_names,nccl,net,gpu_driver",
                                   false,
                                   {},
                                   {},
                                   nullptr,
                                   kFindings};

}  // namespace env_nccl_check
}  // namespace preflight
