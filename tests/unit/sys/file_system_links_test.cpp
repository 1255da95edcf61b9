// SPDX-License-Identifier: MIT
// sys/file_system.hpp: read_link and real_path inside a root (a captured tree) and on the live
// system: relative, absolute, chained, dangling and looping links, "..", and a capture's records.
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "scratch_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/host_link.hpp"

namespace preflight {
namespace sys_file_system_links_test {
namespace {

namespace fs = std::filesystem;

/// The links test's scratch tree.
class Scratch : public testing::ScratchDir {
 public:
  Scratch() : ScratchDir("fs-links") {}
};

std::string host_realpath(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

/// The error's code; NotProbed for a value.
ProbeErrc code_of(const Probed<std::string>& p) { return p.ok() ? ProbeErrc::NotProbed : p.error()->code; }

/// A tree whose links are of every kind: absolute ones name paths inside the root.
class LinkTree : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(s.path().empty());
    s.file("/c/f.txt");
    s.dir("/d/e");
    s.file("/etc/marker");
    s.link("/a/b", "/c");           // absolute
    s.link("/a/rel", "../c");       // relative to the link's directory
    s.link("/a/chain1", "chain2");  // chained: relative, then absolute, then absolute
    s.link("/a/chain2", "/a/b");
    s.link("/a/up", "../../../../../c");  // climbs above the root: stops at it
    s.link("/a/dangling", "/nowhere");
    s.link("/a/loop1", "loop2");
    s.link("/a/loop2", "/a/loop1");
    s.link("/a/self", "self");
    s.link("/a/file", "/c/f.txt");
    s.link("/a/etc", "/etc");           // the root's /etc, never the host's
    s.link("/d/e/back", "../../a/b/");  // a trailing slash in a target
    s.link("/d/e/dotdot", "../e/./back/..");
  }

  Probed<std::string> real(const std::string& path) const { return root().real_path(path); }
  FileSystem root() const { return FileSystem(s.path()); }

  Scratch s;
};

TEST(HostLink, TheWholeTargetHoweverLongOrWhyNot) {
  Scratch s;
  ASSERT_FALSE(s.path().empty());
  std::string target;  // 4,000 bytes (the kernel allows 4,095): past the first buffer, which grows
  while (target.size() < 3950) target += "a-directory-name-of-forty-characters-x/";
  target += "end";
  fs::create_symlink(target, s.path() + "/long");
  s.file("/plain");
  EXPECT_EQ(read_host_link(s.path() + "/long"), target);
  errno = 0;
  EXPECT_EQ(read_host_link(s.path() + "/plain"), std::nullopt);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(read_host_link(s.path() + "/missing"), std::nullopt);
  EXPECT_EQ(errno, ENOENT);
}

TEST_F(LinkTree, ReadLinkGivesTheTargetAsStored) {
  const FileSystem f = root();
  const auto expect_target = [&f](const std::string& path, const std::string& target) {
    const Probed<std::string> p = f.read_link(path);
    ASSERT_TRUE(p.ok()) << path << ": " << p.why();
    EXPECT_EQ(*p.value(), target) << path;
    EXPECT_EQ(p.source(), path);
  };
  expect_target("/a/b", "/c");
  expect_target("/a/rel", "../c");
  expect_target("/a/chain1", "chain2");  // not followed
  expect_target("/a/dangling", "/nowhere");
  expect_target("/a/loop1", "loop2");
  expect_target("/d/e/back", "../../a/b/");
  expect_target("/a/rel/../a/up", "../../../../../c");  // a relative link on the way is followed
}

TEST_F(LinkTree, ReadLinkErrors) {
  const FileSystem f = root();
  const Probed<std::string> missing = f.read_link("/a/missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error()->code, ProbeErrc::NotFound);
  const Probed<std::string> below_file = f.read_link("/c/f.txt/x");
  ASSERT_FALSE(below_file.ok());
  EXPECT_EQ(below_file.error()->code, ProbeErrc::NotFound);  // ENOTDIR
  for (const char* not_link : {"/c", "/c/f.txt", "/"}) {
    const Probed<std::string> p = f.read_link(not_link);
    ASSERT_FALSE(p.ok()) << not_link;
    EXPECT_EQ(p.error()->code, ProbeErrc::ParseError) << not_link;
    EXPECT_EQ(p.error()->detail, "is not a symbolic link");
  }
}

TEST_F(LinkTree, RealPathResolvesInsideTheRoot) {
  const auto expect_real = [this](const std::string& path, const std::string& want) {
    const Probed<std::string> p = real(path);
    ASSERT_TRUE(p.ok()) << path << ": " << p.why();
    EXPECT_EQ(*p.value(), want) << path;
  };
  expect_real("/", "/");
  expect_real("/c", "/c");
  expect_real("/c/", "/c");
  expect_real("//c/./f.txt", "/c/f.txt");
  expect_real("/a/b", "/c");  // the root's /c, not the host's
  expect_real("/a/b/f.txt", "/c/f.txt");
  expect_real("/a/b/", "/c");
  expect_real("/a/rel", "/c");
  expect_real("/a/rel/f.txt", "/c/f.txt");
  expect_real("/a/chain1", "/c");
  expect_real("/a/chain1/f.txt", "/c/f.txt");
  expect_real("/a/up", "/c");
  expect_real("/a/file", "/c/f.txt");
  expect_real("/a/etc/marker", "/etc/marker");
  expect_real("/d/e/back", "/c");
  expect_real("/d/e/dotdot", "/");  // "..": the parent of where the link led (/c), not of the link
  // ".." after a link climbs from its target, as the kernel does; never above the root.
  expect_real("/a/b/..", "/");
  expect_real("/a/b/../a/rel", "/c");
  expect_real("/../../..", "/");
  expect_real("/../a/../../d/e/..", "/d");
  expect_real("a/b", "/c");  // a relative path is taken from the root
}

TEST_F(LinkTree, RealPathMissingIsNotFound) {
  // /a/etc/passwd exists on nearly every host: an absolute link that left the root would find it.
  for (const char* path : {"/missing", "/a/missing", "/a/b/missing", "/a/dangling", "/a/dangling/x", "/a/etc/passwd",
                           "/c/f.txt/", "/c/f.txt/.", "/c/f.txt/..", "/a/file/", "/a/file/x", ""}) {
    const Probed<std::string> p = real(path);
    ASSERT_FALSE(p.ok()) << path << " -> " << *p.value();
    EXPECT_EQ(p.error()->code, ProbeErrc::NotFound) << path << ": " << p.why();
  }
}

TEST_F(LinkTree, RealPathLoopIsAnError) {
  for (const char* path : {"/a/loop1", "/a/loop2/x", "/a/self"}) {
    const Probed<std::string> p = real(path);
    ASSERT_FALSE(p.ok()) << path << " -> " << *p.value();
    EXPECT_EQ(p.error()->code, ProbeErrc::Unreadable) << path << ": " << p.why();
    EXPECT_EQ(p.source(), path);
  }
}

TEST_F(LinkTree, RealPathFollowsFortyLinksNotMore) {
  // /n/l0 -> l1 -> ... -> lN -> /c: N + 1 links.
  const auto chain = [this](const std::string& dir, int links) {
    for (int i = 0; i + 1 < links; ++i) s.link(dir + "/l" + std::to_string(i), "l" + std::to_string(i + 1));
    s.link(dir + "/l" + std::to_string(links - 1), "/c");
  };
  chain("/n40", 40);
  chain("/n41", 41);
  const Probed<std::string> forty = real("/n40/l0/f.txt");
  ASSERT_TRUE(forty.ok()) << forty.why();
  EXPECT_EQ(*forty.value(), "/c/f.txt");
  const Probed<std::string> more = real("/n41/l0");
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error()->code, ProbeErrc::Unreadable) << more.why();
}

TEST_F(LinkTree, RootThatDoesNotExist) {
  const FileSystem gone(s.path() + "/no-such-root");
  const Probed<std::string> p = gone.real_path("/");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error()->code, ProbeErrc::NotFound);
  EXPECT_FALSE(gone.read_link("/a/b").ok());
}

// With only relative links (which the kernel follows inside the root too), the walk inside a root
// gives what realpath(3) gives for the same files, the root's own prefix removed.
TEST(FileSystemLinks, RealPathInsideARootMatchesRealpath) {
  Scratch s;
  ASSERT_FALSE(s.path().empty());
  s.file("/x/y/z.txt");
  s.dir("/w");
  s.link("/x/to_y", "y");
  s.link("/x/y/up", "../..");
  s.link("/w/to_x", "../x/to_y/up/x");
  s.link("/w/to_file", "../x/y/z.txt");
  s.link("/w/dangling", "nothing");
  const std::string host_root = host_realpath(s.path());
  ASSERT_FALSE(host_root.empty());
  const FileSystem f(s.path());
  for (const char* path : {"/x", "/x/to_y", "/x/to_y/", "/x/to_y/z.txt", "/x/y/up", "/x/y/up/w/to_x/to_y/up/x",
                           "/w/to_x/y/..", "/w/to_file", "/w/./to_x/../w", "/x/to_y/z.txt/", "/w/to_file/..",
                           "/w/dangling", "/w/missing", "/x/y/z.txt/x"}) {
    const std::string live = host_realpath(s.path() + path);
    const Probed<std::string> p = f.real_path(path);
    if (live.empty()) {
      EXPECT_FALSE(p.ok()) << path << " -> " << *p.value();
      continue;
    }
    ASSERT_TRUE(p.ok()) << path << ": " << p.why();
    const std::string inside = live == host_root ? "/" : live.substr(host_root.size());
    EXPECT_EQ(*p.value(), inside) << path;
  }
}

TEST(FileSystemLinks, LiveRealPathIsRealpath) {
  Scratch s;
  ASSERT_FALSE(s.path().empty());
  s.file("/dir/file");
  s.link("/dir/rel", "file");
  s.link("/abs", s.path() + "/dir/rel");
  s.link("/loop", "loop");
  const FileSystem live;
  for (const char* rel : {"", "/dir", "/dir/", "/dir/rel", "/dir/./rel", "/abs", "/dir/../abs", "//dir//rel"}) {
    const std::string path = s.path() + rel;
    const std::string want = host_realpath(path);
    ASSERT_FALSE(want.empty()) << path;
    const Probed<std::string> p = live.real_path(path);
    ASSERT_TRUE(p.ok()) << path << ": " << p.why();
    EXPECT_EQ(*p.value(), want) << path;
  }
  EXPECT_EQ(code_of(live.real_path(s.path() + "/missing")), ProbeErrc::NotFound);
  EXPECT_EQ(code_of(live.real_path(s.path() + "/loop")), ProbeErrc::Unreadable);
  EXPECT_EQ(code_of(live.real_path(s.path() + "/abs/..")), ProbeErrc::NotFound);  // a file's "..": ENOTDIR
  const Probed<std::string> target = live.read_link(s.path() + "/abs");
  ASSERT_TRUE(target.ok()) << target.why();
  EXPECT_EQ(*target.value(), s.path() + "/dir/rel");
}

// A capture's manifest names what could not be read on the node: read_link and real_path give that
// error back, not "does not exist".
TEST(FileSystemLinks, CapturedFailuresAreGivenBack) {
  Scratch s;
  ASSERT_FALSE(s.path().empty());
  s.file("/preflight-capture.json",
         R"({"unreadable": {"/root/link": {"error": "permission_denied", "detail": "permission denied"}}})");
  const FileSystem f(s.path());
  for (const Probed<std::string>& p : {f.read_link("/root/link"), f.real_path("/root/link")}) {
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error()->code, ProbeErrc::PermissionDenied) << p.why();
    EXPECT_NE(p.error()->detail.find("on the captured node"), std::string::npos) << p.why();
  }
  EXPECT_EQ(code_of(f.read_link("/root/other")), ProbeErrc::NotFound);
}

// `preflight capture`: a link read on the live system is recreated in the capture, so the capture
// reads the same target and resolves it to the same place.
TEST(FileSystemLinks, RecordedLinksReadTheSameInTheCapture) {
  Scratch live_dir;
  Scratch cap_dir;
  ASSERT_FALSE(live_dir.path().empty());
  ASSERT_FALSE(cap_dir.path().empty());
  const std::string base = host_realpath(live_dir.path());  // no link above it: the capture mirrors it as is
  ASSERT_FALSE(base.empty());
  fs::create_directories(base + "/dev/x");
  std::ofstream(base + "/dev/x/file") << "data\n";
  fs::create_symlink("x/file", base + "/dev/link");
  auto rec = std::make_shared<FsRecorder>(cap_dir.path());
  const FileSystem live("", rec);
  const Probed<std::string> target = live.read_link(base + "/dev/link");
  ASSERT_TRUE(target.ok()) << target.why();
  EXPECT_EQ(*target.value(), "x/file");
  const Probed<std::string> resolved = live.real_path(base + "/dev/link");
  ASSERT_TRUE(resolved.ok()) << resolved.why();
  EXPECT_EQ(*resolved.value(), base + "/dev/x/file");

  const FileSystem capture(cap_dir.path());
  const Probed<std::string> copy = capture.read_link(base + "/dev/link");
  ASSERT_TRUE(copy.ok()) << copy.why();
  EXPECT_EQ(*copy.value(), "x/file");
  const Probed<std::string> copy_resolved = capture.real_path(base + "/dev/link");
  ASSERT_TRUE(copy_resolved.ok()) << copy_resolved.why();
  EXPECT_EQ(*copy_resolved.value(), base + "/dev/x/file");
}

}  // namespace
}  // namespace sys_file_system_links_test
}  // namespace preflight
