// SPDX-License-Identifier: MIT
// PCI configuration space as sysfs returns it (/sys/bus/pci/devices/<bdf>/config): the ACS
// capability of a bridge, found by walking the extended capability list from offset 0x100
// (Linux include/uapi/linux/pci_regs.h), whether a function has another extended capability (ATS),
// and the ACS Control masks of rdma-core's kernel-boot/rdma_topo. Pure: bytes in, values out.
#pragma once

#include <cstdint>
#include <optional>
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
constexpr std::uint16_t kPciExtCapIdAts = 0x0f;  // Address Translation Services
constexpr std::size_t kPciConfigSize = 256;      // conventional PCI: no extended capabilities
constexpr std::size_t kPcieConfigSize = 4096;    // PCI Express

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

/// Whether the extended capability `id` is on the list of this config space: nullopt when that
/// cannot be told (shorter than 256 bytes, or a list parse_acs_config calls "unreadable").
std::optional<bool> has_ext_cap(std::string_view config, std::uint16_t id);

/// The ACS Control bits of `bits` only, in lspci's words: "SrcValid+ ReqRedir- CmpltRedir+".
std::string acs_bits_text(std::uint16_t ctrl, std::uint16_t bits);

/// An ACS Control expectation as rdma-core's kernel-boot/rdma_topo writes it (commit
/// 691953d8d502f54088f776c5ba2aeed0a5ac945d): seven characters for bits 6..0 (DT EC UF CR RR TB SV),
/// '1' must be set, '0' must be clear, 'x' either.
struct AcsMask {
  std::uint16_t set = 0;
  std::uint16_t clear = 0;
};

/// "xx101x1" -> {set: UF RR SV, clear: CR}; nullopt for anything but seven of '0', '1', 'x'.
std::optional<AcsMask> parse_acs_mask(std::string_view text);

/// True when every bit the mask names is as it says (rdma_topo's check compares only those).
inline bool acs_matches(std::uint16_t ctrl, AcsMask m) { return (ctrl & m.set) == m.set && (ctrl & m.clear) == 0; }

/// The control value with the mask's bits applied and the others kept (rdma_topo's combine_acs).
inline std::uint16_t acs_apply(std::uint16_t ctrl, AcsMask m) {
  return static_cast<std::uint16_t>((ctrl | m.set) & ~m.clear);
}

/// The bits a mask names, in lspci's words: "SrcValid+ ReqRedir+ CmpltRedir- UpstreamFwd+".
inline std::string acs_mask_text(AcsMask m) {
  return acs_bits_text(m.set, static_cast<std::uint16_t>(m.set | m.clear));
}

/// True when P2P Request Redirect or P2P Completion Redirect is set.
inline bool acs_redirects(std::uint16_t ctrl) { return (ctrl & (kAcsRequestRedirect | kAcsCompletionRedirect)) != 0; }

}  // namespace preflight
