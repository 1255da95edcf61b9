// SPDX-License-Identifier: MIT
// host.disk on hand-built facts (every status, the need for a node-local and a shared directory),
// the disk probe over a memory tree with statfs answers of the test's choosing, and the facts' JSON.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "checks/check.hpp"
#include "checks/specs.hpp"
#include "core/checkpoint_model.hpp"
#include "probes/disk_probe.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace checks_host_disk_test {

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kTiB = 1ull << 40;
constexpr std::uint64_t kB7 = 7'000'000'000;    // 98e9 B of checkpoint: 91.3 GiB
constexpr std::uint64_t kB70 = 70'000'000'000;  // 980e9 B: 912.7 GiB

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

CheckpointDir dir(const std::string& path, const std::string& mount_point, const std::string& fstype,
                  std::uint64_t free_bytes, std::uint64_t total_bytes, std::uint64_t free_inodes = 1'000'000,
                  std::uint64_t total_inodes = 2'000'000) {
  CheckpointDir d;
  d.given = d.path = d.holder = d.resolved = path;
  d.exists = true;
  DiskUsage u;
  u.free_bytes = free_bytes;
  u.total_bytes = total_bytes;
  u.free_inodes = free_inodes;
  u.total_inodes = total_inodes;
  d.usage = Probed<DiskUsage>::ok(u, "statvfs(" + path + ")");
  MountEntry m;
  m.mount_point = mount_point;
  m.fstype = fstype;
  m.source = fstype == "nfs4" ? "filer:/export/ckpt" : "/dev/nvme0n1p2";
  m.options = "rw,relatime";
  d.mount = Probed<MountEntry>::ok(m, "/proc/self/mountinfo");
  return d;
}

RankFacts node(std::vector<CheckpointDir> dirs, int local_ranks = 8, int world_size = 8) {
  RankFacts f;
  f.placement.local_ranks = local_ranks;
  f.placement.world_size = world_size;
  DiskFacts d;
  d.cwd = "/home/alice";
  d.dirs = std::move(dirs);
  f.disk = Probed<DiskFacts>::ok(d, "statvfs");
  return f;
}

Options model(std::optional<std::uint64_t> params, std::optional<int> stage = std::nullopt) {
  Options o;
  o.model_params = params;
  o.zero_stage = stage;
  return o;
}

Verdict check(const RankFacts& f, const Options& o = {}, Profile p = Profile::Node) {
  return run_check(kHostDisk, CheckContext{f, o, p});
}

// ---- the shared checkpoint model ----

TEST(CheckpointModel, TheWholeJobIs14BytesPerParameterWhateverTheStage) {
  Placement p;
  p.local_ranks = 8;
  p.world_size = 64;
  for (int stage = 0; stage <= 3; ++stage) {
    Options o = model(kB70, stage);
    const CheckpointPlan plan = checkpoint_plan(p, o);
    EXPECT_DOUBLE_EQ(plan.job_bytes(), 980e9) << stage;
  }
  // A node's share: ZeRO-0 rank 0 saves everything, ZeRO-3 every rank 1/64.
  EXPECT_DOUBLE_EQ(checkpoint_plan(p, model(kB70, 0)).node_bytes(0), 980e9);
  EXPECT_DOUBLE_EQ(checkpoint_plan(p, model(kB70, 3)).node_bytes(3), 8 * 980e9 / 64);
  EXPECT_EQ(checkpoint_plan(p, model(kB70, 3)).node_formula(), "8 × 70B × 14/64 B");
  EXPECT_EQ(checkpoint_plan(p, model(kB70, 2)).node_formula(), "1 × 70B × 2 B + 8 × 70B × 12/64 B");
}

// ---- host.disk: every status ----

TEST(HostDisk, PassesWithRoomForTwoCheckpoints) {
  const Verdict v = check(node({dir("/ckpt", "/ckpt", "ext4", 500 * kGiB, 2 * kTiB)}), model(kB7));
  ASSERT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(
      v.summary,
      "/ckpt: 500 GiB free of 2 TiB on /ckpt (ext4), room for 5 checkpoints; the job runs on one node: its whole "
      "checkpoint of a 7B-parameter model is ≈ 91.3 GiB (7B × (2 + 12) B: bf16 weights and fp32 optimizer states)");
  EXPECT_EQ(v.evidence["dirs"][0]["need_bytes"], 98'000'000'000ull);
  EXPECT_EQ(v.evidence["dirs"][0]["need_of"], "job");
  EXPECT_EQ(v.evidence["job_checkpoint_bytes"], 98'000'000'000ull);
  EXPECT_EQ(v.evidence["dirs"][0]["network_fs"], false);
}

TEST(HostDisk, FailsWhenOneCheckpointDoesNotFit) {
  const Verdict v = check(node({dir("/ckpt", "/", "xfs", 50 * kGiB, 400 * kGiB)}), model(kB7));
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.summary,
            "/ckpt has 50 GiB free of 400 GiB on / (xfs); the job runs on one node: its whole checkpoint of a "
            "7B-parameter model is ≈ 91.3 GiB (7B × (2 + 12) B: bf16 weights and fp32 optimizer states)");
  EXPECT_TRUE(has(v.remedy, "Free at least 41.3 GiB more in /ckpt (`df -h /ckpt`")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "Megatron-LM --save")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "with at least 182.5 GiB free (room for two checkpoints)")) << v.remedy;
  EXPECT_EQ(v.finding.code, "host.disk/too-small");
  EXPECT_TRUE(has(v.finding.message, "{dir} has {free} free of {total} on {fs}")) << v.finding.message;
  EXPECT_EQ(v.finding.params["free"], "50 GiB");
  EXPECT_EQ(v.finding.params["need"], "91.3 GiB");
}

TEST(HostDisk, WarnsWhenOneCheckpointFitsButNotTwo) {
  const Verdict v = check(node({dir("/ckpt", "/", "ext4", 150 * kGiB, 1 * kTiB)}), model(kB7));
  ASSERT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "/ckpt has 150 GiB free of 1 TiB on / (ext4): room for one checkpoint but not two"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "frameworks keep the previous checkpoint until the new one is complete")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "Free 32.5 GiB more in /ckpt so that two checkpoints fit")) << v.remedy;
  EXPECT_EQ(v.finding.code, "host.disk/one-checkpoint");
  EXPECT_EQ(v.finding.params["free"], "150 GiB");
  EXPECT_EQ(v.finding.params["short"], "32.5 GiB");
  EXPECT_EQ(v.finding.params["two"], "182.5 GiB");
}

TEST(HostDisk, FailsOnAReadOnlyMount) {
  CheckpointDir d = dir("/ckpt", "/ckpt", "ext4", 500 * kGiB, 2 * kTiB);
  d.mount.value()->read_only = true;
  d.mount.value()->options = "ro,relatime";
  const Verdict v = check(node({d}));
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(
      v.summary,
      "/ckpt is on a read-only mount, /ckpt (ext4): the checkpoint save fails with EROFS (Read-only file system)");
  EXPECT_TRUE(has(v.remedy, "`mount -o remount,rw /ckpt`")) << v.remedy;
  EXPECT_EQ(v.finding.code, "host.disk/read-only");
  EXPECT_EQ(v.finding.params["mount"], "/ckpt");
  EXPECT_EQ(v.finding.params["fs"], "/ckpt (ext4)");

  CheckpointDir flag = dir("/ckpt", "/ckpt", "ext4", 500 * kGiB, 2 * kTiB);
  flag.usage.value()->read_only = true;  // ST_RDONLY: a superblock mounted read-only
  EXPECT_EQ(check(node({flag})).status, Status::Fail);
}

TEST(HostDisk, FailsWhereThisUserCannotWrite) {
  CheckpointDir d = dir("/ckpt", "/", "ext4", 500 * kGiB, 2 * kTiB);
  d.usage.value()->writable = false;
  const Verdict v = check(node({d}), model(kB7));
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "this user cannot create files in /ckpt on / (ext4)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "`ls -ld /ckpt`")) << v.remedy;
  EXPECT_EQ(v.finding.code, "host.disk/not-writable");
  EXPECT_EQ(v.finding.params["holder"], "/ckpt");
}

TEST(HostDisk, FailsWithoutFreeInodesAndWarnsWithFew) {
  const Verdict none = check(node({dir("/ckpt", "/", "ext4", 500 * kGiB, 2 * kTiB, 0, 1'000'000)}), model(kB7));
  ASSERT_EQ(none.status, Status::Fail) << none.summary;
  EXPECT_TRUE(has(none.summary, "/ (ext4) has no free inodes (0 of 1000000)")) << none.summary;
  EXPECT_TRUE(has(none.remedy, "`df -i /ckpt`")) << none.remedy;
  EXPECT_EQ(none.finding.code, "host.disk/no-inodes");
  EXPECT_EQ(none.finding.params["inodes_total"], 1'000'000);

  const Verdict few = check(node({dir("/ckpt", "/", "ext4", 500 * kGiB, 2 * kTiB, 500, 1'000'000)}), model(kB7));
  EXPECT_EQ(few.status, Status::Warn) << few.summary;
  EXPECT_TRUE(has(few.summary, "only 500 free inodes of 1000000")) << few.summary;
  EXPECT_EQ(few.finding.code, "host.disk/few-inodes");
  EXPECT_EQ(few.finding.params["inodes_free"], 500);
  EXPECT_EQ(few.finding.params["inodes_total"], 1'000'000);
  // Below 1% of many inodes is few too.
  EXPECT_EQ(check(node({dir("/ckpt", "/", "ext4", 500 * kGiB, 2 * kTiB, 5'000, 1'000'000)})).status, Status::Warn);
}

TEST(HostDisk, BtrfsCountsNoInodesAndThatIsNoProblem) {
  const Verdict v = check(node({dir("/ckpt", "/", "btrfs", 500 * kGiB, 2 * kTiB, 0, 0)}), model(kB7));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.evidence["dirs"][0]["total_inodes"], 0);
}

TEST(HostDisk, WithoutASizeItFindsFullAndNearlyFullFileSystems) {
  const Verdict full = check(node({dir("/ckpt", "/", "ext4", 512 * kMiB, 1 * kTiB)}));
  ASSERT_EQ(full.status, Status::Fail) << full.summary;
  EXPECT_EQ(
      full.summary,
      "/ckpt is full: 512 MiB free of 1 TiB on / (ext4) (100% used); no checkpoint size was given (--model-params)");
  EXPECT_TRUE(has(full.remedy, "--model-params N")) << full.remedy;
  EXPECT_EQ(full.finding.code, "host.disk/full");
  EXPECT_EQ(full.finding.params["free"], "512 MiB");
  EXPECT_EQ(full.finding.params["used"], "100%");

  const Verdict nearly = check(node({dir("/ckpt", "/", "ext4", 30 * kGiB, 1 * kTiB)}));
  ASSERT_EQ(nearly.status, Status::Warn) << nearly.summary;
  EXPECT_EQ(nearly.summary,
            "/ckpt is nearly full: 30 GiB free of 1 TiB on / (ext4) (2.9% free); no checkpoint size was given "
            "(--model-params)");
  EXPECT_TRUE(has(nearly.remedy, "Give the checkpoint size with --model-params N (and --zero-stage S)"))
      << nearly.remedy;
  EXPECT_EQ(nearly.finding.code, "host.disk/nearly-full");
  EXPECT_EQ(nearly.finding.params["free_share"], "2.9%");
  EXPECT_EQ(nearly.finding.params["no_size"], "no checkpoint size was given (--model-params)");

  const Verdict roomy = check(node({dir("/ckpt", "/", "ext4", 300 * kGiB, 1 * kTiB)}));
  EXPECT_EQ(roomy.status, Status::Pass) << roomy.summary;
  EXPECT_TRUE(has(roomy.summary,
                  "no checkpoint size was given (--model-params): only a full or nearly full file system is found"))
      << roomy.summary;
  EXPECT_TRUE(roomy.evidence["job_checkpoint_bytes"].is_null());
}

TEST(HostDisk, WarnsForACheckpointInRam) {
  const Verdict v =
      check(node({dir("/dev/shm/ckpt", "/dev/shm", "tmpfs", 100 * kGiB, 128 * kGiB)}), model(1'000'000'000));
  ASSERT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(
      v.summary,
      "/dev/shm/ckpt is on /dev/shm (tmpfs): a checkpoint there lives in RAM, is lost at reboot and counts against "
      "the node's memory (and the container's memory limit)");
  EXPECT_EQ(v.finding.code, "host.disk/in-memory");
  EXPECT_EQ(v.finding.params["fs"], "/dev/shm (tmpfs)");
  EXPECT_EQ(v.evidence["dirs"][0]["in_memory"], true);
}

TEST(HostDisk, UnknownWhenStatvfsFailedOrTheMountIsNotKnown) {
  CheckpointDir d = dir("/ckpt", "/", "ext4", 0, 0);
  d.usage = Probed<DiskUsage>::error(ProbeErrc::PermissionDenied, "permission denied", "stat(/ckpt)");
  const Verdict v = check(node({d}), model(kB7));
  ASSERT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.summary, "the free space of /ckpt could not be read: stat(/ckpt): permission denied");
  EXPECT_TRUE(has(v.remedy, "`df -h /ckpt`")) << v.remedy;
  EXPECT_EQ(v.finding.code, "host.disk/unreadable");
  EXPECT_EQ(v.finding.params["why"], "stat(/ckpt): permission denied");

  CheckpointDir m = dir("/ckpt", "/", "ext4", 500 * kGiB, 2 * kTiB);
  m.mount = Probed<MountEntry>::error(ProbeErrc::PermissionDenied, "permission denied", "/proc/self/mountinfo");
  const Verdict mv = check(node({m}), model(kB7));
  ASSERT_EQ(mv.status, Status::Unknown) << mv.summary;
  EXPECT_TRUE(has(mv.summary, "the mount holding /ckpt is not known")) << mv.summary;
  EXPECT_EQ(mv.finding.code, "host.disk/mount-unknown");
  EXPECT_EQ(mv.finding.params["why_mount"], "/proc/self/mountinfo: permission denied");
  // What can be told still is: a shortfall against the node's share is a FAIL with the mount unknown.
  CheckpointDir small = m;
  small.usage.value()->free_bytes = 10 * kGiB;
  EXPECT_EQ(check(node({small}), model(kB7)).status, Status::Fail);

  CheckpointDir sizeless = dir("/bucket", "/bucket", "fuse.s3fs", 0, 0, 0, 0);
  const Verdict sv = check(node({sizeless}), model(kB7));
  EXPECT_EQ(sv.status, Status::Unknown);
  EXPECT_EQ(sv.finding.code, "host.disk/no-size");
  EXPECT_EQ(sv.finding.params["fs"], "/bucket (fuse.s3fs from /dev/nvme0n1p2, a network file system)");
  EXPECT_EQ(sv.summary,
            "/bucket (fuse.s3fs from /dev/nvme0n1p2, a network file system) reports no size (statvfs f_blocks 0): the "
            "free space for /bucket cannot be told");

  RankFacts never;  // nothing probed at all
  EXPECT_EQ(check(never).status, Status::Unknown);
}

TEST(HostDisk, AHungProbeIsNamedAsAHang) {
  RankFacts f = node({});
  f.disk = Probed<DiskFacts>::error(
      ProbeErrc::Timeout,
      "probe 'disk' hung: it had not finished when the probe phase's deadline passed (after 9 s "
      "of --timeout 10 s), and the probes after it did not run");
  const Verdict v = check(f);
  ASSERT_EQ(v.status, Status::Unknown);
  EXPECT_TRUE(has(v.summary, "probe 'disk' hung")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "network file system")) << v.remedy;
}

TEST(HostDisk, ADirectoryWhoseProbeHungIsNamedAsNotGathered) {
  CheckpointDir d = dir("/ckpt", "/", "ext4", 0, 0);
  d.usage = Probed<DiskUsage>::error(ProbeErrc::Timeout,
                                     "probe 'disk' hung: it had not finished when the probe phase's deadline passed");
  const Verdict v = check(node({d}), model(kB7));
  ASSERT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "host.disk/not-gathered");
  EXPECT_EQ(v.finding.params["dir"], "/ckpt");
  EXPECT_TRUE(v.summary.starts_with("the free space of /ckpt was not gathered: probe 'disk' hung")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--timeout")) << v.remedy;
}

TEST(HostDisk, NoDirectoryProbedIsUnknown) {
  const Verdict v = check(node({}));
  ASSERT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "host.disk/no-directory");
  EXPECT_EQ(v.summary, "no checkpoint directory was probed");
  EXPECT_EQ(v.remedy, "Give the directory the job saves to with --checkpoint-dir DIR.");
}

TEST(HostDisk, SkippedInTheImageProfile) {
  const Verdict v = check(node({dir("/ckpt", "/", "ext4", 1 * kMiB, 1 * kTiB)}), model(kB7), Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_TRUE(has(v.summary, "image build's disk is not the job's")) << v.summary;
}

TEST(HostDisk, ANetworkFileSystemReceivesTheWholeJobsCheckpoint) {
  // 70B under ZeRO-3 on 8 nodes of 8: each node writes 1/8 of 912.7 GiB, a shared file system all of it.
  Options o = model(kB70, 3);
  const Verdict local = check(node({dir("/scratch", "/scratch", "xfs", 300 * kGiB, 3 * kTiB)}, 8, 64), o);
  EXPECT_EQ(local.status, Status::Pass) << local.summary;
  EXPECT_TRUE(has(local.summary,
                  "this node's ranks write ≈ 114.1 GiB of each 70B-parameter ZeRO-3 checkpoint there "
                  "(node-local: the busiest node's share, 8 × 70B × 14/64 B)"))
      << local.summary;
  EXPECT_EQ(local.evidence["dirs"][0]["need_of"], "node");

  const Verdict shared = check(node({dir("/mnt/ckpt", "/mnt/ckpt", "nfs4", 300 * kGiB, 3 * kTiB)}, 8, 64), o);
  ASSERT_EQ(shared.status, Status::Fail) << shared.summary;
  EXPECT_EQ(
      shared.summary,
      "/mnt/ckpt has 300 GiB free of 3 TiB on /mnt/ckpt (nfs4 from filer:/export/ckpt, a network file system); the "
      "job's whole checkpoint (every node writes its part into it) of a 70B-parameter model is ≈ 912.7 GiB (70B × "
      "(2 + 12) B: bf16 weights and fp32 optimizer states)");
  EXPECT_EQ(shared.evidence["dirs"][0]["network_fs"], true);
  EXPECT_EQ(shared.evidence["dirs"][0]["mount_source"], "filer:/export/ckpt");
  EXPECT_EQ(shared.evidence["dirs"][0]["need_of"], "job");

  for (const char* type :
       {"lustre", "gpfs", "beegfs", "ceph", "cifs", "fuse.gcsfuse", "fuse.juicefs", "9p", "virtiofs"}) {
    const Verdict v = check(node({dir("/mnt/ckpt", "/mnt/ckpt", type, 300 * kGiB, 3 * kTiB)}, 8, 64), o);
    EXPECT_EQ(v.evidence["dirs"][0]["network_fs"], true) << type;
    EXPECT_TRUE(has(v.summary, "a network file system")) << type << ": " << v.summary;
  }
  // A FUSE file system that stays on the node (rootless containers' fuse-overlayfs) is local.
  const Verdict overlay = check(node({dir("/work", "/", "fuse.fuse-overlayfs", 300 * kGiB, 3 * kTiB)}, 8, 64), o);
  EXPECT_EQ(overlay.evidence["dirs"][0]["network_fs"], false);
}

CheckpointDir current(const std::string& path, const std::string& mount_point, const std::string& fstype,
                      std::uint64_t free_bytes, std::uint64_t total_bytes, std::uint64_t free_inodes = 1'000'000,
                      std::uint64_t total_inodes = 2'000'000) {
  CheckpointDir d = dir(path, mount_point, fstype, free_bytes, total_bytes, free_inodes, total_inodes);
  d.given = ".";
  d.defaulted = true;
  return d;
}

TEST(HostDisk, TheDefaultIsTheCurrentDirectory) {
  const Verdict v = check(node({current("/home/alice", "/home", "ext4", 300 * kGiB, 1 * kTiB)}));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(
      v.summary.starts_with("the current directory /home/alice (no --checkpoint-dir given): 300 GiB free of 1 TiB"))
      << v.summary;
  // The PASS says the directory is information only, and how to name the job's.
  EXPECT_TRUE(has(v.summary,
                  "; information only, as no checkpoint directory was named: name the job's with --checkpoint-dir DIR "
                  "(or checkpoint-dir = DIR in the --config file)"))
      << v.summary;
  EXPECT_EQ(v.evidence["dirs"][0]["defaulted"], true);
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "host.disk/room-unsized");
  EXPECT_EQ(v.findings[1].code, "host.disk/cwd-information");

  // With a checkpoint size the room is counted there too, still as information.
  const Verdict sized = check(node({current("/home/alice", "/home", "ext4", 300 * kGiB, 1 * kTiB)}), model(kB7));
  EXPECT_EQ(sized.status, Status::Pass) << sized.summary;
  EXPECT_TRUE(has(sized.summary, "room for 3 checkpoints")) << sized.summary;
  EXPECT_TRUE(has(sized.summary, "information only")) << sized.summary;
}

// A Kubernetes init container with readOnlyRootFilesystem: true runs in / on a read-only overlay; a
// Slurm prolog on a stateless node runs in / on a small tmpfs. The job never writes there: what
// fails a named directory is a WARN for the current directory, never a FAIL or UNKNOWN.
TEST(HostDisk, AReadOnlyCurrentDirectoryIsAWarningNotAFailure) {
  CheckpointDir d = current("/", "/", "overlay", 40 * kGiB, 100 * kGiB);
  d.mount.value()->read_only = true;
  d.mount.value()->options = "ro,relatime";
  const Verdict v = check(node({d}));
  ASSERT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "host.disk/cwd-read-only");
  EXPECT_EQ(v.summary,
            "the current directory / (no --checkpoint-dir given) is on a read-only mount, / (overlay): a checkpoint "
            "saved there fails with EROFS; no checkpoint directory was named, so this is information, not a failure");
  EXPECT_TRUE(
      v.remedy.starts_with("Name the directory the job saves checkpoints to with --checkpoint-dir DIR (or "
                           "checkpoint-dir = DIR in the --config file)"))
      << v.remedy;
  EXPECT_TRUE(has(v.remedy, "`mount -o remount,rw /`")) << v.remedy;

  // The same mount named with --checkpoint-dir is a FAIL.
  CheckpointDir named = d;
  named.given = "/";
  named.defaulted = false;
  EXPECT_EQ(check(node({named})).status, Status::Fail);
}

TEST(HostDisk, ASmallTmpfsRootAsTheCurrentDirectoryIsAWarning) {
  const Verdict v = check(node({current("/", "/", "tmpfs", 200 * kMiB, 2 * kGiB)}));
  ASSERT_EQ(v.status, Status::Warn) << v.summary;
  ASSERT_GE(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "host.disk/cwd-full");
  EXPECT_EQ(v.findings[0].status, Status::Warn);
  EXPECT_EQ(v.findings[1].code, "host.disk/in-memory");
  EXPECT_TRUE(
      v.summary.starts_with("the current directory / (no --checkpoint-dir given) is full: 200 MiB free of 2 "
                            "GiB on / (tmpfs) (90% used); no checkpoint directory was named"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "--checkpoint-dir DIR")) << v.remedy;
}

TEST(HostDisk, EveryFailureOfTheCurrentDirectoryIsAWarning) {
  CheckpointDir unwritable = current("/", "/", "ext4", 500 * kGiB, 2 * kTiB);
  unwritable.usage.value()->writable = false;
  CheckpointDir tiny = current("/work", "/", "xfs", 50 * kGiB, 400 * kGiB);
  CheckpointDir no_inodes = current("/work", "/", "ext4", 500 * kGiB, 2 * kTiB, 0, 1'000'000);
  CheckpointDir ro_flag = current("/", "/", "ext4", 500 * kGiB, 2 * kTiB);
  ro_flag.usage.value()->read_only = true;
  const struct {
    CheckpointDir d;
    std::string code;
    std::string says;
  } cases[] = {
      {unwritable, "host.disk/cwd-not-writable", "this user cannot create files in / on / (ext4)"},
      {tiny, "host.disk/cwd-too-small", "the current directory /work (no --checkpoint-dir given) has 50 GiB free"},
      {no_inodes, "host.disk/cwd-no-inodes", "/ (ext4) has no free inodes (0 of 1000000)"},
      {ro_flag, "host.disk/cwd-read-only", "is on a read-only mount"},
  };
  for (const auto& c : cases) {
    const Verdict v = check(node({c.d}), model(kB7));
    EXPECT_EQ(v.status, Status::Warn) << c.code << ": " << v.summary;
    EXPECT_EQ(v.finding.code, c.code) << v.summary;
    EXPECT_TRUE(has(v.summary, c.says)) << v.summary;
    EXPECT_TRUE(has(v.summary, "no checkpoint directory was named, so this is information, not a failure"))
        << v.summary;
    EXPECT_TRUE(has(v.remedy, "--checkpoint-dir DIR (or checkpoint-dir = DIR in the --config file)")) << v.remedy;
    for (const Finding& f : v.findings) EXPECT_NE(f.status, Status::Fail) << f.code;
  }
  // The too-small WARN still says what one checkpoint needs.
  const Verdict tv = check(node({tiny}), model(kB7));
  EXPECT_TRUE(has(tv.summary, "is ≈ 91.3 GiB")) << tv.summary;
  EXPECT_TRUE(has(tv.remedy, "free at least 41.3 GiB more there")) << tv.remedy;
}

TEST(HostDisk, ACurrentDirectoryThatCannotBeReadIsAWarningNotUnknown) {
  CheckpointDir unreadable = current("/", "/", "ext4", 0, 0);
  unreadable.usage = Probed<DiskUsage>::error(ProbeErrc::PermissionDenied, "permission denied", "statvfs(/)");
  const Verdict u = check(node({unreadable}));
  ASSERT_EQ(u.status, Status::Warn) << u.summary;
  EXPECT_EQ(u.finding.code, "host.disk/cwd-not-judged");
  EXPECT_EQ(u.summary,
            "the current directory / (no --checkpoint-dir given) could not be judged (statvfs(/): permission denied); "
            "no checkpoint directory was named, so this is information, not a failure");
  EXPECT_TRUE(has(u.remedy, "`df -h /`")) << u.remedy;

  CheckpointDir mount_unknown = current("/", "/", "ext4", 500 * kGiB, 2 * kTiB);
  mount_unknown.mount =
      Probed<MountEntry>::error(ProbeErrc::PermissionDenied, "permission denied", "/proc/self/mountinfo");
  const Verdict m = check(node({mount_unknown}));
  ASSERT_EQ(m.status, Status::Warn) << m.summary;
  EXPECT_EQ(m.finding.code, "host.disk/cwd-not-judged");
  EXPECT_TRUE(has(m.summary, "(the mount holding it is not known: /proc/self/mountinfo: permission denied)"))
      << m.summary;

  CheckpointDir sizeless = current("/bucket", "/bucket", "fuse.s3fs", 0, 0, 0, 0);
  const Verdict nv = check(node({sizeless}), model(kB7));
  ASSERT_EQ(nv.status, Status::Warn) << nv.summary;
  EXPECT_EQ(nv.finding.code, "host.disk/cwd-not-judged");
  EXPECT_TRUE(has(nv.summary, "the file system reports no size")) << nv.summary;

  // A current directory that stat() cannot reach (a stale network mount).
  CheckpointDir stale = current("/scratch/job42", "/scratch", "nfs4", 0, 0);
  stale.usage = Probed<DiskUsage>::error(ProbeErrc::Unreadable, "Stale file handle", "stat(/scratch/job42)");
  const Verdict sv = check(node({stale}));
  EXPECT_EQ(sv.status, Status::Warn) << sv.summary;
  EXPECT_EQ(sv.finding.code, "host.disk/cwd-not-judged");
}

TEST(HostDisk, TheCurrentDirectoryKeepsItsWarnings) {
  // What is a WARN for a named directory stays one: nearly full, room for one checkpoint, few inodes.
  EXPECT_EQ(check(node({current("/", "/", "ext4", 30 * kGiB, 1 * kTiB)})).finding.code, "host.disk/nearly-full");
  EXPECT_EQ(check(node({current("/", "/", "ext4", 150 * kGiB, 1 * kTiB)}), model(kB7)).finding.code,
            "host.disk/one-checkpoint");
  EXPECT_EQ(check(node({current("/", "/", "ext4", 500 * kGiB, 2 * kTiB, 500, 1'000'000)})).finding.code,
            "host.disk/few-inodes");
}

TEST(HostDisk, ADirectoryNotCreatedYetIsJudgedByTheParentThatWillHoldIt) {
  CheckpointDir d = dir("/data/run7", "/data", "xfs", 300 * kGiB, 1 * kTiB);
  d.given = "run7";
  d.exists = false;
  d.holder = d.resolved = "/data";
  const Verdict v = check(node({d}), model(kB7));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(
      v.summary.starts_with("run7 (/data/run7, not created yet: /data will hold it): 300 GiB free of 1 TiB on /data "
                            "(xfs), room for 3 checkpoints"))
      << v.summary;
}

TEST(HostDisk, AFileWhereTheDirectoryShouldBeFails) {
  CheckpointDir d = dir("/data/ckpt", "/data", "xfs", 0, 0);
  d.holder_is_dir = false;
  d.usage = Probed<DiskUsage>::error(ProbeErrc::NotFound, "/data/ckpt is not a directory", "stat(/data/ckpt)");
  const Verdict v = check(node({d}), model(kB7));
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.summary, "/data/ckpt exists and is not a directory: no checkpoint can be written into it");
  EXPECT_EQ(v.finding.code, "host.disk/not-a-directory");
  EXPECT_EQ(v.finding.params["holder"], "/data/ckpt");

  CheckpointDir below = d;
  below.path = below.given = "/data/ckpt/run1";
  below.exists = false;
  const Verdict b = check(node({below}), model(kB7));
  ASSERT_EQ(b.status, Status::Fail) << b.summary;
  EXPECT_TRUE(has(b.summary, "cannot be created: /data/ckpt on its path is a file")) << b.summary;
  EXPECT_EQ(b.finding.code, "host.disk/not-a-directory");
  EXPECT_EQ(b.finding.params["dir"], "/data/ckpt/run1");
  EXPECT_TRUE(has(b.remedy, "move the file /data/ckpt out of the way (`ls -ld /data/ckpt`)")) << b.remedy;
}

TEST(HostDisk, AHugeFileSystemPasses) {
  CheckpointDir d =
      dir("/lustre/ckpt", "/lustre", "lustre", 5 * 1024 * kTiB, 10 * 1024 * kTiB, 4'000'000'000ull, 8'000'000'000ull);
  d.mount.value()->source = "10.0.0.1@o2ib:/fs";
  const Verdict v = check(node({d}, 8, 1024), model(405'000'000'000ull, 1));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "5 PiB free of 10 PiB on /lustre (lustre from 10.0.0.1@o2ib:/fs, a network file system), room for "
                  "more than 100 checkpoints"))
      << v.summary;
}

TEST(HostDisk, EveryDirectoryIsJudgedWithItsOwnParameters) {
  const Verdict v = check(
      node({dir("/fast", "/fast", "xfs", 500 * kGiB, 2 * kTiB), dir("/slow", "/slow", "ext4", 10 * kGiB, 1 * kTiB)}),
      model(kB7));
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(v.summary.starts_with("/slow has 10 GiB free of 1 TiB on /slow (ext4)")) << v.summary;
  EXPECT_TRUE(has(v.finding.message, "{dir_2} has {free_2} free")) << v.finding.message;
  EXPECT_EQ(v.finding.params["dir_2"], "/slow");
  EXPECT_EQ(v.finding.params["dir"], "/fast");
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].code, "host.disk/too-small");
  EXPECT_EQ(v.findings[0].params["free_2"], "10 GiB");
  EXPECT_EQ(v.findings[1].code, "host.disk/room");
  EXPECT_EQ(v.evidence["dirs"].size(), 2u);
}

TEST(HostDisk, ALayoutThatDoesNotDivideTheWorldGivesNoSize) {
  Options o = model(kB7, 1);
  o.tensor_parallel = 3;
  o.expect_world_size = 8;
  const Verdict v = check(node({dir("/ckpt", "/", "ext4", 300 * kGiB, 1 * kTiB)}), o);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "does not divide the world size 8 (see host.memory)")) << v.summary;
}

// ---- the probe, over a fake root ----

class DiskTree : public ::testing::Test {
 protected:
  void SetUp() override {
    tree.dir("/home/alice").dir("/data/ckpt").dir("/scratch").dir("/proc/self").file("/data/file.txt", "x");
    tree.link("/home/alice/link", "../../data/ckpt");
    mountinfo = parse_mountinfo(
        "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
        "40 22 0:50 / /data rw,relatime shared:30 - nfs4 filer:/export rw,vers=4.2\n"
        "41 22 0:51 / /scratch rw,nosuid shared:31 - tmpfs tmpfs rw,size=8g\n"
        "42 22 0:52 / /scratch ro,nosuid shared:32 - xfs /dev/sdb1 ro\n");
  }

  /// The write test answers by live path.
  DiskSyscalls fake() const {
    DiskSyscalls s;
    s.writable = [this](const FileSystem&, const std::string& path) { return unwritable.count(path) ? EACCES : 0; };
    return s;
  }
  /// What stat_fs answers at `path` (a path with no answer at or above it: EIO).
  void answer(const std::string& path, std::uint64_t blocks, std::uint64_t avail, std::uint64_t files,
              std::uint64_t favail, bool read_only = false) {
    FsStats v;
    v.block_size = 4096;
    v.total_bytes = blocks * 4096;
    v.available_bytes = v.free_bytes = avail * 4096;
    v.total_inodes = files;
    v.free_inodes = favail;
    v.read_only = read_only;
    tree.stats(path, v);
  }
  DiskFacts probe(std::vector<std::string> given, const std::string& cwd = "/home/alice") const {
    return probe_checkpoint_dirs(FileSystem(tree), Probed<MountInfo>::ok(mountinfo, "/proc/self/mountinfo"), given, cwd,
                                 fake());
  }

  MemoryTree tree;
  MountInfo mountinfo;
  std::set<std::string> unwritable;
};

TEST_F(DiskTree, TheDefaultIsTheCurrentDirectory) {
  answer("/home/alice", 1'000'000, 250'000, 500'000, 400'000);
  const DiskFacts f = probe({});
  ASSERT_EQ(f.dirs.size(), 1u);
  const CheckpointDir& d = f.dirs[0];
  EXPECT_TRUE(d.defaulted);
  EXPECT_EQ(d.given, ".");
  EXPECT_EQ(d.path, "/home/alice");
  EXPECT_TRUE(d.exists);
  ASSERT_TRUE(d.usage.ok()) << d.usage.why();
  EXPECT_EQ(d.usage.value()->total_bytes, 1'000'000ull * 4096);
  EXPECT_EQ(d.usage.value()->free_bytes, 250'000ull * 4096);
  EXPECT_EQ(d.usage.value()->total_inodes, 500'000u);
  EXPECT_EQ(d.usage.value()->free_inodes, 400'000u);
  EXPECT_FALSE(d.usage.value()->read_only);
  EXPECT_TRUE(d.usage.value()->writable);
  ASSERT_TRUE(d.mount.ok()) << d.mount.why();
  EXPECT_EQ(d.mount.value()->mount_point, "/");
  EXPECT_EQ(d.mount.value()->fstype, "ext4");
  EXPECT_EQ(f.cwd, "/home/alice");
}

TEST_F(DiskTree, RelativePathsLinksAndDirectoriesNotMadeYet) {
  answer("/data/ckpt", 1'000'000, 900'000, 0, 0);
  const DiskFacts f = probe({"link/run7/step1", "../../data/ckpt/", "/data/ckpt"});
  // "../../data/ckpt/" and "/data/ckpt" are one directory.
  ASSERT_EQ(f.dirs.size(), 2u);
  const CheckpointDir& link = f.dirs[0];
  EXPECT_EQ(link.given, "link/run7/step1");
  EXPECT_EQ(link.path, "/home/alice/link/run7/step1");
  EXPECT_FALSE(link.exists);
  EXPECT_EQ(link.holder, "/home/alice/link");
  EXPECT_EQ(link.resolved, "/data/ckpt");  // the link leads to the network file system
  ASSERT_TRUE(link.mount.ok()) << link.mount.why();
  EXPECT_EQ(link.mount.value()->fstype, "nfs4");
  EXPECT_EQ(link.mount.value()->source, "filer:/export");
  ASSERT_TRUE(link.usage.ok()) << link.usage.why();
  EXPECT_EQ(link.usage.value()->free_bytes, 900'000ull * 4096);

  EXPECT_EQ(f.dirs[1].path, "/data/ckpt");
  EXPECT_TRUE(f.dirs[1].exists);
}

TEST_F(DiskTree, StackedMountsReadOnlyAndUnwritable) {
  answer("/scratch", 1'000, 1'000, 10, 10, true);
  answer("/home/alice", 1'000, 1'000, 10, 10);
  unwritable.insert("/home/alice");
  const DiskFacts f = probe({"/scratch", "/home/alice"});
  ASSERT_EQ(f.dirs.size(), 2u);
  ASSERT_TRUE(f.dirs[0].mount.ok());
  EXPECT_EQ(f.dirs[0].mount.value()->fstype, "xfs");  // the last mount at /scratch is in effect
  EXPECT_TRUE(f.dirs[0].mount.value()->read_only);
  EXPECT_TRUE(f.dirs[0].usage.value()->read_only);
  EXPECT_FALSE(f.dirs[1].usage.value()->writable);
}

TEST_F(DiskTree, FilesOnThePathAndStatvfsErrorsAreFacts) {
  const DiskFacts f = probe({"/data/file.txt/ckpt", "/scratch"});
  ASSERT_EQ(f.dirs.size(), 2u);
  EXPECT_EQ(f.dirs[0].holder, "/data/file.txt");
  EXPECT_FALSE(f.dirs[0].holder_is_dir);
  EXPECT_FALSE(f.dirs[0].usage.ok());
  // No stat_fs answer at or above /scratch: the tree fails with EIO.
  ASSERT_FALSE(f.dirs[1].usage.ok());
  EXPECT_EQ(f.dirs[1].usage.error()->code, ProbeErrc::Unreadable);
  EXPECT_EQ(f.dirs[1].usage.source(), "statvfs(/scratch)");
}

TEST_F(DiskTree, AnUnreadableMountTableLeavesTheSpaceKnown) {
  answer("/home/alice", 100'000'000, 50'000'000, 1'000'000, 900'000);
  const Probed<MountInfo> unreadable =
      Probed<MountInfo>::error(ProbeErrc::PermissionDenied, "permission denied", "/proc/self/mountinfo");
  const DiskFacts f = probe_checkpoint_dirs(FileSystem(tree), unreadable, {"/home/alice"}, "/home/alice", fake());
  ASSERT_EQ(f.dirs.size(), 1u);
  EXPECT_TRUE(f.dirs[0].usage.ok());
  EXPECT_FALSE(f.dirs[0].mount.ok());
  const Verdict v = check(node(f.dirs));
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  // The current directory, where none was named: information, a WARN at most.
  const DiskFacts cwd = probe_checkpoint_dirs(FileSystem(tree), unreadable, {}, "/home/alice", fake());
  ASSERT_EQ(cwd.dirs.size(), 1u);
  EXPECT_TRUE(cwd.dirs[0].defaulted);
  EXPECT_EQ(check(node(cwd.dirs)).status, Status::Warn);
}

TEST_F(DiskTree, ProbedFactsAreJudged) {
  answer("/data/ckpt", 100'000'000, 10'000'000, 0, 0);  // 38 GiB free of 381 GiB
  RankFacts f = node({});
  f.disk = Probed<DiskFacts>::ok(probe({"/data/ckpt/run1"}), "statvfs");
  const Verdict v = check(f, model(kB7));
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "/data/ckpt/run1 (not created yet: /data/ckpt will hold it) has 38.1 GiB free"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "on /data (nfs4 from filer:/export, a network file system)")) << v.summary;
}

TEST_F(DiskTree, WithoutTheCurrentDirectoryARelativePathIsNotResolved) {
  const DiskFacts f = probe({"ckpt"}, "");
  ASSERT_EQ(f.dirs.size(), 1u);
  EXPECT_FALSE(f.dirs[0].usage.ok());
  EXPECT_TRUE(has(f.dirs[0].usage.why(), "getcwd failed")) << f.dirs[0].usage.why();
}

TEST(DiskProbe, AbsolutePaths) {
  EXPECT_EQ(absolute_path("ckpt", "/home/a"), "/home/a/ckpt");
  EXPECT_EQ(absolute_path("./ckpt/", "/home/a"), "/home/a/ckpt");
  EXPECT_EQ(absolute_path("../b/../c", "/home/a"), "/home/c");
  EXPECT_EQ(absolute_path("/x//y/", "/home/a"), "/x/y");
  EXPECT_EQ(absolute_path(".", "/"), "/");
}

TEST(DiskProbe, UnderASysrootThatIsNoCaptureTheSpaceIsNotTaken) {
  std::string tmp = ::testing::TempDir() + "/preflight-disk-tree-XXXXXX";
  ASSERT_NE(::mkdtemp(tmp.data()), nullptr);
  const FileSystem tree(tmp);  // a directory that is not a capture
  const EnvSnapshot env;
  Options o;
  o.checkpoint_dirs = {"/ckpt"};
  RankFacts f;
  run_probe(FactSource::Disk, ProbeContext(tree, env, o), f);
  ASSERT_FALSE(f.disk.ok());
  EXPECT_EQ(f.disk.error()->code, ProbeErrc::Unsupported);
  EXPECT_TRUE(has(f.disk.why(), "not in the capture")) << f.disk.why();
  EXPECT_EQ(check(f).status, Status::Unknown);
  std::filesystem::remove_all(tmp);
}

// ---- the facts' JSON (what --json-per-rank, merge and --sysroot captures carry) ----

TEST(DiskFactsJson, RoundTrips) {
  CheckpointDir a = dir("/mnt/ckpt", "/mnt/ckpt", "nfs4", 300 * kGiB, 3 * kTiB, 12, 34);
  a.given = "ckpt";
  a.exists = false;
  a.holder = "/mnt";
  a.resolved = "/mnt";
  a.usage.value()->read_only = true;
  a.usage.value()->writable = false;
  CheckpointDir b;
  b.given = b.path = "/gone";
  b.holder_is_dir = false;
  b.usage = Probed<DiskUsage>::error(ProbeErrc::PermissionDenied, "permission denied", "stat(/gone)");
  const RankFacts before = node({a, b});

  const nlohmann::json doc = before;
  const RankFacts after = nlohmann::json::parse(doc.dump()).get<RankFacts>();
  ASSERT_TRUE(after.disk.ok());
  const DiskFacts& d = *after.disk.value();
  EXPECT_EQ(d.cwd, "/home/alice");
  ASSERT_EQ(d.dirs.size(), 2u);
  EXPECT_EQ(d.dirs[0].given, "ckpt");
  EXPECT_EQ(d.dirs[0].path, "/mnt/ckpt");
  EXPECT_FALSE(d.dirs[0].exists);
  EXPECT_EQ(d.dirs[0].holder, "/mnt");
  ASSERT_TRUE(d.dirs[0].usage.ok());
  EXPECT_EQ(d.dirs[0].usage.value()->free_bytes, 300 * kGiB);
  EXPECT_EQ(d.dirs[0].usage.value()->total_inodes, 34u);
  EXPECT_EQ(d.dirs[0].usage.value()->free_inodes, 12u);
  EXPECT_TRUE(d.dirs[0].usage.value()->read_only);
  EXPECT_FALSE(d.dirs[0].usage.value()->writable);
  EXPECT_EQ(d.dirs[0].mount.value()->source, "filer:/export/ckpt");
  EXPECT_FALSE(d.dirs[1].holder_is_dir);
  EXPECT_EQ(d.dirs[1].usage.error()->code, ProbeErrc::PermissionDenied);
  EXPECT_EQ(d.dirs[1].usage.source(), "stat(/gone)");
  EXPECT_EQ(nlohmann::json(after), doc);
  // Judged the same after the trip.
  const Options o = model(kB7);
  EXPECT_EQ(check(after, o).summary, check(before, o).summary);

  // A result file without disk facts (an older preflight) reads as not probed: UNKNOWN, never PASS.
  nlohmann::json old = doc;
  old.erase("disk");
  EXPECT_EQ(check(old.get<RankFacts>()).status, Status::Unknown);
}

}  // namespace
}  // namespace checks_host_disk_test
}  // namespace preflight
