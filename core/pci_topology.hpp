// SPDX-License-Identifier: MIT
// Pure functions over topology facts: PCI bus id normalisation, the PCIe path class of two devices
// as nvidia-smi names it (X, PIX, PXB, PHB, NODE, SYS), and the nearest NICs of a GPU. Shared by the
// topology, P2P, NIC-affinity and NUMA checks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts/topology.hpp"

namespace preflight {

/// "00000000:18:00.0" (NVML), "0000:1B:00.0" (CUDA), "18:00.0", "0000:18:00" -> "0000:18:00.0";
/// "" when it is not a bus id.
std::string normalize_bus_id(std::string_view text);

/// The path class between two devices from their hwloc paths:
///   "X"    the same device;
///   "PIX"  below one common PCI bridge with at most one more bridge on each side (one switch);
///   "PXB"  below a common PCI bridge through more bridges (cascaded switches);
///   "PHB"  the common ancestor is a PCI host bridge;
///   "NODE" no common PCI ancestor, but the same NUMA node / package (the CPU's interconnect between host bridges);
///   "SYS"  across NUMA nodes or sockets (QPI/UPI, Infinity Fabric, SMP interconnect).
std::string path_class(const PciEndpoint& a, const PciEndpoint& b);

/// 0 for "X" up to 5 for "SYS"; NV# (NVLink) is -1 (better than any PCIe path); unknown labels 99.
int path_rank(std::string_view cls);

/// The endpoint with this bus id (any spelling normalize_bus_id accepts), or nullptr.
const PciEndpoint* find_endpoint(const std::vector<PciEndpoint>& endpoints, std::string_view bus_id);

struct NearNic {
  const PciEndpoint* nic = nullptr;
  std::string path;  // path_class(gpu, nic)
};

/// The NICs with the best (lowest-rank) path class from this GPU; empty when there are no NICs.
std::vector<NearNic> nearest_nics(const PciEndpoint& gpu, const std::vector<PciEndpoint>& nics);

}  // namespace preflight
