// SPDX-License-Identifier: MIT
// gpu_health: the contained GPU helper's `health` run (memory health, clocks and PCIe under load,
// NVLink, the NVSwitch fabric, the XIDs NVML reports during the load), once per node (local rank
// 0), only when one of the checks that read it is selected; plus the NVSwitches in sysfs and the
// fabric manager process in /proc.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "core/text.hpp"
#include "gpu_probe/protocol.hpp"
#include "probes/image_profile.hpp"
#include "probes/probe.hpp"
#include "sys/contained.hpp"

namespace preflight {
namespace {

using Health = Probed<GpuHealthFacts>;

constexpr char kHealthHelper[] = "preflight-gpu-probe";
// gpu.xid reads the XIDs NVML reported during the load (they need no privilege, unlike the kernel log).
constexpr std::array<std::string_view, 5> kReaders = {"gpu.memory_health", "gpu.clocks", "gpu.links", "gpu.fabric",
                                                      "gpu.xid"};
constexpr char kMaxLoad[] = "1.0";  // seconds: the load ends earlier once every GPU has its samples at P0

bool wanted(const Options& options) {
  return std::any_of(kReaders.begin(), kReaders.end(), [&](std::string_view id) {
    bool keep = options.only.empty();
    for (const std::string& glob : options.only) keep = keep || glob_match(glob, id);
    for (const std::string& glob : options.skip) keep = keep && !glob_match(glob, id);
    return keep;
  });
}

std::optional<int> count_nvswitches(const FileSystem& fs) {
  static constexpr char kDevices[] = "/sys/bus/pci/devices";
  const Probed<std::vector<std::string>> list = fs.list(kDevices);
  const std::vector<std::string>* names = list.value();
  if (names == nullptr) return std::nullopt;
  int count = 0;
  for (const std::string& name : *names) {
    const std::string dir = std::string(kDevices) + "/" + name;
    const Probed<std::string> cls = fs.read_line(dir + "/class");
    const Probed<std::string> vendor = fs.read_line(dir + "/vendor");
    if (cls.value() != nullptr && vendor.value() != nullptr && trim(*cls.value()) == "0x068000" &&
        trim(*vendor.value()) == "0x10de") {
      ++count;
    }
  }
  return count;
}

std::optional<bool> fabric_manager_running(const FileSystem& fs) {
  const Probed<std::vector<std::string>> list = fs.list("/proc");
  const std::vector<std::string>* names = list.value();
  if (names == nullptr) return std::nullopt;
  bool any = false;
  for (const std::string& name : *names) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    const Probed<std::string> comm = fs.read_line("/proc/" + name + "/comm");
    if (comm.value() == nullptr) continue;
    any = true;
    if (trim(*comm.value()) == "nv-fabricmanager") return true;
  }
  return any ? std::optional<bool>(false) : std::nullopt;
}

}  // namespace

// gpu_driver took the captured node's health facts from its capture.
void probe_gpu_health_tree(const ProbeContext& ctx, RankFacts& facts) {
  not_in_image(ctx.options, kNoDriverInImage, facts.gpu.driver.health);
}

void probe_gpu_health(const ProbeContext& ctx, RankFacts& facts) {
  DriverFacts& d = facts.gpu.driver;
  if (not_in_image(ctx.options, kNoDriverInImage, d.health)) return;
  if (!wanted(ctx.options)) {
    d.health = Health::error(ProbeErrc::Unsupported, "not run: no check that reads it is selected");
    return;
  }
  if (facts.placement.local_rank != 0) {
    d.health = Health::error(ProbeErrc::Unsupported, "run once per node, by local rank 0");
    return;
  }
  if (d.nvml_gpus.error() != nullptr) {
    d.health = Health::error(d.nvml_gpus.error()->code, "not run: " + d.nvml_gpus.why(), d.nvml_gpus.source());
    return;
  }
  ContainedRequest request;
  request.executable = helper_path(kHealthHelper);
  request.args =
      gpu_protocol::Request(gpu_protocol::command::kHealth).with(gpu_protocol::option::kMaxLoad, kMaxLoad).args();
  request.extra_env = {"CUDA_VISIBLE_DEVICES"};  // the load covers every GPU of the node
  // A new process initialises CUDA again: the health run also gets the measured cuInit time.
  const HelperDeadline deadline = ctx.helper_deadline(Helper::GpuHealth, d.cuda_init_seconds.value_or(0.0));
  request.deadline = deadline.limit;
  const std::string source = std::string(kHealthHelper) + " health";
  const ContainedResult result = run_contained(request);
  d.helper += (d.helper.empty() ? "" : "; ") + std::string("health: ") + result.describe();
  if (result.outcome == ContainedOutcome::TimedOut) {
    d.health = Health::error(deadline.expiry_code(), source + ": " + deadline.expired(result.elapsed_s), source);
    return;
  }
  if (!result.clean()) {
    ProbeError e = result.to_probe_error();
    e.detail = source + " (NVML health, load) " + e.detail;
    d.health = Health::error(e, source);
    return;
  }
  const ContainedJson parsed = parse_contained_json(result);
  if (!parsed.ok()) {
    d.health = Health::error(ProbeErrc::ParseError, source + ": " + parsed.error, source);
    return;
  }
  if (parsed.value.contains("error")) {
    d.health = Health::error(ProbeErrc::ApiError, source + ": " + parsed.value.at("error").get<std::string>(), source);
    return;
  }
  try {
    GpuHealthFacts h = parsed.value.get<GpuHealthFacts>();
    h.nvswitches = count_nvswitches(ctx.fs);
    h.fabric_manager_running = fabric_manager_running(ctx.fs);
    d.health = Health::ok(std::move(h), source);
  } catch (const nlohmann::json::exception& e) {
    d.health = Health::error(ProbeErrc::ParseError,
                             source + ": the helper's document is not a health report: " + e.what(), source);
  }
}

}  // namespace preflight
