// SPDX-License-Identifier: MIT
// sys/file_system.hpp's three ways of reading a root: a directory through openat2(RESOLVE_IN_ROOT),
// a directory through the walk (where openat2 is refused), and a MemoryTree. The same tree and the
// same table of cases run against each, so the three are proven to answer alike; then what only a
// directory root shows (links that name paths this machine also has) and what only a memory tree
// can do (injected errors, chosen statfs answers).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/text.hpp"
#include "scratch_dir.hpp"
#include "sys/file_system.hpp"

namespace preflight {
namespace sys_file_system_backends_test {
namespace {

namespace stdfs = std::filesystem;

/// A directory under the temporary directory, removed afterwards.
class Scratch : public testing::ScratchDir {
 public:
  Scratch() : ScratchDir("fs-backends") {}
};

enum class Backend { DiskOpenat2, DiskWalk, Memory };

std::string name_of(Backend b) {
  switch (b) {
    case Backend::DiskOpenat2: return "DiskOpenat2";
    case Backend::DiskWalk: return "DiskWalk";
    case Backend::Memory: return "Memory";
  }
  return "?";
}

/// One tree, built on the disk or in memory with the same calls.
class Tree {
 public:
  explicit Tree(Backend backend) : m_backend(backend) {}

  void file(const std::string& path, const std::string& text) {
    if (m_backend == Backend::Memory) {
      m_memory.file(path, text);
      return;
    }
    stdfs::create_directories(stdfs::path(m_scratch.path() + path).parent_path());
    std::ofstream(m_scratch.path() + path, std::ios::binary) << text;
  }
  void dir(const std::string& path) {
    if (m_backend == Backend::Memory) {
      m_memory.dir(path);
      return;
    }
    stdfs::create_directories(m_scratch.path() + path);
  }
  void link(const std::string& path, const std::string& target) {
    if (m_backend == Backend::Memory) {
      m_memory.link(path, target);
      return;
    }
    stdfs::create_directories(stdfs::path(m_scratch.path() + path).parent_path());
    stdfs::create_symlink(target, m_scratch.path() + path);
  }
  MemoryTree& memory() { return m_memory; }
  const std::string& dir_root() const { return m_scratch.path(); }

  FileSystem fs() const {
    switch (m_backend) {
      case Backend::DiskOpenat2: return FileSystem(m_scratch.path());
      case Backend::DiskWalk: return FileSystem(m_scratch.path(), {}, RootLookup::WalkOnly);
      case Backend::Memory: break;
    }
    return FileSystem(m_memory);
  }

 private:
  Backend m_backend;
  Scratch m_scratch;
  MemoryTree m_memory;
};

/// What a call answered, as one comparable string: the value, or "error <code>".
template <typename T>
std::string answer(const Probed<T>& p, std::string (*show)(const T&)) {
  return p.ok() ? show(*p.value()) : std::string("error ") + to_string(p.error()->code);
}
std::string text(const std::string& s) { return s; }
std::string names(const std::vector<std::string>& v) { return "[" + join(v, ",") + "]"; }
std::string type(const FsStat& s) {
  switch (s.type) {
    case FsStat::Type::File: return "file";
    case FsStat::Type::Directory: return "directory";
    case FsStat::Type::Link: return "link";
    case FsStat::Type::Other: break;
  }
  return "other";
}
std::string stats_found(const FsStats&) { return "found"; }

struct Case {
  const char* op;
  const char* path;
  const char* want;
};

std::string run(const FileSystem& fs, const Case& c) {
  const std::string op = c.op;
  if (op == "read") return answer(fs.read(c.path), text);
  if (op == "read_line") return answer(fs.read_line(c.path), text);
  if (op == "read_at 1 3") return answer(fs.read_at(c.path, 1, 3), text);
  if (op == "read_at 99 3") return answer(fs.read_at(c.path, 99, 3), text);
  if (op == "list") return answer(fs.list(c.path), names);
  if (op == "exists") return fs.exists(c.path) ? "yes" : "no";
  if (op == "read_link") return answer(fs.read_link(c.path), text);
  if (op == "real_path") return answer(fs.real_path(c.path), text);
  if (op == "stat") return answer(fs.stat(c.path), type);
  if (op == "lstat") return answer(fs.stat(c.path, false), type);
  if (op == "stat_fs") return answer(fs.stat_fs(c.path), stats_found);
  return "unknown op";
}

// The table every backend must answer alike. Absolute targets name paths inside the root; /etc
// and /proc exist on this machine too, with other contents.
const Case kCases[] = {
    {"read", "/c/f.txt", "hello\n"},
    {"read", "/a/b/f.txt", "hello\n"},       // through an absolute link
    {"read", "/a/rel/f.txt", "hello\n"},     // a relative one
    {"read", "/a/chain1/f.txt", "hello\n"},  // relative, then absolute, then absolute
    {"read", "/a/up/f.txt", "hello\n"},      // ".." in a target stops at the root
    {"read", "/a/file", "hello\n"},          // the last component a link
    {"read", "/a/passwd", "tree passwd\n"},  // never this machine's /etc/passwd
    {"read", "/a/etc/passwd", "tree passwd\n"},
    {"read", "../../../etc/passwd", "tree passwd\n"},
    {"read", "/a/../../../../etc/passwd", "tree passwd\n"},
    {"read", "/d/e/../../c/f.txt", "hello\n"},
    {"read", "/a/dangling", "error not_found"},
    {"read", "/a/loop1", "error unreadable"},  // ELOOP
    {"read", "/a/self", "error unreadable"},
    {"read", "/c/f.txt/x", "error not_found"},  // ENOTDIR
    {"read", "/c/f.txt/", "error not_found"},
    {"read", "/a/file/", "error not_found"},
    {"read", "/c", "error unreadable"},  // EISDIR
    {"read", "/missing", "error not_found"},
    {"read", "/a/hostonly/version", "error not_found"},  // /proc is this machine's only
    {"read", "", "error not_found"},
    {"read_line", "/a/file", "hello"},
    {"read_at 1 3", "/a/file", "ell"},
    {"read_at 99 3", "/a/file", ""},
    {"read_at 1 3", "/a/loop1", "error unreadable"},
    {"list", "/", "[a,c,d,etc]"},
    {"list", "/a/b", "[f.txt,passwd]"},
    {"list", "/a/etc", "[passwd]"},
    {"list", "/a/up/", "[f.txt,passwd]"},
    {"list", "../..", "[a,c,d,etc]"},
    {"list", "/c/f.txt", "error not_found"},
    {"list", "/a/dangling", "error not_found"},
    {"list", "/a/loop1", "error unreadable"},
    {"list", "/a/hostonly", "error not_found"},
    {"exists", "/a/etc/passwd", "yes"},
    {"exists", "/a/etc/shadow", "no"},  // this machine's /etc has one
    {"exists", "/a/b/", "yes"},
    {"exists", "/c/f.txt/", "no"},
    {"exists", "/a/dangling", "no"},
    {"exists", "/a/loop1", "no"},
    {"exists", "/a/hostonly", "no"},
    {"read_link", "/a/b", "/c"},
    {"read_link", "/a/rel", "../c"},
    {"read_link", "/a/chain1", "chain2"},
    {"read_link", "/a/dangling", "/nowhere"},
    {"read_link", "/a/loop1", "loop2"},
    {"read_link", "/a/b/../c/passwd", "/etc/passwd"},  // ".." after a link: from its target
    {"read_link", "/c/f.txt", "error parse_error"},
    {"read_link", "/a/b/f.txt", "error parse_error"},
    {"read_link", "/a/b/", "error parse_error"},  // a trailing slash follows the link
    {"read_link", "/a/missing", "error not_found"},
    {"read_link", "/a/dangling/x", "error not_found"},
    {"real_path", "/a/chain1/f.txt", "/c/f.txt"},
    {"real_path", "/a/up", "/c"},
    {"real_path", "/a/etc/../a/rel", "/c"},
    {"real_path", "/a/loop1", "error unreadable"},
    {"real_path", "/a/dangling", "error not_found"},
    {"real_path", "/c/f.txt/", "error not_found"},
    {"stat", "/a/b", "directory"},
    {"stat", "/a/file", "file"},
    {"stat", "/a/dangling", "error not_found"},
    {"lstat", "/a/b", "link"},
    {"lstat", "/a/dangling", "link"},
    {"lstat", "/a/b/f.txt", "file"},
    {"stat_fs", "/a/etc", "found"},
    {"stat_fs", "/a/passwd", "found"},
    {"stat_fs", "/a/hostonly", "error not_found"},
    {"stat_fs", "/a/dangling", "error not_found"},
    {"stat_fs", "/a/loop1", "error unreadable"},
};

void build(Tree& t) {
  t.file("/c/f.txt", "hello\n");
  t.file("/etc/passwd", "tree passwd\n");
  t.dir("/d/e");
  t.link("/a/b", "/c");
  t.link("/a/rel", "../c");
  t.link("/a/chain1", "chain2");
  t.link("/a/chain2", "/a/b");
  t.link("/a/up", "../../../../../c");
  t.link("/a/dangling", "/nowhere");
  t.link("/a/loop1", "loop2");
  t.link("/a/loop2", "/a/loop1");
  t.link("/a/self", "self");
  t.link("/a/file", "/c/f.txt");
  t.link("/a/etc", "/etc");
  t.link("/a/passwd", "/etc/passwd");
  t.link("/a/hostonly", "/proc");
  t.link("/c/passwd", "/etc/passwd");
  t.memory().stats("/", FsStats{});
}

class EveryBackend : public ::testing::TestWithParam<Backend> {};

TEST_P(EveryBackend, AnswersTheTable) {
  Tree t(GetParam());
  if (GetParam() != Backend::Memory) {
    ASSERT_FALSE(t.dir_root().empty());
  }
  build(t);
  const FileSystem fs = t.fs();
  for (const Case& c : kCases) EXPECT_EQ(run(fs, c), c.want) << c.op << " " << c.path;
}

TEST_P(EveryBackend, CopiesShareOneRoot) {
  Tree t(GetParam());
  build(t);
  const FileSystem first = t.fs();
  const FileSystem copy = first;  // the root's descriptor is shared, not closed twice
  EXPECT_EQ(answer(copy.read("/a/passwd"), text), "tree passwd\n");
  EXPECT_EQ(answer(first.read("/a/passwd"), text), "tree passwd\n");
  EXPECT_FALSE(first.is_live());
}

INSTANTIATE_TEST_SUITE_P(FileSystem, EveryBackend,
                         ::testing::Values(Backend::DiskOpenat2, Backend::DiskWalk, Backend::Memory),
                         [](const ::testing::TestParamInfo<Backend>& p) { return name_of(p.param); });

// ---- a directory root ----

TEST(DirectoryRoot, TheWalkIsUsedWhenAskedAndOpenat2WhereTheKernelHasIt) {
  Tree t(Backend::DiskWalk);
  build(t);
  EXPECT_FALSE(t.fs().uses_openat2());
  // Where this kernel lets this process call openat2, a directory root uses it.
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT;
  const long fd = ::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how);
  if (fd >= 0) {
    ::close(static_cast<int>(fd));
    EXPECT_TRUE(FileSystem(t.dir_root()).uses_openat2());
  }
  EXPECT_FALSE(FileSystem().uses_openat2());
  EXPECT_FALSE(FileSystem(MemoryTree()).uses_openat2());
}

TEST(DirectoryRoot, StatFsOfALinkIsTheTreesFileSystem) {
  Tree t(Backend::DiskOpenat2);
  build(t);
  const Probed<FsStats> in_tree = t.fs().stat_fs("/a/etc");
  const Probed<FsStats> root = FileSystem().stat_fs(t.dir_root());
  ASSERT_TRUE(in_tree.ok()) << in_tree.why();
  ASSERT_TRUE(root.ok()) << root.why();
  EXPECT_EQ(in_tree.value()->fs_type, root.value()->fs_type);
  EXPECT_EQ(in_tree.value()->total_bytes, root.value()->total_bytes);
  EXPECT_GT(root.value()->block_size, 0u);
}

TEST(DirectoryRoot, AMissingRootIsNotFoundAndAppearingLaterIsRead) {
  Scratch s;
  ASSERT_FALSE(s.path().empty());
  const std::string root = s.path() + "/later";
  for (RootLookup lookup : {RootLookup::Auto, RootLookup::WalkOnly}) {
    const FileSystem fs(root, {}, lookup);
    const Probed<std::string> missing = fs.read("/x");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error()->code, ProbeErrc::NotFound);
    EXPECT_EQ(fs.real_path("/").error()->code, ProbeErrc::NotFound);
  }
  stdfs::create_directories(root);
  std::ofstream(root + "/x") << "made";
  EXPECT_EQ(answer(FileSystem(root).read("/x"), text), "made");
  EXPECT_EQ(answer(FileSystem(root, {}, RootLookup::WalkOnly).read("/x"), text), "made");
}

TEST(LiveSystem, ReadsTheHostsOwnPaths) {
  const FileSystem live;
  EXPECT_TRUE(live.is_live());
  EXPECT_TRUE(live.exists("/proc/self/status"));
  EXPECT_EQ(answer(live.stat("/proc"), type), "directory");
  const Probed<FsStats> proc = live.stat_fs("/proc");
  ASSERT_TRUE(proc.ok()) << proc.why();
  EXPECT_EQ(proc.value()->fs_type, static_cast<std::uint64_t>(PROC_SUPER_MAGIC));
  EXPECT_EQ(live.host_path("/proc"), "/proc");
}

// ---- a memory tree ----

TEST(MemoryTree, InjectedErrorsKeepTheirMeaning) {
  MemoryTree t;
  t.file("/proc/meminfo", "MemTotal: 1 kB\n");
  t.file("/proc/self/status", "Name: x\n");
  t.file("/sys/bus/pci/devices/0000:00:01.0/config", "....");
  t.error("/proc/self/status", EACCES);
  t.error("/sys/bus/pci/devices/0000:00:01.0/config", EIO);
  t.error("/sys/bus", EPERM);
  t.error("/proc/gone", ENOENT);
  const FileSystem fs(t);
  EXPECT_EQ(answer(fs.read("/proc/meminfo"), text), "MemTotal: 1 kB\n");
  EXPECT_EQ(answer(fs.read("/proc/self/status"), text), "error permission_denied");
  EXPECT_EQ(answer(fs.read_at("/proc/self/status", 0, 4), text), "error permission_denied");
  EXPECT_EQ(answer(fs.list("/sys/bus"), names), "error permission_denied");
  // An error on a directory stops every walk through it, as a directory without +x does.
  EXPECT_EQ(answer(fs.read("/sys/bus/pci/devices/0000:00:01.0/config"), text), "error permission_denied");
  EXPECT_EQ(answer(fs.real_path("/sys/bus/pci"), text), "error permission_denied");
  EXPECT_FALSE(fs.exists("/sys/bus/pci"));
  EXPECT_EQ(answer(fs.list("/sys"), names), "[bus]");
  EXPECT_EQ(answer(fs.read("/proc/gone"), text), "error not_found");

  MemoryTree io;
  io.file("/sys/config", "....");
  io.error("/sys/config", EIO);
  const Probed<std::string> failed = FileSystem(io).read("/sys/config");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error()->code, ProbeErrc::Unreadable);
  EXPECT_EQ(failed.error()->detail, probe_error_from_errno(EIO).detail);
  EXPECT_EQ(answer(FileSystem(io).stat_fs("/sys/config"), stats_found), "error unreadable");
}

TEST(MemoryTree, StatFsAnswersTheNearestDirectoryGiven) {
  MemoryTree t;
  FsStats root;
  root.total_bytes = 100;
  root.fs_type = 0xEF53;  // ext4
  FsStats shm;
  shm.total_bytes = 64;
  shm.available_bytes = 32;
  shm.fs_type = TMPFS_MAGIC;
  shm.read_only = true;
  t.dir("/dev/shm/sub").file("/etc/x", "x").link("/run/shm", "/dev/shm");
  t.stats("/", root).stats("/dev/shm", shm);
  const FileSystem fs(t);
  const Probed<FsStats> in_shm = fs.stat_fs("/run/shm/sub");  // through the link
  ASSERT_TRUE(in_shm.ok()) << in_shm.why();
  EXPECT_EQ(in_shm.value()->fs_type, static_cast<std::uint64_t>(TMPFS_MAGIC));
  EXPECT_EQ(in_shm.value()->available_bytes, 32u);
  EXPECT_TRUE(in_shm.value()->read_only);
  ASSERT_TRUE(fs.stat_fs("/etc/x").ok());
  EXPECT_EQ(fs.stat_fs("/etc/x").value()->total_bytes, 100u);
  EXPECT_EQ(fs.stat_fs("/dev").value()->fs_type, 0xEF53u);
  EXPECT_EQ(answer(FileSystem(MemoryTree().dir("/x")).stat_fs("/x"), stats_found), "error unreadable");  // none given
}

TEST(MemoryTree, ReadsLikeAFile) {
  MemoryTree t;
  t.file("/proc/meminfo", "MemTotal: 1 kB\n  \n").link("/sys/class/net/eth0", "../../devices/pci0000:00/net/eth0");
  t.dir("/sys/devices/pci0000:00/net/eth0").file("/sys/devices/pci0000:00/net/eth0/mtu", "9000\n");
  const FileSystem fs(t);
  EXPECT_EQ(answer(fs.read_line("/proc/meminfo"), text), "MemTotal: 1 kB");
  EXPECT_EQ(answer(fs.read_line("/sys/class/net/eth0/mtu"), text), "9000");
  EXPECT_EQ(answer(fs.real_path("/sys/class/net/eth0"), text), "/sys/devices/pci0000:00/net/eth0");
  EXPECT_EQ(answer(fs.list("/sys/class/net"), names), "[eth0]");
  EXPECT_EQ(answer(fs.list("/sys/class/net/eth0"), names), "[mtu]");
  EXPECT_EQ(answer(fs.read("/proc/meminfo", 4), text), "error parse_error");  // larger than asked
  EXPECT_EQ(fs.host_path("/proc/meminfo"), "");                               // no system call reaches a memory tree
  EXPECT_EQ(fs.root(), "(memory tree)");
}

}  // namespace
}  // namespace sys_file_system_backends_test
}  // namespace preflight
