// SPDX-License-Identifier: MIT
#include "core/cgroup.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace preflight {
namespace {

constexpr const char* kSource = "/proc/self/cgroup";

bool is_below(std::string_view path, std::string_view root) {
  if (root == "/") return path.substr(0, 1) == "/";
  return path == root || (path.size() > root.size() && path.substr(0, root.size()) == root && path[root.size()] == '/');
}

bool in_list(std::string_view comma_list, std::string_view name) {
  const std::vector<std::string_view> items = split(comma_list, ',');
  return std::find(items.begin(), items.end(), name) != items.end();
}

struct CgroupLine {
  std::int64_t id = 0;
  std::string_view controllers;
  std::string_view path;
};

/// "4:cpuacct,memory:/path": the path is everything after the second colon (it may hold colons).
std::optional<CgroupLine> split_cgroup_line(std::string_view line) {
  const std::size_t first = line.find(':');
  const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const std::optional<std::int64_t> id = parse_int(line.substr(0, first));
  const std::string_view path = line.substr(second + 1);
  if (!id || path.substr(0, 1) != "/") return std::nullopt;
  return CgroupLine{*id, line.substr(first + 1, second - first - 1), path};
}

std::string_view parent_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string_view::npos ? std::string_view("/") : path.substr(0, slash);
}

}  // namespace

Probed<CgroupMembership> parse_proc_self_cgroup(std::string_view text) {
  std::optional<CgroupMembership> v1, v2;
  for (std::string_view line : split(text, '\n')) {
    if (trim(line).empty()) continue;
    const std::optional<CgroupLine> f = split_cgroup_line(line);
    if (!f) {
      return Probed<CgroupMembership>::error(ProbeErrc::ParseError, "malformed line '" + printable(line) + "'",
                                             kSource);
    }
    if (f->id == 0 && f->controllers.empty()) {
      v2 = CgroupMembership{2, std::string(f->path)};
    } else if (in_list(f->controllers, "memory")) {
      v1 = CgroupMembership{1, std::string(f->path)};
    }
  }
  if (v1) return Probed<CgroupMembership>::ok(*v1, kSource);
  if (v2) return Probed<CgroupMembership>::ok(*v2, kSource);
  return Probed<CgroupMembership>::error(ProbeErrc::Unsupported, "no cgroup memory controller", kSource);
}

std::optional<std::uint64_t> parse_cgroup_limit(std::string_view text) {
  text = trim(text);
  if (text == "max") return kCgroupUnlimited;
  const std::optional<std::uint64_t> bytes = parse_uint(text);
  if (bytes && *bytes >= (1ull << 62)) return kCgroupUnlimited;
  return bytes;
}

std::optional<std::uint64_t> parse_cgroup_stat(std::string_view text, std::string_view key) {
  for (std::string_view line : split(text, '\n')) {
    const std::vector<std::string_view> f = split_ws(line);
    if (f.size() == 2 && f[0] == key) return parse_uint(f[1]);
  }
  return std::nullopt;
}

const MountInfoLine* find_memory_cgroup_mount(const MountInfo& info, const CgroupMembership& member) {
  const MountInfoLine* found = nullptr;
  for (const MountInfoLine& m : info.mounts) {
    const bool right_kind =
        member.version == 2 ? m.fstype == "cgroup2" : m.fstype == "cgroup" && in_list(m.super_options, "memory");
    if (right_kind && is_below(member.path, m.root)) found = &m;
  }
  return found;
}

std::vector<std::string> cgroup_lineage(std::string_view cgroup_path, std::string_view root) {
  std::vector<std::string> out;
  if (!is_below(cgroup_path, root)) return out;
  for (std::string_view level = cgroup_path;; level = parent_of(level)) {
    out.emplace_back(level);
    if (level == root || level == "/") return out;
  }
}

std::string cgroup_dir(const MountInfoLine& mount, std::string_view cgroup_path) {
  const std::string_view relative = mount.root == "/" ? cgroup_path : cgroup_path.substr(mount.root.size());
  return relative.empty() || relative == "/" ? mount.mount_point : mount.mount_point + std::string(relative);
}

}  // namespace preflight
