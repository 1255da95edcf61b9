// SPDX-License-Identifier: MIT
#include "core/json_util.hpp"

#include <cmath>
#include <vector>

namespace preflight {
namespace {

constexpr double kLowest = -1.0;     // exclusive: truncates to 0 at worst
constexpr double kHighest = 65536.0; // exclusive: fits the narrowest integer field (16 bits)

std::string escaped(const std::string& key) {
  std::string out;
  for (char ch : key) {
    if (ch == '~') out += "~0";
    else if (ch == '/') out += "~1";
    else out += ch;
  }
  return out;
}

}  // namespace

std::optional<std::string> float_out_of_range(const nlohmann::json& doc) {
  // Iterative, so that a deeply nested document cannot exhaust the stack.
  std::vector<std::pair<const nlohmann::json*, std::string>> todo{{&doc, ""}};
  while (!todo.empty()) {
    auto [node, where] = todo.back();
    todo.pop_back();
    if (node->is_number_float()) {
      const double v = node->get<double>();
      if (!std::isfinite(v) || v <= kLowest || v >= kHighest) return where.empty() ? std::string("/") : where;
    } else if (node->is_object()) {
      for (auto it = node->begin(); it != node->end(); ++it) todo.emplace_back(&it.value(), where + "/" + escaped(it.key()));
    } else if (node->is_array()) {
      for (std::size_t i = 0; i < node->size(); ++i) todo.emplace_back(&(*node)[i], where + "/" + std::to_string(i));
    }
  }
  return std::nullopt;
}

}  // namespace preflight
