// SPDX-License-Identifier: MIT
// The model of which GPUs a rank sees and which one it uses, shared by the checks that judge the
// binding (launch.gpu_binding, gpu.count, gpu.busy, topo.p2p) and by the run that starts the
// all_reduce helpers and the peer copies: CUDA_VISIBLE_DEVICES read as the driver reads it, a
// rank's device chosen as the frameworks choose it, and the union of a node's ranks' GPUs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts.hpp"

namespace preflight {

/// A GPU as the binding names it: its UUID and PCI bus id (either may be empty).
struct BoundGpu {
  std::string uuid;
  std::string bus;
  /// The identity two views of one GPU share: the UUID without "GPU-", lower case; else the bus id.
  std::string key() const;
  /// "GPU-6a2b… (bus 0000:18:00.0)".
  std::string text() const;
};

/// CUDA_VISIBLE_DEVICES applied to NVML's list as the driver applies it: comma-separated ordinals
/// or GPU-<uuid prefix> entries (white space around an entry ignored); the list ends at the first
/// invalid entry (not a number, out of range, an unknown or ambiguous prefix, a repeat).
struct CvdParse {
  bool no_gpu = false;                 // "", "none", "NoDevFiles", "void": the process sees no GPU at all
  std::vector<std::size_t> visible;    // indices into the NVML list, in CUDA ordinal order
  std::optional<std::string> invalid;  // the first invalid entry and why: "'99' (the node has 8 GPUs (0..7))"
  std::size_t position = 0;            // its 1-based position
  bool unverifiable = false;           // MIG-… entries: not in NVML's GPU list
};
CvdParse apply_cvd(std::string_view cvd, const std::vector<NvmlGpu>& nvml);

/// True for the values that hide every GPU: empty, "none", "NoDevFiles", "void" (any case).
bool cvd_hides_all(std::string_view cvd);

/// True when a CUDA device-list error is the driver's "no device" (CUDA_ERROR_NO_DEVICE).
bool no_device_error(const ProbeError& err);

/// One rank's GPUs and the one it will use.
struct RankGpus {
  std::optional<std::string> cvd;                // the rank's CUDA_VISIBLE_DEVICES (nullopt: unset)
  std::optional<CvdParse> parsed;                // cvd against NVML's list (when both are known)
  std::optional<std::vector<BoundGpu>> visible;  // in CUDA ordinal order; nullopt: not known
  std::string source;                         // where `visible` came from: "cuDeviceGet", "NVML + CUDA_VISIBLE_DEVICES"
  int index = 0;                              // LOCAL_RANK, else the launcher's local rank
  std::string index_text;                     // "LOCAL_RANK=3" / "local rank 3"
  std::optional<std::string> bad_local_rank;  // LOCAL_RANK's value when it is not a device index
  std::optional<int> ordinal;                 // the CUDA ordinal it will use (in its own list)
  std::string choice;                         // how it was chosen: "LOCAL_RANK=3 of 8 visible", "the only GPU it sees"
  std::string why_none;                       // visible known, no device: "LOCAL_RANK=5 but it sees 4 GPUs"
  /// The GPU it will use, when chosen.
  std::optional<BoundGpu> gpu() const;
};

/// The rank's view: its visible GPUs (CUDA's list when the driver probe ran, else NVML's list
/// filtered by CUDA_VISIBLE_DEVICES) and its device: the only GPU it sees, else the one at index
/// LOCAL_RANK (else the local rank) of its list.
RankGpus rank_gpus(const RankFacts& f);

/// "hostname\nboot id": the identity of the host a rank runs on (NCCL's host hash uses both).
std::string host_key(const RankFacts& f);

/// The ranks in `all` on the same host as `f` (f included), in rank order.
std::vector<const RankFacts*> same_host(const RankFacts& f, const std::vector<const RankFacts*>& all);

/// The union of the ranks' visible GPUs by key, in order of first appearance; nullopt when a
/// rank's view is not known.
std::optional<std::vector<BoundGpu>> union_visible(const std::vector<const RankFacts*>& ranks);

/// The CUDA_VISIBLE_DEVICES that makes a helper see exactly the union of the values of a node's
/// ranks (nullopt in the list: that rank has it unset), resolved against NVML's list: nullopt when
/// the helper should see every GPU (a rank has it unset, or a value cannot be resolved), else the
/// full UUIDs joined by commas ("" when no rank sees a GPU).
std::optional<std::string> union_cvd(const std::vector<std::optional<std::string>>& values,
                                     const std::vector<NvmlGpu>& nvml);

}  // namespace preflight
