// SPDX-License-Identifier: MIT
#include "core/mountinfo.hpp"

#include "core/text.hpp"

namespace preflight {

std::string unescape_mount_path(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto is_oct = [](char c) { return c >= '0' && c <= '7'; };
    if (s[i] == '\\' && i + 3 < s.size() && is_oct(s[i + 1]) && is_oct(s[i + 2]) && is_oct(s[i + 3])) {
      out += static_cast<char>(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
      i += 3;
      continue;
    }
    out += s[i];
  }
  return out;
}

MountInfo parse_mountinfo(std::string_view text) {
  MountInfo info;
  int line_no = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::vector<std::string_view> f = split_ws(line);
    // At least: 6 fixed fields, the "-" separator, fstype, source (super options may be absent).
    std::size_t sep = 6;
    while (sep < f.size() && f[sep] != "-") ++sep;
    const auto id = f.size() > 1 ? parse_int(f[0]) : std::nullopt;
    const auto parent = f.size() > 1 ? parse_int(f[1]) : std::nullopt;
    if (f.size() < 9 || sep + 2 >= f.size() || !id || !parent || f[2].find(':') == std::string_view::npos) {
      info.bad_lines.push_back(line_no);
      continue;
    }
    MountInfoLine m;
    m.id = static_cast<int>(*id);
    m.parent = static_cast<int>(*parent);
    m.dev = std::string(f[2]);
    m.root = unescape_mount_path(f[3]);
    m.mount_point = unescape_mount_path(f[4]);
    m.mount_options = std::string(f[5]);
    m.fstype = std::string(f[sep + 1]);
    m.source = unescape_mount_path(f[sep + 2]);
    if (sep + 3 < f.size()) m.super_options = std::string(f[sep + 3]);
    info.mounts.push_back(std::move(m));
  }
  return info;
}

const MountInfoLine* effective_mount(const MountInfo& info, std::string_view mount_point) {
  const MountInfoLine* found = nullptr;
  for (const MountInfoLine& m : info.mounts) {
    if (m.mount_point == mount_point) found = &m;
  }
  return found;
}

const MountInfoLine* mount_holding(const MountInfo& info, std::string_view path) {
  const MountInfoLine* found = nullptr;
  for (const MountInfoLine& m : info.mounts) {
    const std::string_view mp = m.mount_point;
    const bool prefix = path.starts_with(mp) && (mp == "/" || path.size() == mp.size() || path[mp.size()] == '/');
    // ">=": of the mounts stacked at one mount point, the last is in effect.
    if (prefix && (found == nullptr || mp.size() >= found->mount_point.size())) found = &m;
  }
  return found;
}

MountEntry to_mount_entry(const MountInfoLine& line) {
  MountEntry e;
  e.mount_point = line.mount_point;
  e.fstype = line.fstype;
  e.source = line.source;
  e.options = line.mount_options + (line.super_options.empty() ? "" : "," + line.super_options);
  for (std::string_view opt : split(line.mount_options, ',')) e.read_only = e.read_only || opt == "ro";
  for (std::string_view opt : split(line.super_options, ',')) {
    e.read_only = e.read_only || opt == "ro";
    if (opt.substr(0, 5) == "size=") {
      // tmpfs prints size in kB ("size=65536k"); a bare number is bytes.
      e.size_option = parse_size(opt.substr(5));
    }
  }
  return e;
}

}  // namespace preflight
