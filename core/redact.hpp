// SPDX-License-Identifier: MIT
// The one redaction rule of every output (the text, JSON, JUnit and Prometheus reports, the
// per-rank and merged JSON files, a capture's environment): which variable names hold secrets,
// the "user:password" of a URL in any value, and the Redactor that scrubs both, plus the secret
// values of a known environment, from every string before it is shown. Pure: text in, text out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/env.hpp"

namespace preflight {

/// True for a variable whose value is a secret (tokens, passwords, keys, credentials, Open MPI's
/// transport key, ...), in any case; the rules and why each is there are in core/redact.cpp.
/// NCCL_IB_PKEY, SSH_AUTH_SOCK, KRB5CCNAME, TOKENIZERS_PARALLELISM and PWD are not secrets.
bool is_secret_name(std::string_view name);

/// "<redacted: 13 characters>": what every output shows in place of a redacted value (its length
/// in characters, UTF-8 sequences counted once).
std::string redaction_marker(std::string_view redacted);
/// Whether text starts with a marker redaction_marker() writes.
bool starts_with_redaction_marker(std::string_view text);

/// The "user:password" of every authority in text replaced by its marker: the characters before
/// the last '@' of a word that is followed by a host (a letter, digit or '['), back to a '/' (the
/// "//" of a scheme), a space, a quote or a bracket, without a leading "NAME=" or "--option=";
/// only when they hold a ':' followed by a password. So "tcp://user:pw@host:29500",
/// "NCCL_COMM_ID=user:pw@10.0.0.1:29500" and "redis://:pw@host" lose "user:pw" (":pw"), while
/// "host:29500", "[fe80::1]:29500", "git@github.com" and "alice@example.com" stay as they are.
std::string redact_userinfo(std::string_view text);

/// The value of every NAME=value in text whose NAME is_secret_name() replaced by its marker: the
/// value runs to the next space or quote (or, when it starts with a quote, to the closing one).
std::string redact_secret_assignments(std::string_view text);

/// A configuration file's text (NCCL's nccl.conf: one NAME=value a line, the value to the line's
/// end) with the value of every line whose NAME is_secret_name() replaced by its marker, and the
/// two rules above applied to every other line; nothing else changes (line ends included).
/// `urls` false: not the userinfo rule (binary files, where it could match by chance).
std::string redact_secret_lines(std::string_view text, bool urls = true);

/// Scrubs what an output shows. It knows the secret values of the environments (and NCCL
/// configuration entries) it is given, and applies to every string the two rules above. A value
/// of 8 characters or more is redacted wherever it appears, and so is a run of at least its first
/// 12 characters (a value shown truncated); a shorter one (4 to 7 characters) only where it stands
/// as a word of its own; shorter ones are redacted where they are shown as their variable's value.
class Redactor {
 public:
  Redactor() = default;
  explicit Redactor(const EnvSnapshot& env) { add_env(env); }

  /// The values of env's secret variables, and the "user:password" (and the password) of a URL in
  /// any of its values, become known secrets.
  void add_env(const EnvSnapshot& env);
  /// A variable set elsewhere (an NCCL configuration file's NAME=value): its value becomes a known
  /// secret when the name is one, as add_env() does.
  void add_variable(std::string_view name, std::string_view value);
  /// One value known to be a secret (already-redacted markers and values under 4 characters are
  /// not searched for in text).
  void add_secret(std::string_view value);
  bool knows_secrets() const { return !m_secrets.empty(); }

  /// text with every known secret, every secret NAME=value and every URL userinfo redacted.
  std::string text(std::string_view in) const;
  /// False where text(in) is sure to be `in` (a cheap test: no secret known, no '=' and no '@').
  bool may_change(std::string_view in) const;
  /// Every string of doc (values and object keys, recursively) through text(); besides, the value
  /// of a member whose key is a secret variable name in capitals ("HF_TOKEN": "...") and the
  /// "value" of an object whose "name" is a secret name ({"name": "NCCL_PASSWORD", "value": ...})
  /// are redacted whole.
  void json(nlohmann::json& doc) const;
  void json(nlohmann::ordered_json& doc) const;
  /// The environment as an output shows it: secret variables' values redacted whole (markers
  /// already there are kept), every other value through text().
  EnvSnapshot env(const EnvSnapshot& env) const;

 private:
  struct Secret {
    std::string value;
    std::size_t shown_length;  // the marker's count
  };
  void add_one(std::string_view value, std::size_t shown_length);
  std::vector<Secret> m_secrets;  // longest first, unique
};

}  // namespace preflight
