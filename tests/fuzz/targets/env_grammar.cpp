// SPDX-License-Identifier: MIT
// The value grammars of NCCL, PyTorch and CUDA variables (core/env_grammar): parse_grammar and
// read_value, nccl_int_value, is_clean_int, boolean_word_intent, torch_bool_value, torch_int_value.
// Input: the first line is a grammar ("int:0..1", "enum:A|B", ...), the rest a value; the value is
// also read with a fixed set of the catalog's grammars.
#include <climits>

#include "core/env_grammar.hpp"
#include "core/text.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

namespace {

const std::vector<Grammar>& fixed_grammars() {
  static const std::vector<Grammar> grammars = [] {
    std::vector<Grammar> out;
    for (const char* type : {"int", "int:0..1", "int:-1..1048576", "torch_bool", "torch_int", "torch_int:0..3600",
                             "enum:INFO|WARN|TRACE|VERSION", "ienum:0|1|2|LOC|PIX|PXB|PHB|SYS",
                             "list:INIT|COLL|P2P|NET|ALL", "string", "path"}) {
      for (bool raises : {false, true}) {
        if (auto g = parse_grammar(type, raises)) out.push_back(*g);
      }
    }
    return out;
  }();
  return grammars;
}

void read_all(std::string_view value) {
  const std::optional<std::int64_t> n = nccl_int_value(value);
  const bool has_nul = value.find('\0') != std::string_view::npos;
  if (!has_nul && is_clean_int(value)) {
    // A clean decimal integer reads the same through strtoll and the strict parser.
    if (const auto strict = parse_int(value)) FUZZ_CHECK(n && *n == *strict);
  }
  (void)boolean_word_intent(value);
  if (const auto b = torch_bool_value(value); b && value.size() == 1 && (value[0] == '1' || value[0] == '0')) {
    FUZZ_CHECK(*b == (value[0] == '1'));
  }
  const std::optional<int> ti = torch_int_value(value);
  if (!has_nul) {
    if (const auto strict = parse_int(value); strict && *strict >= INT_MIN && *strict <= INT_MAX) {
      FUZZ_CHECK(ti && *ti == *strict);
    }
  }
  for (const Grammar& g : fixed_grammars()) (void)read_value(g, value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [type, value] = fuzz::first_line(in);
  for (bool raises : {false, true}) {
    if (const std::optional<Grammar> g = parse_grammar(type, raises)) {
      (void)read_value(*g, value);
    }
  }
  read_all(value);
  return 0;
}
