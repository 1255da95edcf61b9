// SPDX-License-Identifier: MIT
#include "core/env.hpp"

#include <cstring>

#include <nlohmann/json.hpp>

namespace preflight {

const std::vector<std::string_view>& EnvSnapshot::kept_names() {
  static const std::vector<std::string_view> kNames = {
      "RANK",
      "WORLD_SIZE",
      "LOCAL_RANK",
      "LOCAL_WORLD_SIZE",
      "GROUP_RANK",
      "GROUP_WORLD_SIZE",
      "ROLE_RANK",
      "ROLE_WORLD_SIZE",
      "MASTER_ADDR",
      "MASTER_PORT",
      "NODE_RANK",
      "LD_LIBRARY_PATH",
      "LD_PRELOAD",
      "HOME",
      "PATH",
      "HOSTNAME",
      "USER",
      "NO_COLOR",
      "TERM",
      "LC_ALL",
      "LC_CTYPE",
      "LANG",
      "CONDA_PREFIX",
      "VIRTUAL_ENV",
      "PYTHONPATH",
      // On DCGM's list of variables that must not be set for a GPU job.
      "NSIGHT_CUDA_DEBUGGER",
      "COMPUTE_PROFILE",
      "OPENCL_PROFILE",
  };
  return kNames;
}

const std::vector<std::string_view>& EnvSnapshot::kept_prefixes() {
  static const std::vector<std::string_view> kPrefixes = {
      "NCCL_", "TORCH_", "TORCHELASTIC_", "PYTORCH_", "GLOO_",  "HWLOC_", "CUDA_", "NVIDIA_", "OMPI_",      "PMI_",
      "PMIX_", "SLURM_", "MPI_",          "MV2_",     "HYDRA_", "PALS_",  "UCX_",  "FI_",     "PREFLIGHT_",
  };
  return kPrefixes;
}

EnvSnapshot EnvSnapshot::capture(char** environ_ptr) {
  std::map<std::string, std::string> vars;
  for (char** e = environ_ptr; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    std::string name(*e, static_cast<std::size_t>(eq - *e));
    bool keep = false;
    for (std::string_view n : kept_names()) keep = keep || name == n;
    for (std::string_view p : kept_prefixes()) keep = keep || name.rfind(p, 0) == 0;
    if (keep) vars.emplace(std::move(name), std::string(eq + 1));
  }
  return EnvSnapshot(std::move(vars));
}

std::optional<std::string> EnvSnapshot::get(std::string_view name) const {
  const auto it = m_vars.find(std::string(name));
  if (it == m_vars.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, std::string>> EnvSnapshot::with_prefix(std::string_view prefix) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = m_vars.lower_bound(std::string(prefix)); it != m_vars.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

void to_json(nlohmann::json& j, const EnvSnapshot& env) {
  j = nlohmann::json::object();
  for (const auto& [k, v] : env.all()) {
    // Environment values are arbitrary bytes; JSON needs UTF-8. Keep what is valid, replace the rest.
    j[k] = v;
  }
}

void from_json(const nlohmann::json& j, EnvSnapshot& env) {
  std::map<std::string, std::string> vars;
  for (const auto& [k, v] : j.items()) vars.emplace(k, v.get<std::string>());
  env = EnvSnapshot(std::move(vars));
}

}  // namespace preflight
