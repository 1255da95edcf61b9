// SPDX-License-Identifier: MIT
#include "core/json_util.hpp"

#include <cmath>
#include <vector>

namespace preflight {
namespace {

constexpr double kLowest = -1.0;      // exclusive: truncates to 0 at worst
constexpr double kHighest = 65536.0;  // exclusive: fits the narrowest integer field (16 bits)

std::string escaped(const std::string& key) {
  std::string out;
  for (char ch : key) {
    if (ch == '~')
      out += "~0";
    else if (ch == '/')
      out += "~1";
    else
      out += ch;
  }
  return out;
}

}  // namespace

std::optional<std::string> float_out_of_range(const nlohmann::json& doc) {
  const auto out_of_range = [](const nlohmann::json& v) {
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    return !std::isfinite(d) || d <= kLowest || d >= kHighest;
  };
  if (out_of_range(doc)) return std::string("/");
  if (!doc.is_structured()) return std::nullopt;
  // Iterative, so that a deeply nested document cannot exhaust the stack. The stack of open
  // containers, each at the member it is on, is the path: it is written out only for a bad number
  // (a result file of 4096 ranks holds millions of members).
  struct Open {
    const nlohmann::json* node;
    nlohmann::json::const_iterator at;
  };
  std::vector<Open> open{{&doc, doc.cbegin()}};
  while (!open.empty()) {
    Open& top = open.back();
    if (top.at == top.node->cend()) {
      open.pop_back();
      if (!open.empty()) ++open.back().at;
      continue;
    }
    const nlohmann::json& child = *top.at;
    if (out_of_range(child)) {
      std::string where;
      for (const Open& o : open) {
        where += "/" + (o.node->is_object() ? escaped(o.at.key()) : std::to_string(o.at - o.node->cbegin()));
      }
      return where;
    }
    if (child.is_structured()) {
      open.push_back({&child, child.cbegin()});  // `top` is not used after this
      continue;
    }
    ++top.at;
  }
  return std::nullopt;
}

}  // namespace preflight
