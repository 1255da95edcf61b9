// SPDX-License-Identifier: MIT
// /proc/self/mountinfo: parse_mountinfo, unescape_mount_path, effective_mount, mount_holding, to_mount_entry.
#include "core/mountinfo.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const MountInfo info = parse_mountinfo(in);
  for (const MountInfoLine& line : info.mounts) {
    (void)to_mount_entry(line);
    const MountInfoLine* top = effective_mount(info, line.mount_point);
    FUZZ_CHECK(top != nullptr);  // the line itself is a mount at that point
    FUZZ_CHECK(top->mount_point == line.mount_point);
    // A path below a mount point is held by that mount or by one stacked deeper below it.
    const std::string below = line.mount_point == "/" ? std::string("/x") : line.mount_point + "/x";
    const MountInfoLine* holder = mount_holding(info, below);
    FUZZ_CHECK(holder != nullptr);
    FUZZ_CHECK(holder->mount_point.size() >= line.mount_point.size());
  }
  for (int n : info.bad_lines) FUZZ_CHECK(n >= 1);
  (void)unescape_mount_path(in);
  (void)effective_mount(info, "/dev/shm");
  (void)mount_holding(info, in);
  return 0;
}
