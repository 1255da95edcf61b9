// SPDX-License-Identifier: MIT
#include "core/fast_json.hpp"

#ifdef PREFLIGHT_HAVE_SIMDJSON

#include <cmath>
#include <concepts>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace preflight::fast_json {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

[[noreturn]] void give_up() { throw GiveUp{}; }

std::int64_t int64_of(const element& e) {
  std::int64_t v = 0;
  if (e.get_int64().get(v) != simdjson::SUCCESS) give_up();
  return v;
}

std::uint64_t uint64_of(const element& e) {
  std::uint64_t v = 0;
  if (e.get_uint64().get(v) != simdjson::SUCCESS) give_up();
  return v;
}

/// A floating-point number float_out_of_range() lets through: finite and inside (-1, 65536).
double in_range_float(const element& e) {
  double d = 0;
  if (e.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d) || d <= -1.0 || d >= 65536.0) give_up();
  return d;
}

/// A member no field reads: nlohmann ignores it, but float_out_of_range() looks into it too.
void unread(const element& e) {
  switch (e.type()) {
    case element_type::DOUBLE: in_range_float(e); break;
    case element_type::ARRAY:
      for (const element child : array_of(e)) unread(child);
      break;
    case element_type::OBJECT:
      for (const simdjson::dom::key_value_pair member : object_of(e)) unread(member.value);
      break;
    default: break;
  }
}

// The fact structs' readers, declared before any is defined (they nest in any order).
#define PREFLIGHT_FACT(Type, ...) void read_value(const element& e, Type& t);
#include "core/facts_fields.inc"
#include "core/facts_gpu_fields.inc"
#undef PREFLIGHT_FACT
// and the templates, which call one another whatever the order.
template <typename T>
void read_value(const element& e, std::optional<T>& out);
template <typename T>
void read_value(const element& e, std::vector<T>& out);
template <typename T>
void read_value(const element& e, std::map<std::string, T>& out);
template <typename T>
void read_value(const element& e, Probed<T>& out);

void read_value(const element& e, std::string& out) { out.assign(text(e)); }

void read_value(const element& e, bool& out) {
  if (e.get_bool().get(out) != simdjson::SUCCESS) give_up();
}

// nlohmann converts any number (and true/false) into a double; a float only where float_out_of_range
// passes it.
void read_value(const element& e, double& out) {
  switch (e.type()) {
    case element_type::INT64: out = static_cast<double>(int64_of(e)); break;
    case element_type::UINT64: out = static_cast<double>(uint64_of(e)); break;
    case element_type::DOUBLE: out = in_range_float(e); break;
    default: give_up();
  }
}

// An integer field takes an integer it holds; a float (which nlohmann truncates), a bool or a
// number out of the field's range are left to nlohmann.
template <std::integral T>
requires(!std::same_as<T, bool>) void read_value(const element& e, T& out) {
  if (e.type() == element_type::INT64) {
    const std::int64_t v = int64_of(e);
    if (!std::in_range<T>(v)) give_up();
    out = static_cast<T>(v);
  } else if (e.type() == element_type::UINT64) {
    const std::uint64_t v = uint64_of(e);
    if (!std::in_range<T>(v)) give_up();
    out = static_cast<T>(v);
  } else {
    give_up();
  }
}

template <typename T>
void read_value(const element& e, std::optional<T>& out) {
  if (e.is_null()) {
    out.reset();
    return;
  }
  T v{};
  read_value(e, v);
  out = std::move(v);
}

template <typename T>
void read_value(const element& e, std::vector<T>& out) {
  out.clear();
  for (const element item : array_of(e)) {
    T v{};
    read_value(item, v);
    out.push_back(std::move(v));
  }
}

template <typename T>
void read_value(const element& e, std::map<std::string, T>& out) {
  out.clear();
  for (const simdjson::dom::key_value_pair member : object_of(e)) {
    T v{};
    read_value(member.value, v);
    out.insert_or_assign(std::string(member.key), std::move(v));  // a repeated key: the last, as nlohmann
  }
}

void read_value(const element& e, EnvSnapshot& out) {
  std::map<std::string, std::string> vars;
  read_value(e, vars);
  out = EnvSnapshot(std::move(vars));
}

// {"value": ..., "source": "..."} or {"error": "not_found", "detail": "...", "source": "..."}
template <typename T>
void read_value(const element& e, Probed<T>& out) {
  std::string source;
  std::string error = "not_probed";
  std::string detail;
  std::optional<element> value;
  for (const simdjson::dom::key_value_pair member : object_of(e)) {
    if (member.key == "value") {
      value = member.value;
    } else if (member.key == "source") {
      read_value(member.value, source);
    } else if (member.key == "error") {
      read_value(member.value, error);
    } else if (member.key == "detail") {
      read_value(member.value, detail);
    } else {
      unread(member.value);
    }
  }
  if (value) {
    T v{};
    read_value(*value, v);
    out = Probed<T>::ok(std::move(v), std::move(source));
  } else {
    out = Probed<T>::error(probe_errc_from_string(error), std::move(detail), std::move(source));
  }
}

// A struct: each member the field of its name (a repeated key: the last, as nlohmann), a missing
// one the field's default.
#define PREFLIGHT_FAST_FIELD(field) \
  if (key == #field) {              \
    read_value(value, t.field);     \
    continue;                       \
  }
#define PREFLIGHT_FACT(Type, ...)                                                  \
  void read_value(const element& e, Type& t) {                                     \
    const simdjson::dom::object o = object_of(e);                                  \
    t = Type{};                                                                    \
    for (const simdjson::dom::key_value_pair member : o) {                         \
      const std::string_view key = member.key;                                     \
      const element& value = member.value;                                         \
      NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(PREFLIGHT_FAST_FIELD, __VA_ARGS__)) \
      unread(value);                                                               \
    }                                                                              \
  }
#include "core/facts_fields.inc"
#include "core/facts_gpu_fields.inc"
#undef PREFLIGHT_FACT
#undef PREFLIGHT_FAST_FIELD

}  // namespace

std::string_view text(const element& e) {
  std::string_view v;
  if (e.get_string().get(v) != simdjson::SUCCESS) give_up();
  return v;
}

simdjson::dom::object object_of(const element& e) {
  simdjson::dom::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) give_up();
  return o;
}

simdjson::dom::array array_of(const element& e) {
  simdjson::dom::array a;
  if (e.get_array().get(a) != simdjson::SUCCESS) give_up();
  return a;
}

int int_of(const element& e) {
  int v = 0;
  read_value(e, v);
  return v;
}

std::vector<std::string> strings_of(const element& e) {
  std::vector<std::string> out;
  read_value(e, out);
  return out;
}

void read(const element& e, RankFacts& out) { read_value(e, out); }

nlohmann::json to_nlohmann(const element& e) {
  switch (e.type()) {
    case element_type::OBJECT: {
      nlohmann::json out = nlohmann::json::object();
      for (const simdjson::dom::key_value_pair member : object_of(e)) {
        out[std::string(member.key)] = to_nlohmann(member.value);  // a repeated key: the last
      }
      return out;
    }
    case element_type::ARRAY: {
      nlohmann::json out = nlohmann::json::array();
      for (const element item : array_of(e)) out.push_back(to_nlohmann(item));
      return out;
    }
    case element_type::STRING: return nlohmann::json(text(e));
    case element_type::INT64: {
      const std::int64_t v = int64_of(e);
      if (v >= 0) return nlohmann::json(static_cast<std::uint64_t>(v));  // nlohmann's parser: unsigned
      return nlohmann::json(v);
    }
    case element_type::UINT64: return nlohmann::json(uint64_of(e));
    case element_type::DOUBLE: {
      double d = 0;
      if (e.get_double().get(d) != simdjson::SUCCESS) give_up();
      return nlohmann::json(d);
    }
    case element_type::BOOL: {
      bool b = false;
      if (e.get_bool().get(b) != simdjson::SUCCESS) give_up();
      return nlohmann::json(b);
    }
    case element_type::NULL_VALUE: return nlohmann::json(nullptr);
  }
  give_up();
}

}  // namespace preflight::fast_json

#endif
