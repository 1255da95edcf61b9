// SPDX-License-Identifier: MIT
// The place of a PCI function in the sysfs device tree: /sys/bus/pci/devices/<bdf> is a symlink to
// /sys/devices/pciDDDD:BB/<root port>/<switch ports...>/<bdf>; the BDF components below the
// pciDDDD:BB host bridge are the chain of bridges down to the device (the walk NCCL's topology
// detection makes, src/graph/xml.cc).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/probed.hpp"
#include "sys/file_system.hpp"

namespace preflight {

struct PciChain {
  std::string root;                // "pci0000:00"
  std::vector<std::string> chain;  // bus ids from the root port down to the device itself
};

/// True for a sysfs PCI function name: "0000:03:00.0" (hex domain of 4 or more digits).
bool is_pci_bdf(std::string_view name);

/// True for a host bridge directory name: "pci0000:00", "pci10000:e0".
bool is_pci_host_bridge(std::string_view name);

/// Splits a resolved device path ("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0") into the
/// host bridge and the BDF components below it; nullopt when there is no host bridge component
/// followed by at least one BDF.
std::optional<PciChain> parse_pci_device_path(std::string_view path);

/// Resolves /sys/bus/pci/devices/<bdf> inside the file system's root (FileSystem::real_path: an
/// absolute link never escapes to the live /sys) and parses the result.
Probed<PciChain> resolve_pci_chain(const FileSystem& fs, std::string_view bdf);

/// The last component of a symlink's target, read inside the file system's root:
/// ".../drivers/nvidia" -> "nvidia", ".../iommu_groups/17" -> "17".
Probed<std::string> read_link_name(const FileSystem& fs, std::string_view path);

}  // namespace preflight
