// SPDX-License-Identifier: MIT
// PCI configuration space (/sys/bus/pci/devices/<bdf>/config): parse_acs_config and has_ext_cap
// walking the extended capability list, acs_ctrl_text and acs_set_bits_text, rdma_topo's ACS masks.
// The state is one of the documented four; a short read is "restricted".
#include "core/pci_config.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  const AcsState s = parse_acs_config(in, "0000:00:01.0");
  FUZZ_CHECK(s.state == "restricted" || s.state == "no_acs" || s.state == "read" || s.state == "unreadable");
  if (size < kPciConfigSize) FUZZ_CHECK(s.state == "restricted");
  FUZZ_CHECK(s.bus_id == "0000:00:01.0");
  (void)acs_ctrl_text(s.ctrl);
  (void)acs_set_bits_text(s.ctrl);
  // has_ext_cap walks the same list: it finds ACS where the parser read it, and not where it found none.
  if (s.state == "read") FUZZ_CHECK(has_ext_cap(in, kPciExtCapIdAcs) == true);
  if (s.state == "no_acs") FUZZ_CHECK(has_ext_cap(in, kPciExtCapIdAcs) == false);
  (void)has_ext_cap(in, kPciExtCapIdAts);
  if (const auto m = parse_acs_mask(in.substr(0, 7))) {
    FUZZ_CHECK((m->set & m->clear) == 0);
    FUZZ_CHECK(acs_matches(acs_apply(s.ctrl, *m), *m));
  }
  // Only the first 4096 bytes are config space.
  if (size > kPcieConfigSize) (void)parse_acs_config(in.substr(0, kPcieConfigSize), "b");
  return 0;
}
