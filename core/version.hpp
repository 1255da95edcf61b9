// SPDX-License-Identifier: MIT
// Version: a dotted numeric version as NVIDIA and NCCL write them ("550.54.14", "12.4", "13.0.1",
// "2.28.9"). Compared numerically component by component, missing components reading as 0 (so
// "580" == "580.0" < "580.65.06"); printed exactly as parsed ("535.54.03" keeps its zero).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

class Version {
 public:
  static constexpr std::size_t kMaxComponents = 4;

  Version() = default;
  /// Built from numbers: Version::of({12, 4}) prints "12.4".
  static Version of(std::initializer_list<std::uint32_t> parts);
  /// 1..4 dot-separated decimal components of at most 9 digits each, nothing else (no spaces,
  /// signs, suffixes or empty components). nullopt otherwise.
  static std::optional<Version> parse(std::string_view text);
  /// The CUDA API encoding 1000*major + 10*minor (12040 -> 12.4); nullopt if not positive.
  static std::optional<Version> from_cuda_api(std::int64_t code);
  /// ncclGetVersion's code: X*10000+Y*100+Z, or X*1000+Y*100+Z for releases <= 2.8 (22809 -> 2.28.9).
  static std::optional<Version> from_nccl_code(std::int64_t code);

  bool empty() const { return m_parts.empty(); }
  std::size_t size() const { return m_parts.size(); }
  /// Component i, 0 beyond the last.
  std::uint32_t operator[](std::size_t i) const { return i < m_parts.size() ? m_parts[i] : 0; }
  std::uint32_t major() const { return (*this)[0]; }
  std::uint32_t minor() const { return (*this)[1]; }
  std::uint32_t patch() const { return (*this)[2]; }
  /// The first n components ("12.4.127" -> "12.4" for n = 2), printed from the original text.
  Version truncated(std::size_t n) const;
  const std::string& str() const { return m_text; }

  friend std::strong_ordering operator<=>(const Version& a, const Version& b);
  friend bool operator==(const Version& a, const Version& b) { return (a <=> b) == 0; }

 private:
  std::vector<std::uint32_t> m_parts;
  std::string m_text;
};

}  // namespace preflight
