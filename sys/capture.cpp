// SPDX-License-Identifier: MIT
#include "sys/capture.hpp"

#include <algorithm>

#include "core/json_util.hpp"
#include "core/redact.hpp"
#include "core/text.hpp"

namespace preflight {

const std::vector<CaptureFactFile>& capture_fact_files() {
  static const std::vector<CaptureFactFile> kFiles = {
      {"env", "/facts/env.json",
       "the environment variables the checks read (secrets' values dropped, URL user:password redacted)"},
      {"shm", "/facts/shm.json", "statfs/statvfs of /dev/shm and the allocation test"},
      {"net", "/facts/net.json",
       "the interfaces with their addresses (getifaddrs), MASTER_ADDR/MASTER_PORT as resolved"},
      {"gpu", "/facts/gpu.json",
       "the contained GPU helper's reports: NVML, CUDA driver, GPUs, P2P matrix, peer copies, smoke test"},
      {"nccl", "/facts/nccl.json", "the libnccl.so.2 the job loads as the helper read it (version, path, CUDA build)"},
      {"cuda_runtime", "/facts/cuda_runtime.json",
       "the CUDA runtimes, frameworks and NCCL libraries found for the job"},
      {"process", "/facts/process.json", "this process's CPU affinity and memory policy"},
      {"disk", "/facts/disk.json",
       "statvfs and the mount of each checkpoint directory (--checkpoint-dir, default the current directory)"},
      {"topology", "/topology.xml", "hwloc's XML export of the machine (lstopo --of xml)"},
  };
  return kFiles;
}

const nlohmann::json* CapturedFacts::get(std::string_view name) const {
  const auto it = facts.find(std::string(name));
  return it == facts.end() ? nullptr : &it->second;
}

std::string CapturedFacts::missing(std::string_view name, std::string_view what) const {
  std::string why = "not in the capture: ";
  if (!is_capture) return why + "the --sysroot tree is not a `preflight capture` and holds no " + std::string(what);
  if (!error.empty()) return why + "its manifest cannot be read (" + error + ")";
  if (const auto it = problems.find(std::string(name)); it != problems.end()) return why + it->second;
  return why + "it holds no " + std::string(what);
}

nlohmann::json captured_env_json(const EnvSnapshot& env) {
  const Redactor redactor(env);
  nlohmann::json vars = nlohmann::json::object();
  nlohmann::json dropped = nlohmann::json::array();
  for (const auto& [name, value] : env.all()) {
    if (is_secret_name(name)) {
      dropped.push_back(name);
    } else {
      vars[name] = redactor.text(value);  // a URL's user:password, a secret inside another value
    }
  }
  return {{"vars", vars}, {"dropped_values", dropped}};
}

std::optional<EnvSnapshot> captured_env(const CapturedFacts& capture) {
  const nlohmann::json* doc = capture.get("env");
  if (doc == nullptr || !doc->is_object() || !doc->contains("vars") || !doc->at("vars").is_object())
    return std::nullopt;
  std::vector<std::string> entries;
  for (const auto& [name, value] : doc->at("vars").items()) {
    if (!value.is_string() || name.empty() || name.find('=') != std::string::npos) continue;
    entries.push_back(name + "=" + value.get<std::string>());
  }
  std::vector<char*> environ_like;
  for (std::string& e : entries) environ_like.push_back(e.data());
  environ_like.push_back(nullptr);
  return EnvSnapshot::capture(environ_like.data());
}

CapturedFacts load_capture(const FileSystem& fs) {
  CapturedFacts out;
  const Probed<std::string> manifest = fs.read(kCaptureManifest, 64u << 20);
  if (!manifest.ok()) {
    if (manifest.error()->code != ProbeErrc::NotFound) {
      out.is_capture = true;
      out.error = std::string(kCaptureManifest.substr(1)) + ": " + manifest.error()->detail;
    }
    return out;
  }
  out.is_capture = true;
  const nlohmann::json doc = nlohmann::json::parse(*manifest.value(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.error = "preflight-capture.json is not JSON";
    return out;
  }
  if (doc.value("format", std::string()) != kCaptureFormat) {
    out.error = "preflight-capture.json has no \"format\": \"preflight-capture\"";
    return out;
  }
  const nlohmann::json version = doc.value("version", nlohmann::json());
  if (!version.is_number_integer() || version.get<long long>() < 1 ||
      version.get<long long>() > kCaptureFormatVersion) {
    out.error = "format version " + (version.is_number_integer() ? version.dump() : "not a number") +
                ", this preflight reads versions 1 to " + std::to_string(kCaptureFormatVersion);
    return out;
  }
  const nlohmann::json listed = doc.value("facts", nlohmann::json::object());
  for (const CaptureFactFile& f : capture_fact_files()) {
    if (!listed.is_object() || !listed.contains(f.name)) continue;
    if (f.name == "topology") {
      if (fs.exists(f.path)) {
        out.topology_xml = fs.host_path(f.path);
      } else {
        out.problems[std::string(f.name)] =
            "the manifest lists " + std::string(f.path.substr(1)) + ", which is missing";
      }
      continue;
    }
    const Probed<std::string> text = fs.read(f.path, 256u << 20);
    if (!text.ok()) {
      out.problems[std::string(f.name)] = std::string(f.path.substr(1)) + ": " + text.error()->detail;
      continue;
    }
    nlohmann::json fact = nlohmann::json::parse(*text.value(), nullptr, false);
    if (fact.is_discarded()) {
      out.problems[std::string(f.name)] = std::string(f.path.substr(1)) + " is not JSON";
      continue;
    }
    // Outside input, as merge's files are: a number no fact field can hold safely is refused.
    if (const std::optional<std::string> bad = float_out_of_range(fact)) {
      out.problems[std::string(f.name)] = std::string(f.path.substr(1)) + " holds a number out of range";
      continue;
    }
    out.facts.emplace(std::string(f.name), std::move(fact));
  }
  if (const auto dropped = doc.value("dropped_env_values", nlohmann::json::array()); dropped.is_array()) {
    for (const auto& n : dropped) {
      if (n.is_string()) out.dropped_env_values.push_back(n.get<std::string>());
    }
  }
  return out;
}

}  // namespace preflight
