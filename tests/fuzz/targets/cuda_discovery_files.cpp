// SPDX-License-Identifier: MIT
// The other files and names that tell which CUDA runtime a job loads (core/cuda_discovery):
// parse_dist_info_name, normalize_project_name, metadata_field, requires_dist_pins (a wheel's
// METADATA), soname_version, parse_ld_so_conf (/etc/ld.so.conf), split_library_path
// (LD_LIBRARY_PATH), python_version_from_name.
#include "core/cuda_discovery.hpp"
#include "core/version.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const auto [first, rest] = fuzz::first_line(in);

  if (const auto d = parse_dist_info_name(first)) FUZZ_CHECK(normalize_project_name(d->project) == d->project);
  const std::string norm = normalize_project_name(in);
  FUZZ_CHECK(normalize_project_name(norm) == norm);  // normalising is idempotent (PEP 503)
  (void)metadata_field(in, "Version");
  (void)metadata_field(rest, first);
  (void)requires_dist_pins(in, "nvidia-");
  (void)requires_dist_pins(rest, first);
  for (std::string_view stem : {std::string_view("libcudart.so"), std::string_view("libnccl.so"), first}) {
    if (const auto v = soname_version(rest, stem)) FUZZ_CHECK(Version::parse(*v).has_value());
    if (const auto v = soname_version(first, stem)) FUZZ_CHECK(Version::parse(*v).has_value());
  }
  (void)parse_ld_so_conf(in);
  for (const std::string& dir : split_library_path(in)) FUZZ_CHECK(!dir.empty());
  (void)python_version_from_name(first);
  return 0;
}
