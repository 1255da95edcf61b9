// SPDX-License-Identifier: MIT
// The environment, captured once at start-up. Checks and probes read this snapshot, never getenv,
// so tests hand them a literal map and a rank's environment can travel to rank 0.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace preflight {

class EnvSnapshot {
 public:
  EnvSnapshot() = default;
  explicit EnvSnapshot(std::map<std::string, std::string> vars) : m_vars(std::move(vars)) {}
  /// EnvSnapshot({{"NCCL_P2P_DISABLE", "true"}}) in tests.
  EnvSnapshot(std::initializer_list<std::pair<const std::string, std::string>> vars) : m_vars(vars) {}

  /// Captures the variables preflight and the job's libraries care about (see kept_prefixes()).
  static EnvSnapshot capture(char** environ_ptr);

  std::optional<std::string> get(std::string_view name) const;
  bool has(std::string_view name) const { return m_vars.count(std::string(name)) != 0; }
  /// All variables whose names start with prefix, in name order.
  std::vector<std::pair<std::string, std::string>> with_prefix(std::string_view prefix) const;
  const std::map<std::string, std::string>& all() const { return m_vars; }

  void set(std::string name, std::string value) { m_vars[std::move(name)] = std::move(value); }

  /// Names kept exactly, and prefixes kept, by capture().
  static const std::vector<std::string_view>& kept_names();
  static const std::vector<std::string_view>& kept_prefixes();

 private:
  std::map<std::string, std::string> m_vars;
};

void to_json(nlohmann::json& j, const EnvSnapshot& env);
void from_json(const nlohmann::json& j, EnvSnapshot& env);

}  // namespace preflight
