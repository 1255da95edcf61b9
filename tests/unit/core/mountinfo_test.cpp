// SPDX-License-Identifier: MIT
#include "core/mountinfo.hpp"

#include <gtest/gtest.h>

namespace preflight {
namespace core_mountinfo_test {
namespace {

TEST(MountInfo, ParsesFieldsAndOptionalTags) {
  const MountInfo info = parse_mountinfo(
      "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
      "40 35 0:21 / /dev/shm rw,nosuid,nodev shared:3 master:4 - tmpfs tmpfs rw,size=65536k\n");
  ASSERT_EQ(info.mounts.size(), 2u);
  EXPECT_TRUE(info.bad_lines.empty());
  EXPECT_EQ(info.mounts[0].root, "/mnt1");
  EXPECT_EQ(info.mounts[0].mount_point, "/mnt2");
  EXPECT_EQ(info.mounts[0].fstype, "ext3");
  EXPECT_EQ(info.mounts[0].source, "/dev/root");
  EXPECT_EQ(info.mounts[1].fstype, "tmpfs");
  EXPECT_EQ(info.mounts[1].super_options, "rw,size=65536k");
}

TEST(MountInfo, UnescapesOctalPaths) {
  EXPECT_EQ(unescape_mount_path("/data\\040set"), "/data set");
  EXPECT_EQ(unescape_mount_path("/a\\011b\\134c"), "/a\tb\\c");
  EXPECT_EQ(unescape_mount_path("/trailing\\04"), "/trailing\\04");
}

TEST(MountInfo, LastMountOfAPointWins) {
  const MountInfo info = parse_mountinfo(
      "40 35 0:21 / /dev/shm rw - tmpfs tmpfs rw,size=65536k\n"
      "41 40 0:22 / /dev/shm rw - tmpfs tmpfs rw,size=8388608k\n");
  const MountInfoLine* m = effective_mount(info, "/dev/shm");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(to_mount_entry(*m).size_option, 8ull << 30);
  EXPECT_EQ(effective_mount(info, "/nope"), nullptr);
}

TEST(MountInfo, ReadOnlyFromMountOrSuperOptions) {
  const MountInfo info = parse_mountinfo(
      "40 35 0:21 / /a ro,nosuid - tmpfs tmpfs rw\n"
      "41 35 0:22 / /b rw - tmpfs tmpfs ro,size=1024\n"
      "42 35 0:23 / /c rw - tmpfs tmpfs rw\n");
  ASSERT_EQ(info.mounts.size(), 3u);
  EXPECT_TRUE(to_mount_entry(info.mounts[0]).read_only);
  EXPECT_TRUE(to_mount_entry(info.mounts[1]).read_only);
  EXPECT_EQ(to_mount_entry(info.mounts[1]).size_option, 1024u);
  EXPECT_FALSE(to_mount_entry(info.mounts[2]).read_only);
  EXPECT_FALSE(to_mount_entry(info.mounts[2]).size_option.has_value());
}

TEST(MountInfo, GarbageLinesAreCountedNotFatal) {
  static constexpr char kText[] =
      "garbage\n"
      "x y z\n"
      "40 35 0:21 / /dev/shm rw - tmpfs\n"          // no source
      "a 35 0:21 / /dev/shm rw - tmpfs tmpfs rw\n"  // id not a number
      "\xff\xfe\x00\n"                              // binary, with a NUL
      "40 35 0:21 / /ok rw - tmpfs tmpfs rw\n";
  const MountInfo info = parse_mountinfo(std::string_view(kText, sizeof kText - 1));
  EXPECT_EQ(info.mounts.size(), 1u);
  EXPECT_EQ(info.bad_lines.size(), 5u);
}

TEST(MountInfo, TheMountHoldingAPathIsTheLongestMountPointAboveIt) {
  const MountInfo info = parse_mountinfo(
      "22 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n"
      "40 22 0:50 / /data rw - nfs4 filer:/export rw\n"
      "41 40 0:51 / /data/local rw - xfs /dev/sdb1 rw\n"
      "42 40 0:52 / /data/local rw - tmpfs tmpfs rw\n");
  ASSERT_EQ(info.mounts.size(), 4u);
  EXPECT_EQ(mount_holding(info, "/")->fstype, "ext4");
  EXPECT_EQ(mount_holding(info, "/home/a")->fstype, "ext4");
  EXPECT_EQ(mount_holding(info, "/data")->fstype, "nfs4");
  EXPECT_EQ(mount_holding(info, "/data/ckpt/run1")->fstype, "nfs4");
  EXPECT_EQ(mount_holding(info, "/database")->fstype, "ext4");       // a prefix of the name is no parent
  EXPECT_EQ(mount_holding(info, "/data/local/x")->fstype, "tmpfs");  // the last of the stacked mounts
  EXPECT_EQ(mount_holding(MountInfo{}, "/x"), nullptr);
}

}  // namespace
}  // namespace core_mountinfo_test
}  // namespace preflight
