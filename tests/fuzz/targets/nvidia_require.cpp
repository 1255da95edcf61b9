// SPDX-License-Identifier: MIT
// NVIDIA_REQUIRE_CUDA (and the other NVIDIA_REQUIRE_* variables): evaluate_nvidia_require, with
// every host property known, some unknown, and none.
#include "core/nvidia_require.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const std::optional<Version> driver = Version::parse("535.104.05");
  const std::optional<Version> cuda = Version::parse("12.2");
  const std::optional<Version> arch = Version::parse("9.0");
  const RequireResult all = evaluate_nvidia_require(in, driver, cuda, "tesla", arch);
  FUZZ_CHECK(!all.detail.empty());
  // With every property supplied nothing is unknown.
  FUZZ_CHECK(all.status != RequireStatus::Unknown);
  const RequireResult none = evaluate_nvidia_require(in, std::nullopt, std::nullopt, "", std::nullopt);
  FUZZ_CHECK(!none.detail.empty());
  // Malformed does not depend on what is known of the host.
  FUZZ_CHECK((all.status == RequireStatus::Malformed) == (none.status == RequireStatus::Malformed));
  // Three-valued logic: knowing less can turn a result into Unknown, never flip it.
  if (none.status == RequireStatus::Satisfied) FUZZ_CHECK(all.status == RequireStatus::Satisfied);
  if (none.status == RequireStatus::NotSatisfied) FUZZ_CHECK(all.status == RequireStatus::NotSatisfied);
  (void)evaluate_nvidia_require(in, driver, std::nullopt, "geforce");
  return 0;
}
