// SPDX-License-Identifier: MIT
// The kernel log in /dev/kmsg's record format ("PRIORITY,SEQUENCE,MICROSECONDS,FLAGS;MESSAGE" with
// " KEY=value" continuation lines, Documentation/ABI/testing/dev-kmsg) and the NVIDIA driver's
// lines in it: Xid reports ("NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus."),
// "fallen off the bus" without an Xid (single- and multi-line), and the NVSwitch driver's SXid.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

struct KmsgRecord {
  std::optional<std::uint64_t> usec;  // microseconds since boot; nullopt: a line without the prefix
  std::string message;
};

/// Splits /dev/kmsg text into records; continuation lines (" KEY=value") are dropped, lines
/// without the "P,S,T,F;" prefix (a plain dmesg) are kept as messages without a time.
std::vector<KmsgRecord> parse_kmsg(std::string_view text);

/// One NVIDIA event of the kernel log.
struct GpuKernelEvent {
  enum class Kind { Xid, FallenOffBus, SXid };
  Kind kind = Kind::Xid;
  int code = 0;        // the Xid / SXid number (0 for FallenOffBus)
  std::string bus_id;  // normalized "00000000:3B:00.0" (function 0 when the line has none)
  std::optional<std::uint64_t> usec;
  std::string text;  // the message, as logged (multi-line "fallen off the bus" joined)
};

/// The NVIDIA events of the records, in order. A multi-line "The NVIDIA GPU <bdf> / (PCI ID: …)
/// installed in this system has / fallen off the bus …" report is one event.
std::vector<GpuKernelEvent> nvidia_kernel_events(const std::vector<KmsgRecord>& records);

/// The NVIDIA lines of the records (Xid, SXid, NVRM), in /dev/kmsg format, for a capture.
std::string nvidia_kmsg_lines(std::string_view text);

enum class XidSeverity { Fatal, Application, Warning };

/// How preflight judges an Xid: Fatal (DCGM's always-fatal set and the catalog's reset/reboot
/// resolutions: 48, 64, 74, 79, 95, 119, 120, 140, 143, 144-150, 155, 156, 158), Application (13,
/// 31, 43, 45, 68: usually the application), Warning (every other code). `action` is the
/// catalog's resolution in words.
struct XidClass {
  XidSeverity severity = XidSeverity::Warning;
  std::string action;
};
XidClass classify_xid(int code, std::string_view text = {});

}  // namespace preflight
