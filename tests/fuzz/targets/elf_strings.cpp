// SPDX-License-Identifier: MIT
// The NCCL_* names of a shared library's read-only data (libnccl.so.2 and its plugins, read for
// env.nccl): env_names_in over any bytes, and elf_rodata_env_names through the same reader callback
// the probe uses. Every name is the prefix and [A-Z0-9_]+, sorted and unique, from inside the input.
#include <algorithm>

#include "core/elf_strings.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

namespace {

void check_names(const std::vector<std::string>& names, std::size_t size) {
  FUZZ_CHECK(std::is_sorted(names.begin(), names.end()));
  FUZZ_CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  for (const std::string& n : names) {
    FUZZ_CHECK(n.size() <= size && n.size() > 5 && n.starts_with("NCCL_"));
    FUZZ_CHECK(std::all_of(n.begin() + 5, n.end(),
                           [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_names(env_names_in(bytes, "NCCL_"), size);
  const ElfReader read = [bytes](std::uint64_t offset, std::size_t n) -> std::optional<std::string> {
    if (offset >= bytes.size()) return std::nullopt;
    return std::string(bytes.substr(static_cast<std::size_t>(offset), n));
  };
  const Probed<std::vector<std::string>> names = elf_rodata_env_names(read, "NCCL_", 1 << 16);
  if (const std::vector<std::string>* v = names.value()) {
    check_names(*v, size);
  } else {
    FUZZ_CHECK(!names.why().empty());
  }
  return 0;
}
