// SPDX-License-Identifier: MIT
#include "core/nvidia_require.hpp"

#include <cctype>
#include <vector>

#include "core/text.hpp"

namespace preflight {
namespace {

enum class Tri { False, True, Unknown };

enum class Op { Ge, Le, Gt, Lt, Eq, Ne };

struct Constraint {
  std::string name;
  Op op = Op::Eq;
  std::string value;
};

std::optional<Constraint> parse_constraint(std::string_view token) {
  static constexpr std::pair<std::string_view, Op> kOps[] = {
      {">=", Op::Ge}, {"<=", Op::Le}, {"!=", Op::Ne}, {"==", Op::Eq}, {">", Op::Gt}, {"<", Op::Lt}, {"=", Op::Eq}};
  const std::size_t at = token.find_first_of("<>=!");
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  Constraint c;
  c.name = to_lower(token.substr(0, at));
  const std::string_view rest = token.substr(at);
  bool found = false;
  for (const auto& [text, op] : kOps) {
    if (rest.substr(0, text.size()) == text) {
      c.op = op;
      c.value = std::string(rest.substr(text.size()));
      found = true;
      break;
    }
  }
  if (!found || c.value.empty() || c.value.find_first_of("<>=!") != std::string::npos) return std::nullopt;
  if (c.name == "cuda" || c.name == "driver" || c.name == "arch") {
    if (!Version::parse(c.value)) return std::nullopt;
  } else if (c.name == "brand") {
    if (c.op != Op::Eq && c.op != Op::Ne) return std::nullopt;
    for (const char ch : c.value) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') return std::nullopt;
    }
    c.value = to_lower(c.value);
  } else {
    return std::nullopt;
  }
  return c;
}

bool compare(const Version& have, Op op, const Version& want) {
  switch (op) {
    case Op::Ge: return have >= want;
    case Op::Le: return have <= want;
    case Op::Gt: return have > want;
    case Op::Lt: return have < want;
    case Op::Eq: return have == want;
    case Op::Ne: return have != want;
  }
  return false;
}

struct Host {
  const std::optional<Version>& driver;
  const std::optional<Version>& cuda;
  std::string brand;
  const std::optional<Version>& arch;
};

Tri eval(const Constraint& c, const Host& host) {
  if (c.name == "brand") {
    if (host.brand.empty()) return Tri::Unknown;
    const bool eq = host.brand == c.value;
    return (c.op == Op::Eq) == eq ? Tri::True : Tri::False;
  }
  const std::optional<Version>& have = c.name == "cuda" ? host.cuda : c.name == "driver" ? host.driver : host.arch;
  if (!have) return Tri::Unknown;
  return compare(*have, c.op, *Version::parse(c.value)) ? Tri::True : Tri::False;
}

std::string describe_failure(const Constraint& c, std::string_view token, const Host& host) {
  std::string s = std::string(token) + " does not hold";
  if (c.name == "cuda" && host.cuda) s += " (the driver supports CUDA " + host.cuda->str() + ")";
  if (c.name == "driver" && host.driver) s += " (driver " + host.driver->str() + ")";
  if (c.name == "arch" && host.arch) s += " (compute capability " + host.arch->str() + ")";
  if (c.name == "brand") s += " (brand " + host.brand + ")";
  return s;
}

}  // namespace

const char* to_string(RequireStatus s) {
  switch (s) {
    case RequireStatus::Satisfied: return "satisfied";
    case RequireStatus::NotSatisfied: return "not satisfied";
    case RequireStatus::Unknown: return "unknown";
    case RequireStatus::Malformed: return "malformed";
  }
  return "malformed";
}

RequireResult evaluate_nvidia_require(std::string_view text, const std::optional<Version>& driver_version,
                                      const std::optional<Version>& cuda_version_of_driver, std::string_view brand,
                                      const std::optional<Version>& arch) {
  const Host host{driver_version, cuda_version_of_driver, to_lower(trim(brand)), arch};
  RequireResult result;

  struct Group {
    std::string text;
    std::vector<std::pair<Constraint, std::string>> constraints;  // with the token as written
  };
  std::vector<Group> groups;
  for (const std::string_view group_text : split_ws(text)) {
    Group g{std::string(group_text), {}};
    for (const std::string_view raw : split(group_text, ',')) {
      const std::string_view token = trim(raw);
      const auto c = parse_constraint(token);
      if (!c) {
        result.status = RequireStatus::Malformed;
        result.token = token.empty() ? std::string(group_text) : std::string(token);
        result.detail = "\"" + printable(result.token, 60) +
                        "\" is not a constraint (cuda, driver, arch or brand "
                        "with >=, <=, >, <, =)";
        return result;
      }
      g.constraints.emplace_back(*c, std::string(token));
    }
    groups.push_back(std::move(g));
  }
  if (groups.empty()) {
    result.status = RequireStatus::Satisfied;
    result.detail = "nothing is required";
    return result;
  }

  bool any_unknown = false;
  std::string first_failure, first_unknown;
  for (const Group& g : groups) {
    Tri tri = Tri::True;
    std::string failure, unknown;
    for (const auto& [c, token] : g.constraints) {
      const Tri t = eval(c, host);
      if (t == Tri::False) {
        tri = Tri::False;
        failure = describe_failure(c, token, host);
        break;
      }
      if (t == Tri::Unknown) {
        tri = Tri::Unknown;
        if (unknown.empty()) unknown = token;
      }
    }
    if (tri == Tri::True) {
      result.status = RequireStatus::Satisfied;
      result.group = g.text;
      result.detail = "\"" + g.text + "\" holds";
      return result;
    }
    if (tri == Tri::Unknown) {
      any_unknown = true;
      if (first_unknown.empty()) first_unknown = unknown;
    } else if (first_failure.empty()) {
      first_failure = failure;
    }
  }
  if (any_unknown) {
    result.status = RequireStatus::Unknown;
    result.detail = "cannot tell whether \"" + first_unknown + "\" holds: the host's " +
                    std::string(first_unknown.substr(0, first_unknown.find_first_of("<>=!"))) + " is not known";
    return result;
  }
  result.status = RequireStatus::NotSatisfied;
  result.detail = groups.size() == 1
                      ? first_failure
                      : "none of the " + std::to_string(groups.size()) + " groups holds; the first: " + first_failure;
  return result;
}

}  // namespace preflight
