// SPDX-License-Identifier: MIT
#include "core/pci_config.hpp"

#include <array>
#include <cstdio>
#include <set>

namespace preflight {
namespace {

std::uint32_t le32(std::string_view b, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24;
}

std::uint16_t le16(std::string_view b, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(b[at]) | static_cast<unsigned char>(b[at + 1]) << 8);
}

std::string hex(std::size_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%03zx", v);
  return buf;
}

struct AcsBitName {
  std::uint16_t bit;
  const char* name;
};
constexpr std::array<AcsBitName, 7> kBitNames = {{
    {kAcsSourceValidation, "SrcValid"},
    {kAcsTranslationBlocking, "TransBlk"},
    {kAcsRequestRedirect, "ReqRedir"},
    {kAcsCompletionRedirect, "CmpltRedir"},
    {kAcsUpstreamForwarding, "UpstreamFwd"},
    {kAcsEgressControl, "EgressCtrl"},
    {kAcsDirectTranslated, "DirectTrans"},
}};

}  // namespace

AcsState parse_acs_config(std::string_view config, std::string bus_id) {
  AcsState s;
  s.bus_id = std::move(bus_id);
  s.config_bytes = static_cast<int>(config.size());
  if (config.size() < kPciConfigSize) {
    s.state = "restricted";
    return s;
  }
  if (config.size() < kPciConfigSize + 4) {  // conventional PCI: 256 bytes, no extended capabilities
    s.state = "no_acs";
    return s;
  }
  const std::uint32_t first = le32(config, kPciConfigSize);
  if (first == 0 || first == 0xffffffffu) {
    s.state = "no_acs";
    return s;
  }
  // At most one capability per dword of the extended space: more steps than that is a loop.
  constexpr std::size_t kMaxSteps = (kPcieConfigSize - kPciConfigSize) / 4;
  std::set<std::size_t> seen;
  std::size_t offset = kPciConfigSize;
  for (std::size_t step = 0; step < kMaxSteps; ++step) {
    if (offset + 4 > config.size()) {
      s.state = "unreadable";
      s.detail = "extended capability pointer " + hex(offset) + " is past the " + std::to_string(config.size()) +
                 " bytes read";
      return s;
    }
    if (!seen.insert(offset).second) {
      s.state = "unreadable";
      s.detail = "the extended capability list loops back to " + hex(offset);
      return s;
    }
    const std::uint32_t header = le32(config, offset);
    if (header == 0xffffffffu) {
      s.state = "unreadable";
      s.detail = "extended capability header at " + hex(offset) + " reads 0xffffffff (device gone or garbage)";
      return s;
    }
    const std::uint16_t id = static_cast<std::uint16_t>(header & 0xffffu);
    if (id == kPciExtCapIdAcs) {
      if (offset + 8 > config.size()) {
        s.state = "unreadable";
        s.detail = "the ACS capability at " + hex(offset) + " is cut off by the end of the config space";
        return s;
      }
      s.state = "read";
      s.cap = le16(config, offset + 4);
      s.ctrl = le16(config, offset + 6);
      return s;
    }
    const std::size_t next = (header >> 20) & 0xffcu;  // PCI_EXT_CAP_NEXT: dword aligned
    if (next == 0) {
      s.state = "no_acs";
      return s;
    }
    if (next < kPciConfigSize) {
      s.state = "unreadable";
      s.detail = "extended capability at " + hex(offset) + " points to " + hex(next) + " (below 0x100)";
      return s;
    }
    offset = next;
  }
  s.state = "unreadable";
  s.detail = "the extended capability list has more than " + std::to_string(kMaxSteps) + " entries";
  return s;
}

std::string acs_ctrl_text(std::uint16_t ctrl) {
  std::string out;
  for (const AcsBitName& b : kBitNames) {
    if (!out.empty()) out += ' ';
    out += b.name;
    out += (ctrl & b.bit) != 0 ? '+' : '-';
  }
  return out;
}

std::string acs_set_bits_text(std::uint16_t ctrl) {
  std::string out;
  for (const AcsBitName& b : kBitNames) {
    if ((ctrl & b.bit) == 0) continue;
    if (!out.empty()) out += ' ';
    out += b.name;
    out += '+';
  }
  return out;
}

}  // namespace preflight
