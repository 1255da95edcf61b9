// SPDX-License-Identifier: MIT
// Pure text helpers of the GPU stack, shared by the probes (preflight_probes) and the contained GPU
// helper (gpu_probe/, which compiles this file itself): no I/O, no NVIDIA libraries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace preflight::gpu_text {

/// The driver version in /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module
/// 535.104.05  Thu ...", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release
/// Build ...") or /sys/module/nvidia/version ("550.54.14\n"): the first token after "Module" (or the
/// whole first line) that is 2 or 3 dot-separated numbers. nullopt when there is none.
std::optional<std::string> parse_kernel_module_version(std::string_view text);

/// True for "535.104.05", "580.142", "34.1.1": 2 or 3 dot-separated runs of digits.
bool is_driver_version(std::string_view token);

/// ncclGetVersion's code as "X.Y.Z": codes >= 10000 are X*10000+Y*100+Z (2.9 and later),
/// older ones X*1000+Y*100+Z. "" for a code <= 0.
std::string decode_nccl_version(int code);

/// The CUDA a NCCL library was built for, from the "NCCL version 2.28.9+cuda13.0" string in its
/// bytes: "13.0". With a non-empty `version`, a string naming that version is preferred. "" if none.
std::string find_nccl_cuda_build(std::string_view bytes, std::string_view version = {});

/// A CUDA driver version code (cuDriverGetVersion: 12040) as "12.4".
std::string format_cuda_version(int code);

/// 16 UUID bytes as NVML prints them: "GPU-6a2b3c4d-0000-1111-2222-333344445555".
std::string format_gpu_uuid(const unsigned char (&bytes)[16]);

/// A PCI address as NVML's busId prints it: "00000000:3B:00.0".
std::string format_pci_bus_id(unsigned domain, unsigned bus, unsigned device);

}  // namespace preflight::gpu_text
