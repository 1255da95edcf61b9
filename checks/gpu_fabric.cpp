// SPDX-License-Identifier: MIT
// gpu.fabric: on NVSwitch systems, the fabric every GPU must join before CUDA works (without it
// every CUDA call fails with error 802, "system not yet initialized"): its state per GPU, the
// health mask, the fabric manager service, and one clique and cluster for the node's GPUs.
#include <algorithm>
#include <set>

#include "checks/check.hpp"
#include "checks/gpu_health_common.hpp"

namespace preflight {
namespace {

// nvmlGpuFabricInfo_v2 health mask fields: (mask >> shift) & width; 1 = TRUE, 2 = FALSE, 0 = not supported.
unsigned field(unsigned mask, unsigned shift, unsigned width) { return (mask >> shift) & width; }

Verdict run(const CheckContext& ctx) {
  const HealthView view = node_health(ctx, "the GPUs' NVSwitch fabric state (NVML)");
  if (view.verdict) return *view.verdict;
  const GpuHealthFacts& h = *view.facts;
  VerdictBuilder b;
  nlohmann::json per_gpu = nlohmann::json::array();
  bool any_fabric = false;
  for (const GpuHealth& g : h.gpus) {
    per_gpu.push_back({{"index", g.index}, {"pci_bus_id", g.pci_bus_id}, {"version", g.fabric_info_version},
                       {"state", g.fabric_state}, {"status", g.fabric_status}, {"health_mask", g.fabric_health_mask},
                       {"health_summary", g.fabric_health_summary}, {"clique_id", g.fabric_clique_id},
                       {"cluster_uuid", g.fabric_cluster_uuid}});
    any_fabric = any_fabric || (g.fabric_state && *g.fabric_state != kFabricNotSupported);
  }
  b.evidence()["gpus"] = std::move(per_gpu);
  b.evidence()["nvswitches"] = h.nvswitches;
  b.evidence()["fabric_manager_running"] = h.fabric_manager_running;
  const bool switches = h.nvswitches.value_or(0) > 0;
  if (!any_fabric && !switches) {
    return Verdict::skip(std::string("no NVSwitch on this node") +
                             (h.nvswitches ? "" : " reported (sysfs not readable) and") +
                             " no GPU takes part in an NVSwitch fabric",
                         b.evidence());
  }
  add_lost_gpus(b, h);
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
      if (field(m, 8, 0xf) >= 2) unhealthy.push_back(who + ": incorrect configuration (" + std::to_string(field(m, 8, 0xf)) + ")");
      if (field(m, 0, 0x3) == 1) degraded.push_back(who + ": degraded bandwidth");
      if (field(m, 2, 0x3) == 1) degraded.push_back(who + ": route recovery in progress");
      if (field(m, 6, 0x3) == 1) degraded.push_back(who + ": access timeout recovery in progress");
    }
    if (g.fabric_health_summary.value_or(0) == 2) unhealthy.push_back(who + ": health summary unhealthy");
    if (g.fabric_health_summary.value_or(0) == 3) degraded.push_back(who + ": health summary limited capacity");
  }
  const std::string fm_remedy =
      "Start the fabric manager (`systemctl start nvidia-fabricmanager`; its version must equal the driver's "
      "exactly), check `journalctl -u nvidia-fabricmanager` and /var/log/fabricmanager.log, and wait until "
      "`nvidia-smi -q | grep -A2 Fabric` says State: Completed, Status: Success before starting the job.";
  if (switches && h.fabric_manager_running && !*h.fabric_manager_running) {
    b.add(Status::Fail,
          std::to_string(*h.nvswitches) + " NVSwitch(es) on the node and no nvidia-fabricmanager process running",
          fm_remedy);
  }
  if (!not_started.empty())
    b.add(Status::Fail, "NVSwitch fabric not started on " + list_text(not_started) +
                            ": every CUDA call will fail with error 802 (system not yet initialized)",
          fm_remedy);
  if (!in_progress.empty())
    b.add(Status::Fail, "NVSwitch fabric registration still in progress on " + list_text(in_progress), fm_remedy);
  if (!failed.empty())
    b.add(Status::Fail, "NVSwitch fabric completed with an error on " + list_text(failed), fm_remedy);
  if (!unhealthy.empty())
    b.add(Status::Fail, "NVSwitch fabric unhealthy: " + list_text(unhealthy, 4),
          "Check the NVSwitches (`nvidia-smi -q | grep -A8 Fabric`, fabric manager log), reset the GPUs or reboot "
          "the node; a fabric that stays unhealthy needs the baseboard serviced.");
  if (!degraded.empty())
    b.add(Status::Warn, "NVSwitch fabric degraded: " + list_text(degraded, 4),
          "Bandwidth across the NVSwitches is reduced: check the fabric manager log and `nvidia-smi nvlink "
          "--status`; reset or reboot the node before a bandwidth-bound job.");
  if (clusters.size() > 1 || cliques.size() > 1)
    b.add(Status::Warn,
          "the node's GPUs are in " + std::to_string(std::max(clusters.size(), cliques.size())) +
              " different fabric cliques/clusters: they cannot all reach each other over NVLink",
          "Check the fabric manager's partition configuration (`nvidia-smi -q | grep -A6 Fabric` on each GPU).");
  if (!unread.empty())
    b.add(Status::Unknown, "fabric state not readable: " + list_text(unread, 4),
          "Run preflight with a driver that reports the GPU fabric (R525+: nvmlDeviceGetGpuFabricInfo), or check "
          "`nvidia-smi -q | grep -A4 Fabric`.");
  if (!any_fabric && unread.empty() && !h.fabric_manager_running && b.status() == Status::Pass) {
    return Verdict::unknown(std::to_string(*h.nvswitches) +
                                " NVSwitch(es) on the node, no GPU reports a fabric state and whether the fabric "
                                "manager runs could not be read (/proc)",
                            "Check `systemctl status nvidia-fabricmanager` and `nvidia-smi -q | grep -A4 Fabric`.",
                            b.evidence());
  }
  if (b.status() == Status::Pass) {
    b.note(any_fabric ? "NVSwitch fabric completed with success on every GPU that takes part"
                      : "NVSwitches present; the GPUs report no fabric state (pre-Hopper) and the fabric manager runs");
  }
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

extern const CheckSpec kGpuFabric = {
    "gpu.fabric", Scope::Node, "the NVSwitch fabric is up and healthy for every GPU (NVSwitch systems)", kExplain,
    kInNode | kInJob, "an image build has no GPU", &run, "gpu_health,gpu_driver", true, "driver.loaded"};

}  // namespace preflight
