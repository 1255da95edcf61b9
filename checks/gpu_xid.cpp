// SPDX-License-Identifier: MIT
// gpu.xid: the NVIDIA driver's error reports in this boot's kernel log — Xid (fatal ones FAIL,
// application ones WARN), "fallen off the bus" even without an Xid line, and NVSwitch SXid.
#include <cstdio>

#include "checks/check.hpp"
#include "checks/gpu_common.hpp"
#include "checks/gpu_health_common.hpp"
#include "core/kmsg.hpp"

namespace preflight {
namespace {

std::string since_boot(const std::optional<std::uint64_t>& usec) {
  if (!usec) return "time unknown";
  const std::uint64_t s = *usec / 1000000;
  char buf[64];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lluh%02llum after boot", static_cast<unsigned long long>(s / 3600),
                               static_cast<unsigned long long>((s % 3600) / 60));
  else std::snprintf(buf, sizeof buf, "%llus after boot", static_cast<unsigned long long>(s));
  return buf;
}

Verdict run(const CheckContext& ctx) {
  const DriverFacts& d = ctx.facts.gpu.driver;
  const Probed<KernelLogFacts>* log = &d.kernel_log;
  for (const RankFacts* f : node_ranks(ctx)) {
    if (f->gpu.driver.kernel_log.value() != nullptr) {
      log = &f->gpu.driver.kernel_log;
      break;
    }
  }
  const KernelLogFacts* k = log->value();
  if (k == nullptr) {
    const ProbeError& e = *log->error();
    if (e.code == ProbeErrc::PermissionDenied)
      return Verdict::unknown("the kernel log is not readable: " + e.detail,
                              "Run preflight with CAP_SYSLOG (as root, `docker run --cap-add syslog`, or "
                              "`sysctl kernel.dmesg_restrict=0`), or read it yourself: `sudo dmesg | grep -e Xid -e "
                              "SXid -e 'fallen off the bus'`.",
                              {{"error", to_string(e.code)}, {"detail", e.detail}});
    return Verdict::unknown("the kernel log was not read: " + log->why(),
                            "Run preflight on the node (not in the image profile) with gpu.xid selected.",
                            {{"error", to_string(e.code)}, {"detail", e.detail}});
  }
  const std::vector<NvmlGpu>* gpus = d.nvml_gpus.value();
  auto who = [&](const std::string& bus) {
    if (gpus != nullptr) {
      for (const NvmlGpu& g : *gpus)
        if (!bus.empty() && bus_key(g.pci_bus_id) == bus_key(bus)) return "GPU " + std::to_string(g.index) + " (" + bus + ")";
    }
    return bus.empty() ? std::string("a GPU") : "the device at " + bus;
  };
  VerdictBuilder b;
  nlohmann::json events = nlohmann::json::array();
  std::vector<std::string> fatal, app, warn, sxid_fatal, sxid_warn;
  std::string fatal_action;
  for (const KernelGpuEvent& e : k->events) {
    events.push_back({{"kind", e.kind}, {"code", e.code}, {"bus_id", e.bus_id}, {"usec", e.usec}, {"text", e.text}});
    const std::string when = since_boot(e.usec);
    if (e.kind == "fallen_off_bus") {
      fatal.push_back(who(e.bus_id) + ": fallen off the bus (" + when + ")");
      if (fatal_action.empty()) fatal_action = classify_xid(79).action;
      continue;
    }
    if (e.kind == "sxid") {
      const bool nonfatal = e.text.find("Non-fatal") != std::string::npos;
      (nonfatal ? sxid_warn : sxid_fatal)
          .push_back("NVSwitch " + e.bus_id + ": SXid " + std::to_string(e.code) + (nonfatal ? " (non-fatal, " : " (") +
                     when + ")");
      continue;
    }
    const XidClass c = classify_xid(e.code, e.text);
    const std::string line = who(e.bus_id) + ": Xid " + std::to_string(e.code) + " (" + when + ": " + c.action + ")";
    switch (c.severity) {
      case XidSeverity::Fatal:
        fatal.push_back(line);
        if (fatal_action.empty()) fatal_action = c.action;
        break;
      case XidSeverity::Application: app.push_back(line); break;
      case XidSeverity::Warning: warn.push_back(line); break;
    }
  }
  b.evidence()["source"] = k->source;
  b.evidence()["records"] = k->records;
  b.evidence()["events"] = std::move(events);
  if (!fatal.empty())
    b.add(Status::Fail, "fatal GPU errors in this boot's kernel log: " + list_text(fatal, 4),
          "Drain the node before any job, then act on each: " + fatal_action +
              ". Most clear with a GPU reset (`nvidia-smi -r -i <gpu>`) or a reboot; one that comes back after a "
              "reboot needs the GPU serviced. `dmesg -T | grep -e Xid -e 'fallen off'` shows the lines.");
  if (!sxid_fatal.empty())
    b.add(Status::Fail, "fatal NVSwitch errors: " + list_text(sxid_fatal, 4),
          "Check the fabric manager log (/var/log/fabricmanager.log) and reboot the node; recurring SXids need the "
          "baseboard serviced.");
  if (!warn.empty())
    b.add(Status::Warn, "GPU errors in this boot's kernel log: " + list_text(warn, 4),
          "Look them up in NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/); reset the GPU at the "
          "next drain if they recur.");
  if (!app.empty())
    b.add(Status::Warn, "application Xids in this boot's kernel log: " + list_text(app, 4),
          "Usually a job's own fault (illegal memory access, a kernel exception, a killed context): check the job that "
          "ran then; many of them on one GPU point at the GPU.");
  if (!sxid_warn.empty())
    b.add(Status::Warn, "non-fatal NVSwitch errors: " + list_text(sxid_warn, 4),
          "Watch the fabric manager log; reboot the node if they keep coming.");
  if (b.status() == Status::Pass)
    b.note("no Xid, SXid or fallen-off-the-bus line in this boot's kernel log (" + std::to_string(k->records) +
           " records of " + k->source + ")");
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  This boot's kernel log: /dev/kmsg read to its end without blocking (the ring holds the current
  boot only), once per node (local rank 0); under --sysroot the tree's /dev/kmsg file or the
  capture's record of it. The NVIDIA driver's lines in it: "NVRM: Xid (PCI:0000:3b:00): 79, ...",
  the multi-line "NVRM: The NVIDIA GPU 0000:b3:00.0 ... fallen off the bus" (newer drivers, no Xid),
  "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.", and NVSwitch "SXid (PCI:...): 12028,
  Non-fatal, ...". The bus id is matched to the GPU's NVML index.

Failures
  FAIL     a fatal Xid (DCGM's always-fatal set and NVIDIA catalog resolutions: 48, 64, 74, 79, 95,
           119, 120, 140, 143, 144-150, 155, 156, 158; 154 with a recovery action other than none)
           or a GPU fallen off the bus, naming the GPU, the Xid, the time since boot and the
           catalog's action; a fatal SXid.
  WARN     application Xids (13, 31, 43, 45, 68: usually the job's own fault); other Xids (63 a
           remap pending, 92, 94, 109, ...); non-fatal SXids.
  UNKNOWN  the kernel log is not readable (kernel.dmesg_restrict=1 without CAP_SYSLOG, a
           container): the capability is named; never PASS on a log that could not be read.
  SKIP     in the image profile.

Fix
  `dmesg -T | grep -e Xid -e SXid -e 'fallen off'` shows the lines; NVIDIA's Xid catalog
  (docs.nvidia.com/deploy/xid-errors) gives each code's resolution. Fatal ones: drain the node,
  reset the GPU or reboot; a GPU that falls off the bus again needs service.)EXPLAIN";

}  // namespace

extern const CheckSpec kGpuXid = {
    "gpu.xid", Scope::Node, "no fatal Xid, fallen-off-the-bus or SXid in this boot's kernel log", kExplain,
    kInNode | kInJob, "an image build has no kernel log of the node", &run, "kernel_log", true};

}  // namespace preflight
