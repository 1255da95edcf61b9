// SPDX-License-Identifier: MIT
// gpu.fabric: on NVSwitch systems, the fabric every GPU must join before CUDA works (without it
// every CUDA call fails with error 802, "system not yet initialized"): its state per GPU, the
// health mask, the fabric manager service, and one clique and cluster for the node's GPUs.
#include <algorithm>
#include <array>
#include <set>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_health_common.hpp"

namespace preflight {
namespace gpu_fabric_check {
namespace {

// nvmlGpuFabricInfo_v2 health mask fields: (mask >> shift) & width; 1 = TRUE, 2 = FALSE, 0 = not supported.
unsigned field(unsigned mask, unsigned shift, unsigned width) { return (mask >> shift) & width; }

#define PREFLIGHT_FABRIC_MANAGER_FIX                                                                       \
  "Start the fabric manager (`systemctl start nvidia-fabricmanager`; its version must equal the driver's " \
  "exactly), check `journalctl -u nvidia-fabricmanager` and /var/log/fabricmanager.log, and wait until "   \
  "`nvidia-smi -q | grep -A2 Fabric` says State: Completed, Status: Success before starting the job."
// {unread_sysfs}: " reported (sysfs not readable) and" when the NVSwitch count is unknown, else " and".
constexpr FindingSpec kNoFabric = {"gpu.fabric/no-fabric", Status::Skip,
                                   "no NVSwitch on this node{unread_sysfs} no GPU takes part in an NVSwitch fabric",
                                   ""};
constexpr FindingSpec kGpuLost = {"gpu.fabric/gpu-lost", Status::Fail, kLostGpuMessage, kLostGpuRemedy};
constexpr FindingSpec kNoFabricManager = {
    "gpu.fabric/no-fabric-manager", Status::Fail,
    "{nvswitches} NVSwitch(es) on the node and no nvidia-fabricmanager process running", PREFLIGHT_FABRIC_MANAGER_FIX};
constexpr FindingSpec kNotStarted = {
    "gpu.fabric/not-started", Status::Fail,
    "NVSwitch fabric not started on {not_started}: every CUDA call will fail with error 802 (system not yet "
    "initialized)",
    PREFLIGHT_FABRIC_MANAGER_FIX};
constexpr FindingSpec kInProgress = {"gpu.fabric/in-progress", Status::Fail,
                                     "NVSwitch fabric registration still in progress on {in_progress}",
                                     PREFLIGHT_FABRIC_MANAGER_FIX};
constexpr FindingSpec kCompletedWithError = {"gpu.fabric/completed-with-error", Status::Fail,
                                             "NVSwitch fabric completed with an error on {failed}",
                                             PREFLIGHT_FABRIC_MANAGER_FIX};
constexpr FindingSpec kUnhealthy = {
    "gpu.fabric/unhealthy", Status::Fail, "NVSwitch fabric unhealthy: {unhealthy}",
    "Check the NVSwitches (`nvidia-smi -q | grep -A8 Fabric`, fabric manager log), reset the GPUs or reboot "
    "the node; a fabric that stays unhealthy needs the baseboard serviced."};
constexpr FindingSpec kDegraded = {
    "gpu.fabric/degraded", Status::Warn, "NVSwitch fabric degraded: {degraded}",
    "Bandwidth across the NVSwitches is reduced: check the fabric manager log and `nvidia-smi nvlink "
    "--status`; reset or reboot the node before a bandwidth-bound job."};
constexpr FindingSpec kSplit = {
    "gpu.fabric/split", Status::Warn,
    "the node's GPUs are in {groups} different fabric cliques/clusters: they cannot all reach each other over NVLink",
    "Check the fabric manager's partition configuration (`nvidia-smi -q | grep -A6 Fabric` on each GPU)."};
constexpr FindingSpec kUnreadable = {
    "gpu.fabric/unreadable", Status::Unknown, "fabric state not readable: {unread}",
    "Run preflight with a driver that reports the GPU fabric (R525+: nvmlDeviceGetGpuFabricInfo), or check "
    "`nvidia-smi -q | grep -A4 Fabric`."};
constexpr FindingSpec kFabricManagerUnknown = {
    "gpu.fabric/fabric-manager-unknown", Status::Unknown,
    "{nvswitches} NVSwitch(es) on the node, no GPU reports a fabric state and whether the fabric manager runs could "
    "not be read (/proc)",
    "Check `systemctl status nvidia-fabricmanager` and `nvidia-smi -q | grep -A4 Fabric`."};
constexpr FindingSpec kCompleted = {"gpu.fabric/completed", Status::Pass,
                                    "NVSwitch fabric completed with success on every GPU that takes part", ""};
constexpr FindingSpec kFabricManagerRuns = {
    "gpu.fabric/fabric-manager-runs", Status::Pass,
    "NVSwitches present; the GPUs report no fabric state (pre-Hopper) and the fabric manager runs", ""};
#undef PREFLIGHT_FABRIC_MANAGER_FIX

// The GPU checks' shared findings, and health facts the helper was not run for.
constexpr GpuSharedRows kShared = {PREFLIGHT_GPU_SHARED_FINDINGS("gpu.fabric", "")};
constexpr FindingSpec kHealthNotRead = {"gpu.fabric/health-not-read", Status::Unknown, kHealthNotReadMessage,
                                        kHealthNotReadFix};
constexpr auto kFindings =
    with_shared(kShared, std::array{kHealthNotRead, kNoFabric, kGpuLost, kNoFabricManager, kNotStarted, kInProgress,
                                    kCompletedWithError, kUnhealthy, kDegraded, kSplit, kUnreadable,
                                    kFabricManagerUnknown, kCompleted, kFabricManagerRuns});

Verdict run(const CheckContext& ctx) {
  const HealthView view = node_health(ctx, "the GPUs' NVSwitch fabric state (NVML)", kShared, kHealthNotRead);
  if (view.verdict) return *view.verdict;
  const GpuHealthFacts& h = *view.facts;
  VerdictBuilder b;
  nlohmann::json per_gpu = nlohmann::json::array();
  bool any_fabric = false;
  for (const GpuHealth& g : h.gpus) {
    per_gpu.push_back({{"index", g.index},
                       {"pci_bus_id", g.pci_bus_id},
                       {"version", g.fabric_info_version},
                       {"state", g.fabric_state},
                       {"status", g.fabric_status},
                       {"health_mask", g.fabric_health_mask},
                       {"health_summary", g.fabric_health_summary},
                       {"clique_id", g.fabric_clique_id},
                       {"cluster_uuid", g.fabric_cluster_uuid}});
    any_fabric = any_fabric || (g.fabric_state && *g.fabric_state != kFabricNotSupported);
  }
  b.evidence()["gpus"] = std::move(per_gpu);
  b.evidence()["nvswitches"] = h.nvswitches;
  b.evidence()["fabric_manager_running"] = h.fabric_manager_running;
  const bool switches = h.nvswitches.value_or(0) > 0;
  if (!any_fabric && !switches) {
    return Verdict::of(kNoFabric,
                       {{"unread_sysfs", template_param(h.nvswitches ? " and" : " reported (sysfs not readable) and")}},
                       b.evidence());
  }
  add_lost_gpus(b, h, kGpuLost);
  std::vector<std::string> not_started, in_progress, failed, unhealthy, degraded, unread;
  std::set<std::string> clusters;
  std::set<unsigned> cliques;
  for (const GpuHealth& g : h.gpus) {
    if (!g.lost.empty()) continue;
    const std::string who = health_gpu_text(g);
    if (!g.fabric_state) {
      unread.push_back(who + ": " + unavailable_text(g, "fabric"));
      continue;
    }
    switch (*g.fabric_state) {
      case kFabricNotStarted: not_started.push_back(who); break;
      case kFabricInProgress: in_progress.push_back(who); break;
      case kFabricCompleted:
        if (g.fabric_status.value_or(0) != 0)
          failed.push_back(who + " (status " + std::to_string(*g.fabric_status) + ")");
        break;
      default: continue;  // this GPU does not take part (pre-Hopper: the fabric manager alone tells)
    }
    if (*g.fabric_state == kFabricCompleted) {
      clusters.insert(g.fabric_cluster_uuid);
      if (g.fabric_clique_id) cliques.insert(*g.fabric_clique_id);
    }
    if (g.fabric_health_mask) {
      const unsigned m = *g.fabric_health_mask;
      if (field(m, 4, 0x3) == 1) unhealthy.push_back(who + ": route unhealthy");
      if (field(m, 8, 0xf) >= 2)
        unhealthy.push_back(who + ": incorrect configuration (" + std::to_string(field(m, 8, 0xf)) + ")");
      if (field(m, 0, 0x3) == 1) degraded.push_back(who + ": degraded bandwidth");
      if (field(m, 2, 0x3) == 1) degraded.push_back(who + ": route recovery in progress");
      if (field(m, 6, 0x3) == 1) degraded.push_back(who + ": access timeout recovery in progress");
    }
    if (g.fabric_health_summary.value_or(0) == 2) unhealthy.push_back(who + ": health summary unhealthy");
    if (g.fabric_health_summary.value_or(0) == 3) degraded.push_back(who + ": health summary limited capacity");
  }
  if (switches && h.fabric_manager_running && !*h.fabric_manager_running) {
    b.add(kNoFabricManager, {{"nvswitches", *h.nvswitches}});
  }
  if (!not_started.empty()) b.add(kNotStarted, {{"not_started", list_text(not_started)}});
  if (!in_progress.empty()) b.add(kInProgress, {{"in_progress", list_text(in_progress)}});
  if (!failed.empty()) b.add(kCompletedWithError, {{"failed", list_text(failed)}});
  if (!unhealthy.empty()) b.add(kUnhealthy, {{"unhealthy", list_text(unhealthy, 4)}});
  if (!degraded.empty()) b.add(kDegraded, {{"degraded", list_text(degraded, 4)}});
  if (clusters.size() > 1 || cliques.size() > 1) b.add(kSplit, {{"groups", std::max(clusters.size(), cliques.size())}});
  if (!unread.empty()) b.add(kUnreadable, {{"unread", list_text(unread, 4)}});
  if (!any_fabric && unread.empty() && !h.fabric_manager_running && b.status() == Status::Pass) {
    return Verdict::of(kFabricManagerUnknown, {{"nvswitches", *h.nvswitches}}, b.evidence());
  }
  if (b.status() == Status::Pass) b.add(any_fabric ? kCompleted : kFabricManagerRuns);
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  From the contained GPU helper's health run, per GPU: nvmlDeviceGetGpuFabricInfoV with the v3
  struct (R580: health summary), else v2 (R550: health mask), else nvmlDeviceGetGpuFabricInfo (v1,
  R525) — chosen by what the driver exports and accepts. From sysfs: the NVIDIA PCI devices of
  class 0x068000 (NVSwitches). From /proc: whether an nv-fabricmanager process runs.

Failures
  FAIL     NVSwitches on the node and no fabric manager process running.
  FAIL     a GPU's fabric state is not started or still in progress, or completed with an error
           status: CUDA fails with error 802 "system not yet initialized" until it completes.
  FAIL     health mask: route unhealthy or incorrect configuration; v3 summary unhealthy.
  WARN     health mask: degraded bandwidth, route recovery or access timeout recovery; v3 summary
           limited capacity; the node's GPUs in more than one clique or cluster.
  FAIL     a GPU is lost or needs a reset.
  UNKNOWN  the fabric state of a GPU cannot be read (the driver lacks the functions, named).
  SKIP     no NVSwitch on the node and no GPU in a fabric; the image profile.

Fix
  `systemctl start nvidia-fabricmanager` (the same version as the driver), `journalctl -u
  nvidia-fabricmanager`, then `nvidia-smi -q | grep -A4 Fabric` until State: Completed, Status:
  Success. An unhealthy fabric needs the GPUs reset or the node rebooted.)EXPLAIN";

}  // namespace

extern const CheckSpec kGpuFabric = {"gpu.fabric",
                                     Scope::Node,
                                     "the NVSwitch fabric is up and healthy for every GPU (NVSwitch systems)",
                                     kExplain,
                                     kInNode | kInJob,
                                     "an image build has no GPU",
                                     &run,
                                     "gpu_health,gpu_driver",
                                     true,
                                     "driver.loaded",
                                     {},
                                     nullptr,
                                     kFindings};

}  // namespace gpu_fabric_check
}  // namespace preflight
