// SPDX-License-Identifier: MIT
// NCCL's configuration files ($NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf), gathered by
// probes/nccl_conf_probe.cpp. NCCL applies them with setenv(name, value, 0): the environment wins,
// the user's file beats the system file.
#pragma once

#include <string>
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

struct NcclConfFacts {
  std::vector<ConfFile> files;  // in NCCL's order of precedence (first wins after the environment)
  // Where the user file's directory came from: "/etc/passwd" (what NCCL's getpwuid() uses), "HOME"
  // (no passwd entry: NSS may still know one), or "" (no user file: NCCL_CONF_FILE set, or no home).
  std::string home_from;
};
PREFLIGHT_JSON_DECLARE(NcclConfFacts)

}  // namespace preflight
