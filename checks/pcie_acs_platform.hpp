// SPDX-License-Identifier: MIT
// The ACS Control each bridge should have on the NVIDIA platforms that rdma-core's
// kernel-boot/rdma_topo knows (NVIDIA's tool, which NCCL 2.32 runs; commit
// 691953d8d502f54088f776c5ba2aeed0a5ac945d): which platform the PCI facts describe (its
// __detect_topo_type), and from that each bridge's mask (its compute_acs). Pure: facts in, plan out;
// topo.pcie_acs judges the bridges against it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts/pcie.hpp"

namespace preflight::pcie_acs_platform {

/// rdma_topo's topology types, in the order it tries them; Generic: none (it has no opinion).
enum class Platform { Generic, DmaDirect, Inline, Numa };

/// Why rdma_topo expects a mask of a bridge.
enum class Role {
  DmaDsp,       // DMA-direct: the shared switch's downstream port toward the DMA function, "xx110x1"
  GpuDsp,       // DMA-direct: the shared switch's downstream port toward the GPU, "xx101x1"; inline: the GPU's
  SegmentRoot,  // DMA-direct: the Grace root port above the complex, "xx111x0"
  NicDsp,       // inline: the shared switch's downstream port toward the NIC
  RootPort,     // inline: the root port above the complex
  Other,        // every other ConnectX/BlueField switch port and Grace/Vera root port
};

struct Expectation {
  std::string mask;         // rdma_topo's: "xx101x1" (bits 6..0: DT EC UF CR RR TB SV)
  Role role = Role::Other;  // why
  std::string toward;       // the function the role is about ("" for Other)
};

/// One DMA-direct complex (rdma_topo's NVCX_DMA_Complex): a ConnectX DMA function and its GPU.
struct DmaComplex {
  const PciFunction* dma = nullptr;
  const PciFunction* gpu = nullptr;
  std::string root_port, shared_usp, dma_dsp, gpu_dsp;
};

/// A DMA function whose bridges have no shape rdma_topo knows, and which part differs.
struct Unmatched {
  const PciFunction* dma = nullptr;
  std::string reason;  // "upstream-path", "gpu-count", "gpu-path", "other-function"
};

struct AcsPlan {
  Platform platform = Platform::Generic;
  std::optional<bool> virt;                     // inline: every complex's NIC has ATS (nullopt: not known)
  std::map<std::string, Expectation> expected;  // by bridge bus id
  std::map<std::string, std::string> types;     // rdma_topo's device type of each bridge on the chains
  std::vector<DmaComplex> dma;
  /// On a DMA-direct platform rdma_topo refuses the whole node when one complex does not match: then
  /// nothing is expected, and no bridge of its device types is judged (`unjudged`).
  std::vector<Unmatched> unmatched;
  std::set<std::string> unjudged;
};

/// rdma_topo's device type of a bridge by vendor:device ("grace_rp", "vera_rp", "cx_switch",
/// "bf3_switch"), else "generic_rp" for a root port and "bridge" for any other.
std::string bridge_type(std::string_view vendor_device, bool root_port);

/// rdma_topo's kernel_acs_isolated: the kernel's default ACS (SV RR CR UF), "xx101x1" on Vera's root
/// ports (their Completion Redirect is read-only off).
std::string_view kernel_acs_isolated(std::string_view device_type);

/// The platform and each bridge's expected mask, from the functions and the bridges on their chains.
AcsPlan plan(const std::vector<PciFunction>& functions, const std::vector<AcsState>& bridges);

}  // namespace preflight::pcie_acs_platform
