// SPDX-License-Identifier: MIT
// PCI configuration space as sysfs returns it (/sys/bus/pci/devices/<bdf>/config): the ACS
// capability of a bridge, found by walking the extended capability list from offset 0x100
// (Linux include/uapi/linux/pci_regs.h). Pure: bytes in, AcsState out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/facts/pcie.hpp"

namespace preflight {

/// ACS Capability / Control register bits (the same positions in both registers).
enum AcsBits : std::uint16_t {
  kAcsSourceValidation = 0x01,     // SV
  kAcsTranslationBlocking = 0x02,  // TB
  kAcsRequestRedirect = 0x04,      // RR
  kAcsCompletionRedirect = 0x08,   // CR
  kAcsUpstreamForwarding = 0x10,   // UF
  kAcsEgressControl = 0x20,        // EC
  kAcsDirectTranslated = 0x40,     // DT
};

constexpr std::uint16_t kPciExtCapIdAcs = 0x0d;
constexpr std::size_t kPciConfigSize = 256;    // conventional PCI: no extended capabilities
constexpr std::size_t kPcieConfigSize = 4096;  // PCI Express

/// Parses one device's config space (what was read, up to 4096 bytes):
///   < 256 bytes                         "restricted" (sysfs returns 64 bytes without CAP_SYS_ADMIN)
///   exactly 256 bytes, or the header at 0x100 is 0 / 0xffffffff      "no_acs"
///   an ACS capability (ID 0x0d) on the list                          "read" with cap (+4), ctrl (+6)
///   the list ends without one                                        "no_acs"
///   a pointer below 0x100 or past the end, a loop, or a capability cut off by the end
///                                                                    "unreadable" with the detail
AcsState parse_acs_config(std::string_view config, std::string bus_id);

/// The ACS Control bits as lspci -vvv prints them ("ACSCtl:"):
/// "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-".
std::string acs_ctrl_text(std::uint16_t ctrl);

/// Only the bits that are set, in lspci's words: "ReqRedir+ CmpltRedir+"; "" when none.
std::string acs_set_bits_text(std::uint16_t ctrl);

/// True when P2P Request Redirect or P2P Completion Redirect is set.
inline bool acs_redirects(std::uint16_t ctrl) { return (ctrl & (kAcsRequestRedirect | kAcsCompletionRedirect)) != 0; }

}  // namespace preflight
