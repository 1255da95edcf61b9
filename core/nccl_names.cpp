// SPDX-License-Identifier: MIT
#include "core/nccl_names.hpp"

#include "core/text.hpp"

namespace preflight {

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
  for (std::string_view part : split(value, ',')) {
    if (part.empty()) continue;
    NcclNameEntry e;
    const std::size_t colon = part.find(':');
    if (colon != std::string_view::npos) {
      const auto port = parse_int(part.substr(colon + 1));
      if (port && *port >= 0 && *port < 1 << 16) {
        e.port = static_cast<int>(*port);
        part = part.substr(0, colon);
      }
    }
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

bool nccl_selects(const NcclNameList& list, std::string_view name, std::optional<int> port) {
  bool matched = false;
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
