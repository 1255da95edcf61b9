// SPDX-License-Identifier: MIT
// The two exchanges between the ranks of one host that come before and during the probes: every
// rank's CUDA_VISIBLE_DEVICES to the other ranks of its host (through rank 0, which adds its
// liveness watch's offer), and the node's facts from the host's leader (local rank 0) to the host's
// other ranks. Like job/phases.hpp, each runs over the Transport it is given and returns what
// happened; giving up and reporting are the run's (job/job_run.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/facts.hpp"
#include "transport/transport.hpp"

namespace preflight {

/// The CUDA_VISIBLE_DEVICES of every rank of a host, in local rank order (nullopt entries: unset).
using NodeVisibleDevices = std::vector<std::optional<std::string>>;

/// A rank's record for the exchange: its host, local rank and CUDA_VISIBLE_DEVICES, padded to one
/// size for the gather. A value too long to exchange is marked so, and no host's union is formed.
inline constexpr std::size_t kVisibleDevicesRecordBytes = 2048;
std::string visible_devices_record(const std::string& host, int local_rank, const std::optional<std::string>& cvd);

/// Rank 0: the table every rank receives, from every rank's record: {"hosts": {host: [values in local
/// rank order]}} (null when a record was unusable) and {"watch": offer} when rank 0 watches the ranks.
std::string visible_devices_table(const std::vector<std::string>& records, const nlohmann::json& watch_offer);

/// This host's values from the table: nullopt when the table holds none for `host` or not exactly
/// `local_size` of them (the peer copies then see local rank 0's GPUs only).
std::optional<NodeVisibleDevices> visible_devices_of(const nlohmann::json& table, const std::string& host,
                                                     int local_size);

struct VisibleDevicesOutcome {
  bool completed = false;                  // the table reached this rank before the deadline
  std::optional<NodeVisibleDevices> node;  // this host's values (visible_devices_of)
  nlohmann::json watch;                    // other ranks: rank 0's liveness offer, null when none
};

/// The exchange (a collective on the world: every rank takes part, whatever its host's rank
/// count). `watch_offer` is rank 0's (null when it watches nothing); `deadline` bounds the gather and
/// the broadcast of the table.
VisibleDevicesOutcome exchange_visible_devices(Transport& transport, const std::string& host,
                                               const std::optional<std::string>& cvd, const nlohmann::json& watch_offer,
                                               TimePoint deadline);

/// A host's leader: its node facts to the host's other ranks. The incident to record when they did
/// not arrive by `deadline` (the others then probe them themselves), else "".
std::string send_node_facts(Transport& transport, const RankFacts& facts, TimePoint deadline);

/// Another rank of a host: the leader's node facts, or null with the incident saying why (none by
/// `deadline`, or what arrived does not parse): this rank then probes everything itself.
struct NodeFactsOutcome {
  std::shared_ptr<const RankFacts> facts;
  std::string incident;
};
NodeFactsOutcome receive_node_facts(Transport& transport, TimePoint deadline);

}  // namespace preflight
