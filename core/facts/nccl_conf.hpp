// SPDX-License-Identifier: MIT
// NCCL's configuration files ($NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf), gathered by
// probes/nccl_conf_probe.cpp. NCCL applies them with setenv(name, value, 0): the environment wins,
// the user's file beats the system file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

struct ConfEntry {
  std::string name;
  std::string value;
  int line = 0;
};
PREFLIGHT_JSON_DECLARE(ConfEntry)

struct ConfFileContents {
  std::vector<ConfEntry> entries;
  std::vector<int> malformed_lines;  // lines NCCL skips (no '=', empty name)
};
PREFLIGHT_JSON_DECLARE(ConfFileContents)

struct ConfFile {
  std::string path;  // as NCCL would open it
  std::string role;  // "NCCL_CONF_FILE", "user", "system"
  Probed<ConfFileContents> contents;
};
PREFLIGHT_JSON_DECLARE(ConfFile)

/// A plugin NCCL will try to load (src/plugin/plugin_open.cc): the name asked for ("" for the
/// default libnccl-<kind>.so), the file found the way dlopen would find it, and its NCCL_* names.
struct NcclPlugin {
  std::string kind;       // "net", "tuner", "profiler"
  std::string requested;  // an entry of NCCL_NET_PLUGIN / NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN; "" the default
  std::string variable;   // the variable that asked for it; "" for the default name
  std::string path;       // the file found; "" when none of the names NCCL tries exists
  std::vector<std::string> tried;  // the file names NCCL tries, in order ("foo", "libnccl-net-foo.so")
  std::vector<std::string> names;  // NCCL_* strings of its read-only data
};
PREFLIGHT_JSON_DECLARE(NcclPlugin)

/// The NCCL_* names the job's NCCL reads: the strings of libnccl.so.2's .rodata section (NCCL keeps
/// every variable's name as a C string for getenv), read without loading it.
struct NcclNames {
  std::string library;                     // the file read; "" when no NCCL was found
  std::string version;                     // of that library (from the nccl probe), for messages
  Probed<std::vector<std::string>> names;  // sorted, unique
  std::vector<NcclPlugin> plugins;
};
PREFLIGHT_JSON_DECLARE(NcclNames)

/// A file an NCCL variable names (NCCL_TOPO_FILE, NCCL_GRAPH_FILE), and whether it is there.
struct NcclNamedFile {
  std::string variable;
  std::string path;   // as NCCL opens it (relative to the working directory)
  std::string state;  // "ok", or the ProbeErrc of opening it: "not_found", "permission_denied", ...
};
PREFLIGHT_JSON_DECLARE(NcclNamedFile)

struct NcclConfFacts {
  std::vector<ConfFile> files;  // in NCCL's order of precedence (first wins after the environment)
  // Where the user file's directory came from: "/etc/passwd" (what NCCL's getpwuid() uses), "HOME"
  // (no passwd entry: NSS may still know one), or "" (no user file: NCCL_CONF_FILE set, or no home).
  std::string home_from;
  NcclNames names;                         // the names the loaded NCCL and its plugins read
  std::vector<NcclNamedFile> named_files;  // the files the job's NCCL variables name
};
PREFLIGHT_JSON_DECLARE(NcclConfFacts)

/// The line NCCL takes a variable from when the environment does not set it: the first file that
/// sets it (NCCL applies each line with setenv(name, value, 0)); nullopt when none does.
struct ConfSetting {
  const ConfFile* file;
  const ConfEntry* entry;
};
inline std::optional<ConfSetting> first_conf_setting(const NcclConfFacts& conf, std::string_view name) {
  for (const ConfFile& file : conf.files) {
    const ConfFileContents* contents = file.contents.value();
    if (contents == nullptr) continue;
    for (const ConfEntry& e : contents->entries) {
      if (e.name == name) return ConfSetting{&file, &e};
    }
  }
  return std::nullopt;
}

}  // namespace preflight
