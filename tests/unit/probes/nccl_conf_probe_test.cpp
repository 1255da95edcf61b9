// SPDX-License-Identifier: MIT
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "checks/check.hpp"
#include "probes/probe.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace probes_nccl_conf_probe_test {
namespace {

namespace fs = std::filesystem;

const std::string kLayered = preflight::test_paths::fixtures_dir() + "/nccl_conf/layered";

RankFacts probe(const std::string& root, std::map<std::string, std::string> env, const std::string& nccl = {}) {
  const FileSystem files(root);
  const EnvSnapshot snapshot(std::move(env));
  const Options options;
  RankFacts facts;
  facts.env = snapshot;
  if (!nccl.empty()) {
    NcclLibrary lib;
    lib.version = nccl;
    facts.gpu.nccl = Probed<NcclLibrary>::ok(lib, "ncclGetVersion");
  }
  probe_nccl_conf(ProbeContext{files, snapshot, options}, facts);
  return facts;
}

Verdict check(const RankFacts& facts) {
  const Options options;
  return run_check(*find_check("env.nccl"), CheckContext{facts, options, Profile::Node});
}

// A scratch sysroot, removed afterwards.
class ScratchRoot {
 public:
  ScratchRoot() : m_path(fs::temp_directory_path() / ("preflight-nccl-conf-" + std::to_string(::getpid()))) {
    fs::remove_all(m_path);
    fs::create_directories(m_path / "etc");
  }
  ~ScratchRoot() { fs::remove_all(m_path); }
  std::string root() const { return m_path.string(); }
  void write(const std::string& rel, const std::string& bytes) const {
    fs::create_directories((m_path / rel).parent_path());
    std::ofstream(m_path / rel, std::ios::binary) << bytes;
  }
  void mkdir(const std::string& rel) const { fs::create_directories(m_path / rel); }

 private:
  fs::path m_path;
};

TEST(NcclConfProbe, UserFileThenSystemFile) {
  const RankFacts facts = probe(kLayered, {{"HOME", "/home/user"}});
  const NcclConfFacts& c = facts.nccl_conf;
  ASSERT_EQ(c.files.size(), 2u);
  EXPECT_EQ(c.home_from, "HOME");  // the fixture has no /etc/passwd
  EXPECT_EQ(c.files[0].path, "/home/user/.nccl.conf");
  EXPECT_EQ(c.files[0].role, "user");
  ASSERT_TRUE(c.files[0].contents.ok()) << c.files[0].contents.why();
  EXPECT_EQ(c.files[0].contents.value()->entries.size(), 2u);
  EXPECT_EQ(c.files[1].path, "/etc/nccl.conf");
  ASSERT_TRUE(c.files[1].contents.ok());
  EXPECT_EQ(c.files[1].contents.value()->entries.size(), 4u);
  EXPECT_EQ(c.files[1].contents.value()->malformed_lines, std::vector<int>{7});
}

TEST(NcclConfProbe, NcclConfFileReplacesTheUserFile) {
  const RankFacts facts = probe(kLayered, {{"HOME", "/home/user"}, {"NCCL_CONF_FILE", "/conf/job.conf"}});
  ASSERT_EQ(facts.nccl_conf.files.size(), 2u);
  EXPECT_EQ(facts.nccl_conf.files[0].role, "NCCL_CONF_FILE");
  EXPECT_EQ(facts.nccl_conf.files[0].path, "/conf/job.conf");
  EXPECT_EQ(facts.nccl_conf.home_from, "");

  const RankFacts empty = probe(kLayered, {{"HOME", "/home/user"}, {"NCCL_CONF_FILE", ""}});
  EXPECT_EQ(empty.nccl_conf.files[0].role, "user");  // NCCL treats an empty NCCL_CONF_FILE as unset
}

TEST(NcclConfProbe, PrecedenceThroughTheCheck) {
  // env > user file > system file; the spaced line and the line without '=' are findings.
  const Verdict v = check(probe(kLayered, {{"HOME", "/home/user"}, {"NCCL_DEBUG", "VERSION"}}));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  const auto source_of = [&](std::string_view name) {
    for (const auto& var : v.evidence.at("variables")) {
      if (var.at("name") == name) return var.at("source").get<std::string>();
    }
    return std::string("absent");
  };
  EXPECT_EQ(source_of("NCCL_DEBUG"), "environment");
  EXPECT_EQ(source_of("NCCL_P2P_DISABLE"), "/home/user/.nccl.conf:2");
  EXPECT_EQ(source_of("NCCL_SOCKET_IFNAME"), "/home/user/.nccl.conf:3");
  EXPECT_TRUE(v.summary.find("/etc/nccl.conf:5 sets 'NCCL_IB_TIMEOUT '") != std::string::npos) << v.summary;
  EXPECT_TRUE(v.summary.find("/etc/nccl.conf line(s) 7") != std::string::npos) << v.summary;

  const Verdict job = check(probe(kLayered, {{"HOME", "/home/user"}, {"NCCL_CONF_FILE", "/conf/job.conf"}}));
  EXPECT_EQ(job.status, Status::Warn);
  EXPECT_TRUE(job.summary.find("NCCL_ALGO=Ring (/conf/job.conf:2)") != std::string::npos) << job.summary;
}

TEST(NcclConfProbe, MissingFilesAreNormal) {
  ScratchRoot root;
  const RankFacts facts = probe(root.root(), {{"HOME", "/home/nobody"}});
  ASSERT_EQ(facts.nccl_conf.files.size(), 2u);
  for (const ConfFile& f : facts.nccl_conf.files) EXPECT_EQ(f.contents.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(check(facts).status, Status::Pass);

  const RankFacts no_home = probe(root.root(), {});
  ASSERT_EQ(no_home.nccl_conf.files.size(), 1u);  // no passwd entry and no HOME: only /etc/nccl.conf
}

TEST(NcclConfProbe, HomeComesFromPasswdLikeNccl) {
  ScratchRoot root;
  root.write("etc/passwd", "someone:x:" + std::to_string(::getuid()) + ":0::/srv/me:/bin/sh\n");
  root.write("srv/me/.nccl.conf", "NCCL_DEBUG=WARN\n");
  const RankFacts facts = probe(root.root(), {{"HOME", "/elsewhere"}});
  EXPECT_EQ(facts.nccl_conf.home_from, "/etc/passwd");
  EXPECT_EQ(facts.nccl_conf.files[0].path, "/srv/me/.nccl.conf");
  EXPECT_TRUE(facts.nccl_conf.files[0].contents.ok());
}

TEST(NcclConfProbe, Nccl230TakesTheHomeFromHomeAndStripsCarriageReturns) {
  ScratchRoot root;
  root.write("etc/passwd", "someone:x:" + std::to_string(::getuid()) + ":0::/srv/me:/bin/sh\n");
  root.write("elsewhere/.nccl.conf", "NCCL_SOCKET_IFNAME=eth0\r\n");
  const RankFacts facts = probe(root.root(), {{"HOME", "/elsewhere"}}, "2.30.7");
  EXPECT_EQ(facts.nccl_conf.home_from, "HOME");
  EXPECT_EQ(facts.nccl_conf.files[0].path, "/elsewhere/.nccl.conf");
  ASSERT_TRUE(facts.nccl_conf.files[0].contents.ok());
  EXPECT_EQ(facts.nccl_conf.files[0].contents.value()->entries.at(0).value, "eth0");
  const RankFacts old = probe(root.root(), {{"HOME", "/elsewhere"}}, "2.28.9");
  EXPECT_EQ(old.nccl_conf.files[0].path, "/srv/me/.nccl.conf");  // getpwuid's home before 2.30
}

TEST(NcclConfProbe, UnreadableFileIsUnknown) {
  ScratchRoot root;
  root.mkdir("etc/nccl.conf");  // a directory: open succeeds, read fails with EISDIR
  const RankFacts facts = probe(root.root(), {});
  ASSERT_FALSE(facts.nccl_conf.files.back().contents.ok());
  const Verdict v = check(facts);
  EXPECT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(v.summary.find("could not read /etc/nccl.conf") != std::string::npos) << v.summary;
}

TEST(NcclConfProbe, CrlfAndGarbageFiles) {
  ScratchRoot root;
  static constexpr char kHead[] = "NCCL_SOCKET_IFNAME=eth0\r\nNCCL_P2P_DISABLE=1\r\n\x00\xff\xfe garbage\n";
  root.write("etc/nccl.conf",
             std::string(kHead, sizeof kHead - 1) + "NCCL_DEBUG_FILE=" + std::string(4000, 'p') + "\n");
  const RankFacts facts = probe(root.root(), {});
  const ConfFileContents* c = facts.nccl_conf.files.back().contents.value();
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->entries.size(), 3u);
  EXPECT_EQ(c->entries[0].value, "eth0\r");
  EXPECT_EQ(c->entries[2].value.size(), 1023u);
  const Verdict v = check(facts);
  EXPECT_EQ(v.status, Status::Warn);
  EXPECT_TRUE(v.summary.find("NCCL_SOCKET_IFNAME=eth0\\x0D (/etc/nccl.conf:1)") != std::string::npos) << v.summary;
  EXPECT_TRUE(v.remedy.find("Write NCCL_SOCKET_IFNAME=eth0 on line 1 of /etc/nccl.conf.") != std::string::npos)
      << v.remedy;
  EXPECT_NO_THROW((void)v.evidence.dump());
}

}  // namespace
}  // namespace probes_nccl_conf_probe_test
}  // namespace preflight
