// SPDX-License-Identifier: MIT
#include "core/kmsg.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "core/pci_topology.hpp"

namespace preflight {
namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && ptr == s.data() + s.size();
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/// "0000:3b:00", "PCI:0000:3b:00", "0000:3b:00.0", "0018:01:00" -> "00000000:3B:00.0"; "" if none.
std::string kmsg_bus_id(std::string_view s) {
  if (s.starts_with("PCI:")) s.remove_prefix(4);
  std::size_t n = 0;
  while (n < s.size() && (is_hex(s[n]) || s[n] == ':' || s[n] == '.')) ++n;
  while (n > 0 && (s[n - 1] == ':' || s[n - 1] == '.')) --n;  // "0000:18:00.0: GPU has ..."
  std::string id(s.substr(0, n));
  if (id.empty()) return {};
  if (std::count(id.begin(), id.end(), ':') == 2 && id.find('.') == std::string::npos) id += ".0";
  if (std::count(id.begin(), id.end(), ':') == 1 && id.find('.') == std::string::npos) id = "0000:" + id + ".0";
  return normalize_bus_id(id);
}

/// The number after "): " up to the comma: "): 79, pid=" -> 79.
std::optional<int> code_after(std::string_view s, std::size_t from) {
  const std::size_t p = s.find("): ", from);
  if (p == std::string_view::npos) return std::nullopt;
  std::size_t b = p + 3, e = b;
  while (e < s.size() && s[e] >= '0' && s[e] <= '9') ++e;
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data() + b, s.data() + e, v);
  if (ec != std::errc{} || ptr == s.data() + b) return std::nullopt;
  return v;
}

}  // namespace

std::vector<KmsgRecord> parse_kmsg(std::string_view text) {
  std::vector<KmsgRecord> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty() || line.front() == ' ') continue;  // continuation " KEY=value"
    KmsgRecord r;
    const std::size_t semi = line.find(';');
    bool prefixed = false;
    if (semi != std::string_view::npos) {
      const std::string_view head = line.substr(0, semi);
      const std::size_t c1 = head.find(','), c2 = c1 == std::string_view::npos ? c1 : head.find(',', c1 + 1);
      const std::size_t c3 = c2 == std::string_view::npos ? c2 : head.find(',', c2 + 1);
      std::uint64_t pri = 0, seq = 0, usec = 0;
      if (c2 != std::string_view::npos && parse_u64(head.substr(0, c1), pri) &&
          parse_u64(head.substr(c1 + 1, c2 - c1 - 1), seq) &&
          parse_u64(head.substr(c2 + 1, c3 == std::string_view::npos ? std::string_view::npos : c3 - c2 - 1), usec)) {
        r.usec = usec;
        r.message = std::string(line.substr(semi + 1));
        prefixed = true;
      }
    }
    if (!prefixed) r.message = std::string(line);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<GpuKernelEvent> nvidia_kernel_events(const std::vector<KmsgRecord>& records) {
  std::vector<GpuKernelEvent> out;
  std::string pending_bus;  // "NVRM: The NVIDIA GPU <bdf>" seen, waiting for "fallen off the bus"
  std::string pending_text;
  std::optional<std::uint64_t> pending_usec;
  for (const KmsgRecord& r : records) {
    const std::string_view m = r.message;
    if (const std::size_t x = m.find("NVRM: Xid ("); x != std::string_view::npos) {
      GpuKernelEvent e;
      e.kind = GpuKernelEvent::Kind::Xid;
      e.bus_id = kmsg_bus_id(m.substr(x + 11));
      if (const auto code = code_after(m, x))
        e.code = *code;
      else
        continue;
      e.usec = r.usec;
      e.text = std::string(m.substr(m.find("NVRM: ")));
      out.push_back(std::move(e));
      continue;
    }
    if (const std::size_t x = m.find("SXid (PCI:"); x != std::string_view::npos) {
      GpuKernelEvent e;
      e.kind = GpuKernelEvent::Kind::SXid;
      e.bus_id = kmsg_bus_id(m.substr(x + 6));
      if (const auto code = code_after(m, x))
        e.code = *code;
      else
        continue;
      e.usec = r.usec;
      e.text = std::string(m);
      out.push_back(std::move(e));
      continue;
    }
    if (const std::size_t x = m.find("NVRM: The NVIDIA GPU "); x != std::string_view::npos) {
      pending_bus = kmsg_bus_id(m.substr(x + 21));
      pending_text = std::string(m.substr(x));
      pending_usec = r.usec;
      continue;
    }
    if (m.find("fallen off the bus") != std::string_view::npos && m.find("NVRM") != std::string_view::npos) {
      GpuKernelEvent e;
      e.kind = GpuKernelEvent::Kind::FallenOffBus;
      // Single line: "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus."
      if (const std::size_t g = m.find("NVRM: GPU "); g != std::string_view::npos) {
        e.bus_id = kmsg_bus_id(m.substr(g + 10));
        e.text = std::string(m.substr(g));
        e.usec = r.usec;
      } else {
        e.bus_id = pending_bus;
        e.text =
            pending_text.empty() ? std::string(m) : pending_text + " " + std::string(m.substr(m.find("NVRM: ") + 6));
        e.usec = pending_usec ? pending_usec : r.usec;
      }
      pending_bus.clear();
      pending_text.clear();
      pending_usec.reset();
      out.push_back(std::move(e));
      continue;
    }
    if (!pending_text.empty() && m.find("NVRM: ") != std::string_view::npos) {
      pending_text += " " + std::string(m.substr(m.find("NVRM: ") + 6));  // "(PCI ID: 10de:26b5) installed ..."
    }
  }
  return out;
}

std::string nvidia_kmsg_lines(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.find("NVRM") != std::string_view::npos || line.find("SXid") != std::string_view::npos ||
        line.find("nvidia") != std::string_view::npos) {
      out.append(line);
      out.push_back('\n');
    }
  }
  return out;
}

XidClass classify_xid(int code, std::string_view text) {
  auto fatal = [](const char* action) { return XidClass{XidSeverity::Fatal, action}; };
  switch (code) {
    case 48: return fatal("double-bit ECC error: drain the node and reset the GPU");
    case 64: return fatal("row remapping failure: reset the GPU, replace it if it recurs");
    case 74: return fatal("NVLink error: reset the GPU and check the NVLink (nvidia-smi nvlink -e)");
    case 79: return fatal("GPU has fallen off the bus: reboot the node (restart bare metal), reseat if it recurs");
    case 95: return fatal("uncontained ECC error: reset the GPU");
    case 119:
    case 120: return fatal("GSP error: reset the GPU, reboot if it recurs");
    case 140: return fatal("unrecovered ECC error: reset the GPU");
    case 143: return fatal("GPU initialization failure: reset the GPU");
    case 155:
    case 156:
    case 158: return fatal("reset the GPU");
    case 13:
    case 31:
    case 43:
    case 45:
    case 68:
    case 109:
      return {XidSeverity::Application,
              "usually the application (illegal address, exception, preemptive cleanup, context switch timeout)"};
    case 63: return {XidSeverity::Warning, "row remap pending: reset the GPU at the next drain"};
    case 92: return {XidSeverity::Warning, "high single-bit ECC rate: watch for more"};
    case 94: return {XidSeverity::Warning, "contained ECC error: restart the application"};
    case 154:
      if (text.find(" to 0x0") != std::string_view::npos) return {XidSeverity::Warning, "GPU recovery action cleared"};
      return fatal("GPU recovery action changed: do what it names (reset, reboot, drain)");
    default: break;
  }
  if (code >= 144 && code <= 150) return fatal("NVLink5 error: reset the GPU and check the NVLink");
  return {XidSeverity::Warning, "see NVIDIA's Xid catalog"};
}

}  // namespace preflight
