// SPDX-License-Identifier: MIT
// The machine's shape as hwloc sees it (live, with I/O devices kept, or from `--topology-xml FILE`,
// an `lstopo --of xml` export of another node): NUMA nodes and their CPUs, and the GPUs and NICs
// with the chain of objects above them, so two devices' PCIe path class (PIX, PXB, PHB, NODE, SYS)
// and each device's local CPUs and NUMA node can be computed without the driver.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.hpp"

namespace preflight {

struct NumaNode {
  int os_index = 0;
  std::vector<int> cpus;  // PU OS indexes; empty for CPU-less (GPU-memory) nodes
  std::uint64_t memory_bytes = 0;
  std::string subtype;  // "" or hwloc's subtype ("GPUMemory")
};
PREFLIGHT_JSON_DECLARE(NumaNode)

/// One object on the way from the machine down to a PCI device.
struct TopoHop {
  std::string kind;  // "machine", "package", "group", "die", "numa", "host_bridge", "pci_bridge"
  std::string id;    // unique within the topology: "Package:0", "HostBridge:0000:00", "0000:00:01.0"
};
PREFLIGHT_JSON_DECLARE(TopoHop)

/// A GPU, NIC or NVSwitch found in the topology.
struct PciEndpoint {
  std::string kind;                       // "gpu", "nic", "nvswitch"
  std::string bus_id;                     // normalised "0000:18:00.0" (lowercase, 4-digit domain)
  std::string vendor_device;              // "10de:2330"
  std::string class_id;                   // "0302"
  std::string name;                       // hwloc's PCIVendor / PCIDevice where recorded
  std::vector<std::string> os_devices;    // "eth0", "ib0", "mlx5_0", "nvml0", "cuda0"
  std::vector<std::string> rdma_devices;  // the OS devices hwloc types as OpenFabrics ("mlx5_0", "ibp65s0")
  std::vector<int> numa_nodes;            // CPU-bearing NUMA nodes of the first non-I/O ancestor (empty: unknown)
  std::vector<int> local_cpus;            // that ancestor's cpuset (PU OS indexes)
  std::vector<TopoHop> path;              // from the machine down to the device's parent (the device excluded)
};
PREFLIGHT_JSON_DECLARE(PciEndpoint)

/// One entry of hwloc's "NVLinkBandwidth" matrix (recorded in XML exports of NVIDIA machines).
struct TopoLink {
  std::string a;  // bus id of a GPU or NVSwitch, or "Package:L#n" for an NVLink to a CPU
  std::string b;
  std::string b_kind;           // "gpu", "nvswitch", "cpu", "other"
  std::uint64_t bandwidth = 0;  // MB/s, as hwloc records it
};
PREFLIGHT_JSON_DECLARE(TopoLink)

struct TopologyFacts {
  std::string source;       // "this machine (hwloc 2.9.0)", "--topology-xml /path/node17.xml"
  bool this_system = true;  // false for an XML export: process-related facts do not apply to it
  int packages = 0;
  std::vector<int> cpus;  // every allowed PU
  std::vector<NumaNode> numa_nodes;
  std::vector<PciEndpoint> gpus;  // NVIDIA GPUs (vendor 10de, class 03xx; or NVML/CUDA OS devices)
  std::vector<PciEndpoint>
      nics;  // network and InfiniBand controllers (class 02xx, 0c06, or net/openfabrics OS devices)
  std::vector<TopoLink> nvlinks;   // from GPUs (a) to anything (b) with bandwidth > 0; empty: not recorded
  std::vector<std::string> notes;  // oddities found: GPUs outside the allowed CPU set, zeroed PCI ids
};
PREFLIGHT_JSON_DECLARE(TopologyFacts)

}  // namespace preflight
