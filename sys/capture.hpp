// SPDX-License-Identifier: MIT
// A node capture (`preflight capture DIR`): the /proc and /sys files the probes read, copied by the
// FileSystem seam's recorder, plus the facts no file holds, each in a facts file of its own
// (/dev/shm's statfs, the interfaces' addresses, the environment, the contained GPU helper's
// reports, the CUDA and NCCL libraries found, this process's binding, hwloc's XML export). The
// manifest says which format the capture is in and which facts it holds; --sysroot reads it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/env.hpp"
#include "core/redact.hpp"
#include "sys/file_system.hpp"

namespace preflight {

inline constexpr int kCaptureFormatVersion = 1;
inline constexpr std::string_view kCaptureFormat = "preflight-capture";
inline constexpr std::string_view kCaptureManifest = "/preflight-capture.json";

/// The facts a capture keeps in files of their own: name -> path inside the capture.
struct CaptureFactFile {
  std::string_view name;
  std::string_view path;
  std::string_view holds;  // for the manifest and the documentation
};
const std::vector<CaptureFactFile>& capture_fact_files();

/// What a --sysroot tree holds beyond its files: read once through the seam.
struct CapturedFacts {
  bool is_capture = false;  // the tree has a manifest
  std::string error;        // a manifest that could not be read (every fact is then "not in the capture")
  std::map<std::string, nlohmann::json> facts;  // the facts files the manifest lists and that could be read
  std::map<std::string, std::string> problems;  // listed, but unreadable: name -> why
  std::string topology_xml;                     // the host path of the capture's hwloc export ("" when it holds none)
  std::vector<std::string> dropped_env_values;

  const nlohmann::json* get(std::string_view name) const;
  /// "not in the capture (…)": why a fact is missing, for the probe that wanted it.
  std::string missing(std::string_view name, std::string_view what) const;
};

CapturedFacts load_capture(const FileSystem& fs);

/// The environment a capture records: the variables the checks read, the values of secret names
/// (is_secret_name(), core/redact.hpp) dropped (their names go into `dropped_values`), every other
/// value through the Redactor of every output (a URL's user:password redacted).
nlohmann::json captured_env_json(const EnvSnapshot& env);
/// The environment a capture recorded, through the same filter as a live run.
std::optional<EnvSnapshot> captured_env(const CapturedFacts& capture);

}  // namespace preflight
