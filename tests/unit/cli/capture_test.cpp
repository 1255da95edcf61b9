// SPDX-License-Identifier: MIT
// The recording seam of `preflight capture` (FsRecorder), the capture's manifest and facts files
// as --sysroot reads them, the secret filter, and the capture's tar archive.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "checks/check.hpp"
#include "cli/capture.hpp"
#include "core/env_grammar.hpp"
#include "core/redact.hpp"
#include "probes/probe.hpp"
#include "sys/capture.hpp"

namespace preflight {
namespace cli_capture_test {
namespace {

namespace fs = std::filesystem;

class Scratch {
 public:
  explicit Scratch(const std::string& tag)
      : m_path(fs::temp_directory_path() / ("preflight-capture-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(m_path);
    fs::create_directories(m_path / "live");
    fs::create_directories(m_path / "cap");
  }
  ~Scratch() { fs::remove_all(m_path); }
  std::string live() const { return (m_path / "live").string(); }
  std::string cap() const { return (m_path / "cap").string(); }
  void write(const std::string& path, const std::string& text) const {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }

 private:
  fs::path m_path;
};

std::string read_link(const std::string& path) {
  std::error_code ec;
  return fs::read_symlink(path, ec).string();
}

TEST(FsRecorder, AFileReadWholeIsCopiedByteForByte) {
  Scratch s("file");
  const std::string data = std::string("MemTotal: 1 kB\n\0\x01\xff", 19);
  s.write(s.live() + "/proc/meminfo", data);
  auto rec = std::make_shared<FsRecorder>(s.cap());
  const FileSystem live("", rec);
  ASSERT_TRUE(live.read(s.live() + "/proc/meminfo").ok());
  const Probed<std::string> copy = FileSystem(s.cap()).read(s.live() + "/proc/meminfo");
  ASSERT_TRUE(copy.ok()) << copy.why();
  EXPECT_EQ(*copy.value(), data);
  EXPECT_EQ(rec->recorded(), std::vector<std::string>{s.live() + "/proc/meminfo"});
}

TEST(FsRecorder, AFilteredFileKeepsOnlyWhatItsFilterKeepsAndSaysWhy) {
  Scratch s("filter");
  const std::string passwd = s.live() + "/etc/passwd";
  s.write(passwd,
          "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice:/home/alice:/bin/bash\n"
          "bob:x:1001:1001:Bob:/home/bob:/bin/sh\n");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  rec->filter(
      passwd, [](const std::string& text) { return passwd_entry(text, 1000); }, "only the job user's entry");
  const FileSystem live("", rec);
  ASSERT_TRUE(live.read(passwd).ok());
  const Probed<std::string> copy = FileSystem(s.cap()).read(passwd);
  ASSERT_TRUE(copy.ok()) << copy.why();
  EXPECT_EQ(*copy.value(), "alice:x:1000:1000:Alice:/home/alice:/bin/bash\n");
  EXPECT_EQ(rec->filtered(), (std::map<std::string, std::string>{{passwd, "only the job user's entry"}}));
}

TEST(FsRecorder, EveryOtherFileGoesThroughTheCommonFilterAndIsListedWhenItChanged) {
  Scratch s("every");
  const std::string conf = s.live() + "/home/alice/.nccl.conf";
  const std::string meminfo = s.live() + "/proc/meminfo";
  s.write(conf, "NCCL_DEBUG=INFO\nNCCL_PASSWORD = hunter2 hunter3\nNCCL_COMM_ID=user:pw@10.0.0.1:29500\n");
  s.write(meminfo, "MemTotal: 1 kB\n");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  rec->filter_every([](const std::string& text) { return redact_secret_lines(text); }, "secrets redacted");
  const FileSystem live("", rec);
  ASSERT_TRUE(live.read(conf).ok());
  ASSERT_TRUE(live.read(meminfo).ok());
  const Probed<std::string> copy = FileSystem(s.cap()).read(conf);
  ASSERT_TRUE(copy.ok()) << copy.why();
  EXPECT_EQ(*copy.value(),
            "NCCL_DEBUG=INFO\nNCCL_PASSWORD = <redacted: 15 characters>\nNCCL_COMM_ID=<redacted: 7 "
            "characters>@10.0.0.1:29500\n");
  EXPECT_EQ(*FileSystem(s.cap()).read(meminfo).value(), "MemTotal: 1 kB\n");
  EXPECT_EQ(rec->filtered(), (std::map<std::string, std::string>{{conf, "secrets redacted"}}))
      << "meminfo is unchanged";
}

TEST(FsRecorder, LinksOnThePathAreRecreatedAndFollowed) {
  Scratch s("links");
  // sysfs: /sys/class/net/eth0 -> ../../devices/pci0/net/eth0, read through the link.
  s.write(s.live() + "/sys/devices/pci0/net/eth0/mtu", "9000\n");
  fs::create_directories(s.live() + "/sys/class/net");
  fs::create_directory_symlink("../../devices/pci0/net/eth0", s.live() + "/sys/class/net/eth0");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  const FileSystem live("", rec);
  ASSERT_TRUE(live.read_line(s.live() + "/sys/class/net/eth0/mtu").ok());
  EXPECT_EQ(read_link(s.cap() + s.live() + "/sys/class/net/eth0"), "../../devices/pci0/net/eth0");
  const Probed<std::string> copy = FileSystem(s.cap()).read_line(s.live() + "/sys/class/net/eth0/mtu");
  ASSERT_TRUE(copy.ok()) << copy.why();
  EXPECT_EQ(*copy.value(), "9000");
}

TEST(FsRecorder, AnAbsoluteLinkNeverLeadsOutOfTheCapture) {
  Scratch s("absolute");
  s.write(s.live() + "/run/hosts", "10.0.0.1 master\n");
  fs::create_directories(s.live() + "/etc");
  fs::create_symlink(s.live() + "/run/hosts", s.live() + "/etc/hosts");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  ASSERT_TRUE(FileSystem("", rec).read(s.live() + "/etc/hosts").ok());
  const std::string text = read_link(s.cap() + s.live() + "/etc/hosts");
  EXPECT_NE(text.front(), '/') << text;
  // The live file changes after the capture: the capture still reads what was captured.
  s.write(s.live() + "/run/hosts", "changed\n");
  const Probed<std::string> copy = FileSystem(s.cap()).read(s.live() + "/etc/hosts");
  ASSERT_TRUE(copy.ok()) << copy.why();
  EXPECT_EQ(*copy.value(), "10.0.0.1 master\n");
}

TEST(FsRecorder, ALinkClimbingAboveTheRootIsClampedAtTheCapturesRoot) {
  Scratch s("climb");
  const std::string live = s.live();
  const int depth = static_cast<int>(std::count(live.begin(), live.end(), '/'));
  std::string up;
  for (int i = 0; i < depth + 5; ++i) up += "../";  // far above "/", as the kernel clamps it
  s.write(s.live() + "/data/x", "inside\n");
  fs::create_symlink(up + s.live().substr(1) + "/data/x", s.live() + "/link");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  ASSERT_TRUE(FileSystem("", rec).read(s.live() + "/link").ok());
  const Probed<std::string> copy = FileSystem(s.cap()).read(s.live() + "/link");
  ASSERT_TRUE(copy.ok()) << copy.why();
  EXPECT_EQ(*copy.value(), "inside\n");
  const std::string text = read_link(s.cap() + s.live() + "/link");
  int ups = 0;
  for (std::size_t p = text.find("../"); p != std::string::npos; p = text.find("../", p + 3)) ++ups;
  EXPECT_EQ(ups, depth) << text;
}

TEST(FsRecorder, AListedDirectoryKeepsItsEntries) {
  Scratch s("list");
  s.write(s.live() + "/sys/devices/system/node/node0/cpulist", "0-3\n");
  s.write(s.live() + "/sys/devices/system/node/possible", "0\n");
  fs::create_directories(s.live() + "/sys/bus/pci/devices");
  fs::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0",
                               s.live() + "/sys/bus/pci/devices/0000:00:01.0");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  const FileSystem live("", rec);
  ASSERT_TRUE(live.list(s.live() + "/sys/devices/system/node").ok());
  ASSERT_TRUE(live.list(s.live() + "/sys/bus/pci/devices").ok());
  const FileSystem copy(s.cap());
  const auto nodes = copy.list(s.live() + "/sys/devices/system/node");
  ASSERT_TRUE(nodes.ok()) << nodes.why();
  EXPECT_EQ(*nodes.value(), (std::vector<std::string>{"node0", "possible"}));
  // A file listed but never read is an empty stand-in; a link is a link (its target not needed).
  EXPECT_EQ(*copy.read(s.live() + "/sys/devices/system/node/possible").value(), "");
  EXPECT_EQ(read_link(s.cap() + s.live() + "/sys/bus/pci/devices/0000:00:01.0"),
            "../../../devices/pci0000:00/0000:00:01.0");
  // A file read after the listing gets its contents.
  ASSERT_TRUE(live.read(s.live() + "/sys/devices/system/node/possible").ok());
  EXPECT_EQ(*copy.read(s.live() + "/sys/devices/system/node/possible").value(), "0\n");
}

TEST(FsRecorder, ExistenceAndSystemCallPathsAreRecorded) {
  Scratch s("exists");
  s.write(s.live() + "/sys/module/nvidia_peermem/version", "1.0\n");
  fs::create_directories(s.live() + "/dev/shm");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  const FileSystem live("", rec);
  EXPECT_TRUE(live.exists(s.live() + "/sys/module/nvidia_peermem/version"));
  EXPECT_FALSE(live.exists(s.live() + "/sys/module/nv_mem/version"));
  (void)live.host_path(s.live() + "/dev/shm");
  const FileSystem copy(s.cap());
  EXPECT_TRUE(copy.exists(s.live() + "/sys/module/nvidia_peermem/version"));
  EXPECT_FALSE(copy.exists(s.live() + "/sys/module/nv_mem"));
  EXPECT_TRUE(fs::is_directory(s.cap() + s.live() + "/dev/shm"));
}

TEST(FsRecorder, NothingIsRecordedWhenPausedFromATreeOrForPartialReads) {
  Scratch s("paused");
  s.write(s.live() + "/lib/libnccl.so.2", std::string(4096, 'x'));
  s.write(s.live() + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  const FileSystem live("", rec);
  ASSERT_TRUE(live.read_at(s.live() + "/lib/libnccl.so.2", 0, 64).ok());  // libraries: never copied
  rec->set_paused(true);
  ASSERT_TRUE(live.read(s.live() + "/etc/ld.so.conf").ok());
  rec->set_paused(false);
  const FileSystem tree(s.live(), rec);  // a --sysroot tree is never recorded
  ASSERT_TRUE(tree.read("/etc/ld.so.conf").ok());
  EXPECT_TRUE(rec->recorded().empty());
  EXPECT_TRUE(fs::is_empty(s.cap()));
}

TEST(FsRecorder, AReadThatFailedOnTheNodeFailsTheSameWayFromTheCapture) {
  Scratch s("failed");
  // A directory where a file is expected: read() fails with EISDIR, for root too.
  fs::create_directories(s.live() + "/sys/class/net/eth0/speed");
  s.write(s.live() + "/sys/class/net/eth0/mtu", "1500\n");
  auto rec = std::make_shared<FsRecorder>(s.cap());
  const FileSystem live("", rec);
  ASSERT_TRUE(live.list(s.live() + "/sys/class/net/eth0").ok());
  const Probed<std::string> failed = live.read(s.live() + "/sys/class/net/eth0/speed");
  ASSERT_FALSE(failed.ok());
  ASSERT_EQ(rec->failures().count(s.live() + "/sys/class/net/eth0/speed"), 1u);
  EXPECT_EQ(rec->failures().at(s.live() + "/sys/class/net/eth0/speed").code, failed.error()->code);
}

TEST(FsRecorder, ACapturesRecordedFailureIsReturnedNotNotFound) {
  Scratch s("recorded");
  s.write(s.cap() + "/preflight-capture.json",
          nlohmann::json{{"format", "preflight-capture"},
                         {"version", 1},
                         {"unreadable",
                          {{"/sys/bus/pci/devices/0000:00:01.0/config",
                            {{"error", "permission_denied"}, {"detail", "permission denied"}}}}}}
              .dump());
  const FileSystem tree(s.cap());
  const Probed<std::string> r = tree.read("/sys/bus/pci/devices/0000:00:01.0/config");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error()->code, ProbeErrc::PermissionDenied);
  EXPECT_NE(r.why().find("on the captured node"), std::string::npos) << r.why();
  EXPECT_EQ(tree.read("/sys/bus/pci/devices/0000:00:02.0/config").error()->code, ProbeErrc::NotFound);
}

TEST(CaptureSecrets, NamesMatchingTokenSecretPasswordKeyAreSecretInAnyCase) {
  for (const char* name :
       {"HF_TOKEN", "wandb_api_key", "AWS_SECRET_ACCESS_KEY", "DB_Password", "My_Key_File", "GITHUB_TOKEN"}) {
    EXPECT_TRUE(is_secret_name(name)) << name;
  }
  for (const char* name :
       {"NCCL_IB_HCA", "MASTER_ADDR", "CUDA_VISIBLE_DEVICES", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_IB_PKEY"}) {
    EXPECT_FALSE(is_secret_name(name)) << name;
  }
}

TEST(CaptureSecrets, ValuesAreDroppedNamesKept) {
  const EnvSnapshot env({{"NCCL_IB_HCA", "mlx5_0"}, {"NCCL_TEST_TOKEN", "s3cr3t"}, {"PREFLIGHT_API_KEY", "k3y"}});
  const nlohmann::json doc = captured_env_json(env);
  EXPECT_EQ(doc.at("vars"), (nlohmann::json{{"NCCL_IB_HCA", "mlx5_0"}}));
  EXPECT_EQ(doc.at("dropped_values"), (nlohmann::json{"NCCL_TEST_TOKEN", "PREFLIGHT_API_KEY"}));
  EXPECT_EQ(doc.dump().find("s3cr3t"), std::string::npos);
  EXPECT_EQ(doc.dump().find("k3y"), std::string::npos);
}

class CaptureTree : public ::testing::Test {
 protected:
  CaptureTree() : s("tree") {}
  void manifest(const nlohmann::json& doc) const { s.write(s.cap() + "/preflight-capture.json", doc.dump()); }
  Scratch s;
};

TEST_F(CaptureTree, AFactTheManifestListsIsRead) {
  manifest({{"format", "preflight-capture"}, {"version", 1}, {"facts", {{"env", {{"file", "facts/env.json"}}}}}});
  s.write(s.cap() + "/facts/env.json", R"({"vars": {"NCCL_DEBUG": "WARN", "UNRELATED": "x"}, "dropped_values": []})");
  const CapturedFacts c = load_capture(FileSystem(s.cap()));
  EXPECT_TRUE(c.is_capture);
  EXPECT_EQ(c.error, "");
  const std::optional<EnvSnapshot> env = captured_env(c);
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->get("NCCL_DEBUG").value_or(""), "WARN");
  EXPECT_FALSE(env->has("UNRELATED"));  // the same filter as a live run
}

TEST_F(CaptureTree, AFactNotHeldIsUnsupportedNotInTheCapture) {
  manifest({{"format", "preflight-capture"}, {"version", 1}, {"facts", {{"gpu", {{"file", "facts/gpu.json"}}}}}});
  const FileSystem tree(s.cap());
  const EnvSnapshot env;
  const Options options;
  const ProbeContext ctx(tree, env, options);
  // Listed but missing, and not listed at all: both "not in the capture", never taken from here.
  const Probed<DriverFacts> gpu = captured_fact<DriverFacts>(ctx, "gpu", "", "GPU helper report");
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.error()->code, ProbeErrc::Unsupported);
  EXPECT_NE(gpu.why().find("not in the capture"), std::string::npos) << gpu.why();
  const Probed<FsUsage> shm = captured_probed<FsUsage>(ctx, "shm", "usage", "statfs of /dev/shm");
  ASSERT_FALSE(shm.ok());
  EXPECT_EQ(shm.error()->code, ProbeErrc::Unsupported);
  EXPECT_NE(shm.why().find("it holds no statfs of /dev/shm"), std::string::npos) << shm.why();
}

TEST_F(CaptureTree, AMalformedFactIsAParseError) {
  manifest({{"format", "preflight-capture"}, {"version", 1}, {"facts", {{"shm", {{"file", "facts/shm.json"}}}}}});
  s.write(s.cap() + "/facts/shm.json", R"({"usage": {"value": {"total_bytes": "many"}}})");
  const FileSystem tree(s.cap());
  const EnvSnapshot env;
  const Options options;
  const ProbeContext ctx(tree, env, options);
  const Probed<FsUsage> shm = captured_probed<FsUsage>(ctx, "shm", "usage", "statfs of /dev/shm");
  ASSERT_FALSE(shm.ok());
  EXPECT_EQ(shm.error()->code, ProbeErrc::ParseError);
  EXPECT_EQ(shm.why().find("many"), std::string::npos) << "a captured file's content is never quoted: " << shm.why();
}

TEST_F(CaptureTree, ANumberNoFieldCanHoldIsRefused) {
  manifest({{"format", "preflight-capture"}, {"version", 1}, {"facts", {{"gpu", {{"file", "facts/gpu.json"}}}}}});
  s.write(s.cap() + "/facts/gpu.json", R"({"nvml_gpus": {"value": [{"cc_major": 1e300}]}})");
  const CapturedFacts c = load_capture(FileSystem(s.cap()));
  EXPECT_EQ(c.get("gpu"), nullptr);
  EXPECT_NE(c.missing("gpu", "GPU helper report").find("out of range"), std::string::npos)
      << c.missing("gpu", "GPU helper report");
}

TEST_F(CaptureTree, AManifestOfAnotherFormatOrANewerVersionHoldsNothing) {
  for (const nlohmann::json& doc :
       {nlohmann::json{{"format", "other"}, {"version", 1}},
        nlohmann::json{{"format", "preflight-capture"}, {"version", kCaptureFormatVersion + 1}},
        nlohmann::json::array()}) {
    manifest(doc);
    s.write(s.cap() + "/facts/env.json", R"({"vars": {"NCCL_DEBUG": "WARN"}})");
    const CapturedFacts c = load_capture(FileSystem(s.cap()));
    EXPECT_TRUE(c.is_capture);
    EXPECT_NE(c.error, "") << doc.dump();
    EXPECT_EQ(c.get("env"), nullptr);
    EXPECT_NE(c.missing("env", "environment").find("manifest cannot be read"), std::string::npos);
  }
}

TEST_F(CaptureTree, APlainTreeIsNoCapture) {
  const CapturedFacts c = load_capture(FileSystem(s.cap()));
  EXPECT_FALSE(c.is_capture);
  EXPECT_NE(c.missing("topology", "hwloc XML export").find("is not a `preflight capture`"), std::string::npos);
}

TEST(CaptureShm, TheCapturedMountsSizeBelowTheNeedIsACertainShortfall) {
  Scratch s("shm");
  // A plain tree (hwloc-gather-topology's): mountinfo only, no statfs.
  s.write(s.cap() + "/proc/self/mountinfo",
          "25 1 0:23 / / rw,relatime - ext4 /dev/sda1 rw\n"
          "30 25 0:26 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,size=65536k\n");
  const FileSystem tree(s.cap());
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  run_probe(FactSource::Shm, ProbeContext(tree, env, options), facts);
  ASSERT_TRUE(facts.shm.usage.ok()) << facts.shm.usage.why();
  EXPECT_EQ(facts.shm.usage.value()->total_bytes, 64u << 20);
  EXPECT_TRUE(facts.shm.usage.value()->is_tmpfs);  // never statfs() of the tree's own directory
  EXPECT_NE(facts.shm.usage.source().find("mountinfo"), std::string::npos);

  // Large enough by its size: the free space is not in the tree, so it is not judged.
  s.write(s.cap() + "/proc/self/mountinfo",
          "25 1 0:23 / / rw,relatime - ext4 /dev/sda1 rw\n"
          "30 25 0:26 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,size=8388608k\n");
  RankFacts big;
  run_probe(FactSource::Shm, ProbeContext(tree, env, options), big);
  ASSERT_FALSE(big.shm.usage.ok());
  EXPECT_EQ(big.shm.usage.error()->code, ProbeErrc::Unsupported);
  EXPECT_NE(big.shm.usage.why().find("free space is not known"), std::string::npos) << big.shm.usage.why();
}

TEST(CaptureShm, AnHwlocGatherTreeHasProcMountsOnly) {
  Scratch s("mounts");
  // hwloc-gather-topology saves /proc/mounts, not /proc/self/mountinfo.
  s.write(s.cap() + "/proc/mounts",
          "/dev/sda1 / ext4 rw,relatime 0 0\n"
          "tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=1048576k 0 0\n"
          "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n");
  const FileSystem tree(s.cap());
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  run_probe(FactSource::Shm, ProbeContext(tree, env, options), facts);
  ASSERT_TRUE(facts.shm.mount.ok()) << facts.shm.mount.why();
  EXPECT_EQ(facts.shm.mount.value()->source, "shm");  // the last mount stacked there is in effect
  ASSERT_TRUE(facts.shm.usage.ok()) << facts.shm.usage.why();
  EXPECT_EQ(facts.shm.usage.value()->total_bytes, 64u << 20);
  EXPECT_EQ(facts.shm.usage.source().rfind("/proc/mounts", 0), 0u) << facts.shm.usage.source();
  const Verdict v = run_check(*find_check("shm.capacity"), CheckContext{facts, options, Profile::Node});
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_NE(v.summary.find("64 MiB"), std::string::npos) << v.summary;
}

TEST(CaptureTar, ATreeBecomesAnArchiveTarReads) {
  Scratch s("tar");
  std::string deep = s.cap();
  for (int i = 0; i < 12; ++i) deep += "/directory-with-a-long-name-" + std::to_string(i);
  s.write(deep + "/file", "contents\n");
  fs::create_symlink("directory-with-a-long-name-0/file-that-is-missing", s.cap() + "/link");
  const std::string tar = s.live() + "/out.tar";
  const int fd = ::open(tar.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(write_tar(s.cap(), fd), "");
  ::close(fd);
  const std::string out = s.live() + "/x";
  fs::create_directories(out);
  ASSERT_EQ(std::system(("tar -xf '" + tar + "' -C '" + out + "'").c_str()), 0);
  std::ifstream in(out + deep.substr(s.cap().size()) + "/file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "contents\n");
  EXPECT_EQ(read_link(out + "/link"), "directory-with-a-long-name-0/file-that-is-missing");
}

}  // namespace
}  // namespace cli_capture_test
}  // namespace preflight
