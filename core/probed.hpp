// SPDX-License-Identifier: MIT
// Probed<T>: a fact, or the reason it could not be gathered, plus where it came from.
// A default-constructed Probed is "not probed", so a field nobody filled can never read as a
// valid false or 0: checks that meet it report UNKNOWN (fail closed).
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

namespace preflight {

enum class ProbeErrc {
  NotProbed,         // nobody gathered it (a probe did not run or did not finish)
  NotFound,          // the file, device or variable does not exist
  PermissionDenied,  // exists, but this user may not read it
  Unreadable,        // exists, but reading failed (EIO, EINVAL, ...)
  ParseError,        // read, but the contents were not what the format promises
  Unsupported,       // not applicable on this system (e.g. no cgroup memory controller)
  Timeout,           // the probe did not finish within its deadline
  OutOfBudget,       // preflight's own budget (what was left of a shared phase) ended it before its own deadline
  Crashed,           // the contained helper died with a signal
  LibraryMissing,    // dlopen failed
  ApiError,          // a library call returned an error
};

const char* to_string(ProbeErrc code);
ProbeErrc probe_errc_from_string(std::string_view text);

struct ProbeError {
  ProbeErrc code = ProbeErrc::NotProbed;
  std::string detail = "not probed";
};

template <typename T>
class Probed {
 public:
  Probed() = default;

  static Probed ok(T value, std::string source) {
    Probed p;
    p.m_state = std::move(value);
    p.m_source = std::move(source);
    return p;
  }
  static Probed error(ProbeErrc code, std::string detail, std::string source = {}) {
    Probed p;
    p.m_state = ProbeError{code, std::move(detail)};
    p.m_source = std::move(source);
    return p;
  }
  static Probed error(ProbeError err, std::string source = {}) {
    Probed p;
    p.m_state = std::move(err);
    p.m_source = std::move(source);
    return p;
  }

  bool ok() const { return std::holds_alternative<T>(m_state); }
  const T* value() const { return std::get_if<T>(&m_state); }
  T* value() { return std::get_if<T>(&m_state); }
  const ProbeError* error() const { return std::get_if<ProbeError>(&m_state); }
  const std::string& source() const { return m_source; }

  /// "why it is missing" in one line, for UNKNOWN verdicts: "/proc/meminfo: permission denied".
  /// "source: detail", the source said once: a detail that already starts with it (dlerror()'s
  /// "libcuda.so.1: cannot open shared object file") is not prefixed again.
  std::string why() const {
    if (const ProbeError* e = error()) {
      if (m_source.empty() || (e->detail.starts_with(m_source) && e->detail.size() > m_source.size() &&
                               e->detail[m_source.size()] == ':')) {
        return e->detail;
      }
      return m_source + ": " + e->detail;
    }
    return {};
  }

 private:
  std::variant<ProbeError, T> m_state;
  std::string m_source;
};

}  // namespace preflight

// JSON form: {"value": ..., "source": "..."} or {"error": "not_found", "detail": "...", "source": "..."}
namespace nlohmann {
template <typename T>
struct adl_serializer<preflight::Probed<T>> {
  static void to_json(json& j, const preflight::Probed<T>& p) {
    j = json::object();
    if (const T* v = p.value()) {
      j["value"] = *v;
    } else {
      j["error"] = preflight::to_string(p.error()->code);
      j["detail"] = p.error()->detail;
    }
    if (!p.source().empty()) j["source"] = p.source();
  }
  static void from_json(const json& j, preflight::Probed<T>& p) {
    std::string source = j.value("source", std::string());
    if (j.contains("value")) {
      p = preflight::Probed<T>::ok(j.at("value").get<T>(), std::move(source));
    } else {
      p = preflight::Probed<T>::error(preflight::probe_errc_from_string(j.value("error", std::string("not_probed"))),
                                      j.value("detail", std::string()), std::move(source));
    }
  }
};
}  // namespace nlohmann
