// SPDX-License-Identifier: MIT
// NCCL's grammar for interface and HCA lists (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME as preflight
// judges it, NCCL_IB_HCA), as parseStringList()/matchIfList() implement it in NCCL's
// src/misc/utils.cc: a comma-separated list; a leading '^' makes it an exclude list; then a leading
// '=' makes every entry an exact name instead of a prefix; each entry may carry ":port".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

struct NcclNameEntry {
  std::string name;         // "eth", "mlx5_1"
  std::optional<int> port;  // ":1"; nullopt: any port
};

struct NcclNameList {
  bool exclude = false;  // leading '^'
  bool exact = false;    // '=' (after the '^', if any)
  std::vector<NcclNameEntry> entries;
};

/// Parses a value as NCCL 2.30's parseStringList does: after the leading '^' and '=' one more
/// leading '^' or '=' is skipped; entries with no name (",," or ":1") are dropped; the text after
/// ':' is read with atoi() (":abc" is port 0, ":-1" means any port = nullopt) and the rest of the
/// entry is ignored.
NcclNameList parse_nccl_names(std::string_view value);

/// True when `name` (with `port`, for HCAs) is selected by the list: an entry matches when its name
/// is a prefix of `name` (or equal, with '='), and its port is unset or equal; an exclude list
/// selects what no entry matches. An empty list selects every name (include) or none (exclude), as
/// matchIfList() does.
bool nccl_selects(const NcclNameList& list, std::string_view name, std::optional<int> port = std::nullopt);

/// The entries that a longer name also matches as a prefix, among `names`: "eth1" matching "eth10"
/// (the prefix trap). Returns "entry -> other name" pairs; empty for '=' lists.
std::vector<std::pair<std::string, std::string>> nccl_prefix_traps(const NcclNameList& list,
                                                                   const std::vector<std::string>& names);

}  // namespace preflight
