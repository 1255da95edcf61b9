// SPDX-License-Identifier: MIT
// gpu_p2p: real peer copies between the GPUs this process sees, run by the contained helper
// (preflight-gpu-probe p2p), whose JSON Lines output is read even when it was killed, so a copy
// that hung or crashed is named.
#pragma once

#include <string>
#include <vector>

#include "core/facts/gpu.hpp"
#include "sys/contained.hpp"

namespace preflight {

/// Bytes per peer copy.
inline constexpr char kPeerCopyBytes[] = "64M";

/// The peer copies in the helper's JSON Lines output (`result.out`), whatever became of the helper:
/// a pair that started and never reported is a failed copy (failed_step "deadline" when the helper
/// was killed at its deadline, "crash" when it died of a signal, "helper" otherwise). `devices`
/// gives the bus ids of such a pair. An "error" event (cuInit failed...) or a helper that produced
/// no line at all is an error.
Probed<std::vector<PeerCopy>> parse_peer_copies(const ContainedResult& result, const std::vector<CudaDevice>& devices,
                                                const std::string& source);

}  // namespace preflight
