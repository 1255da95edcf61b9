// SPDX-License-Identifier: MIT
// What each rank sends rank 0 after its probes: its facts and the verdicts of its rank- and
// node-scope checks, in a compact, versioned, size-bounded encoding that rank 0 validates. A
// payload that is malformed, oversized or claims another rank is an error naming the rank, never a
// crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/facts.hpp"
#include "report/report.hpp"

namespace preflight {

struct RankPayload {
  int rank = 0;
  RankFacts facts;
  std::vector<CheckResult> results;    // this rank's rank- and node-scope verdicts
  std::vector<std::string> incidents;  // deadlines that expired on this rank ("probe 'topology' did not finish ...")
};

/// Encoding: the magic "PFLT", a format version byte, a 32-bit little-endian length, then the
/// payload as CBOR ({"v":1,"rank":R,"facts":{...},"results":[...]}).
inline constexpr std::uint8_t kPayloadVersion = 1;
inline constexpr std::size_t kPayloadHeaderBytes = 9;
inline constexpr std::size_t kMaxPayloadBytes = 16u << 20;

std::string encode_payload(const RankPayload& payload);

struct DecodedPayload {
  std::optional<RankPayload> payload;
  std::string error;  // set when payload is empty: "payload of 12 bytes is truncated (header says 4096)"
};

/// Validates and decodes what rank `from_rank` sent. Never throws.
DecodedPayload decode_payload(std::string_view bytes, int from_rank, std::size_t max_bytes = kMaxPayloadBytes);

}  // namespace preflight
