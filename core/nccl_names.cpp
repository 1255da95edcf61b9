// SPDX-License-Identifier: MIT
#include "core/nccl_names.hpp"

#include <cctype>
#include <climits>

#include "core/text.hpp"

namespace preflight {
namespace {

// atoi() as NCCL uses it on the text after ':': leading white space, an optional sign, decimal
// digits up to the first other character; no digits reads 0. Out-of-range values saturate.
long long c_atoi(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  long long value = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    value = value * 10 + (s[i] - '0');
    if (value > INT_MAX) value = INT_MAX;
  }
  return negative ? -value : value;
}

}  // namespace

// NCCL (ncclOsFindInterfaces, ncclIbInitDevices) strips a leading '^', then a leading '='; its
// parseStringList() then skips one more leading '^' or '='. An entry is the text up to ',' or ':';
// an entry with no name (",," or ":1") is dropped; after ':' atoi() reads the port and the rest of
// the entry is skipped. A port of -1 means "any port", as NCCL's matchPort() treats it.
NcclNameList parse_nccl_names(std::string_view value) {
  NcclNameList out;
  if (!value.empty() && value.front() == '^') {
    out.exclude = true;
    value.remove_prefix(1);
  }
  if (!value.empty() && value.front() == '=') {
    out.exact = true;
    value.remove_prefix(1);
  }
  if (!value.empty() && (value.front() == '^' || value.front() == '=')) value.remove_prefix(1);
  for (std::string_view part : split(value, ',')) {
    NcclNameEntry e;
    const std::size_t colon = part.find(':');
    if (colon != std::string_view::npos) {
      const long long port = c_atoi(part.substr(colon + 1));
      if (port != -1) e.port = static_cast<int>(port);
      part = part.substr(0, colon);
    }
    if (part.empty()) continue;
    e.name = std::string(part);
    out.entries.push_back(std::move(e));
  }
  return out;
}

namespace {
bool entry_matches(const NcclNameList& list, const NcclNameEntry& e, std::string_view name, std::optional<int> port) {
  const bool name_ok = list.exact ? name == e.name : name.starts_with(e.name);
  if (!name_ok) return false;
  return !e.port || !port || *e.port == *port;
}
}  // namespace

// matchIfList() returns true for an empty list ("no user list is defined"), and the caller XORs it
// with '^': an empty include list selects everything, an empty exclude list selects nothing.
bool nccl_selects(const NcclNameList& list, std::string_view name, std::optional<int> port) {
  bool matched = list.entries.empty();
  for (const NcclNameEntry& e : list.entries) {
    if (entry_matches(list, e, name, port)) {
      matched = true;
      break;
    }
  }
  return list.exclude ? !matched : matched;
}

std::vector<std::pair<std::string, std::string>> nccl_prefix_traps(const NcclNameList& list,
                                                                   const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> out;
  if (list.exact) return out;
  for (const NcclNameEntry& e : list.entries) {
    bool has_exact = false;
    for (const std::string& n : names) has_exact = has_exact || n == e.name;
    if (!has_exact) continue;  // the trap is a name that exists and a longer one that also matches
    for (const std::string& n : names) {
      if (n != e.name && n.starts_with(e.name)) out.emplace_back(e.name, n);
    }
  }
  return out;
}

}  // namespace preflight
