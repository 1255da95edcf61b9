// SPDX-License-Identifier: MIT
// JSON support for std::optional (null when empty), used by the fact structs, and the guard that
// keeps outside JSON (merge's result files, the rank payloads) from reaching a float-to-integer
// conversion nlohmann::json cannot make safely.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace preflight {

/// The facts' floating-point fields hold seconds, milliseconds and GB/s: small, non-negative
/// numbers. Their integer fields may be as narrow as 16 bits, and nlohmann::json converts a
/// floating-point number into an integer field with a plain cast, undefined outside its range (a
/// 123-digit "cc_major" becomes a double). Outside JSON is therefore refused when any float in it
/// is not finite or lies outside (-1, 65536): the answer is where ("/ranks/0/gpu/cc_major"), or
/// nullopt when every number is in range.
std::optional<std::string> float_out_of_range(const nlohmann::json& doc);

}  // namespace preflight

// The JSON conversions of a fact struct: declared beside the struct, defined once in a .cpp with
// the fields named (the same keys and defaults as nlohmann's
// NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT: a missing key keeps the field's default).
// Defining them inline in the headers made every file that includes the facts instantiate every
// conversion again (seconds per file).
#define PREFLIGHT_JSON_DECLARE(Type)                                          \
  void to_json(nlohmann::json& nlohmann_json_j, const Type& nlohmann_json_t); \
  void from_json(const nlohmann::json& nlohmann_json_j, Type& nlohmann_json_t);
#define PREFLIGHT_JSON_DEFINE(Type, ...)                                                    \
  void to_json(nlohmann::json& nlohmann_json_j, const Type& nlohmann_json_t) {              \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__))                \
  }                                                                                         \
  void from_json(const nlohmann::json& nlohmann_json_j, Type& nlohmann_json_t) {            \
    const Type nlohmann_json_default_obj{};                                                 \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_FROM_WITH_DEFAULT, __VA_ARGS__)) \
  }

namespace nlohmann {
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) {
    if (v) {
      j = *v;
    } else {
      j = nullptr;
    }
  }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null()) {
      v.reset();
    } else {
      v = j.get<T>();
    }
  }
};
}  // namespace nlohmann
