// SPDX-License-Identifier: MIT
#include "core/proc_net_tcp.hpp"

#include <gtest/gtest.h>

#include <bit>

namespace preflight {
namespace core_proc_net_tcp_test {
namespace {

// Linux 6.1's /proc/net/tcp as printed on x86-64 (little-endian words).
constexpr const char* kTcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode                  "
    "                                   \n"
    "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 39211 1 "
    "0000000000000000 100 0 0 10 0                     \n"
    "   1: 00000000:7334 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41872 1 "
    "0000000000000000 100 0 0 10 0                     \n"
    "   2: 0202000A:8A4C 0502000A:7334 01 00000000:00000000 02:0009E1A4 00000000  1000        0 52913 2 "
    "0000000000000000 20 4 30 10 -1                    \n"
    "   3: 0100007F:8A4E 0100007F:1F90 06 00000000:00000000 03:000016D4 00000000     0        0 0 3 0000000000000000\n";

constexpr const char* kTcp6 =
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
    "tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 30015 1 0000000000000000 100 0 0 10 0\n"
    "   1: 00000000000000000000000001000000:0CEA 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 30016 1 0000000000000000 100 0 0 10 0\n"
    "   2: 0000000000000000FFFF00000100007F:7335 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 30017 1 0000000000000000 100 0 0 10 0\n"
    "   3: 000080FE00000000FF00FC0001000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 30018 1 0000000000000000 100 0 0 10 0\n";

TEST(ProcNetTcp, Ipv4RealFormat) {
  if constexpr (std::endian::native != std::endian::little) GTEST_SKIP() << "the sample words are little-endian";
  const ProcNetTcp t = parse_proc_net_tcp(kTcp, false);
  EXPECT_TRUE(t.malformed_lines.empty());
  ASSERT_EQ(t.entries.size(), 4u);
  EXPECT_EQ(t.entries[0].local_address, "127.0.0.1");
  EXPECT_EQ(t.entries[0].local_port, 8080);
  EXPECT_EQ(t.entries[0].state, kTcpStateListen);
  EXPECT_EQ(t.entries[0].inode, 39211u);
  EXPECT_FALSE(t.entries[0].ipv6);
  EXPECT_EQ(t.entries[1].local_address, "0.0.0.0");
  EXPECT_EQ(t.entries[1].local_port, 29492);
  EXPECT_EQ(t.entries[2].local_address, "10.0.2.2");
  EXPECT_EQ(t.entries[2].remote_address, "10.0.2.5");
  EXPECT_EQ(t.entries[2].remote_port, 29492);
  EXPECT_EQ(t.entries[2].state, 1);  // ESTABLISHED
  EXPECT_EQ(t.entries[3].state, 6);  // TIME_WAIT, inode 0
  EXPECT_EQ(t.entries[3].inode, 0u);
}

TEST(ProcNetTcp, Ipv6RealFormat) {
  if constexpr (std::endian::native != std::endian::little) GTEST_SKIP() << "the sample words are little-endian";
  const ProcNetTcp t = parse_proc_net_tcp(kTcp6, true);
  EXPECT_TRUE(t.malformed_lines.empty());
  ASSERT_EQ(t.entries.size(), 4u);
  EXPECT_EQ(t.entries[0].local_address, "::");
  EXPECT_EQ(t.entries[0].local_port, 8080);
  EXPECT_TRUE(t.entries[0].ipv6);
  EXPECT_EQ(t.entries[1].local_address, "::1");
  EXPECT_EQ(t.entries[1].local_port, 3306);
  EXPECT_EQ(t.entries[2].local_address, "::ffff:127.0.0.1");
  EXPECT_EQ(t.entries[3].local_address, "fe80::fc:ff:0:1");
  EXPECT_EQ(t.entries[3].local_port, 22);
}

TEST(ProcNetTcp, GarbageLinesAreCountedNotFatal) {
  const std::string text =
      std::string(kTcp) +
      "garbage\n"
      "   4: 0100007F:1F90 00000000:0000\n"                                               // too few columns
      "   5: 0100007G:1F90 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n"                          // not hex
      "   6: 0100007F:11F90 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n"                         // port too long
      "   7: 00000000000000000000000000000000:0016 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n"  // IPv6 in tcp
      "x: 0100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n"                             // bad sl
      "   8: 0100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 -1 1\n"                         // bad inode
      "\n";
  const ProcNetTcp t = parse_proc_net_tcp(text, false);
  EXPECT_EQ(t.entries.size(), 4u);
  EXPECT_EQ(t.malformed_lines, (std::vector<int>{6, 7, 8, 9, 10, 11, 12}));
  EXPECT_TRUE(parse_proc_net_tcp("", false).entries.empty());
  EXPECT_EQ(parse_proc_net_tcp("\x01\x02\xff", true).malformed_lines.size(), 1u);
}

TEST(ProcNetTcp, ListenersOnAPort) {
  std::vector<TcpSocketEntry> all = parse_proc_net_tcp(kTcp, false).entries;
  for (TcpSocketEntry& e : parse_proc_net_tcp(kTcp6, true).entries) all.push_back(e);
  EXPECT_EQ(tcp_listeners_on(all, 8080).size(), 2u);   // 127.0.0.1 and [::]
  EXPECT_EQ(tcp_listeners_on(all, 29492).size(), 1u);  // the ESTABLISHED peer port does not count
  EXPECT_TRUE(tcp_listeners_on(all, 35404).empty());   // 0x8A4C: a client port, not listening
  EXPECT_TRUE(tcp_listeners_on(all, 29500).empty());
}

}  // namespace
}  // namespace core_proc_net_tcp_test
}  // namespace preflight
