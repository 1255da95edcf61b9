// SPDX-License-Identifier: MIT
#include "sys/sysfs_pci.hpp"

#include <cctype>
#include <filesystem>

#include "core/text.hpp"

namespace preflight {
namespace {

bool all_hex(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

}  // namespace

bool is_pci_bdf(std::string_view name) {
  // DDDD:BB:DD.F
  const std::size_t c1 = name.find(':');
  if (c1 == std::string_view::npos || c1 < 4) return false;
  const std::string_view rest = name.substr(c1 + 1);
  return rest.size() == 7 && all_hex(name.substr(0, c1)) && all_hex(rest.substr(0, 2)) && rest[2] == ':' &&
         all_hex(rest.substr(3, 2)) && rest[5] == '.' && rest[6] >= '0' && rest[6] <= '7';
}

bool is_pci_host_bridge(std::string_view name) {
  if (name.substr(0, 3) != "pci") return false;
  name.remove_prefix(3);
  const std::size_t colon = name.find(':');
  return colon != std::string_view::npos && colon >= 4 && all_hex(name.substr(0, colon)) && name.size() == colon + 3 &&
         all_hex(name.substr(colon + 1));
}

std::optional<PciChain> parse_pci_device_path(std::string_view path) {
  const std::vector<std::string_view> parts = split(path, '/');
  // The last host bridge component: virtual buses (Hyper-V) nest one below platform devices.
  std::optional<std::size_t> host;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (is_pci_host_bridge(parts[i])) host = i;
  }
  if (!host) return std::nullopt;
  PciChain out;
  out.root = std::string(parts[*host]);
  for (std::size_t i = *host + 1; i < parts.size() && is_pci_bdf(parts[i]); ++i) out.chain.emplace_back(parts[i]);
  if (out.chain.empty()) return std::nullopt;
  return out;
}

Probed<PciChain> resolve_pci_chain(const FileSystem& fs, std::string_view bdf) {
  const std::string link = "/sys/bus/pci/devices/" + std::string(bdf);
  const Probed<std::string> target = fs.read_link(link);
  if (!target.ok()) return Probed<PciChain>::error(*target.error(), link);
  // The device directory as the kernel finds it inside the root; a target the captured tree lacks
  // is read as written, from the link's directory.
  std::string normal;
  if (const Probed<std::string> real = fs.real_path(link); real.ok()) {
    normal = *real.value();
  } else {
    std::filesystem::path resolved(*target.value());
    if (resolved.is_relative()) resolved = std::filesystem::path("/sys/bus/pci/devices") / resolved;
    normal = resolved.lexically_normal().generic_string();
  }
  std::optional<PciChain> chain = parse_pci_device_path(normal);
  if (!chain) {
    return Probed<PciChain>::error(ProbeErrc::ParseError,
                                   "points to " + normal + ", not below a pciDDDD:BB host bridge", link);
  }
  if (chain->chain.back() != bdf) {
    return Probed<PciChain>::error(ProbeErrc::ParseError, "points to " + normal + ", which is not " + std::string(bdf),
                                   link);
  }
  return Probed<PciChain>::ok(std::move(*chain), link + " -> " + normal);
}

Probed<std::string> read_link_name(const FileSystem& fs, std::string_view path) {
  Probed<std::string> target = fs.read_link(path);
  if (!target.ok()) return target;
  std::string name = *target.value();
  while (!name.empty() && name.back() == '/') name.pop_back();
  const std::size_t slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  if (name.empty()) return Probed<std::string>::error(ProbeErrc::ParseError, "empty link target", std::string(path));
  return Probed<std::string>::ok(std::move(name), std::string(path));
}

}  // namespace preflight
