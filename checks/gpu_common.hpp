// SPDX-License-Identifier: MIT
// What the GPU checks (driver.loaded, cuda.smoke, gpu.count, gpu.busy) share: one verdict for "no
// driver on this node" in the same words everywhere (without a driver every GPU check FAILs in the
// node and job profiles, since the job needs a GPU, and SKIPs in the image profile), one mapping of
// a contained helper's failure (crash, hang, API error) to a verdict, and the keys that join NVML's
// view of a GPU to CUDA's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/facts/gpu.hpp"
#include "core/verdict.hpp"

namespace preflight {

/// The fix for a node without a usable driver, in every GPU check.
extern const std::string_view kNoDriverRemedy;

/// FAIL when neither libnvidia-ml.so.1 nor libcuda.so.1 could be loaded (whether or not a kernel
/// module is there); nullopt when some driver is present. `consequence` ends the summary:
/// "the job needs a GPU".
std::optional<Verdict> no_driver_verdict(const DriverFacts& d, std::string_view consequence);

/// A helper-gathered fact that is missing: FAIL when the reason is one the job will meet too
/// (the helper crashed or hung, the library is missing, the driver returned an error, the helper's
/// answer was garbage), UNKNOWN otherwise (not probed, not permitted).
/// `what` names the fact: "the CUDA devices".
Verdict missing_gpu_fact(const ProbeError& err, std::string_view source, std::string_view what,
                         std::string_view consequence);

/// True when the error is one the job will meet too (see missing_gpu_fact).
bool job_meets_it(ProbeErrc code);

/// 12040 -> "12.4".
std::string cuda_version_text(int v);

/// "GPU-6A2B…" and "6a2b…" compare equal; MIG uuids keep their prefix.
std::string uuid_key(std::string_view uuid);
/// "00000000:18:00.0", "0000:18:00.0" and "0000:18:00.0" compare equal.
std::string bus_key(std::string_view bus_id);

/// The same GPU in NVML's and CUDA's lists: by UUID, else by PCI bus id.
bool same_gpu(const NvmlGpu& n, const CudaDevice& c);

/// Whole MiB: "30000 MiB" (what nvidia-smi prints).
std::string mib_text(std::uint64_t bytes);

}  // namespace preflight
