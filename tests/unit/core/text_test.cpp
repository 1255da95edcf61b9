// SPDX-License-Identifier: MIT
#include "core/text.hpp"

#include <cerrno>
#include <cmath>

#include <gtest/gtest.h>

namespace preflight {
namespace core_text_test {
namespace {

TEST(Text, TrimAndSplit) {
  EXPECT_EQ(trim("  a b \n"), "a b");
  EXPECT_EQ(trim(""), "");
  const auto parts = split("a,,b", ',');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  const auto ws = split_ws("  36 35 0:17 /  /dev/shm\trw ");
  ASSERT_EQ(ws.size(), 6u);
  EXPECT_EQ(ws[4], "/dev/shm");
}

TEST(Text, ParseIntIsStrict) {
  EXPECT_EQ(parse_int("42"), 42);
  EXPECT_EQ(parse_int("-1"), -1);
  EXPECT_FALSE(parse_int(" 42"));
  EXPECT_FALSE(parse_int("42x"));
  EXPECT_FALSE(parse_int(""));
  EXPECT_FALSE(parse_int("99999999999999999999"));
  EXPECT_FALSE(parse_uint("-1"));
  EXPECT_EQ(parse_uint("18446744073709551615"), 18446744073709551615ull);
}

TEST(Text, ParseSizeUnitsAreBinary) {
  EXPECT_EQ(parse_size("64M"), 64ull << 20);
  EXPECT_EQ(parse_size("8g"), 8ull << 30);
  EXPECT_EQ(parse_size("8GiB"), 8ull << 30);
  EXPECT_EQ(parse_size("1.5G"), 3ull << 29);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("64k"), 65536u);
  EXPECT_FALSE(parse_size("abc"));
  EXPECT_FALSE(parse_size("8X"));
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("1.2.3G"));
  EXPECT_FALSE(parse_size("99999999999T"));
}

TEST(Text, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(64ull << 20), "64 MiB");
  EXPECT_EQ(format_bytes(1181116006), "1.1 GiB");
  EXPECT_EQ(format_bytes(8ull << 30), "8 GiB");
}

TEST(Text, FixedAndGeneralNumbers) {
  EXPECT_EQ(fixed(1.25, 1), "1.2");  // printf's rounding (1.25 is exact: to even)
  EXPECT_EQ(fixed(0.0424, 3), "0.042");
  EXPECT_EQ(fixed(99.96, 1), "100.0");
  EXPECT_EQ(fixed(123.4, 0), "123");
  EXPECT_EQ(fixed(-0.5, 2), "-0.50");
  const std::string huge = fixed(1e300, 1);  // longer than any small buffer: every digit kept
  EXPECT_EQ(huge.size(), 303u);
  EXPECT_EQ(huge.substr(0, 2), "10");
  EXPECT_EQ(huge.substr(huge.size() - 2), ".0");
  EXPECT_EQ(general(0.000123456, 3), "0.000123");
  EXPECT_EQ(general(12345678.0, 3), "1.23e+07");
  EXPECT_EQ(general(25.0), "25");
  EXPECT_EQ(general(0.5), "0.5");
}

TEST(Text, DurationsForPeople) {
  EXPECT_EQ(format_duration(4.36e-05), "44 µs");  // not "4.36e-05 s"
  EXPECT_EQ(format_duration(9.92), "9.9 s");      // not "9.92e+03 ms"
  EXPECT_EQ(format_duration(0.0123), "12 ms");
  EXPECT_EQ(format_duration(0.00125), "1.2 ms");
  EXPECT_EQ(format_duration(2.0), "2 s");
  EXPECT_EQ(format_duration(42.4), "42 s");
  EXPECT_EQ(format_duration(0.9996), "1 s");  // rounding up moves to the next unit
  EXPECT_EQ(format_duration(0.0009996), "1 ms");
  EXPECT_EQ(format_duration(5e-10), "0.5 ns");
  EXPECT_EQ(format_duration(90), "90 s");
  EXPECT_EQ(format_duration(125), "2 min 5 s");
  EXPECT_EQ(format_duration(120), "2 min");
  EXPECT_EQ(format_duration(7380), "2 h 3 min");
  EXPECT_EQ(format_duration(0), "0 s");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(std::nan("")), "?");
}

TEST(Text, GlobMatch) {
  EXPECT_TRUE(glob_match("net.*", "net.ib"));
  EXPECT_TRUE(glob_match("*", "shm.capacity"));
  EXPECT_TRUE(glob_match("host.?imits", "host.limits"));
  EXPECT_FALSE(glob_match("net.*", "env.nccl"));
  EXPECT_TRUE(glob_match("shm.capacity", "shm.capacity"));
  EXPECT_FALSE(glob_match("shm", "shm.capacity"));
}

TEST(Text, EditDistance) {
  EXPECT_EQ(edit_distance("NCCL_IB_HCA", "NCCL_IB_HCA"), 0u);
  EXPECT_EQ(edit_distance("NCCL_SOCKET_IFNAM", "NCCL_SOCKET_IFNAME"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Text, PrintableEscapesControlAndInvalidUtf8) {
  EXPECT_EQ(printable("a\nb"), "a\\x0Ab");
  EXPECT_EQ(printable("\xff"), "\\xFF");
  EXPECT_EQ(printable("größe"), "größe");
  EXPECT_EQ(printable("abcdef", 3), "abc…");
  EXPECT_EQ(printable("a\xc2\x9b"
                      "1m"),
            "a\\xC2\\x9B1m");                                    // C1 CSI: a terminal escape
  EXPECT_EQ(printable("x\xe2\x80\xaey"), "x\\u{202E}y");         // right-to-left override
  EXPECT_EQ(printable("\xc2\xa0\xc3\xa9"), "\xc2\xa0\xc3\xa9");  // U+00A0, é: printable
  EXPECT_EQ(printable(printable("\x1b[2J\xe2\x81\xa6")), printable("\x1b[2J\xe2\x81\xa6"));  // idempotent
  EXPECT_EQ(terminal_safe(std::string(300, 'a')).size(), 300u);
}

TEST(CpuList, FormatsKernelListsWithPlainDashes) {
  EXPECT_EQ(cpu_list({}), "");
  EXPECT_EQ(cpu_list({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(cpu_list({1, 3, 4}), "1,3-4");
}

TEST(CpuList, ParsesKernelListsAndRejectsGarbage) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(" 5,1-2,2 \n"), (std::vector<int>{1, 2, 5}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_FALSE(parse_cpu_list("3-1"));
  EXPECT_FALSE(parse_cpu_list("a-b"));
  EXPECT_FALSE(parse_cpu_list("0,,1"));
  EXPECT_FALSE(parse_cpu_list("-1"));
  EXPECT_FALSE(parse_cpu_list("0-99999999"));  // bounded: no gigantic allocation
  EXPECT_EQ(parse_cpu_list(cpu_list({0, 2, 3, 4, 64})), (std::vector<int>{0, 2, 3, 4, 64}));
}

TEST(CpuList, ParsesKernelHexMasks) {
  EXPECT_EQ(parse_cpu_mask("0000000f"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_cpu_mask("00000001,00000100"), (std::vector<int>{8, 32}));
  EXPECT_EQ(parse_cpu_mask("ff00\n"), (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(parse_cpu_mask("0"), std::vector<int>{});
  EXPECT_FALSE(parse_cpu_mask(""));
  EXPECT_FALSE(parse_cpu_mask("xyz"));
  EXPECT_FALSE(parse_cpu_mask("123456789"));  // more than 32 bits in one group
}

TEST(ErrnoName, NamesTheValueAndFallsBackToItsNumber) {
  EXPECT_EQ(errno_name(EMFILE), "EMFILE");
  EXPECT_EQ(errno_name(ECONNREFUSED), "ECONNREFUSED");
  EXPECT_EQ(errno_name(4095), "errno 4095");
  EXPECT_EQ(errno_words(EMFILE), "Too many open files (EMFILE)");
}

TEST(Text, AsciiOnlySpellsPreflightsCharactersAndMarksOthers) {
  EXPECT_EQ(ascii_only("preflight 1.0 \u00b7 profile node"), "preflight 1.0 - profile node");
  EXPECT_EQ(ascii_only("NCCL \u2265 2.22.3, \u2264 12.9 \u2014 8 \u00d7 H100\u2026 3 \u00b5s"),
            "NCCL >= 2.22.3, <= 12.9 -- 8 x H100... 3 us");
  EXPECT_EQ(ascii_only("host-\u00e9t\u00e9 \xff end"), "host-?t? ? end");  // others: one "?" each
  EXPECT_EQ(ascii_only("plain"), "plain");
}

TEST(Text, Utf8LocaleFollowsPosixOrder) {
  const std::optional<std::string> none;
  EXPECT_TRUE(utf8_locale(none, none, none));  // nothing set: preflight's default
  EXPECT_TRUE(utf8_locale(none, none, std::string("C.UTF-8")));
  EXPECT_TRUE(utf8_locale(none, none, std::string("en_US.utf8")));
  EXPECT_TRUE(utf8_locale(std::string(""), none, std::string("de_DE.UTF-8@euro")));  // empty: the next one
  EXPECT_FALSE(utf8_locale(std::string("C"), none, std::string("C.UTF-8")));         // LC_ALL wins
  EXPECT_FALSE(utf8_locale(none, std::string("POSIX"), std::string("C.UTF-8")));     // then LC_CTYPE
  EXPECT_FALSE(utf8_locale(none, none, std::string("en_US.ISO-8859-1")));
  EXPECT_FALSE(utf8_locale(none, none, std::string("en_US")));
}

}  // namespace
}  // namespace core_text_test
}  // namespace preflight
