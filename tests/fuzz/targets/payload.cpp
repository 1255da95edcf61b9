// SPDX-License-Identifier: MIT
// The rank payload that every rank sends rank 0 (transport/payload): decode_payload, which must reject
// anything malformed with an error and never throw. A payload it accepts claims the sending rank,
// and re-encodes to bytes that decode and re-encode to the same bytes.
// The first input byte picks the framing: raw bytes as they arrived (even), or the rest as the CBOR
// body behind a correct header (odd), so the fuzzer reaches the body's decoder.
// With PREFLIGHT_FUZZ_WRITE_SEED=FILE set, the target writes a healthy rank's payload body to FILE
// and exits (how corpus/payload/ was made).
#include <fstream>

#include "fuzz_common.hpp"
#include "gpu_facts_fixture.hpp"
#include "transport/payload.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("PREFLIGHT_FUZZ_WRITE_SEED")) {
    RankPayload p;
    p.rank = 3;
    p.facts = gpu_fixture::healthy(2);
    p.facts.placement.rank = 3;
    CheckResult r;
    r.id = "shm.capacity";
    r.verdict = Verdict::pass("64 GiB free");
    p.results.push_back(r);
    p.incidents.push_back("probe 'topology' did not finish within 5.0 s");
    const std::string bytes = encode_payload(p);
    std::ofstream(out, std::ios::binary) << '\x01' << bytes.substr(kPayloadHeaderBytes);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest = fuzz::text(data + 1, size - 1);
  std::string bytes;
  if (data[0] % 2 == 1) {
    bytes = "PFLT";
    bytes.push_back(static_cast<char>(kPayloadVersion));
    const auto n = static_cast<std::uint32_t>(rest.size());
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xffu));
  }
  bytes.append(rest);
  const int from_rank = 3;
  const DecodedPayload d = decode_payload(bytes, from_rank);
  FUZZ_CHECK(d.payload.has_value() == d.error.empty());
  if (!d.payload) return 0;
  FUZZ_CHECK(d.payload->rank == from_rank);
  const std::string again = encode_payload(*d.payload);
  const DecodedPayload d2 = decode_payload(again, from_rank);
  FUZZ_CHECK(d2.payload.has_value());
  FUZZ_CHECK(encode_payload(*d2.payload) == again);
  return 0;
}
