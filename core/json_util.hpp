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
