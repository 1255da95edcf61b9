// SPDX-License-Identifier: MIT
// Names and link targets read from sysfs and NVML: parse_pci_device_path (the resolved
// /sys/bus/pci/devices/<bdf> link), is_pci_bdf, is_pci_host_bridge, normalize_bus_id, parse_ip
// (addresses in NCCL_COMM_ID and /etc/hosts), same_ip, is_loopback_ip.
#include "sys/sysfs_pci.hpp"
#include "core/nccl_socket.hpp"
#include "core/pci_topology.hpp"
#include "fuzz_common.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::text(data, size);
  if (const auto chain = parse_pci_device_path(in)) {
    FUZZ_CHECK(is_pci_host_bridge(chain->root));
    FUZZ_CHECK(!chain->chain.empty());
    for (const std::string& bdf : chain->chain) FUZZ_CHECK(is_pci_bdf(bdf));
  }
  (void)normalize_bus_id(in);
  if (const auto ip = parse_ip(in)) FUZZ_CHECK(same_ip(in, in));
  (void)is_loopback_ip(in);
  return 0;
}
