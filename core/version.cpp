// SPDX-License-Identifier: MIT
#include "core/version.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace preflight {

Version Version::of(std::initializer_list<std::uint32_t> parts) {
  Version v;
  for (std::uint32_t p : parts) {
    if (v.m_parts.size() == kMaxComponents) break;
    if (!v.m_text.empty()) v.m_text += '.';
    v.m_text += std::to_string(p);
    v.m_parts.push_back(p);
  }
  return v;
}

std::optional<Version> Version::parse(std::string_view text) {
  const std::vector<std::string_view> fields = split(text, '.');
  if (text.empty() || fields.size() > kMaxComponents) return std::nullopt;
  Version v;
  for (std::string_view f : fields) {
    if (f.empty() || f.size() > 9 || !std::all_of(f.begin(), f.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    std::uint32_t n = 0;
    for (char c : f) n = n * 10 + static_cast<std::uint32_t>(c - '0');
    v.m_parts.push_back(n);
  }
  v.m_text = std::string(text);
  return v;
}

std::optional<Version> Version::from_cuda_api(std::int64_t code) {
  if (code <= 0 || code > 999999999) return std::nullopt;
  return of({static_cast<std::uint32_t>(code / 1000), static_cast<std::uint32_t>((code % 1000) / 10)});
}

std::optional<Version> Version::from_nccl_code(std::int64_t code) {
  if (code <= 0 || code > 999999999) return std::nullopt;
  if (code >= 10000) {
    return of({static_cast<std::uint32_t>(code / 10000), static_cast<std::uint32_t>((code / 100) % 100),
               static_cast<std::uint32_t>(code % 100)});
  }
  return of({static_cast<std::uint32_t>(code / 1000), static_cast<std::uint32_t>((code / 100) % 10),
             static_cast<std::uint32_t>(code % 100)});
}

Version Version::truncated(std::size_t n) const {
  if (n >= m_parts.size()) return *this;
  Version v;
  v.m_parts.assign(m_parts.begin(), m_parts.begin() + static_cast<std::ptrdiff_t>(n));
  std::size_t end = 0;
  for (std::size_t i = 0; i < n; ++i) end = m_text.find('.', end) + (i + 1 < n ? 1 : 0);
  v.m_text = m_text.substr(0, end);
  return v;
}

std::strong_ordering operator<=>(const Version& a, const Version& b) {
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (const auto c = a[i] <=> b[i]; c != 0) return c;
  }
  return std::strong_ordering::equal;
}

}  // namespace preflight
