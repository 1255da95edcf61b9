// SPDX-License-Identifier: MIT
// The config-space parser on hand-built blobs: ACS with redirect, clean ACS, no ACS, a 64-byte
// (unprivileged) read, and broken capability lists (loops, pointers below 0x100, truncation).
#include "core/pci_config.hpp"

#include <gtest/gtest.h>

#include "sys/sysfs_pci.hpp"

namespace preflight {
namespace core_pci_config_test {
namespace {

void put32(std::string& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::uint32_t header(std::uint16_t id, std::uint32_t next) { return id | (1u << 16) | (next << 20); }

/// AER at 0x100 -> (vendor-specific 0x0b at 0x140 ->) ACS at 0x1a0 with the given control.
std::string blob_with_acs(std::uint16_t ctrl) {
  std::string b(4096, '\0');
  put32(b, 0, 0x1af08086u);
  put32(b, 0x100, header(0x0001, 0x140));
  put32(b, 0x140, header(0x000b, 0x1a0));
  put32(b, 0x1a0, header(kPciExtCapIdAcs, 0));
  put32(b, 0x1a4, 0x007fu | (static_cast<std::uint32_t>(ctrl) << 16));
  return b;
}

TEST(PciConfig, AcsWithRequestAndCompletionRedirect) {
  const AcsState s = parse_acs_config(blob_with_acs(0x001d), "0000:82:00.0");
  EXPECT_EQ(s.state, "read");
  EXPECT_EQ(s.bus_id, "0000:82:00.0");
  EXPECT_EQ(s.cap, 0x007f);
  EXPECT_EQ(s.ctrl, 0x001d);
  EXPECT_EQ(s.config_bytes, 4096);
  EXPECT_TRUE(acs_redirects(s.ctrl));
  EXPECT_EQ(acs_ctrl_text(s.ctrl), "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-");
  EXPECT_EQ(acs_set_bits_text(s.ctrl), "SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+");
}

TEST(PciConfig, OnlyRequestOrOnlyCompletionRedirectCounts) {
  EXPECT_TRUE(acs_redirects(parse_acs_config(blob_with_acs(kAcsRequestRedirect), "b").ctrl));
  EXPECT_TRUE(acs_redirects(parse_acs_config(blob_with_acs(kAcsCompletionRedirect), "b").ctrl));
  EXPECT_FALSE(acs_redirects(parse_acs_config(blob_with_acs(kAcsSourceValidation | kAcsUpstreamForwarding), "b").ctrl));
}

TEST(PciConfig, CleanAcs) {
  const AcsState s = parse_acs_config(blob_with_acs(0), "0000:02:00.0");
  EXPECT_EQ(s.state, "read");
  EXPECT_EQ(s.ctrl, 0);
  EXPECT_FALSE(acs_redirects(s.ctrl));
  EXPECT_EQ(acs_set_bits_text(0), "");
  EXPECT_EQ(acs_ctrl_text(0), "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-");
}

TEST(PciConfig, NoAcsCapability) {
  std::string b(4096, '\0');
  put32(b, 0x100, header(0x0001, 0x140));
  put32(b, 0x140, header(0x0019, 0));  // secondary PCIe, end
  EXPECT_EQ(parse_acs_config(b, "x").state, "no_acs");
}

TEST(PciConfig, EmptyOrAllOnesExtendedSpaceIsNoAcs) {
  const std::string zero(4096, '\0');
  EXPECT_EQ(parse_acs_config(zero, "x").state, "no_acs");
  std::string ones(4096, '\0');
  put32(ones, 0x100, 0xffffffffu);
  EXPECT_EQ(parse_acs_config(ones, "x").state, "no_acs");
  // Conventional PCI: 256 bytes, no extended space at all.
  const AcsState pci = parse_acs_config(std::string(256, '\0'), "x");
  EXPECT_EQ(pci.state, "no_acs");
  EXPECT_EQ(pci.config_bytes, 256);
}

TEST(PciConfig, SixtyFourBytesIsRestrictedNotNoAcs) {
  const AcsState s = parse_acs_config(blob_with_acs(0x001d).substr(0, 64), "0000:00:01.0");
  EXPECT_EQ(s.state, "restricted");
  EXPECT_EQ(s.config_bytes, 64);
  EXPECT_EQ(parse_acs_config("", "x").state, "restricted");
  EXPECT_EQ(parse_acs_config(std::string(255, '\0'), "x").state, "restricted");
}

TEST(PciConfig, LoopIsUnreadableAndEnds) {
  std::string b(4096, '\0');
  put32(b, 0x100, header(0x0001, 0x140));
  put32(b, 0x140, header(0x0002, 0x100));  // back to the start
  const AcsState s = parse_acs_config(b, "x");
  EXPECT_EQ(s.state, "unreadable");
  EXPECT_NE(s.detail.find("loops back to 0x100"), std::string::npos) << s.detail;

  std::string self(4096, '\0');
  put32(self, 0x100, header(0x0001, 0x100));  // points at itself
  EXPECT_EQ(parse_acs_config(self, "x").state, "unreadable");
}

TEST(PciConfig, GarbagePointers) {
  std::string below(4096, '\0');
  put32(below, 0x100, header(0x0001, 0x040));  // into the conventional header
  const AcsState s = parse_acs_config(below, "x");
  EXPECT_EQ(s.state, "unreadable");
  EXPECT_NE(s.detail.find("below 0x100"), std::string::npos) << s.detail;

  // Low two bits of the pointer are reserved and ignored (PCI_EXT_CAP_NEXT masks them).
  std::string unaligned(4096, '\0');
  put32(unaligned, 0x100, header(0x0001, 0x143));
  put32(unaligned, 0x140, header(kPciExtCapIdAcs, 0));
  put32(unaligned, 0x144, 0x00040000u);
  const AcsState u = parse_acs_config(unaligned, "x");
  EXPECT_EQ(u.state, "read");
  EXPECT_EQ(u.ctrl, kAcsRequestRedirect);

  // A pointer past a short read, and an ACS capability cut off by the end.
  std::string shortb = blob_with_acs(0x001d).substr(0, 0x150);
  const AcsState t = parse_acs_config(shortb, "x");
  EXPECT_EQ(t.state, "unreadable");
  EXPECT_NE(t.detail.find("past the 336 bytes"), std::string::npos) << t.detail;
  std::string cut = blob_with_acs(0x001d).substr(0, 0x1a6);
  EXPECT_EQ(parse_acs_config(cut, "x").state, "unreadable");

  // 0xffffffff in the middle of the list: the device answered with all ones.
  std::string gone(4096, '\0');
  put32(gone, 0x100, header(0x0001, 0x140));
  put32(gone, 0x140, 0xffffffffu);
  EXPECT_EQ(parse_acs_config(gone, "x").state, "unreadable");
}

TEST(PciConfig, OtherExtendedCapabilities) {
  // ATS (0x0f) after AER; not on the ACS blob; not known from 64 bytes or a looping list.
  std::string ats(4096, '\0');
  put32(ats, 0x100, header(0x0001, 0x150));
  put32(ats, 0x150, header(kPciExtCapIdAts, 0));
  EXPECT_EQ(has_ext_cap(ats, kPciExtCapIdAts), true);
  EXPECT_EQ(has_ext_cap(blob_with_acs(0), kPciExtCapIdAts), false);
  EXPECT_EQ(has_ext_cap(blob_with_acs(0), kPciExtCapIdAcs), true);
  EXPECT_EQ(has_ext_cap(std::string(256, '\0'), kPciExtCapIdAts), false);
  EXPECT_FALSE(has_ext_cap(ats.substr(0, 64), kPciExtCapIdAts).has_value());
  std::string loop(4096, '\0');
  put32(loop, 0x100, header(0x0001, 0x100));
  EXPECT_FALSE(has_ext_cap(loop, kPciExtCapIdAts).has_value());
}

TEST(PciConfig, RdmaTopoMasks) {
  // rdma_topo's strings: bit 6 first (DT EC UF CR RR TB SV).
  const auto gpu_dsp = parse_acs_mask("xx101x1");
  ASSERT_TRUE(gpu_dsp);
  EXPECT_EQ(gpu_dsp->set, kAcsUpstreamForwarding | kAcsRequestRedirect | kAcsSourceValidation);
  EXPECT_EQ(gpu_dsp->clear, kAcsCompletionRedirect);
  EXPECT_EQ(acs_mask_text(*gpu_dsp), "SrcValid+ ReqRedir+ CmpltRedir- UpstreamFwd+");
  EXPECT_TRUE(acs_matches(0x0015, *gpu_dsp));
  EXPECT_TRUE(acs_matches(0x0017, *gpu_dsp));  // TB is not named
  EXPECT_FALSE(acs_matches(0x001d, *gpu_dsp));
  EXPECT_FALSE(acs_matches(0x0011, *gpu_dsp));
  EXPECT_EQ(acs_apply(0x001d, *gpu_dsp), 0x0015);
  EXPECT_EQ(acs_apply(0x0002, *gpu_dsp), 0x0017);
  const auto virt_nic = parse_acs_mask("1x111x1");
  ASSERT_TRUE(virt_nic);
  EXPECT_EQ(virt_nic->set, 0x005d);
  EXPECT_EQ(virt_nic->clear, 0);
  EXPECT_EQ(parse_acs_mask("xx000x0")->clear, 0x001d);
  EXPECT_EQ(acs_bits_text(0x0004, 0x000c), "ReqRedir+ CmpltRedir-");
  EXPECT_FALSE(parse_acs_mask("xx10x1"));
  EXPECT_FALSE(parse_acs_mask("xx101x2"));
}

TEST(SysfsPci, ParsesDevicePaths) {
  const auto c = parse_pci_device_path("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->root, "pci0000:00");
  EXPECT_EQ(c->chain, (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:03:00.0"}));
  const auto vmd =
      parse_pci_device_path("/sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0/10000:e1:00.0");
  ASSERT_TRUE(vmd);
  EXPECT_EQ(vmd->root, "pci10000:e0");
  EXPECT_EQ(vmd->chain.size(), 2u);
  EXPECT_FALSE(parse_pci_device_path("/sys/devices/platform/foo"));
  EXPECT_FALSE(parse_pci_device_path("/sys/devices/pci0000:00"));
  EXPECT_TRUE(is_pci_bdf("0000:3a:00.1"));
  EXPECT_FALSE(is_pci_bdf("0000:3a:00.8"));
  EXPECT_FALSE(is_pci_bdf("3a:00.0"));
  EXPECT_FALSE(is_pci_host_bridge("pci_bus"));
}

}  // namespace
}  // namespace core_pci_config_test
}  // namespace preflight
