// SPDX-License-Identifier: MIT
// The gpu_driver probe's pure parts, for tests.
#pragma once

#include <string>

#include "core/facts/gpu.hpp"
#include "core/probed.hpp"
#include "sys/file_system.hpp"

namespace preflight {

/// The kernel module's version: /proc/driver/nvidia/version, else /sys/module/nvidia/version
/// (through the sysroot seam). NotFound when neither exists (no nvidia module loaded).
Probed<std::string> read_kernel_module_version(const FileSystem& fs);

/// Fills the helper's fields of `driver` from the `driver` subcommand's document. Returns "" or
/// why the document does not have the promised shape (then nothing is filled).
std::string apply_driver_document(const nlohmann::json& doc, DriverFacts& driver);

}  // namespace preflight
