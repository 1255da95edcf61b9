// SPDX-License-Identifier: MIT
// gpu_driver: the kernel module version (files), then the contained GPU helper
// (preflight-gpu-probe): `driver` (NVML + CUDA driver API) and `smoke` on this rank's device (with
// the XIDs NVML reports on it meanwhile).
// A helper that crashes, hangs or writes garbage becomes Crashed / Timeout / ParseError on the
// fields it would have filled; preflight itself never loads libcuda.
#include "probes/gpu_driver_probe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu_text.hpp"
#include "core/text.hpp"
#include "gpu_probe/protocol.hpp"
#include "probes/image_profile.hpp"
#include "probes/probe.hpp"
#include "sys/contained.hpp"
#include "sys/safe_path.hpp"

namespace preflight {
namespace {

constexpr char kHelper[] = "preflight-gpu-probe";
constexpr char kSmokeBytes[] = "64M";

/// Why a helper run gave no usable document, with the subcommand named:
/// "preflight-gpu-probe driver (NVML, cuInit) crashed with SIGSEGV after 0.2 s"; an expired
/// deadline says which one, after how long, and that --timeout raises it.
ProbeError helper_failure(const ContainedResult& result, const ContainedJson& parsed, const std::string& what,
                          const HelperDeadline& deadline) {
  if (result.outcome == ContainedOutcome::TimedOut) {
    return {deadline.expiry_code(), deadline.expired(result.elapsed_s)};
  }
  if (!result.clean()) {
    ProbeError e = result.to_probe_error();
    e.detail = what + " " + e.detail;
    return e;
  }
  return {ProbeErrc::ParseError, what + ": " + parsed.error};
}

/// "exited with status 0 after 0.3 s", "crashed with SIGSEGV after 0.2 s".
std::string describe_run(const ContainedResult& result) {
  std::string text = result.describe();
  if (result.outcome == ContainedOutcome::Exited) text += " after " + fixed(result.elapsed_s, 1) + " s";
  return text;
}

/// The smoke test on this rank's device: the local rank modulo the devices CUDA sees (the helper
/// inherits CUDA_VISIBLE_DEVICES, so the ordinal is within the visible set), after the driver
/// helper's facts are in `d`.
void run_smoke(const ProbeContext& ctx, const std::string& helper, int placement_local_rank, DriverFacts& d) {
  const std::vector<CudaDevice>* devices = d.cuda_devices.value();
  if (devices == nullptr) {
    d.smoke = Probed<SmokeResult>::error(d.cuda_devices.error()->code,
                                         "not run: no CUDA device (" + d.cuda_devices.why() + ")");
    return;
  }
  if (devices->empty()) {
    d.smoke = Probed<SmokeResult>::error(ProbeErrc::NotFound, "not run: the CUDA driver sees no device");
    return;
  }
  const int local_rank = std::max(0, placement_local_rank);
  const int ordinal = local_rank % static_cast<int>(devices->size());
  const std::string smoke_source =
      std::string(kHelper) + " smoke --ordinal " + std::to_string(ordinal) + " --bytes " + kSmokeBytes;
  ContainedRequest smoke;
  smoke.executable = helper;
  smoke.args = gpu_protocol::Request(gpu_protocol::command::kSmoke)
                   .with(gpu_protocol::option::kOrdinal, std::to_string(ordinal))
                   .with(gpu_protocol::option::kBytes, kSmokeBytes)
                   .args();
  // A new process initialises CUDA again, and NVML for its XID watch: the smoke test also gets the
  // cuInit and nvmlInit_v2 times just measured.
  const HelperDeadline smoke_deadline =
      ctx.helper_deadline(Helper::GpuSmoke, d.cuda_init_seconds.value_or(0.0) + d.nvml_init_seconds.value_or(0.0));
  smoke.deadline = smoke_deadline.limit;
  const ContainedResult sresult = run_contained(smoke);
  d.helper += "; smoke: " + describe_run(sresult);
  const ContainedJson sparsed = parse_contained_json(sresult);
  if (!sparsed.ok()) {
    d.smoke = Probed<SmokeResult>::error(
        helper_failure(sresult, sparsed, smoke_source + " (context, cuMemAlloc, cuMemsetD32, cuMemcpyDtoH)",
                       smoke_deadline),
        helper);
    return;
  }
  try {
    d.smoke = Probed<SmokeResult>::ok(sparsed.value.get<SmokeResult>(), smoke_source);
  } catch (const nlohmann::json::exception& e) {
    d.smoke = Probed<SmokeResult>::error(
        ProbeErrc::ParseError, smoke_source + ": the helper's document is not a smoke result: " + e.what(), helper);
  }
}

}  // namespace

Probed<std::string> read_kernel_module_version(const FileSystem& fs) {
  static constexpr char kProc[] = "/proc/driver/nvidia/version";
  static constexpr char kSys[] = "/sys/module/nvidia/version";
  const Probed<std::string> proc = fs.read(kProc, 64u << 10);
  if (const std::string* text = proc.value()) {
    if (auto v = gpu_text::parse_kernel_module_version(*text)) return Probed<std::string>::ok(*v, kProc);
    const std::string first = text->substr(0, text->find('\n'));
    return Probed<std::string>::error(ProbeErrc::ParseError, "no driver version in '" + printable(first) + "'", kProc);
  }
  const Probed<std::string> sys = fs.read_line(kSys);
  if (const std::string* text = sys.value()) {
    if (auto v = gpu_text::parse_kernel_module_version(*text)) return Probed<std::string>::ok(*v, kSys);
    return Probed<std::string>::error(ProbeErrc::ParseError, "no driver version in '" + printable(*text) + "'", kSys);
  }
  // Neither file: say so for both; a permission problem on the first one is the more useful reason.
  if (proc.error()->code != ProbeErrc::NotFound) return proc;
  if (sys.error()->code != ProbeErrc::NotFound) return sys;
  return Probed<std::string>::error(ProbeErrc::NotFound,
                                    "neither /proc/driver/nvidia/version nor /sys/module/nvidia/version exists "
                                    "(the nvidia kernel module is not loaded)");
}

std::string apply_driver_document(const nlohmann::json& doc, DriverFacts& driver) {
  try {
    DriverFacts d;
    d.nvml_driver_version = doc.at("nvml_driver_version").get<Probed<std::string>>();
    d.cuda_driver_version = doc.at("cuda_driver_version").get<Probed<int>>();
    d.loaded_libraries = doc.at("loaded_libraries").get<std::vector<std::string>>();
    d.nvml_gpus = doc.at("nvml_gpus").get<Probed<std::vector<NvmlGpu>>>();
    d.cuda_devices = doc.at("cuda_devices").get<Probed<std::vector<CudaDevice>>>();
    if (doc.contains("nvml_init_seconds")) d.nvml_init_seconds = doc.at("nvml_init_seconds").get<double>();
    if (doc.contains("cuda_init_seconds")) d.cuda_init_seconds = doc.at("cuda_init_seconds").get<double>();
    d.gpu_pairs = doc.contains("gpu_pairs")
                      ? doc.at("gpu_pairs").get<Probed<std::vector<GpuPair>>>()
                      : Probed<std::vector<GpuPair>>::error(ProbeErrc::Unsupported, "the helper reported no GPU pairs");
    driver.nvml_driver_version = std::move(d.nvml_driver_version);
    driver.cuda_driver_version = std::move(d.cuda_driver_version);
    driver.loaded_libraries = std::move(d.loaded_libraries);
    driver.nvml_gpus = std::move(d.nvml_gpus);
    driver.cuda_devices = std::move(d.cuda_devices);
    driver.gpu_pairs = std::move(d.gpu_pairs);
    driver.nvml_init_seconds = d.nvml_init_seconds;
    driver.cuda_init_seconds = d.cuda_init_seconds;
    return {};
  } catch (const nlohmann::json::exception& e) {
    return std::string("the helper's document is not the driver report: ") + e.what();
  }
}

namespace {

/// The image profile's facts: no driver is expected where an image is built. True when it set them.
bool image_profile(const ProbeContext& ctx, DriverFacts& d) {
  if (!not_in_image(ctx.options, kNoDriverInImage, d.kernel_module_version, d.nvml_driver_version,
                    d.cuda_driver_version, d.nvml_gpus, d.cuda_devices, d.gpu_pairs, d.peer_copies, d.smoke))
    return false;
  d.helper = "not run (image profile)";
  return true;
}

/// "held the GPUs for 14 s (its cuInit took 12 s)", "could not hold the GPUs: …", or how it failed.
std::string describe_hold(const ContainedResult& r) {
  const nlohmann::json first = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')), nullptr, false);
  if (first.is_object() && first.value("held", false)) {
    return "held the GPUs for " + format_duration(r.elapsed_s) + " (its cuInit took " +
           format_duration(first.value("cuda_init_seconds", 0.0)) + ")";
  }
  if (first.is_object() && first.contains("error") && first["error"].is_string()) {
    return "could not hold the GPUs: " + printable(first["error"].get<std::string>(), 200);
  }
  return r.describe();
}

/// With persistence mode off the driver tears the GPUs' state down when its last client exits, so
/// every helper after the driver helper (the smoke test, the peer copies, the health reads, and the
/// all_reduce's helpers after the probes) would initialise them again: seconds each on a big node,
/// more than a probe phase or the all_reduce's deadline holds. The hold helper is the driver's
/// client from beside the driver helper until the job's GPU work ends, at the latest when the
/// all_reduce phase does (cuInit only: no context, no GPU memory, not in the GPUs' process lists);
/// how it went is added to the helper line. Should it fail, each helper initialises the GPUs
/// itself, as before.
void hold_gpus(const ProbeContext& ctx, const std::string& helper) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  const SharedFd cancel(fds[0]);
  ctx.keep_through_gpu_work(std::make_shared<const SharedFd>(fds[1]));  // closed: the hold ends
  const double probe_left_s =
      ctx.deadline == std::chrono::steady_clock::time_point::max()
          ? ctx.options.timeout_s * PhaseShares::probe
          : std::chrono::duration<double>(ctx.deadline - std::chrono::steady_clock::now()).count();
  const double seconds =
      std::max(1.0, std::ceil(probe_left_s + ctx.options.timeout_s * (PhaseShares::allreduce - PhaseShares::probe)));
  ContainedRequest request;
  request.executable = helper;
  request.args =
      gpu_protocol::Request(gpu_protocol::command::kHold).with(gpu_protocol::option::kSeconds, general(seconds)).args();
  request.deadline = std::chrono::milliseconds(static_cast<long long>(seconds * 1000)) + std::chrono::seconds(1);
  request.cancel_fd = cancel.get();
  ctx.beside_the_job(
      [request, cancel]() -> ProbeContext::Finisher {
        const std::string line = describe_hold(run_contained(request));
        return [line](RankFacts& facts) { facts.gpu.driver.helper += "; hold: " + line; };
      },
      [](RankFacts& facts) { facts.gpu.driver.helper += "; hold: holding the GPUs until the job's GPU work ends"; });
}

}  // namespace

void probe_gpu_driver_tree(const ProbeContext& ctx, RankFacts& facts) {
  DriverFacts& d = facts.gpu.driver;
  if (image_profile(ctx, d)) return;
  d.kernel_module_version = read_kernel_module_version(ctx.fs);
  // The GPUs of a captured node are those the capture's helper saw there, never this machine's.
  Probed<DriverFacts> held = captured_fact<DriverFacts>(ctx, "gpu", "", "GPU helper report (NVML, CUDA driver)");
  if (DriverFacts* c = held.value()) {
    c->kernel_module_version = std::move(d.kernel_module_version);
    c->helper = "from the capture (" + held.source() + "): " + c->helper;
    d = std::move(*c);
    return;
  }
  const ProbeError e = *held.error();
  d.nvml_driver_version = Probed<std::string>::error(e, held.source());
  d.cuda_driver_version = Probed<int>::error(e, held.source());
  d.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(e, held.source());
  d.cuda_devices = Probed<std::vector<CudaDevice>>::error(e, held.source());
  d.gpu_pairs = Probed<std::vector<GpuPair>>::error(e, held.source());
  d.peer_copies = Probed<std::vector<PeerCopy>>::error(e, held.source());
  d.smoke = Probed<SmokeResult>::error(e, held.source());
  d.health = Probed<GpuHealthFacts>::error(e, held.source());
  d.helper = "not run under --sysroot (the captured node's GPUs are not this machine's)";
}

void probe_gpu_driver(const ProbeContext& ctx, RankFacts& facts) {
  DriverFacts& d = facts.gpu.driver;
  if (image_profile(ctx, d)) return;
  d.kernel_module_version = read_kernel_module_version(ctx.fs);

  const std::string helper = helper_path(kHelper);
  const std::string source = std::string(kHelper) + " driver";
  hold_gpus(ctx, helper);

  // 1. driver: NVML and the CUDA driver API.
  ContainedRequest request;
  request.executable = helper;
  request.args = gpu_protocol::Request(gpu_protocol::command::kDriver).args();
  const HelperDeadline driver_deadline = ctx.helper_deadline(Helper::GpuDriver);
  request.deadline = driver_deadline.limit;
  const ContainedResult result = run_contained(request);
  d.helper = "driver: " + describe_run(result);
  const ContainedJson parsed = parse_contained_json(result);
  std::string bad = parsed.ok() ? apply_driver_document(parsed.value, d) : std::string();
  if (!parsed.ok() || !bad.empty()) {
    const ProbeError e =
        parsed.ok() ? ProbeError{ProbeErrc::ParseError, source + ": " + bad}
                    : helper_failure(result, parsed, source + " (NVML, cuInit, device query)", driver_deadline);
    d.nvml_driver_version = Probed<std::string>::error(e, helper);
    d.cuda_driver_version = Probed<int>::error(e, helper);
    d.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(e, helper);
    d.cuda_devices = Probed<std::vector<CudaDevice>>::error(e, helper);
    d.gpu_pairs = Probed<std::vector<GpuPair>>::error(e, helper);
    d.smoke = Probed<SmokeResult>::error(e.code, "not run: " + e.detail, helper);
    return;
  }

  run_smoke(ctx, helper, facts.placement.local_rank, d);
}

std::string adopt_gpu_driver(const ProbeContext& ctx, const RankFacts& leader, RankFacts& facts) {
  if (ctx.options.profile == Profile::Image) return "no helper runs for it here";
  // What the driver helper sees: the devices CUDA is shown (CUDA_VISIBLE_DEVICES and the other
  // CUDA_ variables), the libcuda and libnvidia-ml the loader finds.
  if (std::string why = env_differs(ctx.env, leader.env, {"CUDA_*", "NVIDIA_*", "LD_LIBRARY_PATH", "LD_PRELOAD"});
      !why.empty()) {
    return why;
  }
  // Everything the driver helper reads is the node's; what the rank's own work yields (its smoke
  // test below; the peer copies, health reads and kernel log of the probes after this one) is not.
  const DriverFacts& from = leader.gpu.driver;
  DriverFacts& d = facts.gpu.driver;
  DriverFacts own = std::move(d);
  d = from;
  d.smoke = std::move(own.smoke);
  d.peer_copies = std::move(own.peer_copies);
  d.health = std::move(own.health);
  d.kernel_log = std::move(own.kernel_log);
  const std::string driver_run = from.helper.substr(0, from.helper.find("; smoke:"));
  d.helper = "rank " + std::to_string(leader.placement.rank) + "'s " + driver_run;
  // The smoke test is this rank's own: its device, its context.
  run_smoke(ctx, helper_path(kHelper), facts.placement.local_rank, d);
  return {};
}

}  // namespace preflight
