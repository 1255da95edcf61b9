// SPDX-License-Identifier: MIT
// The dynamic section of a shared library (torch/lib/libtorch_cuda.so, read to resolve the
// libcudart and libnccl it needs): parse_elf_dynamic over any bytes, through the same reader
// callback the probe uses. Every accepted string comes from inside the input.
#include "core/elf_dynamic.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const Probed<ElfDynamic> e = parse_elf_dynamic(bytes);
  if (const ElfDynamic* d = e.value()) {
    // Several entries may name one string; each is a string of the input.
    FUZZ_CHECK(d->soname.size() <= size);
    for (const std::string& s : d->needed) FUZZ_CHECK(s.size() <= size && s.find('\0') == std::string::npos);
    for (const std::string& s : d->rpath) FUZZ_CHECK(s.size() <= size);
    for (const std::string& s : d->runpath) FUZZ_CHECK(s.size() <= size);
    const auto order = loader_search_order(*d, "/site/torch/lib", "libx.so", {"/ld"}, {"/conf"}, {"/usr/lib"});
    for (const LoaderDir& l : order) FUZZ_CHECK(!l.dir.empty() && l.dir.front() == '/');
  } else {
    FUZZ_CHECK(!e.why().empty());
  }
  return 0;
}
