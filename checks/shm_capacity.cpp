// SPDX-License-Identifier: MIT
// shm.capacity: /dev/shm exists, is tmpfs, is writable, and holds what this node's ranks need.
#include <array>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/shm_model.hpp"
#include "core/text.hpp"

namespace preflight {
namespace shm_capacity_check {
namespace {

// The fix for too little room, with {gib} the size to give it.
#define PREFLIGHT_SHM_SIZE_FIX                                                                               \
  "Give the job a larger /dev/shm: `docker run --shm-size={gib}g …` (or `--ipc=host`); Kubernetes: mount " \
  "an emptyDir {medium: Memory, sizeLimit: {gib}Gi} at /dev/shm; bare metal: `mount -o remount,size={gib}g /dev/shm`."

constexpr FindingSpec kMissing = {
    "shm.capacity/missing", Status::Fail, "{path} does not exist ({detail}); NCCL fails at init when it cannot stat it",
    "Mount a tmpfs at /dev/shm: `mount -t tmpfs -o size={gib}g tmpfs /dev/shm`, or run the container with "
    "`--ipc=host` / `--shm-size`."};
constexpr FindingSpec kReadOnly = {
    "shm.capacity/read-only", Status::Fail, "{path} is read-only; NCCL cannot create its segments",
    "Remount it read-write (`mount -o remount,rw /dev/shm`) or give the container a writable /dev/shm."};
constexpr FindingSpec kNotTmpfs = {
    "shm.capacity/not-tmpfs", Status::Warn, "{path} is not tmpfs ({fstype}): segments hit disk",
    "Mount a tmpfs at /dev/shm (`mount -t tmpfs tmpfs /dev/shm`; containers: `--shm-size` or `--ipc=host`)."};
constexpr FindingSpec kTooSmall = {"shm.capacity/too-small", Status::Fail, "{path} is {size}; {need}",
                                   PREFLIGHT_SHM_SIZE_FIX};
constexpr FindingSpec kAllocationFailed = {
    "shm.capacity/allocation-failed", Status::Fail,
    "allocating {bytes} in {path} failed at {step}: {error} ({path} reports {size}; a cgroup or tmpfs quota is "
    "smaller)",
    PREFLIGHT_SHM_SIZE_FIX
    " If the mount is large enough, raise the container's memory limit: tmpfs pages count "
    "against it."};
constexpr FindingSpec kAllocationDenied = {"shm.capacity/allocation-denied", Status::Fail,
                                           "allocating {bytes} in {path} failed at {step}: {error} ({path} reports "
                                           "{size}; a cgroup or tmpfs quota is smaller)",
                                           "Make /dev/shm writable by this user (mode 1777)."};
constexpr FindingSpec kAllocationUntested = {
    "shm.capacity/allocation-untested", Status::Unknown, "the allocation test did not run: {why}",
    "Run preflight on the node itself so it can test a real allocation in /dev/shm."};
constexpr FindingSpec kBelowRecommended = {
    "shm.capacity/below-recommended", Status::Warn,
    "{path} is {size}, enough for {ranks} but below the 1 GiB NCCL recommends for containers", PREFLIGHT_SHM_SIZE_FIX};
constexpr FindingSpec kEnough = {"shm.capacity/enough", Status::Pass, "{path} is {size}; {need}{allocation}", ""};
#undef PREFLIGHT_SHM_SIZE_FIX

constexpr FindingSpec kFactsUnreadable = {"shm.capacity/facts-unreadable", Status::Unknown, kUnreadableMessage,
                                          kUnreadableFix};
constexpr FindingSpec kFactsHung = {"shm.capacity/facts-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};

constexpr std::array kFindings = {
    kFactsUnreadable,  kFactsHung,          kMissing,          kReadOnly, kNotTmpfs, kTooSmall, kAllocationFailed,
    kAllocationDenied, kAllocationUntested, kBelowRecommended, kEnough};

/// The size to give /dev/shm for `need` bytes, in GiB (the {gib} of the fixes).
std::uint64_t gib_for(std::uint64_t need) { return recommended_shm_bytes(need) >> 30; }

nlohmann::json need_evidence(const ShmNeed& need) {
  return {{"required_bytes", need.node_total},
          {"required_per_rank_bytes", need.per_rank},
          {"local_ranks", need.local_ranks},
          {"network_transport", need.network_transport},
          {"shm_transport_in_dev_shm", need.shm_transport},
          {"formula", need.formula}};
}

Verdict run(const CheckContext& ctx) {
  const ShmFacts& shm = ctx.facts.shm;
  const ShmNeed need = shm_need(ctx.facts.placement, ctx.options, ctx.facts.env);
  VerdictBuilder b;
  b.evidence() = need_evidence(need);
  b.evidence()["path"] = shm.path;

  const FsUsage* usage = shm.usage.value();
  if (usage == nullptr) {
    const ProbeError* err = shm.usage.error();
    if (err->code == ProbeErrc::NotFound) {
      return Verdict::of(kMissing, {{"path", shm.path}, {"detail", err->detail}, {"gib", gib_for(need.node_total)}},
                         b.evidence());
    }
    return unknown_from(shm.usage, shm.path, kFactsUnreadable, kFactsHung, b.evidence());
  }
  b.evidence()["total_bytes"] = usage->total_bytes;
  b.evidence()["free_bytes"] = usage->free_bytes;
  b.evidence()["unlimited"] = usage->unlimited;
  b.evidence()["st_dev"] = usage->st_dev;
  b.evidence()["fs_magic"] = usage->fs_magic;
  if (const MountEntry* m = shm.mount.value()) {
    b.evidence()["mount_source"] = m->source;
    b.evidence()["fstype"] = m->fstype;
    b.evidence()["mount_options"] = m->options;
  } else {
    b.evidence()["mount_error"] = shm.mount.why();
  }

  const std::string size_text =
      usage->unlimited ? std::string("unlimited tmpfs")
                       : format_bytes(usage->total_bytes) + " (" + format_bytes(usage->free_bytes) + " free)";
  const std::string need_text = std::to_string(need.local_ranks) +
                                (need.local_ranks == 1 ? " local rank needs ≥ " : " local ranks need ≥ ") +
                                format_bytes(need.node_total);

  const MountEntry* mount = shm.mount.value();
  const nlohmann::json at = {
      {"path", shm.path}, {"size", size_text}, {"need", need_text}, {"gib", gib_for(need.node_total)}};
  const auto with = [&](nlohmann::json more) {
    nlohmann::json p = at;
    p.update(more);
    return p;
  };
  if (!usage->writable || (mount != nullptr && mount->read_only)) b.add(kReadOnly, at);
  if (!usage->is_tmpfs) b.add(kNotTmpfs, with({{"fstype", mount ? mount->fstype : std::string("its mount not read")}}));
  if (!usage->unlimited && usage->free_bytes < need.node_total) b.add(kTooSmall, at);

  if (const ShmAllocTest* alloc = shm.alloc.value()) {
    b.evidence()["allocation_test_bytes"] = alloc->requested_bytes;
    b.evidence()["allocation_test_ok"] = alloc->ok;
    if (!alloc->ok) {
      b.evidence()["allocation_test_error"] = alloc->step + ": " + alloc->error;
      const bool no_room = alloc->err == ENOSPC || alloc->err == ENOMEM || alloc->err == EFBIG;
      b.add(no_room ? kAllocationFailed : kAllocationDenied,
            with({{"bytes", format_bytes(alloc->requested_bytes)}, {"step", alloc->step}, {"error", alloc->error}}));
    }
  } else if (shm.alloc.error()->code != ProbeErrc::Unsupported) {
    b.add(kAllocationUntested, with({{"why", shm.alloc.why()}}));
  } else {
    b.evidence()["allocation_test"] = shm.alloc.error()->detail;
  }

  if (b.status() == Status::Pass && !usage->unlimited && usage->total_bytes < kNcclRecommendedShmBytes) {
    b.add(kBelowRecommended,
          with({{"ranks", need_text.substr(0, need_text.find(" need"))}, {"gib", gib_for(kNcclRecommendedShmBytes)}}));
  }
  if (b.status() == Status::Pass) {
    const ShmAllocTest* alloc = shm.alloc.value();
    nlohmann::json params = {{"size", std::string(usage->is_tmpfs && !usage->unlimited ? "tmpfs " : "") + size_text},
                             {"allocation", part_if(false, "")}};
    if (alloc != nullptr) {
      params["allocation"] =
          template_param(std::string("; allocation test of {allocated}") +
                         (alloc->requested_bytes < need.node_total ? " (NCCL's segments)" : "") + " succeeded");
      params["allocated"] = format_bytes(alloc->requested_bytes);
    }
    b.add(kEnough, with(std::move(params)));
  }
  return b.build();
}

constexpr std::string_view kExplain = R"(What it reads
  The mount in effect at /dev/shm (/proc/self/mountinfo, the last entry: mounts stack), its file
  system type, size and free space (statfs/statvfs), whether this user can write it, and a real
  allocation test: local rank 0 creates /dev/shm/preflight-XXXXXX, unlinks it at once, and
  fallocate()s what NCCL will allocate there for the whole node at init — the only way to see a
  cgroup-limited tmpfs honestly. The DataLoader budget is held against the free space only: it is
  used later and gradually, and allocating gigabytes in a container whose memory limit is below
  its /dev/shm would put the node's memory at risk for a test.

What the node needs (per local rank, times the local ranks)
  proxy ops pool   32.6 MiB per NCCL communicator when ranks talk over the network (multi-node or
                   unknown node count): sizeof(ncclProxyOpsPool) for NCCL >= 2.26 on x86-64.
  SHM transport    4 segments x 9.2 MiB (4 KiB + LL 512 KiB + LL128 4.69 MiB + NCCL_BUFFSIZE 4 MiB)
                   when ranks share a node and NCCL cannot use cuMem host memory (NCCL < 2.24,
                   driver < CUDA 12.6, or a container without SYS_NICE); 0 with NCCL_SHM_DISABLE=1.
  DataLoader       --shm-dataloader-bytes (default 256 MiB): PyTorch workers pass batches here.
  Local ranks come from --ranks-per-node, else the launcher's variables, else 1; communicators from
  --nccl-communicators.

Failures
  FAIL     /dev/shm does not exist (NCCL stats it at init and fails).
  FAIL     /dev/shm is read-only or not writable by this user.
  FAIL     free space is below the node's need ("/dev/shm is 64 MiB; 8 local ranks need >= 2.5 GiB").
           NCCL's own message is "Error while creating shared memory segment ... No space left on
           device" — or, for NCCL <= 2.18, a SIGBUS on first touch.
  FAIL     the allocation test failed (ENOSPC/ENOMEM: a quota or memory cgroup smaller than the mount).
  WARN     /dev/shm is not tmpfs (segments go to disk).
  WARN     the need fits but /dev/shm is below 1 GiB, NCCL's recommendation for containers.
  UNKNOWN  the mount or its size could not be read.

Under --sysroot (never statfs() of the tree's own directory, which is this machine's disk)
  A `preflight capture` holds the node's own statfs and allocation test: judged as on the node.
  Any other tree (hwloc-gather-topology's): the captured mount's size= (mountinfo); a size below
  the need is a FAIL (the free space is at most the size), a size that holds it is UNKNOWN (the
  free space is not in the tree), a mount without size= or not tmpfs is UNKNOWN.

Fix
  docker run --shm-size=8g ... (or --ipc=host); Kubernetes: an emptyDir {medium: Memory,
  sizeLimit: 8Gi} mounted at /dev/shm; bare metal: mount -o remount,size=8g /dev/shm. tmpfs pages
  count against the container's memory limit: raise it with the shm size.)";

}  // namespace

extern const CheckSpec kShmCapacity = {"shm.capacity",
                                       Scope::Node,
                                       "/dev/shm exists, is tmpfs, writable and large enough for the node's ranks",
                                       kExplain,
                                       kInNode | kInJob,
                                       "an image build's /dev/shm is not the one the job will get",
                                       &run,
                                       "shm",
                                       false,
                                       {},
                                       "room in /dev/shm",
                                       nullptr,
                                       kFindings};

}  // namespace shm_capacity_check
}  // namespace preflight
