// SPDX-License-Identifier: MIT
// host.disk: the room where checkpoints go (--checkpoint-dir, default the current directory):
// free space against what one checkpoint writes there, inodes, read-only or unwritable mounts,
// checkpoints in RAM. Only a directory the user named (on the command line or in the --config
// file) can FAIL: the current directory, judged where none was named, is information (WARN at
// most). The checkpoint model is host.memory's (core/checkpoint_model.hpp); the rules are in
// kExplain.
#include <algorithm>
#include <array>
#include <cmath>

#include "checks/check.hpp"
#include "core/checkpoint_model.hpp"
#include "core/text.hpp"

namespace preflight {
namespace host_disk_check {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kFullBelowBytes = kGiB;  // without a checkpoint size: FAIL below this much free
constexpr double kNearlyFullShare = 0.05;        // without a checkpoint size: WARN below this share free
constexpr std::uint64_t kFewInodesBelow = 1000;  // WARN below this many free inodes ...
constexpr double kFewInodesShare = 0.01;         // ... or below this share of them

constexpr const char* kExplain = R"(What it reads
  For each --checkpoint-dir DIR (repeatable; default the current directory; a relative DIR is
  resolved against the current directory and shown both ways): whether DIR exists, and if not,
  its nearest existing parent, which is where the framework will create it and so the file
  system that must hold the checkpoint; statvfs() of that directory: free space f_bavail ×
  f_frsize (what an unprivileged writer may still use) of f_blocks × f_frsize, free inodes
  f_favail of f_files (0: the file system does not count inodes, as btrfs: not a problem), the
  ST_RDONLY flag; whether this user may create files there (faccessat W_OK|X_OK, effective ids);
  and the mount holding it in /proc/self/mountinfo (symbolic links resolved first; the longest
  mount point, the last of stacked mounts): mount point, file system type, source, options (ro).
  Nothing is written. Quotas (user, group, project, Lustre OST) are not seen by statvfs(): check
  them with `quota -s` or `lfs quota -u $USER DIR`.

What one checkpoint writes there (host.memory's model: 2 B/param of bf16/fp16 weights, 12 B/param
of optimizer state, fp32 master weights + Adam m and v)
  The whole job's checkpoint is P × (2 + 12) B for P = --model-params, whatever the ZeRO stage:
  the stages only move which rank writes which part.
  A network or parallel file system (nfs, nfs4, cifs, smb3, lustre, gpfs, beegfs, ceph,
  glusterfs, wekafs, 9p, virtiofs, fuse.* such as fuse.s3fs, fuse.gcsfuse, fuse.juicefs, ...) is
  taken to be shared by the job's nodes: it receives the whole job's checkpoint.
  Any other file system is node-local: it receives this node's share, the bytes host.memory
  counts for the node's savers (--zero-stage, default 0; --tensor-parallel, --pipeline-parallel;
  data-parallel rank 0 saves the model states, every rank its optimizer shard, every rank its
  partition under ZeRO-3), for the busiest node, since the job's node order can change between
  restarts. A job on one node writes the whole checkpoint either way.
  Frameworks keep the previous checkpoint until the new one is complete (Megatron-LM's
  iter_NNNNNNN directories, DeepSpeed's tag directories, Hugging Face's checkpoint-N, Lightning's
  ModelCheckpoint), so two checkpoints must fit for a save to be safe.
  Without --model-params there is no checkpoint size: only a full or nearly full file system is
  found, and the summary says how to give the size.

Failures
  FAIL     free space < what one checkpoint writes there: the save fails with ENOSPC ("No space
           left on device") after the job has trained up to it, often leaving a truncated
           checkpoint behind.
  FAIL     without --model-params: less than 1 GiB free (or 100% used).
  FAIL     the mount is read-only (ST_RDONLY or the ro option): the save fails with EROFS.
  FAIL     this user cannot create files there (EACCES at the save).
  FAIL     no free inodes on a file system that counts them: no file can be created, however
           much space is free.
  FAIL     DIR, or a parent of it, exists and is not a directory.
  WARN     free space holds one checkpoint but not two (the previous one is kept until the new
           one is complete).
  WARN     without --model-params: less than 5% of the file system is free.
  WARN     fewer than 1000 free inodes, or fewer than 1% of them.
  WARN     DIR is on tmpfs or ramfs: a checkpoint in RAM is lost at reboot and counts against the
           node's memory (and the container's memory limit).
  UNKNOWN  statvfs() or stat() failed (permission on a parent, a stale network mount), the mount
           table cannot be read (whether DIR is read-only or shared cannot be told), or the file
           system reports no size (f_blocks 0, some FUSE file systems): never PASS on what was not
           read. Under --sysroot, a directory the capture does not hold (capture the node with the
           same --checkpoint-dir).
  SKIP     in the image profile: an image build's disk is not the job's.

Without --checkpoint-dir (on the command line or as checkpoint-dir = DIR in the --config file)
  the current directory is judged, as information only: the job may never write there (a
  Kubernetes init container with readOnlyRootFilesystem, whose current directory is /; a Slurm
  prolog on a stateless node whose root is a small tmpfs). What would FAIL or be UNKNOWN for a
  named directory is a WARN for it (codes host.disk/cwd-*: read-only, not writable, too small,
  full, no inodes, not judged), a PASS says that it is information only, and both say how to name
  the job's directory. Only the directories named FAIL.

Fix
  See what fills the file system (`df -h DIR`, `df -i DIR`, `du -xsh DIR/* | sort -h | tail`) and
  free space (old checkpoints are the usual culprits); or point the framework's save directory
  (Megatron-LM --save, DeepSpeed save_checkpoint(save_dir), Hugging Face TrainingArguments
  output_dir, Lightning ModelCheckpoint(dirpath)) and --checkpoint-dir at a larger volume;
  remount a read-only mount read-write (`mount -o remount,rw MOUNT`; a container volume without
  :ro / readOnly); give the job's user write access to the directory. Give the checkpoint size
  with --model-params N (and --zero-stage, --tensor-parallel, --pipeline-parallel as the job
  runs).)";

bool is_network_fs(std::string_view type) {
  static constexpr std::array<std::string_view, 21> kNetwork = {
      "nfs",      "nfs4", "cifs",     "smb3",  "smbfs",  "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "9p",
      "virtiofs", "afs",  "orangefs", "pvfs2", "wekafs", "panfs",  "dvs",  "ocfs2",  "gfs2", "fuse"};
  // FUSE file systems that stay on this node; every other fuse.* (s3fs, gcsfuse, juicefs, sshfs,
  // rclone, blobfuse2, ceph-fuse, ...) is remote storage.
  static constexpr std::array<std::string_view, 9> kLocalFuse = {
      "fuse.fuse-overlayfs", "fuse.lxcfs", "fuse.squashfuse", "fuse.squashfuse_ll", "fuse.bindfs",
      "fuse.mergerfs",       "fuse.encfs", "fuse.gocryptfs",  "fuse.portal"};
  if (std::find(kLocalFuse.begin(), kLocalFuse.end(), type) != kLocalFuse.end()) return false;
  if (type.starts_with("fuse.")) return true;
  return std::find(kNetwork.begin(), kNetwork.end(), type) != kNetwork.end();
}

bool in_memory_fs(std::string_view type) { return type == "tmpfs" || type == "ramfs"; }

std::string percent(double share) {
  const double p = share * 100;
  return (p >= 10 || p == 0 ? fixed(p, 0) : fixed(p, 1)) + "%";
}

/// What one checkpoint puts into a directory, and how that was worked out.
struct Need {
  std::uint64_t bytes = 0;
  std::string basis;  // "job" or "node"
  std::string text;   // "the job runs on one node: its whole checkpoint of a 7B-parameter model is ≈ 91.3 GiB (…)"
};

/// "" when the checkpoint size is known, else why not.
std::string no_size_reason(const CheckpointPlan& plan) {
  if (!plan.params) return "no checkpoint size was given (--model-params)";
  if (!plan.divides()) {
    return "no checkpoint size: --tensor-parallel × --pipeline-parallel = " + std::to_string(plan.mp()) +
           " does not divide the world size " + std::to_string(plan.world_size) + " (see host.memory)";
  }
  return {};
}

Need need_of(const CheckpointPlan& plan, bool shared) {
  Need n;
  const std::string model = format_params(*plan.params) + "-parameter";
  const bool one_node = plan.world_size <= plan.local_ranks;
  if (shared || one_node) {
    n.bytes = saturate_bytes(plan.job_bytes());
    n.basis = "job";
    n.text = std::string(one_node && !shared ? "the job runs on one node: its whole checkpoint"
                                             : "the job's whole checkpoint (every node writes its part into it)") +
             " of a " + model + " model is ≈ " + format_bytes(n.bytes) + " (" + format_params(*plan.params) +
             " × (2 + 12) B: bf16 weights and fp32 optimizer states)";
    return n;
  }
  n.bytes = saturate_bytes(plan.node_bytes(plan.zero_stage));
  n.basis = "node";
  n.text = "this node's ranks write ≈ " + format_bytes(n.bytes) + " of each " + model + " ZeRO-" +
           std::to_string(plan.zero_stage) + " checkpoint there (node-local: the busiest node's share, " +
           plan.node_formula() + ")";
  if (plan.stage_defaulted) n.text += " (ZeRO-0 assumed: no --zero-stage)";
  if (!plan.world_known && plan.model_parallel) {
    n.text += " (world size " + std::to_string(plan.world_size) + " assumed: no --expect-world-size)";
  }
  return n;
}

/// `text` with every {name} turned into {name<suffix>}: the second directory's findings carry
/// their own parameters ({dir_2}, {free_2}), so that one verdict holds several directories.
std::string suffixed(const std::string& text, const std::string& suffix) {
  if (suffix.empty()) return text;
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] != '{') continue;
    const std::size_t close = text.find('}', i + 1);
    if (close == std::string::npos) continue;
    out += text.substr(i + 1, close - i - 1) + suffix + "}";
    i = close;
  }
  return out;
}

std::string trimmed_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

/// How a directory is named in the findings: as given, its absolute form where that differs, and
/// where it will be made when it does not exist yet.
std::string dir_label(const CheckpointDir& d) {
  std::vector<std::string> notes;
  if (d.defaulted) {
    notes.push_back("no --checkpoint-dir given");
  } else if (trimmed_slashes(d.given) != d.path) {
    notes.push_back(d.path);
  }
  if (!d.exists && d.holder_is_dir && d.holder != d.path)
    notes.push_back("not created yet: " + d.holder + " will hold it");
  const std::string name = d.defaulted ? "the current directory " + d.path : d.given;
  return notes.empty() ? name : name + " (" + join(notes, ", ") + ")";
}

// Where else the checkpoints can go, ending each fix that frees room.
#define PREFLIGHT_MOVE_FIX                                                                                             \
  "point the job's save directory (Megatron-LM --save, DeepSpeed save_checkpoint(save_dir), Hugging Face output_dir, " \
  "Lightning ModelCheckpoint(dirpath)) and --checkpoint-dir at a volume"
#define PREFLIGHT_SIZE_FIX \
  " Give the checkpoint size with --model-params N (and --zero-stage S) to check the room for one."
#define PREFLIGHT_INODE_FIX                                                                                        \
  "See where the files are (`df -i {holder}`; `du -x --inodes {mount} | sort -n | tail`), delete the small files " \
  "that fill it (caches, logs, old checkpoints), or " PREFLIGHT_MOVE_FIX " with free inodes."

constexpr FindingSpec kNoDirectory = {"host.disk/no-directory", Status::Unknown, "no checkpoint directory was probed",
                                      "Give the directory the job saves to with --checkpoint-dir DIR."};
constexpr FindingSpec kNotADirectory = {
    "host.disk/not-a-directory", Status::Fail, "{dir} {state}",
    "Point --checkpoint-dir and the framework's save directory at a directory, or move the file {holder} out of the "
    "way (`ls -ld {holder}`)."};
constexpr FindingSpec kNotGathered = {"host.disk/not-gathered", Status::Unknown,
                                      "the free space of {dir} was not gathered: {why}", kHungProbeRemedy};
constexpr FindingSpec kUnreadable = {
    "host.disk/unreadable", Status::Unknown, "the free space of {dir} could not be read: {why}",
    "Run `df -h {holder}` and `stat {holder}` as the job's user to see why (a stale network mount hangs or fails: "
    "`timeout 5 df {holder}`); fix the permission or the mount, or give a --checkpoint-dir that can be read."};
constexpr FindingSpec kMountUnknown = {
    "host.disk/mount-unknown", Status::Unknown,
    "the mount holding {dir} is not known ({why_mount}): whether it is read-only, in RAM or a network file system "
    "shared by the nodes cannot be told",
    "Run preflight where /proc/self/mountinfo is readable (it is for every process on Linux; a --sysroot tree "
    "must hold it), or check by hand: `findmnt -T {holder}`."};
constexpr FindingSpec kReadOnly = {
    "host.disk/read-only", Status::Fail,
    "{dir} is on a read-only mount, {fs}: the checkpoint save fails with EROFS (Read-only file system)",
    "Remount it read-write (`mount -o remount,rw {mount}`; a container: mount the volume without :ro, Kubernetes "
    "readOnly: false), or " PREFLIGHT_MOVE_FIX " that is writable."};
constexpr FindingSpec kNotWritable = {
    "host.disk/not-writable", Status::Fail,
    "this user cannot create files in {holder} on {fs}, where {dir} goes: the checkpoint save fails with EACCES "
    "(Permission denied)",
    "Give the job's user write access (`ls -ld {holder}` shows owner and mode; `chown` or `chmod u+wx`), "
    "or " PREFLIGHT_MOVE_FIX " it can write."};
constexpr FindingSpec kNoSize = {
    "host.disk/no-size", Status::Unknown,
    "{fs} reports no size (statvfs f_blocks 0): the free space for {dir} cannot be told",
    "Check the room by hand (`df -h {holder}`; for object storage behind FUSE, the bucket's quota), then skip this "
    "check for that directory with --skip host.disk."};
constexpr FindingSpec kTooSmall = {
    "host.disk/too-small", Status::Fail, "{dir} has {free} free of {total} on {fs}; {checkpoint}",
    "Free at least {short} more in {holder} (`df -h {holder}` shows the file system, "
    "`du -xsh {mount_files} | sort -h | tail` what fills it; old checkpoints are the usual culprits), "
    "or " PREFLIGHT_MOVE_FIX " with at least {two} free (room for two checkpoints)."};
constexpr FindingSpec kOneCheckpoint = {
    "host.disk/one-checkpoint", Status::Warn,
    "{dir} has {free} free of {total} on {fs}: room for one checkpoint but not two; {checkpoint}, and frameworks keep "
    "the previous checkpoint until the new one is complete",
    "Free {short} more in {holder} so that two checkpoints fit (`df -h {holder}`), let the framework delete old "
    "checkpoints as it goes (Hugging Face save_total_limit, Lightning ModelCheckpoint(save_top_k)), "
    "or " PREFLIGHT_MOVE_FIX " with at least {two} free."};
constexpr FindingSpec kRoom = {"host.disk/room", Status::Pass,
                               "{dir}: {free} free of {total} on {fs}, room for {fits} checkpoints; {checkpoint}", ""};
constexpr FindingSpec kFull = {
    "host.disk/full", Status::Fail, "{dir} is full: {free} free of {total} on {fs} ({used} used); {no_size}",
    "Free space in {holder} (`df -h {holder}` shows the file system, `du -xsh {mount_files} | sort -h | tail` what "
    "fills it; old checkpoints are the usual culprits), or " PREFLIGHT_MOVE_FIX " with room." PREFLIGHT_SIZE_FIX};
constexpr FindingSpec kNearlyFull = {
    "host.disk/nearly-full", Status::Warn,
    "{dir} is nearly full: {free} free of {total} on {fs} ({free_share} free); {no_size}",
    "Free space in {holder} (`df -h {holder}`, `du -xsh {mount_files} | sort -h | tail`), or " PREFLIGHT_MOVE_FIX
    " with room." PREFLIGHT_SIZE_FIX};
constexpr FindingSpec kRoomUnsized = {
    "host.disk/room-unsized", Status::Pass,
    "{dir}: {free} free of {total} on {fs}; {no_size}: only a full or nearly full file system is found (give "
    "--model-params N and --zero-stage S to check the room for a checkpoint)",
    ""};
constexpr FindingSpec kNoInodes = {
    "host.disk/no-inodes", Status::Fail,
    "{fs} has no free inodes (0 of {inodes_total}): no file of {dir}'s checkpoints can be created, however much space "
    "is free",
    PREFLIGHT_INODE_FIX};
constexpr FindingSpec kFewInodes = {
    "host.disk/few-inodes", Status::Warn,
    "{fs} has only {inodes_free} free inodes of {inodes_total}: a checkpoint of many files (one or more per rank) in "
    "{dir} may not fit",
    PREFLIGHT_INODE_FIX};
constexpr FindingSpec kInMemory = {
    "host.disk/in-memory", Status::Warn,
    "{dir} is on {fs}: a checkpoint there lives in RAM, is lost at reboot and counts against the node's memory (and "
    "the container's memory limit)",
    "Point the job's save directory (Megatron-LM --save, DeepSpeed save_checkpoint(save_dir), Hugging Face output_dir, "
    "Lightning ModelCheckpoint(dirpath)) and --checkpoint-dir at a disk or a shared file system."};

// The current directory where no directory was named (no --checkpoint-dir, none in the --config
// file): the job may never write there (a read-only root filesystem in a Kubernetes init container,
// a small tmpfs root on a stateless node), so what would fail a named directory is a WARN here.
#define PREFLIGHT_CWD_NOTE "; no checkpoint directory was named, so this is information, not a failure"
#define PREFLIGHT_NAME_DIR_FIX                                                                                 \
  "Name the directory the job saves checkpoints to with --checkpoint-dir DIR (or checkpoint-dir = DIR in the " \
  "--config file) to have it judged instead; if the job does save in the current directory, "
constexpr FindingSpec kCwdReadOnly = {
    "host.disk/cwd-read-only", Status::Warn,
    "{dir} is on a read-only mount, {fs}: a checkpoint saved there fails with EROFS" PREFLIGHT_CWD_NOTE,
    PREFLIGHT_NAME_DIR_FIX
    "remount it read-write (`mount -o remount,rw {mount}`) or point the job's save directory "
    "at a writable volume."};
constexpr FindingSpec kCwdNotWritable = {"host.disk/cwd-not-writable", Status::Warn,
                                         "this user cannot create files in {holder} on {fs}: a checkpoint saved in "
                                         "{dir} fails with EACCES" PREFLIGHT_CWD_NOTE,
                                         PREFLIGHT_NAME_DIR_FIX
                                         "give the job's user write access (`ls -ld {holder}`)."};
constexpr FindingSpec kCwdTooSmall = {"host.disk/cwd-too-small", Status::Warn,
                                      "{dir} has {free} free of {total} on {fs}; {checkpoint}" PREFLIGHT_CWD_NOTE,
                                      PREFLIGHT_NAME_DIR_FIX "free at least {short} more there (`df -h {holder}`)."};
constexpr FindingSpec kCwdFull = {"host.disk/cwd-full", Status::Warn,
                                  "{dir} is full: {free} free of {total} on {fs} ({used} used)" PREFLIGHT_CWD_NOTE,
                                  PREFLIGHT_NAME_DIR_FIX
                                  "free space there (`df -h {holder}`, `du -xsh {mount_files} | sort -h | tail`)."};
constexpr FindingSpec kCwdNoInodes = {
    "host.disk/cwd-no-inodes", Status::Warn,
    "{fs} has no free inodes (0 of {inodes_total}): no file can be created in {dir}" PREFLIGHT_CWD_NOTE,
    PREFLIGHT_NAME_DIR_FIX "delete the small files that fill it (`df -i {holder}`)."};
// {why}: what could not be read (the statvfs or stat error, the mount table's, a size of 0).
constexpr FindingSpec kCwdNotJudged = {
    "host.disk/cwd-not-judged", Status::Warn, "{dir} could not be judged ({why})" PREFLIGHT_CWD_NOTE,
    PREFLIGHT_NAME_DIR_FIX "see why with `df -h {holder}` and `findmnt -T {holder}` as the job's user."};
constexpr FindingSpec kCwdNote = {
    "host.disk/cwd-information", Status::Pass,
    "information only, as no checkpoint directory was named: name the job's with --checkpoint-dir DIR (or "
    "checkpoint-dir = DIR in the --config file)",
    ""};
#undef PREFLIGHT_NAME_DIR_FIX
#undef PREFLIGHT_CWD_NOTE
#undef PREFLIGHT_INODE_FIX
#undef PREFLIGHT_SIZE_FIX
#undef PREFLIGHT_MOVE_FIX

constexpr FindingSpec kFactsUnreadable = {
    "host.disk/facts-unreadable", Status::Unknown, kUnreadableMessage,
    "Run preflight on the node itself where it can stat the checkpoint directories, or capture the node with "
    "`preflight capture DIR --checkpoint-dir ...` to judge it with --sysroot."};
constexpr FindingSpec kFactsHung = {"host.disk/facts-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};

constexpr std::array kFindings = {
    kFactsUnreadable, kFactsHung,   kNoDirectory, kNotADirectory, kNotGathered,   kUnreadable,  kMountUnknown,
    kReadOnly,        kNotWritable, kNoSize,      kTooSmall,      kOneCheckpoint, kRoom,        kFull,
    kNearlyFull,      kRoomUnsized, kNoInodes,    kFewInodes,     kInMemory,      kCwdReadOnly, kCwdNotWritable,
    kCwdTooSmall,     kCwdFull,     kCwdNoInodes, kCwdNotJudged,  kCwdNote};

/// The findings for one directory; `suffix` keeps its parameters apart from the other directories'.
void judge_dir(const CheckpointDir& d, const CheckpointPlan& plan, const std::string& suffix, VerdictBuilder& b,
               nlohmann::json& ev) {
  nlohmann::json params = {{"dir", dir_label(d)}, {"path", d.path}, {"holder", d.holder}};
  const auto add = [&](const FindingSpec& spec) {
    nlohmann::json p;
    for (const auto& [k, v] : params.items()) p[k + suffix] = v;
    if (suffix.empty()) return b.add(spec, std::move(p));
    b.add(spec.status, std::string(spec.code), suffixed(std::string(spec.message), suffix),
          suffixed(std::string(spec.fix), suffix), std::move(p));
  };

  ev = {{"given", d.given},   {"path", d.path},     {"defaulted", d.defaulted},
        {"exists", d.exists}, {"holder", d.holder}, {"resolved", d.resolved}};
  const MountEntry* m = d.mount.value();
  const bool network = m != nullptr && is_network_fs(m->fstype);
  const bool in_ram = m != nullptr && in_memory_fs(m->fstype);
  if (m != nullptr) {
    ev["mount_point"] = m->mount_point;
    ev["fstype"] = m->fstype;
    ev["mount_source"] = m->source;
    ev["mount_options"] = m->options;
    ev["network_fs"] = network;
    ev["in_memory"] = in_ram;
    params["mount"] = m->mount_point;
    params["mount_files"] = m->mount_point == "/" ? std::string("/*") : m->mount_point + "/*";
    params["fs"] = m->mount_point + " (" + m->fstype +
                   (network ? " from " + m->source + ", a network file system" : std::string()) + ")";
  } else {
    ev["mount_error"] = d.mount.why();
    params["mount"] = d.holder;  // for the commands: the directory itself stands for its mount
    params["mount_files"] = d.holder + "/*";
    params["fs"] = "an unknown mount";
  }

  // Without a named directory the current directory is information: what would fail a named one
  // (or leave it unknown) is a WARN, and the verdict says so and how to name one.
  const bool info = d.defaulted;
  const auto not_judged = [&](const std::string& why) {
    params["why"] = why;
    add(kCwdNotJudged);
  };

  const DiskUsage* u = d.usage.value();
  if (u == nullptr) {
    ev["usage_error"] = d.usage.why();
    params["why"] = d.usage.why();
    if (!d.holder_is_dir) {
      params["state"] = d.exists ? "exists and is not a directory: no checkpoint can be written into it"
                                 : "cannot be created: " + d.holder + " on its path is a file, not a directory";
      if (info) return not_judged(d.holder + " is not a directory");
      add(kNotADirectory);
    } else if (const ProbeError* e = d.usage.error(); e != nullptr && hung_probe(*e)) {
      add(kNotGathered);  // preflight's own deadline ran out, named or not: the run ends with exit 4 and says so
    } else {
      add(info ? kCwdNotJudged : kUnreadable);
    }
    return;
  }
  ev["total_bytes"] = u->total_bytes;
  ev["free_bytes"] = u->free_bytes;
  ev["total_inodes"] = u->total_inodes;
  ev["free_inodes"] = u->free_inodes;
  ev["read_only"] = u->read_only || (m != nullptr && m->read_only);
  ev["writable"] = u->writable;
  params["free"] = format_bytes(u->free_bytes);
  params["total"] = format_bytes(u->total_bytes);

  bool problem = false;
  if (m == nullptr) {
    problem = true;
    params["why_mount"] = d.mount.why();
    if (info) {
      not_judged("the mount holding it is not known: " + d.mount.why());
    } else {
      add(kMountUnknown);
    }
  }
  const bool read_only = u->read_only || (m != nullptr && m->read_only);
  if (read_only) {
    problem = true;
    add(info ? kCwdReadOnly : kReadOnly);
  } else if (!u->writable) {
    problem = true;
    add(info ? kCwdNotWritable : kNotWritable);
  }

  const std::string no_size = no_size_reason(plan);
  if (read_only) {
    // Nothing can be written there whatever the room: the space and inodes are evidence only.
  } else if (u->total_bytes == 0) {
    problem = true;
    if (info) {
      not_judged("the file system reports no size: statvfs f_blocks 0");
    } else {
      add(kNoSize);
    }
  } else if (no_size.empty()) {
    // A mount of unknown kind is held to this node's share: the smaller need, so a FAIL is certain.
    const Need need = need_of(plan, network);
    const std::uint64_t two = need.bytes > UINT64_MAX / 2 ? UINT64_MAX : 2 * need.bytes;
    ev["need_bytes"] = need.bytes;
    ev["need_of"] = need.basis;
    params["need"] = format_bytes(need.bytes);
    params["two"] = format_bytes(two);
    params["checkpoint"] = need.text;
    if (u->free_bytes < need.bytes) {
      problem = true;
      params["short"] = format_bytes(need.bytes - u->free_bytes);
      add(info ? kCwdTooSmall : kTooSmall);
    } else if (u->free_bytes < two) {
      problem = true;
      params["short"] = format_bytes(two - u->free_bytes);
      add(kOneCheckpoint);
    } else if (!problem) {
      const std::uint64_t fits = need.bytes == 0 ? 0 : u->free_bytes / need.bytes;
      params["fits"] = fits > 100 ? std::string("more than 100") : std::to_string(fits);
      add(kRoom);
    }
  } else {
    params["no_size"] = no_size;
    const double free_share = static_cast<double>(u->free_bytes) / static_cast<double>(u->total_bytes);
    params["used"] = percent(1 - free_share);
    params["free_share"] = percent(free_share);
    if (u->free_bytes < kFullBelowBytes) {
      problem = true;
      add(info ? kCwdFull : kFull);
    } else if (free_share < kNearlyFullShare) {
      problem = true;
      add(kNearlyFull);
    } else if (!problem) {
      add(kRoomUnsized);
    }
  }

  if (u->total_inodes > 0 && !read_only) {
    params["inodes_free"] = u->free_inodes;
    params["inodes_total"] = u->total_inodes;
    if (u->free_inodes == 0) {
      problem = true;
      add(info ? kCwdNoInodes : kNoInodes);
    } else if (u->free_inodes < kFewInodesBelow ||
               static_cast<double>(u->free_inodes) < kFewInodesShare * static_cast<double>(u->total_inodes)) {
      problem = true;
      add(kFewInodes);
    }
  }
  if (in_ram) add(kInMemory);
  if (info) add(kCwdNote);
}

Verdict run(const CheckContext& ctx) {
  const DiskFacts* facts = ctx.facts.disk.value();
  if (facts == nullptr) {
    return unknown_from(ctx.facts.disk, "the checkpoint directories", kFactsUnreadable, kFactsHung);
  }
  if (facts->dirs.empty()) {
    return Verdict::of(kNoDirectory);
  }
  const CheckpointPlan plan = checkpoint_plan(ctx.facts.placement, ctx.options);
  VerdictBuilder b;
  nlohmann::json& ev = b.evidence();
  ev["cwd"] = facts->cwd;
  ev["model_params"] = plan.params ? nlohmann::json(*plan.params) : nlohmann::json();
  ev["zero_stage"] = plan.params ? nlohmann::json(plan.zero_stage) : nlohmann::json();
  ev["local_ranks"] = plan.local_ranks;
  ev["world_size"] = plan.world_size;
  ev["tensor_parallel"] = plan.tp;
  ev["pipeline_parallel"] = plan.pp;
  const bool sized = no_size_reason(plan).empty();
  ev["job_checkpoint_bytes"] = sized ? nlohmann::json(saturate_bytes(plan.job_bytes())) : nlohmann::json();
  ev["node_checkpoint_bytes"] =
      sized ? nlohmann::json(saturate_bytes(plan.node_bytes(plan.zero_stage))) : nlohmann::json();
  ev["node_formula"] = sized ? nlohmann::json(plan.node_formula()) : nlohmann::json();
  ev["dirs"] = nlohmann::json::array();
  for (std::size_t i = 0; i < facts->dirs.size(); ++i) {
    nlohmann::json dir_ev;
    judge_dir(facts->dirs[i], plan, i == 0 ? std::string() : "_" + std::to_string(i + 1), b, dir_ev);
    ev["dirs"].push_back(std::move(dir_ev));
  }
  return b.build();
}

}  // namespace

extern const CheckSpec kHostDisk = {
    "host.disk",
    Scope::Node,
    "free space and inodes where checkpoints go (--checkpoint-dir) vs the checkpoint size; read-only or full mounts",
    kExplain,
    kInNode | kInJob,
    "an image build's disk is not the job's: the checkpoint directories are checked on the nodes that run it",
    &run,
    "disk",
    false,
    {},
    {},
    nullptr,
    kFindings,
};

}  // namespace host_disk_check
}  // namespace preflight
