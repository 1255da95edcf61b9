// SPDX-License-Identifier: MIT
// Small text helpers shared by parsers, checks and renderers. Strict: nothing here guesses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
/// Splits on runs of spaces/tabs, dropping empty fields.
std::vector<std::string_view> split_ws(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string to_lower(std::string_view s);

/// Whole-string decimal integer ("42", "-1"); nothing else (no spaces, signs only '-', no suffix).
std::optional<std::int64_t> parse_int(std::string_view s);
std::optional<std::uint64_t> parse_uint(std::string_view s);

/// A size with an optional unit: "8g", "8G", "8GiB", "512M", "1.5GiB", "1048576", "64k".
/// Units are binary (k = 1024). Returns nullopt on anything else.
std::optional<std::uint64_t> parse_size(std::string_view s);

/// "64 MiB", "1.1 GiB", "512 B": binary units, at most one decimal.
std::string format_bytes(std::uint64_t bytes);

/// A number with `digits` decimals, as printf's "%.*f": fixed(1.25, 1) == "1.2", fixed(3, 0) == "3".
std::string fixed(double v, int digits);

/// A number with `precision` significant digits, as printf's "%.*g": general(0.0001234, 3) == "0.000123".
std::string general(double v, int precision = 6);

/// A duration for people, two significant figures at most in the largest fitting unit:
/// 4.36e-05 -> "44 µs", 0.0123 -> "12 ms", 9.92 -> "9.9 s", 42.4 -> "42 s", 125 -> "2 min 5 s",
/// 7380 -> "2 h 3 min"; 0 -> "0 s". Negative or not a number: "?".
std::string format_duration(double seconds);

/// Shell-style glob on check ids: '*' any run, '?' one character.
bool glob_match(std::string_view pattern, std::string_view text);

/// Sorted numbers as ranges: {0,1,2,3,5} -> "0–3,5".
std::string range_list(const std::vector<int>& numbers);

/// Sorted CPU or node numbers in the kernel's list format, for commands: {0,1,2,3,8} -> "0-3,8".
std::string cpu_list(const std::vector<int>& numbers);

/// Parses the kernel's list format ("0-3,8,10-11", "" = none) into sorted unique numbers;
/// nullopt when malformed or a number is above 1,048,575.
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);

/// Parses the kernel's hex mask format ("00000000,0000ff00": comma-separated 32-bit groups, most
/// significant first) into sorted numbers; nullopt when malformed.
std::optional<std::vector<int>> parse_cpu_mask(std::string_view text);

/// Levenshtein distance, for "did you mean".
std::size_t edit_distance(std::string_view a, std::string_view b);

/// Makes arbitrary bytes safe for a one-line message on a terminal: control characters (C0, DEL and
/// the C1 controls U+0080..U+009F, which some terminals take as escape sequences) and invalid UTF-8
/// become \xNN escapes, the bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069)
/// \u{NNNN}; the result is cut to max_len characters with "…". Escaping twice changes nothing.
std::string printable(std::string_view raw, std::size_t max_len = 120);
/// printable() without a length limit: for text that is shown whole (the text report).
std::string terminal_safe(std::string_view raw);

/// Text for a terminal whose character set is not UTF-8 (LC_ALL=C): the typographic characters
/// preflight's own words use become their ASCII spelling ("≥" ">=", "·" "-", "…" "...", "—" "--",
/// "×" "x", "µ" "u"), any other character beyond ASCII "?", one per character, as C-locale tools do.
std::string ascii_only(std::string_view utf8);
/// Whether the locale the environment names (the first non-empty of LC_ALL, LC_CTYPE, LANG; POSIX's
/// order) has a UTF-8 character set. Nothing set: true (today's terminals; preflight's default).
bool utf8_locale(const std::optional<std::string>& lc_all, const std::optional<std::string>& lc_ctype,
                 const std::optional<std::string>& lang);

/// The symbolic name of an errno value, "EMFILE"; "errno N" for a value the C library does not name.
std::string errno_name(int err);
/// "Too many open files (EMFILE)": the C library's words and the name, for messages.
std::string errno_words(int err);

}  // namespace preflight
