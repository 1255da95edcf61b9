// SPDX-License-Identifier: MIT
// The kernel log reader (core/kmsg.hpp) on /dev/kmsg-format fixtures with the NVIDIA driver's real
// line formats: Xid with and without "PCI:", the multi-line "fallen off the bus" without an Xid,
// SXid of an NVSwitch, Xid 154's recovery action, and how each code is judged.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/kmsg.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace core_kmsg_test {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(preflight::test_paths::fixtures_dir() + "/kmsg/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Kmsg, RecordsKeepTheTimeAndDropContinuationLines) {
  const std::vector<KmsgRecord> r = parse_kmsg("6,1,12345678,-;hello\n SUBSYSTEM=pci\nplain dmesg line\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].usec, 12345678u);
  EXPECT_EQ(r[0].message, "hello");
  EXPECT_FALSE(r[1].usec);
  EXPECT_EQ(r[1].message, "plain dmesg line");
}

TEST(Kmsg, XidLinesOfEveryFormat) {
  const std::vector<GpuKernelEvent> e = nvidia_kernel_events(parse_kmsg(fixture("xid-node.kmsg")));
  ASSERT_EQ(e.size(), 7u);
  EXPECT_EQ(e[0].kind, GpuKernelEvent::Kind::Xid);
  EXPECT_EQ(e[0].code, 79);
  EXPECT_EQ(e[0].bus_id, "0000:18:00.0");
  EXPECT_EQ(e[0].usec, 3600000000u);
  EXPECT_EQ(e[1].code, 13);
  EXPECT_EQ(e[1].bus_id, "0000:2a:00.0");
  EXPECT_EQ(e[2].code, 63);
  EXPECT_EQ(e[3].code, 94);
  EXPECT_EQ(e[4].code, 154);
  EXPECT_EQ(e[5].kind, GpuKernelEvent::Kind::SXid);
  EXPECT_EQ(e[5].code, 12028);
  EXPECT_EQ(e[5].bus_id, "0000:85:00.0");
  EXPECT_EQ(e[6].code, 14);  // an older driver: no "PCI:"
  EXPECT_EQ(e[6].bus_id, "0000:03:00.0");
}

TEST(Kmsg, FallenOffTheBusWithoutAnXidSingleAndMultiLine) {
  const std::vector<GpuKernelEvent> e = nvidia_kernel_events(parse_kmsg(fixture("fallen-off-bus-multiline.kmsg")));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].kind, GpuKernelEvent::Kind::FallenOffBus);
  EXPECT_EQ(e[0].bus_id, "0000:b3:00.0");
  EXPECT_EQ(e[0].usec, 7200000000u);
  EXPECT_NE(e[0].text.find("(PCI ID: 10de:26b5)"), std::string::npos) << e[0].text;
  EXPECT_NE(e[0].text.find("fallen off the bus"), std::string::npos) << e[0].text;
  EXPECT_EQ(e[1].kind, GpuKernelEvent::Kind::FallenOffBus);
  EXPECT_EQ(e[1].bus_id, "0000:18:00.0");
}

TEST(Kmsg, XidSeverities) {
  for (int code : {48, 64, 74, 79, 95, 119, 120, 140, 143, 144, 150})
    EXPECT_EQ(classify_xid(code).severity, XidSeverity::Fatal) << code;
  for (int code : {13, 31, 43, 45, 68}) EXPECT_EQ(classify_xid(code).severity, XidSeverity::Application) << code;
  for (int code : {63, 92, 94, 14}) EXPECT_EQ(classify_xid(code).severity, XidSeverity::Warning) << code;
  for (int code : {13, 31, 43, 45, 68, 109}) EXPECT_EQ(classify_xid(code).severity, XidSeverity::Application) << code;
  EXPECT_EQ(classify_xid(154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)").severity,
            XidSeverity::Fatal);
  EXPECT_EQ(classify_xid(154, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)").severity,
            XidSeverity::Warning);
  EXPECT_NE(classify_xid(79).action.find("reboot"), std::string::npos);
}

TEST(Kmsg, CaptureKeepsOnlyTheNvidiaLines) {
  const std::string kept =
      nvidia_kmsg_lines("6,1,1,-;usb 1-1: new device\n4,2,2,-;NVRM: Xid (PCI:0000:18:00): 79, x\n");
  EXPECT_EQ(kept, "4,2,2,-;NVRM: Xid (PCI:0000:18:00): 79, x\n");
}

}  // namespace
}  // namespace core_kmsg_test
}  // namespace preflight
