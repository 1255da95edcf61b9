// SPDX-License-Identifier: MIT
// Version strings (driver, CUDA, NCCL versions as the libraries and files print them):
// Version::parse, truncated, the comparison; from_cuda_api and from_nccl_code on the input's bytes.
// A parsed version prints exactly as its text and re-parses to an equal version.
#include <cstring>

#include "core/version.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [a_text, b_text] = fuzz::first_line(in);
  const std::optional<Version> a = Version::parse(a_text);
  if (a) {
    FUZZ_CHECK(a->str() == a_text);  // printed exactly as parsed
    FUZZ_CHECK(a->size() >= 1 && a->size() <= Version::kMaxComponents);
    const std::optional<Version> again = Version::parse(a->str());
    FUZZ_CHECK(again && *again == *a && again->str() == a->str());
    for (std::size_t n = 1; n <= Version::kMaxComponents; ++n) {
      const Version t = a->truncated(n);
      FUZZ_CHECK(t.size() == std::min(n, a->size()));
      const std::optional<Version> tp = Version::parse(t.str());
      FUZZ_CHECK(tp && *tp == t);
      for (std::size_t i = 0; i < t.size(); ++i) FUZZ_CHECK(t[i] == (*a)[i]);
    }
  }
  if (const std::optional<Version> b = Version::parse(b_text); a && b) {
    const auto ab = *a <=> *b;
    const auto ba = *b <=> *a;
    FUZZ_CHECK((ab < 0) == (ba > 0) && (ab == 0) == (ba == 0));
  }
  std::int64_t code = 0;
  std::memcpy(&code, data, std::min(size, sizeof code));
  for (std::int64_t c : {code, code % 1000000, static_cast<std::int64_t>(static_cast<std::int32_t>(code))}) {
    if (const auto v = Version::from_cuda_api(c)) FUZZ_CHECK(Version::parse(v->str()).has_value());
    if (const auto v = Version::from_nccl_code(c)) FUZZ_CHECK(Version::parse(v->str()).has_value());
  }
  return 0;
}
