// SPDX-License-Identifier: MIT
// gpu.xid: the NVIDIA driver's error reports in this boot's kernel log — Xid (fatal ones FAIL,
// application ones WARN), "fallen off the bus" even without an Xid line, and NVSwitch SXid — and
// the XIDs NVML's events reported while preflight's own GPU work ran (the health load, the smoke
// test, the NCCL all_reduce), judged with the same catalog and counted once where both sources
// report them. Without the kernel log, NVML's events on every GPU are a PASS that says its scope;
// anything less stays UNKNOWN.
#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>
#include <map>
#include <utility>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "checks/gpu_common.hpp"
#include "checks/gpu_health_common.hpp"
#include "core/kmsg.hpp"

namespace preflight {
namespace gpu_xid_check {
namespace {

/// nvmlEventData_t.eventData for an Xid NVML cannot name.
constexpr std::uint64_t kXidUnknown = 999;

/// "a", "a and b", "a, b and c" of up to `most` items, then "and N more".
std::string and_text(const std::vector<std::string>& items, std::size_t most = 6) {
  std::string out;
  const std::size_t shown = std::min(most, items.size());
  for (std::size_t i = 0; i < shown; ++i) {
    if (i > 0) out += i + 1 == shown && shown == items.size() ? " and " : ", ";
    out += items[i];
  }
  if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
  return out;
}

std::string since_boot(const std::optional<std::uint64_t>& usec) {
  if (!usec) return "time unknown";
  const std::uint64_t s = *usec / 1000000;
  char buf[64];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lluh%02llum after boot", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>((s % 3600) / 60));
  else
    std::snprintf(buf, sizeof buf, "%llus after boot", static_cast<unsigned long long>(s));
  return buf;
}

/// One XID NVML reported during preflight's own work, counted once per GPU and code over every
/// window (the health load, each rank's smoke test, each rank's part of the all_reduce).
struct NvmlSeen {
  int gpu = -1;
  std::string bus_id;  // NVML's spelling
  std::uint64_t xid = 0;
  std::vector<std::string> works;  // "the health load", "cuda.smoke"
  int count = 0;
  std::string kernel_when;  // the same GPU and code in this boot's kernel log: when ("1h00m after boot")
};

std::string work_text(const std::string& work) {
  if (work == "health load") return "the health load";
  if (work == "all_reduce") return "the NCCL all_reduce";
  return work.empty() ? std::string("preflight's GPU work") : work;
}

/// What NVML's XID events say for the node: every window any of the node's ranks watched, the
/// GPUs they covered, and the XIDs seen (deduplicated by GPU and code).
struct NvmlView {
  std::vector<const NvmlXidWatch*> watches;    // attempted windows
  std::map<std::string, std::string> covered;  // bus key -> bus id, registered in a collected window
  std::map<std::string, std::string> why_not;  // bus key -> why not registered (first reason)
  std::vector<NvmlSeen> seen;
  /// Why windows collected nothing, each reason once with the work it cut short:
  /// {"driver 470.82.01 has no nvmlEventSetCreate", {"the health load", "cuda.smoke"}}.
  std::vector<std::pair<std::string, std::vector<std::string>>> not_collected;

  std::vector<std::string> not_collected_text() const {
    std::vector<std::string> out;
    for (const auto& [why, works] : not_collected) {
      std::vector<std::string> named(works.begin(), works.end());
      out.push_back(why + ", in " + and_text(named));
    }
    return out;
  }
};

NvmlView nvml_view(const CheckContext& ctx) {
  NvmlView v;
  auto take = [&](const NvmlXidWatch& w) {
    if (w.work.empty()) return;  // not attempted (an older capture, a helper that never got there)
    v.watches.push_back(&w);
    if (!w.collected) {
      const std::string why = w.unavailable.empty() ? "not read" : w.unavailable;
      auto it =
          std::find_if(v.not_collected.begin(), v.not_collected.end(), [&](const auto& e) { return e.first == why; });
      if (it == v.not_collected.end()) it = v.not_collected.insert(v.not_collected.end(), {why, {}});
      const std::string work = work_text(w.work);
      if (std::find(it->second.begin(), it->second.end(), work) == it->second.end()) it->second.push_back(work);
    }
    for (const NvmlXidGpu& g : w.gpus) {
      const std::string key = bus_key(g.pci_bus_id);
      if (g.registered && w.collected)
        v.covered[key] = g.pci_bus_id;
      else if (!g.registered)
        v.why_not.emplace(key, g.why);
      else
        v.why_not.emplace(key, work_text(w.work) + ": " + w.unavailable);
    }
    for (const NvmlXidEvent& e : w.events) {
      auto it = std::find_if(v.seen.begin(), v.seen.end(), [&](const NvmlSeen& s) {
        return s.xid == e.xid && bus_key(s.bus_id) == bus_key(e.pci_bus_id);
      });
      if (it == v.seen.end()) {
        v.seen.push_back({e.gpu, e.pci_bus_id, e.xid, {}, 0, {}});
        it = std::prev(v.seen.end());
      }
      ++it->count;
      const std::string work = work_text(w.work);
      if (std::find(it->works.begin(), it->works.end(), work) == it->works.end()) it->works.push_back(work);
    }
  };
  std::vector<int> ranks;
  for (const RankFacts* f : node_ranks(ctx)) {
    if (const GpuHealthFacts* h = f->gpu.driver.health.value()) take(h->xid_watch);
    if (const SmokeResult* sm = f->gpu.driver.smoke.value()) take(sm->xid_watch);
    ranks.push_back(f->placement.rank);
  }
  // The NCCL all_reduce's windows, where rank 0 judges the node again after it (every round's).
  if (ctx.job != nullptr) {
    for (const RankXidWatch& w : ctx.job->allreduce.xid_watches)
      if (std::find(ranks.begin(), ranks.end(), w.rank) != ranks.end()) take(w.watch);
  }
  return v;
}

/// The node's GPUs by bus key (NVML's list, else the health run's, else what the windows name).
std::map<std::string, std::string> node_gpus(const DriverFacts& d, const NvmlView& v) {
  std::map<std::string, std::string> out;
  if (const std::vector<NvmlGpu>* gpus = d.nvml_gpus.value()) {
    for (const NvmlGpu& g : *gpus)
      out[bus_key(g.pci_bus_id)] = "GPU " + std::to_string(g.index) + " (" + g.pci_bus_id + ")";
    return out;
  }
  if (const GpuHealthFacts* h = d.health.value()) {
    for (const GpuHealth& g : h->gpus)
      out[bus_key(g.pci_bus_id)] = "GPU " + std::to_string(g.index) + " (" + g.pci_bus_id + ")";
    if (!out.empty()) return out;
  }
  for (const NvmlXidWatch* w : v.watches)
    for (const NvmlXidGpu& g : w->gpus)
      out[bus_key(g.pci_bus_id)] = "GPU " + std::to_string(g.index) + " (" + g.pci_bus_id + ")";
  return out;
}

#define PREFLIGHT_XID_RESET_FIX                                                                               \
  ". Most clear with a GPU reset (`nvidia-smi -r -i <gpu>`) or a reboot; one that comes back after a reboot " \
  "needs the GPU serviced."
constexpr FindingSpec kFatalDuringRun = {
    "gpu.xid/fatal-during-run", Status::Fail, "fatal GPU errors: {run_fatal}",
    "Drain the node before any job (the GPU failed under preflight's own work), then act on each: "
    "{run_action}" PREFLIGHT_XID_RESET_FIX};
constexpr FindingSpec kFatalInLog = {"gpu.xid/fatal-in-log", Status::Fail,
                                     "fatal GPU errors in this boot's kernel log: {fatal}",
                                     "Drain the node before any job, then act on each: {action}" PREFLIGHT_XID_RESET_FIX
                                     " `dmesg -T | grep -e Xid -e 'fallen off'` shows the lines."};
#undef PREFLIGHT_XID_RESET_FIX
constexpr FindingSpec kSxidFatal = {
    "gpu.xid/sxid-fatal", Status::Fail, "fatal NVSwitch errors: {sxid_fatal}",
    "Check the fabric manager log (/var/log/fabricmanager.log) and reboot the node; recurring SXids need the "
    "baseboard serviced."};
constexpr FindingSpec kErrorDuringRun = {
    "gpu.xid/error-during-run", Status::Warn, "GPU errors: {run_errors}",
    "Look them up in NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/); run preflight again "
    "and reset the GPU at the next drain if they recur."};
constexpr FindingSpec kApplicationXidDuringRun = {
    "gpu.xid/application-xid-during-run", Status::Warn, "application Xids: {run_application}",
    "preflight's own work (a memset, a copy) is no faulty application: run it again, and reset the GPU "
    "(`nvidia-smi -r -i <gpu>`) or drain the node if the Xid recurs."};
constexpr FindingSpec kErrorInLog = {
    "gpu.xid/error-in-log", Status::Warn, "GPU errors in this boot's kernel log: {errors}",
    "Look them up in NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/); reset the GPU at the "
    "next drain if they recur."};
// Application Xids are context for a job's fault, never the node's: a note that never counts,
// --strict included (a fleet's repeated Xid 45 are no hardware events).
constexpr FindingSpec kApplicationXidInLog = {
    "gpu.xid/application-xid-in-log", Status::Pass,
    "application Xids in this boot's kernel log, a job's own faults and not the node's ({records} records of "
    "{source}): {application}",
    "Nothing to fix on the node: look at the job that ran then (an illegal memory access, a kernel exception, a "
    "context killed or timed out)."};
constexpr FindingSpec kSxidNonFatal = {"gpu.xid/sxid-non-fatal", Status::Warn,
                                       "non-fatal NVSwitch errors: {sxid_non_fatal}",
                                       "Watch the fabric manager log; reboot the node if they keep coming."};
// {coverage}: "; …" what NVML's events covered instead ({gpu_count}; {uncovered}: the GPUs they did not;
// {not_collected}: why), or "".
constexpr FindingSpec kKernelLogDenied = {
    "gpu.xid/kernel-log-denied", Status::Unknown, "the kernel log is not readable: {detail}{coverage}",
    "Run preflight with CAP_SYSLOG (as root, `docker run --cap-add syslog`, or "
    "`sysctl kernel.dmesg_restrict=0`), or read it yourself: `sudo dmesg | grep -e Xid -e "
    "SXid -e 'fallen off the bus'`."};
constexpr FindingSpec kKernelLogNotRead = {
    "gpu.xid/kernel-log-not-read", Status::Unknown, "the kernel log was not read: {why}{coverage}",
    "Run preflight on the node (not in the image profile) with gpu.xid selected."};
// {nvml}: "; none raised during preflight's own GPU work on 8 GPUs (NVML events)" when they covered any, else "".
constexpr FindingSpec kClean = {
    "gpu.xid/clean", Status::Pass,
    "no Xid, SXid or fallen-off-the-bus line in this boot's kernel log ({records} records of {source}){nvml}", ""};
constexpr FindingSpec kCleanDuringRun = {
    "gpu.xid/clean-during-run", Status::Pass,
    "no XID during preflight's own GPU work on {gpu_count} (NVML events); this boot's earlier kernel log was not "
    "{read}: {why}",
    ""};

constexpr FindingSpec kGpuLost = {"gpu.xid/gpu-lost", Status::Fail, kLostGpuMessage, kLostGpuRemedy};

constexpr std::array kFindings = {
    kFatalDuringRun,          kFatalInLog, kSxidFatal,           kGpuLost,      kErrorDuringRun,
    kApplicationXidDuringRun, kErrorInLog, kApplicationXidInLog, kSxidNonFatal, kKernelLogDenied,
    kKernelLogNotRead,        kClean,      kCleanDuringRun};

/// The node's lost GPUs with their cause: NVML's list, and the health run's for GPUs it lacks.
std::vector<std::string> xid_lost_gpus(const DriverFacts& d) {
  std::vector<std::string> out;
  std::vector<std::string> seen;
  if (const std::vector<NvmlGpu>* gpus = d.nvml_gpus.value()) {
    for (const NvmlGpu& g : *gpus) {
      if (g.lost.empty()) continue;
      out.push_back(nvml_gpu_text(g) + ": " + g.lost);
      seen.push_back(bus_key(g.pci_bus_id));
    }
  }
  if (const GpuHealthFacts* h = d.health.value()) {
    for (const GpuHealth& g : h->gpus) {
      if (g.lost.empty() || std::find(seen.begin(), seen.end(), bus_key(g.pci_bus_id)) != seen.end()) continue;
      out.push_back(health_gpu_text(g) + ": " + g.lost);
    }
  }
  return out;
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
  NvmlView nv = nvml_view(ctx);
  const std::map<std::string, std::string> gpus_of_node = node_gpus(d, nv);
  const std::vector<NvmlGpu>* gpus = d.nvml_gpus.value();
  auto who = [&](const std::string& bus) {
    if (gpus != nullptr) {
      for (const NvmlGpu& g : *gpus)
        if (!bus.empty() && bus_key(g.pci_bus_id) == bus_key(bus))
          return "GPU " + std::to_string(g.index) + " (" + bus + ")";
    }
    return bus.empty() ? std::string("a GPU") : "the device at " + bus;
  };
  VerdictBuilder b;
  nlohmann::json events = nlohmann::json::array();
  std::vector<std::string> fatal, app, warn, sxid_fatal, sxid_warn;
  std::string fatal_action;
  // An NVML XID on the same GPU with the same code (79 for "fallen off the bus") is the same
  // report: said once, naming both sources.
  auto raised_too = [&](const std::string& bus, std::uint64_t code, const std::string& when) {
    for (NvmlSeen& s : nv.seen) {
      if (s.xid != code || bus_key(s.bus_id) != bus_key(bus)) continue;
      if (s.kernel_when.empty()) s.kernel_when = when;
      return true;
    }
    return false;
  };
  if (k != nullptr) {
    for (const KernelGpuEvent& e : k->events) {
      events.push_back({{"kind", e.kind}, {"code", e.code}, {"bus_id", e.bus_id}, {"usec", e.usec}, {"text", e.text}});
      const std::string when = since_boot(e.usec);
      if (e.kind == "fallen_off_bus") {
        if (raised_too(e.bus_id, 79, when)) continue;
        fatal.push_back(who(e.bus_id) + ": fallen off the bus (" + when + ")");
        if (fatal_action.empty()) fatal_action = classify_xid(79).action;
        continue;
      }
      if (e.kind == "sxid") {
        const bool nonfatal = e.text.find("Non-fatal") != std::string::npos;
        (nonfatal ? sxid_warn : sxid_fatal)
            .push_back("NVSwitch " + e.bus_id + ": SXid " + std::to_string(e.code) +
                       (nonfatal ? " (non-fatal, " : " (") + when + ")");
        continue;
      }
      if (e.code > 0 && raised_too(e.bus_id, static_cast<std::uint64_t>(e.code), when)) continue;
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
  }
  // The XIDs raised during preflight's own GPU work (NVML events).
  std::vector<std::string> run_fatal, run_app, run_warn;
  std::string run_action;
  nlohmann::json nvml_events = nlohmann::json::array();
  for (const NvmlSeen& s : nv.seen) {
    const std::string gpu_text =
        s.gpu >= 0 ? "GPU " + std::to_string(s.gpu) + " (" + s.bus_id + ")" : std::string("a GPU");
    const bool unnamed = s.xid == kXidUnknown;
    const XidClass c = unnamed
                           ? XidClass{XidSeverity::Warning, "an Xid NVML could not name: the kernel log has its line"}
                           : classify_xid(static_cast<int>(std::min<std::uint64_t>(s.xid, 100000)));
    std::string sources =
        "NVML event during " + and_text(s.works) + (s.count > 1 ? ", " + std::to_string(s.count) + " times" : "");
    if (!s.kernel_when.empty()) sources += ", and in this boot's kernel log " + s.kernel_when;
    const std::string line =
        gpu_text + ": Xid " + std::to_string(s.xid) + " raised while preflight ran (" + sources + ": " + c.action + ")";
    nvml_events.push_back({{"gpu", s.gpu},
                           {"bus_id", s.bus_id},
                           {"xid", s.xid},
                           {"count", s.count},
                           {"during", s.works},
                           {"in_kernel_log", !s.kernel_when.empty()}});
    switch (c.severity) {
      case XidSeverity::Fatal:
        run_fatal.push_back(line);
        if (run_action.empty()) run_action = c.action;
        break;
      case XidSeverity::Application: run_app.push_back(line); break;
      case XidSeverity::Warning: run_warn.push_back(line); break;
    }
  }
  // Which GPUs the events covered (a lost GPU answers no registration: it is named as lost below).
  std::vector<std::string> covered_gpus, uncovered;
  const std::vector<std::string> lost = xid_lost_gpus(d);
  for (const auto& [key, name] : gpus_of_node) {
    if (nv.covered.count(key) != 0) {
      covered_gpus.push_back(name);
      continue;
    }
    const std::string lost_prefix = name + ":";  // a structured binding is not captured (clang 14)
    if (std::any_of(lost.begin(), lost.end(), [&](const std::string& l) { return l.starts_with(lost_prefix); }))
      continue;
    const auto why = nv.why_not.find(key);
    uncovered.push_back(name + (why != nv.why_not.end() && !why->second.empty() ? ": " + why->second : ""));
  }
  nlohmann::json watched = nlohmann::json::array();
  for (const NvmlXidWatch* w : nv.watches)
    watched.push_back({{"work", w->work},
                       {"collected", w->collected},
                       {"seconds", w->end_s - w->start_s},
                       {"unavailable", w->unavailable},
                       {"events", w->events.size()}});
  b.evidence()["nvml"] = {{"windows", std::move(watched)},
                          {"events", std::move(nvml_events)},
                          {"covered", covered_gpus},
                          {"not_covered", uncovered}};

  if (!run_fatal.empty()) b.add(kFatalDuringRun, {{"run_fatal", list_text(run_fatal, 4)}, {"run_action", run_action}});
  if (!fatal.empty()) b.add(kFatalInLog, {{"fatal", list_text(fatal, 4)}, {"action", fatal_action}});
  if (!sxid_fatal.empty()) b.add(kSxidFatal, {{"sxid_fatal", list_text(sxid_fatal, 4)}});
  // A lost GPU raises no XID event and may have left no line yet: never a clean node.
  if (!lost.empty()) b.add(kGpuLost, {{"gpus", list_text(lost, 4)}});
  if (!run_warn.empty()) b.add(kErrorDuringRun, {{"run_errors", list_text(run_warn, 4)}});
  if (!run_app.empty()) b.add(kApplicationXidDuringRun, {{"run_application", list_text(run_app, 4)}});
  if (!warn.empty()) b.add(kErrorInLog, {{"errors", list_text(warn, 4)}});
  if (!sxid_warn.empty()) b.add(kSxidNonFatal, {{"sxid_non_fatal", list_text(sxid_warn, 4)}});

  const std::string gpus_text = std::to_string(covered_gpus.size()) + " GPU" + (covered_gpus.size() == 1 ? "" : "s");
  if (k != nullptr) {
    b.evidence()["source"] = k->source;
    b.evidence()["records"] = k->records;
    b.evidence()["events"] = std::move(events);
    if (!app.empty()) {
      b.add(kApplicationXidInLog, {{"application", list_text(app, 4)}, {"records", k->records}, {"source", k->source}});
    } else if (b.status() == Status::Pass) {
      nlohmann::json params = {
          {"records", k->records},
          {"source", k->source},
          {"nvml", part_if(!covered_gpus.empty(),
                           "; none raised during preflight's own GPU work on {gpu_count} (NVML events)")}};
      if (!covered_gpus.empty()) params["gpu_count"] = gpus_text;
      b.add(kClean, std::move(params));
    }
    return b.build();
  }

  // The kernel log could not be read: what NVML's events cover is all there is.
  const ProbeError& e = *log->error();
  const bool denied = e.code == ProbeErrc::PermissionDenied;
  const std::string log_why = denied ? e.detail : log->why();
  b.evidence()["kernel_log"] = {{"error", to_string(e.code)}, {"detail", e.detail}};
  const bool all_covered = !gpus_of_node.empty() && uncovered.empty();
  if (all_covered) {
    if (b.status() == Status::Pass) {
      b.add(kCleanDuringRun, {{"gpu_count", gpus_text}, {"read", denied ? "readable" : "read"}, {"why", log_why}});
    }
    return b.build();
  }
  nlohmann::json params = {{"coverage", part_if(false, "")}};
  if (!covered_gpus.empty()) {
    params = {{"coverage",
               template_param("; NVML events covered preflight's own GPU work on {gpu_count} only, not {uncovered}")},
              {"gpu_count", gpus_text},
              {"uncovered", and_text(uncovered, 4)}};
  } else if (!gpus_of_node.empty()) {
    std::string coverage = "; no NVML XID events were collected on {uncovered}";
    if (!nv.not_collected.empty())
      coverage += " ({not_collected})";
    else if (nv.watches.empty())
      coverage += " (preflight's own GPU work did not watch them)";
    params = {{"coverage", template_param(coverage)},
              {"uncovered", gpus_of_node.size() == 1 ? gpus_of_node.begin()->second
                                                     : "the " + std::to_string(gpus_of_node.size()) + " GPUs"}};
    if (!nv.not_collected.empty()) params["not_collected"] = and_text(nv.not_collected_text(), 3);
  }
  if (denied) {
    params["detail"] = e.detail;
    b.add(kKernelLogDenied, std::move(params));
  } else {
    params["why"] = log->why();
    b.add(kKernelLogNotRead, std::move(params));
  }
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  This boot's kernel log: /dev/kmsg read to its end without blocking (the ring holds the current
  boot only), once per node (local rank 0); under --sysroot the tree's /dev/kmsg file or the
  capture's record of it. The NVIDIA driver's lines in it: "NVRM: Xid (PCI:0000:3b:00): 79, ...",
  the multi-line "NVRM: The NVIDIA GPU 0000:b3:00.0 ... fallen off the bus" (newer drivers, no Xid),
  "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.", and NVSwitch "SXid (PCI:...): 12028,
  Non-fatal, ...". The bus id is matched to the GPU's NVML index.
  And the XIDs raised while preflight's own GPU work ran, through NVML events (no privilege
  needed): the contained helper registers nvmlEventTypeXidCriticalError on the GPUs before its
  work starts and reads the events (0 ms waits, at most 256) during and after it — on every GPU
  during the health load (cuMemsetD32 on each), on the rank's GPU during cuda.smoke, and on each
  rank's GPU during the NCCL all_reduce of comm.allreduce (its init, every round, the finalize or
  abort). The ranks judge gpu.xid before the all_reduce runs; when it recorded windows, rank 0
  judges every node again with them. Per GPU: whether the registration took (NOT_SUPPORTED on
  some GPUs, no permission), the window, and each event's GPU, Xid and time. An Xid both sources
  report for the same GPU is one finding that names both.

Failures
  FAIL     a fatal Xid (DCGM's always-fatal set and NVIDIA catalog resolutions: 48, 64, 74, 79, 95,
           119, 120, 140, 143, 144-150, 155, 156, 158; 154 with a recovery action other than none)
           or a GPU fallen off the bus, naming the GPU, the Xid, the time since boot and the
           catalog's action; a fatal SXid. A fatal Xid raised while preflight ran: the same, naming
           the GPU's index and bus id and the work it happened in ("raised while preflight ran").
  FAIL     a GPU is lost or needs a reset (NVML_ERROR_GPU_IS_LOST / RESET_REQUIRED in NVML's list
           or the health run), named with its bus id and the call: such a node is never clean,
           whatever the log and the events say of the other GPUs.
  WARN     Xids that are neither fatal nor an application's (63 a remap pending, 92, 94, ..., 999
           an Xid NVML could not name); non-fatal SXids. In this boot's log or raised while
           preflight ran. An application Xid raised during preflight's own work (a memset, a copy).
  PASS     application Xids in this boot's log (13 graphics exception, 31 memory page fault, 43
           stopped processing, 45 preemptive cleanup, 68 video decoder exception, 109 context switch
           timeout: NVIDIA's catalog names the application first) are listed as a job's own faults,
           never the node's, --strict included: a fleet's repeated Xid 45 are no hardware events.
  UNKNOWN  the kernel log is not readable (kernel.dmesg_restrict=1 without CAP_SYSLOG, a
           container), and NVML's events did not cover every GPU: the capability is named, and
           the GPUs the events did not cover with why (not supported on the GPU, no permission,
           a driver without nvmlEventSetCreate).
  PASS     without the kernel log only when NVML's events covered every GPU of the node and none
           fired; the summary says so: "no XID during preflight's own GPU work on 8 GPUs (NVML
           events); this boot's earlier kernel log was not readable: ... CAP_SYSLOG ...". Xids
           raised before preflight started are then not seen.
  SKIP     in the image profile.

Fix
  `dmesg -T | grep -e Xid -e SXid -e 'fallen off'` shows the lines; NVIDIA's Xid catalog
  (docs.nvidia.com/deploy/xid-errors) gives each code's resolution. Fatal ones: drain the node,
  reset the GPU or reboot; a GPU that falls off the bus again needs service. To see the whole
  boot's log in a container: --cap-add syslog (CAP_SYSLOG) or kernel.dmesg_restrict=0.)EXPLAIN";

}  // namespace

extern const CheckSpec kGpuXid = {
    "gpu.xid",
    Scope::Node,
    "no fatal Xid, fallen-off-the-bus or SXid in this boot's kernel log or while preflight's own GPU work ran",
    kExplain,
    kInNode | kInJob,
    "an image build has no kernel log of the node",
    &run,
    "kernel_log,gpu_health,gpu_driver,allreduce",
    true,
    {},
    {},
    nullptr,
    kFindings};

}  // namespace gpu_xid_check
}  // namespace preflight
