// SPDX-License-Identifier: MIT
#include "checks/gpu_common.hpp"

#include <cctype>
#include <cstdio>

#include "checks/check.hpp"
#include "core/pci_topology.hpp"
#include "core/text.hpp"

namespace preflight {

const std::string_view kNoDriverRemedy =
    "Install the NVIDIA driver on the node (then reboot, or `modprobe nvidia`); in a container, start it with "
    "the NVIDIA container runtime (`docker run --gpus all …`, `--runtime=nvidia`; Kubernetes: request "
    "nvidia.com/gpu with the NVIDIA device plugin) so the driver's libraries and /dev/nvidia* are mounted in; "
    "when building an image without a GPU, run `preflight --profile image --target-driver VERSION` instead.";

namespace {
bool is_missing(ProbeErrc c) { return c == ProbeErrc::LibraryMissing; }
}  // namespace

std::optional<Verdict> no_driver_verdict(const DriverFacts& d, std::string_view consequence) {
  const ProbeError* nvml = d.nvml_driver_version.error();
  const ProbeError* cuda_version = d.cuda_driver_version.error();
  const ProbeError* cuda_devices = d.cuda_devices.error();
  const bool nvml_missing = nvml != nullptr && is_missing(nvml->code);
  const bool cuda_missing = (cuda_version != nullptr && is_missing(cuda_version->code)) ||
                            (cuda_devices != nullptr && is_missing(cuda_devices->code));
  if (!nvml_missing || !cuda_missing) return std::nullopt;

  nlohmann::json ev = {{"nvml", d.nvml_driver_version.why()},
                       {"cuda", cuda_version != nullptr && is_missing(cuda_version->code) ? d.cuda_driver_version.why()
                                                                                         : d.cuda_devices.why()},
                       {"kernel_module", d.kernel_module_version.ok() ? nlohmann::json(*d.kernel_module_version.value())
                                                                      : nlohmann::json(d.kernel_module_version.why())}};
  std::string summary;
  if (const std::string* km = d.kernel_module_version.value()) {
    summary = "the nvidia kernel module " + *km +
              " is loaded but its libraries are not here: libnvidia-ml.so.1 and libcuda.so.1 cannot be loaded";
  } else {
    summary = "no NVIDIA driver on this node: libnvidia-ml.so.1 and libcuda.so.1 cannot be loaded and no nvidia kernel "
              "module is loaded";
  }
  summary += " (" + nvml->detail + ")";
  if (consequence.empty()) return Verdict::fail(std::move(summary), std::string(kNoDriverRemedy), std::move(ev));
  // Another GPU check: it fails because driver.loaded does; the report folds it under that result.
  return Verdict::fail("no NVIDIA driver on this node; " + std::string(consequence), std::string(kNoDriverRemedy),
                       std::move(ev))
      .because("driver.loaded");
}

bool job_meets_it(ProbeErrc code) {
  switch (code) {
    case ProbeErrc::Crashed:
    case ProbeErrc::Timeout:
    case ProbeErrc::LibraryMissing:
    case ProbeErrc::ApiError:
    case ProbeErrc::ParseError:
      return true;
    default:
      return false;
  }
}

Verdict missing_gpu_fact(const ProbeError& err, std::string_view source, std::string_view what,
                         std::string_view consequence) {
  const std::string where = source.empty() ? std::string() : std::string(source) + ": ";
  nlohmann::json ev = {{"error", to_string(err.code)}, {"detail", err.detail}};
  if (!source.empty()) ev["source"] = source;
  const std::string tail = consequence.empty() ? std::string() : "; " + std::string(consequence);
  // Not gathered because a probe before it hung: a hang of the run, not of the driver.
  if (hung_probe(err)) {
    return Verdict::unknown(std::string(what) + " was not gathered: " + err.detail, std::string(kHungProbeRemedy),
                            std::move(ev));
  }
  switch (err.code) {
    case ProbeErrc::Crashed:
      return Verdict::fail(std::string(what) + " could not be read: " + where + err.detail + tail,
                           "The job's first GPU call will die the same way (exit -11 or -6). Look for the cause in "
                           "driver.loaded and cuda.runtime (a CUDA runtime newer than the driver, a mismatched or "
                           "forward-compatibility libcuda on LD_LIBRARY_PATH), and in `dmesg | grep -i -e NVRM -e Xid`; "
                           "if the driver install is broken, reinstall it and reboot.",
                           std::move(ev));
    case ProbeErrc::Timeout:
      return Verdict::fail(std::string(what) + " could not be read: " + where + err.detail + tail,
                           "The driver did not answer within the helper's deadline (a share of --timeout, named "
                           "above). GPUs that are only slow to initialise (persistence mode off: every process sets "
                           "them up again) need a larger --timeout, and nvidia-persistenced removes the delay. One "
                           "that never answers means the job would hang on its first GPU call: check `nvidia-smi` (a "
                           "hang there too means a wedged GPU or driver), `dmesg | grep -i -e NVRM -e Xid` (Xid 79: "
                           "fell off the bus), and that nvidia-persistenced / nvidia-fabricmanager run; drain the "
                           "node and reset the GPU (`nvidia-smi -r`) or reboot it.",
                           std::move(ev));
    case ProbeErrc::LibraryMissing:
      return Verdict::fail(std::string(what) + " could not be read: " + where + err.detail + tail,
                           std::string(kNoDriverRemedy), std::move(ev))
          .because("driver.loaded");
    case ProbeErrc::ApiError:
      return Verdict::fail(std::string(what) + " could not be read: " + where + err.detail + tail,
                           "The job's CUDA calls will fail with the same error; see driver.loaded for the driver's "
                           "state and fix that first (a reboot after a driver upgrade, `modprobe nvidia`, or the "
                           "NVIDIA container runtime).",
                           std::move(ev))
          .because("driver.loaded");
    case ProbeErrc::ParseError:
      return Verdict::fail(std::string(what) + " could not be read: the GPU helper's answer was garbage (" + where +
                               err.detail + ")" + tail,
                           "The helper talks to the driver in a child process; garbage usually means the driver "
                           "library printed to stdout or crashed half-way. Run `nvidia-smi` and check "
                           "`dmesg | grep -i NVRM`; report it as a preflight bug with --json output if the driver is "
                           "healthy.",
                           std::move(ev));
    default:
      return Verdict::unknown("could not read " + std::string(what) + ": " + where + err.detail,
                              "Run preflight on the node itself, as the job's user, so its GPU helper can reach the "
                              "driver (see the detail).",
                              std::move(ev));
  }
}

std::string cuda_version_text(int v) {
  if (v <= 0) return std::to_string(v);
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string uuid_key(std::string_view uuid) {
  std::string s = to_lower(trim(uuid));
  if (s.starts_with("gpu-")) s.erase(0, 4);
  return s;
}

std::string bus_key(std::string_view bus_id) {
  // The domain has 4 or 8 hex digits depending on who prints it; normalize_bus_id takes both.
  std::string key = normalize_bus_id(bus_id);
  return key.empty() ? to_lower(trim(bus_id)) : key;
}

bool same_gpu(const NvmlGpu& n, const CudaDevice& c) {
  if (!n.uuid.empty() && !c.uuid.empty()) return uuid_key(n.uuid) == uuid_key(c.uuid);
  if (!n.pci_bus_id.empty() && !c.pci_bus_id.empty()) return bus_key(n.pci_bus_id) == bus_key(c.pci_bus_id);
  return false;
}

std::string mib_text(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace preflight
