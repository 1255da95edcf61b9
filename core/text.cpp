// SPDX-License-Identifier: MIT
#include "core/text.hpp"

#include <cstdint>
#include <cstring>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <utility>

namespace preflight {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_uint(std::string_view s) {
  if (s.empty() || s.front() == '-') return std::nullopt;
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_size(std::string_view s) {
  s = trim(s);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string_view number = s.substr(0, i);
  std::string unit = to_lower(trim(s.substr(i)));
  if (number.empty() || number.front() == '.' || std::count(number.begin(), number.end(), '.') > 1) return std::nullopt;
  double value = 0;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size()) return std::nullopt;
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // "GiB" -> "gi", "kb" -> "k", "b" -> ""
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();  // "gi" -> "g"
  double scale = 1;
  if (unit.empty()) {
    scale = 1;
  } else if (unit == "k") {
    scale = 1024.0;
  } else if (unit == "m") {
    scale = 1024.0 * 1024;
  } else if (unit == "g") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "t") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes >= 1.8e19) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(bytes));
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (std::fabs(v - std::round(v)) < 0.05) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  if (n >= 0 && static_cast<std::size_t>(n) < sizeof buf) return buf;
  std::string out(static_cast<std::size_t>(n > 0 ? n : 0) + 1, '\0');  // a huge number: %f has every digit
  std::snprintf(out.data(), out.size(), "%.*f", digits, v);
  out.pop_back();
  return out;
}

std::string general(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e12) return "?";
  if (seconds == 0) return "0 s";
  // Below 10 units one decimal ("9.9 s", trailing ".0" dropped), else whole units ("44 µs").
  const auto in_unit = [](double v) {
    std::string s = v < 9.95 ? fixed(v, 1) : fixed(v, 0);
    if (s.ends_with(".0")) s.resize(s.size() - 2);
    return s;
  };
  static constexpr std::pair<double, const char*> kSmall[] = {{1e-9, "ns"}, {1e-6, "µs"}, {1e-3, "ms"}, {1, "s"}};
  for (std::size_t i = 0; i < std::size(kSmall); ++i) {
    const double v = seconds / kSmall[i].first;
    const double limit = i + 1 < std::size(kSmall) ? 999.5 : 119.5;  // seconds up to 2 minutes
    if (v < limit || (i == 0 && seconds < 1e-9)) return in_unit(v) + " " + kSmall[i].second;
  }
  const auto whole = static_cast<std::uint64_t>(std::llround(seconds));
  if (whole < 3600) {
    const std::uint64_t m = whole / 60, s = whole % 60;
    return std::to_string(m) + " min" + (s != 0 ? " " + std::to_string(s) + " s" : std::string());
  }
  const std::uint64_t minutes = (whole + 30) / 60;
  const std::uint64_t h = minutes / 60, m = minutes % 60;
  return std::to_string(h) + " h" + (m != 0 ? " " + std::to_string(m) + " min" : std::string());
}

bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {
std::string ranges(const std::vector<int>& numbers, std::string_view dash) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(numbers[i]);
    if (j > i) out += std::string(dash) + std::to_string(numbers[j]);
    i = j + 1;
  }
  return out;
}
}  // namespace

std::string range_list(const std::vector<int>& numbers) { return ranges(numbers, "–"); }

std::string cpu_list(const std::vector<int>& numbers) { return ranges(numbers, "-"); }

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  constexpr std::int64_t kMax = (1 << 20) - 1;
  std::vector<int> out;
  text = trim(text);
  if (text.empty()) return out;
  for (std::string_view part : split(text, ',')) {
    part = trim(part);
    const std::size_t dash = part.find('-');
    const auto lo = parse_int(part.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : parse_int(part.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi > kMax) return std::nullopt;
    if (out.size() + static_cast<std::size_t>(*hi - *lo) > static_cast<std::size_t>(kMax)) return std::nullopt;
    for (std::int64_t v = *lo; v <= *hi; ++v) out.push_back(static_cast<int>(v));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::vector<int>> parse_cpu_mask(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  const std::vector<std::string_view> groups = split(text, ',');
  if (groups.size() > 32768) return std::nullopt;
  std::vector<int> out;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::string_view hex = trim(groups[g]);
    if (hex.empty() || hex.size() > 8) return std::nullopt;
    std::uint32_t word = 0;
    for (char c : hex) {
      int v = -1;
      if (c >= '0' && c <= '9')
        v = c - '0';
      else if (c >= 'a' && c <= 'f')
        v = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v = c - 'A' + 10;
      if (v < 0) return std::nullopt;
      word = (word << 4) | static_cast<std::uint32_t>(v);
    }
    const int base = static_cast<int>((groups.size() - 1 - g) * 32);
    for (int bit = 0; bit < 32; ++bit) {
      if ((word >> bit) & 1u) out.push_back(base + bit);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string printable(std::string_view raw, std::size_t max_len) {
  std::string out;
  std::size_t chars = 0;
  std::size_t i = 0;
  const auto escape = [&out](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
    out += buf;
  };
  while (i < raw.size()) {
    if (chars >= max_len) {
      out += "…";
      break;
    }
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c < 0x20 || c == 0x7F) {
      escape(c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      // Validate one UTF-8 sequence.
      std::size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
      bool valid = len > 0 && i + len <= raw.size();
      std::uint32_t cp = len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
      for (std::size_t k = 1; valid && k < len; ++k) {
        const auto cont = static_cast<unsigned char>(raw[i + k]);
        valid = (cont & 0xC0) == 0x80;
        cp = (cp << 6) | (cont & 0x3Fu);
      }
      // Well-formed UTF-8 only: no overlong forms, no surrogates, nothing past U+10FFFF, and not
      // the non-characters U+FFFE/U+FFFF (which XML cannot carry either).
      static constexpr std::uint32_t kMinOf[5] = {0, 0, 0x80, 0x800, 0x10000};
      valid = valid && cp >= kMinOf[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) && cp != 0xFFFE &&
              cp != 0xFFFF;
      const bool c1_control = valid && cp >= 0x80 && cp <= 0x9F;
      const bool bidi = valid && ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069));
      if (c1_control) {
        for (std::size_t k = 0; k < len; ++k) escape(static_cast<unsigned char>(raw[i + k]));
        i += len;
      } else if (bidi) {
        char buf[12];
        std::snprintf(buf, sizeof buf, "\\u{%04X}", static_cast<unsigned>(cp));
        out += buf;
        i += len;
      } else if (valid) {
        out.append(raw.substr(i, len));
        i += len;
      } else {
        escape(c);
        ++i;
      }
    }
    ++chars;
  }
  return out;
}

std::string terminal_safe(std::string_view raw) { return printable(raw, std::string_view::npos); }

std::string ascii_only(std::string_view utf8) {
  static constexpr std::pair<std::string_view, std::string_view> kSpelling[] = {
      {"\u2265", ">="}, {"\u2264", "<="}, {"\u00b7", "-"},  {"\u2026", "..."}, {"\u2014", "--"}, {"\u2013", "-"},
      {"\u00d7", "x"},  {"\u2192", "->"}, {"\u2190", "<-"}, {"\u2248", "~"},   {"\u00b5", "u"},  {"\u00b0", " deg"},
      {"\u2018", "'"},  {"\u2019", "'"},  {"\u201c", "\""}, {"\u201d", "\""},  {"\u00a0", " "},  {"\u00b1", "+/-"}};
  std::string out;
  out.reserve(utf8.size());
  std::size_t i = 0;
  while (i < utf8.size()) {
    const auto byte = static_cast<unsigned char>(utf8[i]);
    if (byte < 0x80) {
      out.push_back(utf8[i++]);
      continue;
    }
    const auto known = std::find_if(std::begin(kSpelling), std::end(kSpelling),
                                    [&](const auto& s) { return utf8.substr(i).starts_with(s.first); });
    if (known != std::end(kSpelling)) {
      out += known->second;
      i += known->first.size();
      continue;
    }
    // One "?" per character: a lead byte and its continuation bytes (a stray byte alone).
    out.push_back('?');
    ++i;
    while (i < utf8.size() && (static_cast<unsigned char>(utf8[i]) & 0xC0) == 0x80) ++i;
  }
  return out;
}

bool utf8_locale(const std::optional<std::string>& lc_all, const std::optional<std::string>& lc_ctype,
                 const std::optional<std::string>& lang) {
  for (const std::optional<std::string>* v : {&lc_all, &lc_ctype, &lang}) {
    if (!v->has_value() || (*v)->empty()) continue;
    std::string name = **v;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    // "C.UTF-8", "en_US.utf8", "de_DE.UTF-8@euro": the character set follows the dot.
    const std::size_t dot = name.find('.');
    if (dot == std::string::npos) return false;  // "C", "POSIX", "en_US" (ISO-8859-1)
    const std::string_view codeset = std::string_view(name).substr(dot + 1);
    return codeset.starts_with("utf-8") || codeset.starts_with("utf8");
  }
  return true;
}

std::string errno_name(int err) {
  const char* name = ::strerrorname_np(err);
  return name != nullptr ? std::string(name) : "errno " + std::to_string(err);
}

std::string errno_words(int err) { return std::string(std::strerror(err)) + " (" + errno_name(err) + ")"; }

}  // namespace preflight
