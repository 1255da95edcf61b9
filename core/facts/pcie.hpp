// SPDX-License-Identifier: MIT
// PCIe facts read from sysfs (no lspci, no root for most of it): each GPU's and NIC's chain of
// upstream bridges, the ACS control bits of those bridges from their config space, and the IOMMU's
// state. Reading a bridge's extended config space needs CAP_SYS_ADMIN: without it the kernel returns
// only the first 64 bytes, which is recorded as "restricted", never as "no ACS". The ConnectX-8 DMA
// functions (15b3:2100) and each bridge's vendor:device are kept for the platform rules of
// rdma-core's kernel-boot/rdma_topo (checks/pcie_acs_platform.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

/// A GPU, NIC or ConnectX DMA function under /sys/bus/pci/devices.
struct PciFunction {
  std::string bus_id;              // "0000:03:00.0"
  std::string kind;                // "gpu", "nic", "dma" (a ConnectX-8 DMA Controller, 15b3:2100)
  std::string vendor_device;       // "10de:2330"
  std::string class_code;          // "0x030200"
  std::string root;                // "pci0000:00": the host bridge the chain hangs off
  std::vector<std::string> chain;  // bus ids from the root port down to the device itself
  std::optional<int> numa_node;    // nullopt when sysfs says -1 or nothing
  std::vector<int> local_cpus;     // local_cpulist
  std::optional<int> iommu_group;
  std::string driver;       // "nvidia", "mlx5_core"
  std::optional<bool> ats;  // NICs: an ATS extended capability (ID 0x0f); nullopt when the config space is unread
};
PREFLIGHT_JSON_DECLARE(PciFunction)

/// The ACS capability of one bridge on those chains.
struct AcsState {
  std::string bus_id;
  std::string vendor_device;  // "15b3:197c"; "" when sysfs did not say
  std::string state;          // "read" (cap/ctrl valid), "no_acs" (full config space, no ACS capability),
                              // "restricted" (config space shorter than 256 bytes: no privilege), "unreadable"
  std::uint16_t cap = 0;      // ACS Capability register
  std::uint16_t ctrl = 0;     // ACS Control register (SV 0x01, TB 0x02, RR 0x04, CR 0x08, UF 0x10, EC 0x20, DT 0x40)
  int config_bytes = 0;       // how much of the config space could be read
  std::string detail;         // why "unreadable"
};
PREFLIGHT_JSON_DECLARE(AcsState)

struct IommuGroup {
  int group = 0;
  std::string type;  // /sys/kernel/iommu_groups/N/type: "identity", "DMA", "DMA-FQ", "blocked", "unmanaged", "" unknown
  std::vector<std::string> devices;
};
PREFLIGHT_JSON_DECLARE(IommuGroup)

struct IommuFacts {
  Probed<std::vector<std::string>> units;  // /sys/class/iommu/* ("dmar0", "ivhd0"); empty: no IOMMU driver
  Probed<std::string> cmdline;             // /proc/cmdline
  std::vector<IommuGroup> groups;          // the groups of the GPUs and NICs
  std::optional<bool> hypervisor;          // a VM (cpuinfo "hypervisor" flag): ACS is expected there
};
PREFLIGHT_JSON_DECLARE(IommuFacts)

struct PcieFacts {
  Probed<std::vector<PciFunction>> functions;  // the GPUs and NICs
  std::vector<AcsState> bridges;               // every bridge on their chains, in chain order
  IommuFacts iommu;
};
PREFLIGHT_JSON_DECLARE(PcieFacts)

}  // namespace preflight
