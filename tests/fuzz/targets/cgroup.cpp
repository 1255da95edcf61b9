// SPDX-License-Identifier: MIT
// The cgroup files: parse_proc_self_cgroup (/proc/self/cgroup), parse_cgroup_limit (memory.max,
// memory.limit_in_bytes), parse_cgroup_stat (memory.stat), and over a mountinfo text
// find_memory_cgroup_mount, cgroup_lineage and cgroup_dir.
// Input: the whole text is each file; its first line is also a cgroup path and a stat key, the
// rest a mountinfo text.
#include "core/cgroup.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [first, rest] = fuzz::first_line(in);

  const Probed<CgroupMembership> member = parse_proc_self_cgroup(in);
  if (const auto* m = member.value()) FUZZ_CHECK(m->version == 1 || m->version == 2);
  if (const auto limit = parse_cgroup_limit(in); limit && *limit >= (std::uint64_t{1} << 62)) {
    FUZZ_CHECK(*limit == kCgroupUnlimited);
  }
  (void)parse_cgroup_stat(in, "anon");
  (void)parse_cgroup_stat(rest, first);

  const MountInfo info = parse_mountinfo(rest);
  CgroupMembership guess{2, std::string(first)};
  for (const CgroupMembership& m :
       {member.ok() ? *member.value() : guess, guess, CgroupMembership{1, std::string(first)}}) {
    const MountInfoLine* mount = find_memory_cgroup_mount(info, m);
    if (mount == nullptr) continue;
    const std::vector<std::string> lineage = cgroup_lineage(m.path, mount->root);
    if (!lineage.empty()) (void)cgroup_dir(*mount, m.path);
  }
  (void)cgroup_lineage(first, "/");
  return 0;
}
