// SPDX-License-Identifier: MIT
// The small value parsers shared by every file and option reader (core/text): parse_int,
// parse_uint, parse_size, trim, split_ws, glob_match (--only/--skip patterns), edit_distance and
// printable (how bad input reaches a message). Integers print back to what re-parses equal;
// printable() never lets a control character through.
#include "core/text.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [first, rest] = fuzz::first_line(in);
  if (const auto v = parse_int(in)) FUZZ_CHECK(parse_int(std::to_string(*v)) == v);
  if (const auto v = parse_uint(in)) FUZZ_CHECK(parse_uint(std::to_string(*v)) == v);
  if (const auto v = parse_size(in)) (void)format_bytes(*v);
  const std::string_view t = trim(in);
  FUZZ_CHECK(trim(t) == t);
  for (std::string_view f : split_ws(in)) FUZZ_CHECK(!f.empty());
  (void)glob_match(first.substr(0, 64), rest.substr(0, 256));
  (void)edit_distance(first.substr(0, 64), rest.substr(0, 64));
  for (std::size_t max_len : {std::size_t{120}, std::size_t{8}, std::size_t{1}}) {
    const std::string p = printable(in, max_len);
    for (unsigned char c : p) FUZZ_CHECK(c >= 0x20 && c != 0x7f);
  }
  return 0;
}
