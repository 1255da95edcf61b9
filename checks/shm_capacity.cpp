// SPDX-License-Identifier: MIT
// shm.capacity: /dev/shm exists, is tmpfs, is writable, and holds what this node's ranks need.
#include "checks/check.hpp"
#include "core/shm_model.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

std::string size_remedy(std::uint64_t need) {
  const std::string gib = std::to_string(recommended_shm_bytes(need) >> 30);
  return "Give the job a larger /dev/shm: `docker run --shm-size=" + gib +
         "g …` (or `--ipc=host`); Kubernetes: mount an emptyDir {medium: Memory, sizeLimit: " + gib +
         "Gi} at /dev/shm; bare metal: `mount -o remount,size=" + gib + "g /dev/shm`.";
}

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
      return Verdict::fail(shm.path + " does not exist (" + err->detail + "); NCCL fails at init when it cannot stat it",
                           "Mount a tmpfs at /dev/shm: `mount -t tmpfs -o size=" +
                               std::to_string(recommended_shm_bytes(need.node_total) >> 30) +
                               "g tmpfs /dev/shm`, or run the container with `--ipc=host` / `--shm-size`.",
                           b.evidence());
    }
    return unknown_from(shm.usage, shm.path);
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

  const std::string size_text = usage->unlimited ? std::string("unlimited tmpfs")
                                                 : format_bytes(usage->total_bytes) + " (" + format_bytes(usage->free_bytes) + " free)";
  const std::string need_text = std::to_string(need.local_ranks) + (need.local_ranks == 1 ? " local rank needs ≥ " : " local ranks need ≥ ") + format_bytes(need.node_total);

  const MountEntry* mount = shm.mount.value();
  if (!usage->writable || (mount != nullptr && mount->read_only)) {
    b.add(Status::Fail, shm.path + " is read-only; NCCL cannot create its segments",
          "Remount it read-write (`mount -o remount,rw /dev/shm`) or give the container a writable /dev/shm.");
  }
  if (!usage->is_tmpfs) {
    b.add(Status::Warn, shm.path + " is not tmpfs" + (mount ? " (" + mount->fstype + ")" : std::string()) + ": segments hit disk",
          "Mount a tmpfs at /dev/shm (`mount -t tmpfs tmpfs /dev/shm`; containers: `--shm-size` or `--ipc=host`).");
  }
  if (!usage->unlimited && usage->free_bytes < need.node_total) {
    b.add(Status::Fail, shm.path + " is " + size_text + "; " + need_text, size_remedy(need.node_total));
  }

  if (const ShmAllocTest* alloc = shm.alloc.value()) {
    b.evidence()["allocation_test_bytes"] = alloc->requested_bytes;
    b.evidence()["allocation_test_ok"] = alloc->ok;
    if (!alloc->ok) {
      b.evidence()["allocation_test_error"] = alloc->step + ": " + alloc->error;
      b.add(Status::Fail,
            "allocating " + format_bytes(alloc->requested_bytes) + " in " + shm.path + " failed at " + alloc->step + ": " +
                alloc->error + " (" + shm.path + " reports " + size_text + "; a cgroup or tmpfs quota is smaller)",
            alloc->err == ENOSPC || alloc->err == ENOMEM || alloc->err == EFBIG
                ? size_remedy(need.node_total) + " If the mount is large enough, raise the container's memory limit: tmpfs pages count against it."
                : "Make /dev/shm writable by this user (mode 1777).");
    }
  } else if (shm.alloc.error()->code != ProbeErrc::Unsupported) {
    b.add(Status::Unknown, "the allocation test did not run: " + shm.alloc.why(),
          "Run preflight on the node itself so it can test a real allocation in /dev/shm.");
  } else {
    b.evidence()["allocation_test"] = shm.alloc.error()->detail;
  }

  if (b.status() == Status::Pass && !usage->unlimited && usage->total_bytes < kNcclRecommendedShmBytes) {
    b.add(Status::Warn, shm.path + " is " + size_text + ", enough for " + need_text.substr(0, need_text.find(" need")) +
                            " but below the 1 GiB NCCL recommends for containers",
          size_remedy(kNcclRecommendedShmBytes));
  }
  if (b.status() == Status::Pass) {
    const ShmAllocTest* alloc = shm.alloc.value();
    std::string alloc_text = alloc != nullptr ? "; allocation test of " + format_bytes(alloc->requested_bytes) +
                                                    (alloc->requested_bytes < need.node_total ? " (NCCL's segments)" : "") +
                                                    " succeeded"
                                              : "";
    b.note(shm.path + " is " + (usage->is_tmpfs && !usage->unlimited ? "tmpfs " : "") + size_text + "; " + need_text + alloc_text);
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

extern const CheckSpec kShmCapacity = {
    "shm.capacity", Scope::Node, "/dev/shm exists, is tmpfs, writable and large enough for the node's ranks",
    kExplain, kInNode | kInJob, "an image build's /dev/shm is not the one the job will get", &run, "shm", false, {}, "room in /dev/shm"};

}  // namespace preflight
