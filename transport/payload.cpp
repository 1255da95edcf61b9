// SPDX-License-Identifier: MIT
#include "transport/payload.hpp"

#include <exception>

#include "core/json_util.hpp"

namespace preflight {
namespace {
constexpr char kMagic[4] = {'P', 'F', 'L', 'T'};
}  // namespace

std::string encode_payload(const RankPayload& payload) {
  nlohmann::json doc = {{"v", kPayloadVersion},
                        {"rank", payload.rank},
                        {"facts", payload.facts},
                        {"results", payload.results},
                        {"incidents", payload.incidents}};
  const std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(doc);
  std::string out(kMagic, sizeof kMagic);
  out.push_back(static_cast<char>(kPayloadVersion));
  const auto n = static_cast<std::uint32_t>(cbor.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xffu));
  out.append(cbor.begin(), cbor.end());
  return out;
}

DecodedPayload decode_payload(std::string_view bytes, int from_rank, std::size_t max_bytes) {
  DecodedPayload out;
  const auto fail = [&](std::string why) {
    out.error =
        "payload from rank " + std::to_string(from_rank) + " (" + std::to_string(bytes.size()) + " bytes) " + why;
    return out;
  };
  if (bytes.size() > max_bytes) return fail("exceeds the limit of " + std::to_string(max_bytes) + " bytes");
  if (bytes.size() < kPayloadHeaderBytes) return fail("is shorter than its header");
  if (bytes.substr(0, 4) != std::string_view(kMagic, 4)) return fail("does not start with the preflight magic");
  const auto version = static_cast<std::uint8_t>(bytes[4]);
  if (version != kPayloadVersion) {
    return fail("has format version " + std::to_string(version) + ", this preflight reads version " +
                std::to_string(kPayloadVersion) + " (mixed preflight versions in one job?)");
  }
  std::uint32_t length = 0;
  for (int i = 0; i < 4; ++i) length |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[5 + i])) << (8 * i);
  if (length != bytes.size() - kPayloadHeaderBytes) {
    return fail("has a header length of " + std::to_string(length) + " bytes but carries " +
                std::to_string(bytes.size() - kPayloadHeaderBytes));
  }
  try {
    const nlohmann::json doc = nlohmann::json::from_cbor(bytes.substr(kPayloadHeaderBytes));
    if (!doc.is_object()) return fail("is not a CBOR map");
    if (doc.at("v").get<int>() != kPayloadVersion) return fail("has a body version other than its header's");
    RankPayload p;
    p.rank = doc.at("rank").get<int>();
    if (p.rank != from_rank) return fail("claims to come from rank " + std::to_string(p.rank));
    if (const std::optional<std::string> bad = float_out_of_range(doc.at("facts"))) {
      return fail("has a number out of range in its facts at " + bad->substr(0, 120));
    }
    p.facts = doc.at("facts").get<RankFacts>();
    p.results = doc.at("results").get<std::vector<CheckResult>>();
    p.incidents = doc.at("incidents").get<std::vector<std::string>>();
    for (const CheckResult& r : p.results) {
      if (find_check(r.id) == nullptr) return fail("has a result for an unknown check '" + r.id.substr(0, 60) + "'");
    }
    out.payload = std::move(p);
  } catch (const std::exception& e) {
    return fail(std::string("is malformed: ") + e.what());
  }
  return out;
}

}  // namespace preflight
