// SPDX-License-Identifier: MIT
// The walk of the paths preflight writes (sys/safe_path.hpp): the kernel's protected_symlinks,
// protected_regular and protected_fifos rules applied whatever the sysctls say. The tests that plant
// entries as another user need root (they chown to nobody, uid 65534); the attacker's whole play
// against the real binary is tests/integration/planted_paths_test.sh.
#include "sys/safe_path.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "scratch_dir.hpp"

namespace preflight::sys_safe_path_test {
namespace {

constexpr uid_t kNobody = 65534;

struct stat dir_with(mode_t mode, uid_t owner) {
  struct stat st {};
  st.st_mode = S_IFDIR | mode;
  st.st_uid = owner;
  return st;
}

/// A scratch directory with a sticky, world-writable subdirectory "shared" (as /tmp).
class SafePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_dir.dir("/shared");
    ASSERT_EQ(::chmod(at("/shared").c_str(), 01777), 0);
  }
  std::string at(const std::string& rel) const { return m_dir.path() + rel; }
  /// `rel` given to nobody (a symlink itself, not its target).
  void give_to_nobody(const std::string& rel) const {
    ASSERT_EQ(::fchownat(AT_FDCWD, at(rel).c_str(), kNobody, kNobody, AT_SYMLINK_NOFOLLOW), 0) << rel;
  }
  static bool root() { return ::geteuid() == 0; }

  testing::ScratchDir m_dir{"safe-path"};
};

TEST(SafePathRules, ALinkIsFollowedAsTheKernelsProtectedSymlinksRuleSays) {
  const struct stat tmp = dir_with(01777, 0);
  EXPECT_TRUE(may_follow_link(tmp, 0, 0)) << "the caller's own link";
  EXPECT_FALSE(may_follow_link(tmp, kNobody, 0)) << "another user's link in sticky world-writable /tmp";
  EXPECT_TRUE(may_follow_link(dir_with(0777, 0), kNobody, 0)) << "not sticky";
  EXPECT_TRUE(may_follow_link(dir_with(01755, 0), kNobody, 0)) << "sticky, not world-writable";
  EXPECT_TRUE(may_follow_link(dir_with(01777, kNobody), kNobody, 0)) << "the directory owner's link";
  EXPECT_FALSE(may_follow_link(dir_with(01777, 1000), kNobody, 1000)) << "a third user's link";
  EXPECT_FALSE(may_follow_link(dir_with(01770, 0), kNobody, 0)) << "sticky and group-writable: shared too";
  EXPECT_TRUE(may_follow_link(dir_with(01770, kNobody), kNobody, 0)) << "the group directory owner's link";
}

TEST(SafePathRules, AnExistingEntryIsUsedUnlessAThirdUserMadeItInASharedStickyDirectory) {
  EXPECT_TRUE(may_use_existing(dir_with(01777, 0), 0, 0));
  EXPECT_FALSE(may_use_existing(dir_with(01777, 0), kNobody, 0));
  EXPECT_FALSE(may_use_existing(dir_with(01770, 0), kNobody, 0)) << "group-writable and sticky (protected_regular=2)";
  EXPECT_TRUE(may_use_existing(dir_with(01777, kNobody), kNobody, 0)) << "the directory owner's";
  EXPECT_TRUE(may_use_existing(dir_with(0755, 1000), 1000, 0)) << "a user's own directory";
}

TEST_F(SafePathTest, ANewNameIsResolvedToItsDirectory) {
  const SafePath p = resolve_path(at("/shared/report.json"));
  EXPECT_EQ(p.problem(), "");
  EXPECT_FALSE(p.exists);
  EXPECT_EQ(p.name, "report.json");
  EXPECT_EQ(p.dir_path, at("/shared"));
  EXPECT_FALSE(p.via_link);
  EXPECT_TRUE(p.dir);
}

TEST_F(SafePathTest, AMissingDirectoryIsENOENTNamingIt) {
  const SafePath p = resolve_path(at("/missing/report.json"));
  EXPECT_EQ(p.error, ENOENT);
  EXPECT_EQ(p.name, "missing");
  EXPECT_NE(p.problem().find("missing"), std::string::npos);
}

TEST_F(SafePathTest, TheCallersOwnLinksAreFollowedRelativeAndAbsolute) {
  m_dir.file("/real/victim", "v");
  m_dir.link("/shared/rel", "../real/victim");
  m_dir.link("/shared/abs", at("/real/victim"));
  m_dir.link("/shared/dangling", "../real/new-file");
  for (const char* name : {"/shared/rel", "/shared/abs"}) {
    const SafePath p = resolve_path(at(name));
    EXPECT_EQ(p.problem(), "") << name;
    EXPECT_TRUE(p.exists) << name;
    EXPECT_TRUE(p.via_link) << name;
    EXPECT_EQ(p.name, "victim") << name;
    EXPECT_TRUE(S_ISREG(p.st.st_mode)) << name;
  }
  const SafePath d = resolve_path(at("/shared/dangling"));
  EXPECT_EQ(d.problem(), "");
  EXPECT_FALSE(d.exists);
  EXPECT_EQ(d.name, "new-file");
}

TEST_F(SafePathTest, ALinkAnotherUserPlantedInAStickyDirectoryIsRefused) {
  if (!root()) GTEST_SKIP() << "planting as another user needs root";
  m_dir.file("/real/victim", "v");
  m_dir.link("/shared/evil.json", at("/real/victim"));
  give_to_nobody("/shared/evil.json");
  const SafePath p = resolve_path(at("/shared/evil.json"));
  EXPECT_FALSE(p.refusal.empty());
  EXPECT_NE(p.refusal.find("evil.json"), std::string::npos) << p.refusal;
  EXPECT_NE(p.refusal.find("uid 65534"), std::string::npos) << p.refusal;
  EXPECT_NE(p.refusal.find("protected_symlinks"), std::string::npos) << p.refusal;
  EXPECT_EQ(p.problem(), p.refusal);

  // A sticky directory its group may write is as shared: the link is refused there too.
  ASSERT_EQ(::chmod(at("/shared").c_str(), 01770), 0);
  EXPECT_NE(resolve_path(at("/shared/evil.json")).refusal.find("protected_symlinks"), std::string::npos);

  // The same link in a directory that is not sticky is followed, as the kernel would, but it
  // does not lead root to a file of root's (the next test).
  ASSERT_EQ(::chmod(at("/shared").c_str(), 0777), 0);
  EXPECT_NE(resolve_path(at("/shared/evil.json")).refusal.find("another user's link"), std::string::npos);
  give_to_nobody("/real/victim");
  EXPECT_EQ(resolve_path(at("/shared/evil.json")).problem(), "") << "a file of the link owner's";
}

TEST_F(SafePathTest, AnotherUsersLinkLeadsOnlyToWhatThatUserOwns) {
  if (!root()) GTEST_SKIP() << "planting as another user needs root";
  m_dir.dir("/home");
  give_to_nobody("/home");
  m_dir.file("/etc/passwd", "root:x:0:0\n");
  m_dir.file("/home/notes", "n");
  give_to_nobody("/home/notes");
  m_dir.link("/home/to-root-file", at("/etc/passwd"));
  m_dir.link("/home/to-root-dir", at("/etc/new.json"));
  m_dir.link("/home/to-own-file", "notes");
  m_dir.link("/home/to-own-dir", "new.json");
  m_dir.link("/home/to-tmp", at("/shared/new.json"));
  m_dir.link("/home/etc", at("/etc"));
  for (const char* l : {"/home/to-root-file", "/home/to-root-dir", "/home/to-own-file", "/home/to-own-dir",
                        "/home/to-tmp", "/home/etc"}) {
    give_to_nobody(l);
  }

  const SafePath root_file = resolve_path(at("/home/to-root-file"));
  EXPECT_NE(root_file.refusal.find("uid 65534 (nobody)'s symlink leads to"), std::string::npos) << root_file.refusal;
  EXPECT_NE(root_file.refusal.find("a file owned by uid 0"), std::string::npos) << root_file.refusal;
  const SafePath root_dir = resolve_path(at("/home/to-root-dir"));
  EXPECT_NE(root_dir.refusal.find("to be made in a directory owned by uid 0"), std::string::npos) << root_dir.refusal;
  EXPECT_FALSE(resolve_path(at("/home/etc/new.json")).refusal.empty()) << "a link to a directory on the way";
  EXPECT_FALSE(resolve_directory(at("/home/etc")).refusal.empty()) << "a directory to write files in";
  EXPECT_FALSE(make_directories(at("/home/etc/results"), 0755).refusal.empty());
  EXPECT_FALSE(std::filesystem::exists(at("/etc/results"))) << "nothing was made in root's directory";

  for (const char* l : {"/home/to-own-file", "/home/to-own-dir", "/home/to-tmp"}) {
    const SafePath p = resolve_path(at(l));
    EXPECT_EQ(p.problem(), "") << l;
    EXPECT_EQ(p.link_owner, std::optional<uid_t>(kNobody)) << l;
  }
  // Root's own links (and the caller's) choose nothing for another user.
  m_dir.link("/mine", at("/etc/passwd"));
  const SafePath mine = resolve_path(at("/mine"));
  EXPECT_EQ(mine.problem(), "");
  EXPECT_FALSE(mine.link_owner);

  // Directories made where the link owner's link leads are the walk's own: the last one is used.
  m_dir.dir("/home/data");
  give_to_nobody("/home/data");
  m_dir.link("/home/out", "data");
  give_to_nobody("/home/out");
  EXPECT_EQ(make_directories(at("/home/out/run/rank"), 0755).problem(), "");
}

TEST_F(SafePathTest, TwoOtherUsersLinksOnOnePathAreRefused) {
  if (!root()) GTEST_SKIP() << "planting as another user needs root";
  m_dir.dir("/a");
  m_dir.dir("/b");
  give_to_nobody("/a");
  ASSERT_EQ(::chown(at("/b").c_str(), 1234, 1234), 0);
  m_dir.link("/a/next", at("/b/last"));
  give_to_nobody("/a/next");
  m_dir.link("/b/last", at("/b/file"));
  ASSERT_EQ(::lchown(at("/b/last").c_str(), 1234, 1234), 0);
  const SafePath p = resolve_path(at("/a/next"));
  EXPECT_NE(p.refusal.find("two other users"), std::string::npos) << p.refusal;
}

TEST_F(SafePathTest, APlantedLinkOnTheWayIsRefusedToo) {
  if (!root()) GTEST_SKIP() << "planting as another user needs root";
  m_dir.dir("/real");
  m_dir.link("/shared/dir", at("/real"));
  give_to_nobody("/shared/dir");
  const SafePath p = resolve_path(at("/shared/dir/report.json"));
  EXPECT_NE(p.refusal.find("/shared/dir'"), std::string::npos) << p.refusal;
}

TEST_F(SafePathTest, TheDirectoryOwnersLinkIsFollowed) {
  if (!root()) GTEST_SKIP() << "needs root";
  m_dir.file("/real/victim", "v");
  give_to_nobody("/real/victim");
  m_dir.dir("/nobodys");
  ASSERT_EQ(::chmod(at("/nobodys").c_str(), 01777), 0);
  give_to_nobody("/nobodys");
  m_dir.link("/nobodys/link", at("/real/victim"));
  give_to_nobody("/nobodys/link");
  EXPECT_EQ(resolve_path(at("/nobodys/link")).problem(), "");
}

TEST_F(SafePathTest, FilesFifosAndDirectoriesAnotherUserMadeInAStickyDirectoryAreRefused) {
  if (!root()) GTEST_SKIP() << "planting as another user needs root";
  m_dir.file("/shared/planted.json", "x");
  give_to_nobody("/shared/planted.json");
  ASSERT_EQ(::mkfifo(at("/shared/fifo").c_str(), 0666), 0);
  give_to_nobody("/shared/fifo");
  for (const char* name : {"/shared/planted.json", "/shared/fifo"}) {
    const SafePath p = resolve_path(at(name));
    EXPECT_EQ(p.problem(), "") << name;
    EXPECT_TRUE(p.exists) << name;
    const std::string why = planted_entry(p);
    EXPECT_NE(why.find("uid 65534"), std::string::npos) << why;
    EXPECT_NE(why.find(name), std::string::npos) << why;
  }
  m_dir.file("/shared/mine.json", "x");
  EXPECT_EQ(planted_entry(resolve_path(at("/shared/mine.json"))), "");

  m_dir.dir("/shared/results");
  give_to_nobody("/shared/results");
  EXPECT_NE(resolve_path(at("/shared/results/rank-0.json")).refusal.find("a directory owned by uid 65534"),
            std::string::npos);
  EXPECT_FALSE(make_directories(at("/shared/results"), 0755).refusal.empty());
  EXPECT_NE(planted_entry(resolve_path(at("/shared/results"))), "");
}

TEST_F(SafePathTest, ALinkLoopEndsInELOOP) {
  m_dir.link("/a", "b");
  m_dir.link("/b", "a");
  EXPECT_EQ(resolve_path(at("/a")).error, ELOOP);
}

TEST_F(SafePathTest, MakeDirectoriesMakesParentsAndReturnsTheDirectory) {
  const SafePath made = make_directories(at("/out/a/b"), 0755);
  ASSERT_EQ(made.problem(), "");
  EXPECT_EQ(made.name, ".");
  EXPECT_TRUE(S_ISDIR(made.st.st_mode));
  EXPECT_TRUE(std::filesystem::is_directory(at("/out/a/b")));
  EXPECT_EQ(make_directories(at("/out/a/b"), 0755).problem(), "") << "an existing directory of the caller's";
  m_dir.file("/out/file");
  EXPECT_EQ(make_directories(at("/out/file"), 0755).error, ENOTDIR);
}

TEST_F(SafePathTest, NewFilesAreExclusiveAndPrivate) {
  const SafePath dir = resolve_directory(at("/shared"));
  ASSERT_EQ(dir.problem(), "");
  EXPECT_EQ(dir.name, ".");
  std::string name;
  const int fd = create_exclusive(dir, ".report.tmp.", name);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  ::close(fd);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(name.rfind(".report.tmp.", 0), 0u);
  EXPECT_TRUE(std::filesystem::exists(at("/shared/" + name)));

  const int anon = create_anonymous(dir, "preflight-");
  ASSERT_GE(anon, 0);
  ::close(anon);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(at("/shared"))) ++entries;
  EXPECT_EQ(entries, 1u) << "the anonymous file leaves no name behind";
}

TEST_F(SafePathTest, ADirectoryOthersCanReplaceFilesInIsNoPlaceForTemporaryFiles) {
  EXPECT_EQ(untrusted_directory(resolve_directory(at("/shared"))), "") << "sticky, as /tmp and /dev/shm";
  m_dir.dir("/open");
  ASSERT_EQ(::chmod(at("/open").c_str(), 0777), 0);
  EXPECT_NE(untrusted_directory(resolve_directory(at("/open"))).find("not sticky"), std::string::npos);
  if (!root()) return;
  m_dir.dir("/theirs");
  give_to_nobody("/theirs");
  EXPECT_NE(untrusted_directory(resolve_directory(at("/theirs"))).find("uid 65534"), std::string::npos);
}

}  // namespace
}  // namespace preflight::sys_safe_path_test
