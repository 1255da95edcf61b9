// SPDX-License-Identifier: MIT
#include "core/gpu_text.hpp"

#include <cctype>
#include <cstdio>
#include <vector>

namespace preflight::gpu_text {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])) != 0) ++i;
    const std::size_t start = i;
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])) == 0) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace

bool is_driver_version(std::string_view token) {
  int parts = 0;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    while (i < token.size() && is_digit(token[i])) ++i;
    if (i == start) return false;
    ++parts;
    if (i == token.size()) break;
    if (token[i] != '.') return false;
    ++i;
  }
  return parts == 2 || parts == 3;
}

std::optional<std::string> parse_kernel_module_version(std::string_view text) {
  const std::size_t eol = text.find('\n');
  const std::string_view first = text.substr(0, eol);
  const std::vector<std::string_view> words = tokens(first);
  // /sys/module/nvidia/version: the version alone.
  if (words.size() == 1 && is_driver_version(words[0])) return std::string(words[0]);
  // /proc/driver/nvidia/version: the first version-shaped token after "Module".
  bool after_module = false;
  for (const std::string_view w : words) {
    if (w == "Module") {
      after_module = true;
      continue;
    }
    if (after_module && is_driver_version(w)) return std::string(w);
  }
  return std::nullopt;
}

std::string decode_nccl_version(int code) {
  if (code <= 0) return {};
  int major = 0, minor = 0, patch = 0;
  if (code >= 10000) {
    major = code / 10000;
    minor = (code / 100) % 100;
    patch = code % 100;
  } else {
    major = code / 1000;
    minor = (code / 100) % 10;
    patch = code % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string find_nccl_cuda_build(std::string_view bytes, std::string_view version) {
  static constexpr std::string_view kPrefix = "NCCL version ";
  std::string fallback;
  std::size_t pos = 0;
  while ((pos = bytes.find(kPrefix, pos)) != std::string_view::npos) {
    pos += kPrefix.size();
    std::size_t i = pos;
    while (i < bytes.size() && (is_digit(bytes[i]) || bytes[i] == '.')) ++i;
    const std::string_view found_version = bytes.substr(pos, i - pos);
    static constexpr std::string_view kCuda = "+cuda";
    if (found_version.empty() || bytes.substr(i, kCuda.size()) != kCuda) continue;
    std::size_t j = i + kCuda.size();
    const std::size_t start = j;
    while (j < bytes.size() && (is_digit(bytes[j]) || bytes[j] == '.')) ++j;
    std::string_view cuda = bytes.substr(start, j - start);
    while (!cuda.empty() && cuda.back() == '.') cuda.remove_suffix(1);
    if (cuda.empty() || !is_digit(cuda.front())) continue;
    if (version.empty() || found_version == version) return std::string(cuda);
    if (fallback.empty()) fallback = std::string(cuda);
  }
  return fallback;
}

std::string format_cuda_version(int code) {
  if (code <= 0) return {};
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

std::string format_gpu_uuid(const unsigned char (&bytes)[16]) {
  std::string out = "GPU-";
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0xF];
  }
  return out;
}

std::string format_pci_bus_id(unsigned domain, unsigned bus, unsigned device) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.0", domain, bus & 0xFFu, device & 0xFFu);
  return buf;
}

}  // namespace preflight::gpu_text
