// SPDX-License-Identifier: MIT
#include "core/pci_config.hpp"

#include <array>
#include <cstdio>
#include <set>
#include <utility>

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

/// Where the extended capability `id` starts: state "found" (offset), "absent", "restricted" (shorter
/// than 256 bytes) or "unreadable" (the detail).
struct ExtCapWalk {
  std::string state;
  std::size_t offset = 0;
  std::string detail;
};

ExtCapWalk unreadable(std::string detail) { return {"unreadable", 0, std::move(detail)}; }

ExtCapWalk find_ext_cap(std::string_view config, std::uint16_t id) {
  if (config.size() < kPciConfigSize) return {"restricted", 0, {}};
  if (config.size() < kPciConfigSize + 4) return {"absent", 0, {}};  // conventional PCI: no extended capabilities
  const std::uint32_t first = le32(config, kPciConfigSize);
  if (first == 0 || first == 0xffffffffu) return {"absent", 0, {}};
  // At most one capability per dword of the extended space: more steps than that is a loop.
  constexpr std::size_t kMaxSteps = (kPcieConfigSize - kPciConfigSize) / 4;
  std::set<std::size_t> seen;
  std::size_t offset = kPciConfigSize;
  for (std::size_t step = 0; step < kMaxSteps; ++step) {
    if (offset + 4 > config.size()) {
      return unreadable("extended capability pointer " + hex(offset) + " is past the " + std::to_string(config.size()) +
                        " bytes read");
    }
    if (!seen.insert(offset).second) return unreadable("the extended capability list loops back to " + hex(offset));
    const std::uint32_t header = le32(config, offset);
    if (header == 0xffffffffu) {
      return unreadable("extended capability header at " + hex(offset) + " reads 0xffffffff (device gone or garbage)");
    }
    if ((header & 0xffffu) == id) return {"found", offset, {}};
    const std::size_t next = (header >> 20) & 0xffcu;  // PCI_EXT_CAP_NEXT: dword aligned
    if (next == 0) return {"absent", 0, {}};
    if (next < kPciConfigSize) {
      return unreadable("extended capability at " + hex(offset) + " points to " + hex(next) + " (below 0x100)");
    }
    offset = next;
  }
  return unreadable("the extended capability list has more than " + std::to_string(kMaxSteps) + " entries");
}

}  // namespace

AcsState parse_acs_config(std::string_view config, std::string bus_id) {
  AcsState s;
  s.bus_id = std::move(bus_id);
  s.config_bytes = static_cast<int>(config.size());
  const ExtCapWalk w = find_ext_cap(config, kPciExtCapIdAcs);
  if (w.state == "restricted" || w.state == "unreadable") {
    s.state = w.state;
    s.detail = w.detail;
    return s;
  }
  if (w.state == "absent") {
    s.state = "no_acs";
    return s;
  }
  if (w.offset + 8 > config.size()) {
    s.state = "unreadable";
    s.detail = "the ACS capability at " + hex(w.offset) + " is cut off by the end of the config space";
    return s;
  }
  s.state = "read";
  s.cap = le16(config, w.offset + 4);
  s.ctrl = le16(config, w.offset + 6);
  return s;
}

std::optional<bool> has_ext_cap(std::string_view config, std::uint16_t id) {
  const ExtCapWalk w = find_ext_cap(config, id);
  if (w.state == "found") return true;
  if (w.state == "absent") return false;
  return std::nullopt;
}

std::optional<AcsMask> parse_acs_mask(std::string_view text) {
  if (text.size() != 7) return std::nullopt;
  AcsMask m;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto bit = static_cast<std::uint16_t>(1u << (text.size() - 1 - i));  // bit 6 first
    if (text[i] == '1') {
      m.set = static_cast<std::uint16_t>(m.set | bit);
    } else if (text[i] == '0') {
      m.clear = static_cast<std::uint16_t>(m.clear | bit);
    } else if (text[i] != 'x') {
      return std::nullopt;
    }
  }
  return m;
}

std::string acs_bits_text(std::uint16_t ctrl, std::uint16_t bits) {
  std::string out;
  for (const AcsBitName& b : kBitNames) {
    if ((bits & b.bit) == 0) continue;
    if (!out.empty()) out += ' ';
    out += b.name;
    out += (ctrl & b.bit) != 0 ? '+' : '-';
  }
  return out;
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
