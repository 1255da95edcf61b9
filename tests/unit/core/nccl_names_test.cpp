// SPDX-License-Identifier: MIT
// NCCL's name-list grammar, pinned to parseStringList()/matchIfList() of NCCL 2.30 and the
// examples of NCCL's documentation (NCCL_SOCKET_IFNAME, NCCL_IB_HCA).
#include "core/nccl_names.hpp"

#include <gtest/gtest.h>

namespace preflight {
namespace core_nccl_names_test {
namespace {

bool sel(std::string_view list, std::string_view name, std::optional<int> port = std::nullopt) {
  return nccl_selects(parse_nccl_names(list), name, port);
}

TEST(NcclNames, PrefixMatch) {
  const NcclNameList l = parse_nccl_names("eth");
  EXPECT_FALSE(l.exclude);
  EXPECT_FALSE(l.exact);
  ASSERT_EQ(l.entries.size(), 1u);
  EXPECT_EQ(l.entries[0].name, "eth");
  EXPECT_FALSE(l.entries[0].port);
  EXPECT_TRUE(sel("eth", "eth0"));
  EXPECT_TRUE(sel("eth", "eth10"));
  EXPECT_TRUE(sel("eth", "eth"));
  EXPECT_FALSE(sel("eth", "ens1"));
  EXPECT_FALSE(sel("eth0", "eth"));  // the entry must be a prefix of the name, not the other way round
}

TEST(NcclNames, ExactMatch) {
  EXPECT_TRUE(parse_nccl_names("=eth0").exact);
  EXPECT_TRUE(sel("=eth0", "eth0"));
  EXPECT_FALSE(sel("=eth0", "eth01"));
  EXPECT_FALSE(sel("=eth0", "eth"));
  EXPECT_TRUE(sel("=eth0,eth1", "eth0"));
  EXPECT_TRUE(sel("=eth0,eth1", "eth1"));
  EXPECT_FALSE(sel("=eth0,eth1", "eth10"));
  EXPECT_EQ(parse_nccl_names("=eth0,eth1").entries.size(), 2u);
}

TEST(NcclNames, Exclude) {
  const NcclNameList l = parse_nccl_names("^docker");
  EXPECT_TRUE(l.exclude);
  EXPECT_FALSE(l.exact);
  EXPECT_FALSE(sel("^docker", "docker0"));
  EXPECT_FALSE(sel("^docker", "docker_gwbridge"));
  EXPECT_TRUE(sel("^docker", "eth0"));
  EXPECT_TRUE(sel("^docker,lo,virbr", "eth0"));
  EXPECT_FALSE(sel("^docker,lo,virbr", "lo"));
  EXPECT_FALSE(sel("^docker,lo,virbr", "virbr0"));
}

TEST(NcclNames, ExcludeExact) {
  const NcclNameList l = parse_nccl_names("^=docker0");
  EXPECT_TRUE(l.exclude);
  EXPECT_TRUE(l.exact);
  EXPECT_FALSE(sel("^=docker0", "docker0"));
  EXPECT_TRUE(sel("^=docker0", "docker01"));
  EXPECT_TRUE(sel("^=docker0", "eth0"));
}

TEST(NcclNames, SecondMarkerIsSkippedLikeParseStringList) {
  // ncclOsFindInterfaces strips '^' then '='; parseStringList() skips one more '^' or '='.
  const NcclNameList l = parse_nccl_names("=^eth0");
  EXPECT_FALSE(l.exclude);
  EXPECT_TRUE(l.exact);
  ASSERT_EQ(l.entries.size(), 1u);
  EXPECT_EQ(l.entries[0].name, "eth0");
  EXPECT_TRUE(sel("=^eth0", "eth0"));
  EXPECT_FALSE(sel("^^eth0", "eth0"));
  EXPECT_TRUE(sel("^^eth0", "ib0"));
}

TEST(NcclNames, HcaPorts) {
  const NcclNameList l = parse_nccl_names("mlx5_0:1,mlx5_1:1");
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_EQ(l.entries[0].name, "mlx5_0");
  EXPECT_EQ(l.entries[0].port, 1);
  EXPECT_EQ(l.entries[1].name, "mlx5_1");
  EXPECT_TRUE(sel("mlx5_0:1,mlx5_1:1", "mlx5_0", 1));
  EXPECT_FALSE(sel("mlx5_0:1,mlx5_1:1", "mlx5_0", 2));
  EXPECT_TRUE(sel("mlx5_0:1,mlx5_1:1", "mlx5_10", 1));  // still a prefix
  EXPECT_FALSE(sel("=mlx5_0:1,mlx5_1:1", "mlx5_10", 1));
  EXPECT_TRUE(sel("mlx5_0:1", "mlx5_0"));   // no port asked (sockets): any entry port matches
  EXPECT_TRUE(sel("mlx5_0", "mlx5_0", 2));  // no port in the entry: every port
}

TEST(NcclNames, ExcludeHca) {
  EXPECT_FALSE(sel("^mlx5_4", "mlx5_4", 1));
  EXPECT_FALSE(sel("^mlx5_4", "mlx5_40", 1));  // the prefix trap works for exclusion too
  EXPECT_TRUE(sel("^mlx5_4", "mlx5_0", 1));
  EXPECT_FALSE(sel("^mlx5_0:1", "mlx5_0", 1));
  EXPECT_TRUE(sel("^mlx5_0:1", "mlx5_0", 2));
}

TEST(NcclNames, EmptyEntriesAreDropped) {
  const NcclNameList l = parse_nccl_names("eth0,,eth1,");
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_EQ(l.entries[1].name, "eth1");
  EXPECT_TRUE(parse_nccl_names(":1,eth0").entries.size() == 1);  // an entry with no name is skipped
  EXPECT_EQ(parse_nccl_names(":1,eth0").entries[0].name, "eth0");
}

TEST(NcclNames, EmptyListSelectsAllOrNothing) {
  // matchIfList() returns true for an empty list; the '^' then inverts it.
  EXPECT_TRUE(sel("", "eth0"));
  EXPECT_TRUE(sel(",", "eth0"));
  EXPECT_TRUE(sel("=", "mlx5_0", 1));
  EXPECT_FALSE(sel("^", "mlx5_0", 1));
  EXPECT_FALSE(sel("^,", "eth0"));
}

TEST(NcclNames, PortIsReadWithAtoi) {
  const NcclNameList junk = parse_nccl_names("eth0:abc");
  ASSERT_EQ(junk.entries.size(), 1u);
  EXPECT_EQ(junk.entries[0].name, "eth0");
  EXPECT_EQ(junk.entries[0].port, 0);    // atoi("abc") == 0
  EXPECT_TRUE(sel("eth0:abc", "eth0"));  // sockets ask for no port
  EXPECT_FALSE(sel("mlx5_0:abc", "mlx5_0", 1));
  EXPECT_EQ(parse_nccl_names("mlx5_0:2x").entries[0].port, 2);
  EXPECT_EQ(parse_nccl_names("mlx5_0: 3").entries[0].port, 3);
  EXPECT_FALSE(parse_nccl_names("mlx5_0:-1").entries[0].port);  // -1: any port (matchPort)
  EXPECT_TRUE(sel("mlx5_0:-1", "mlx5_0", 2));
  EXPECT_EQ(parse_nccl_names("mlx5_0:1:7").entries[0].port, 1);  // the rest of the entry is skipped
}

TEST(NcclNames, PrefixTraps) {
  const std::vector<std::string> names = {"eth1", "eth10", "eth11", "eth2"};
  const auto traps = nccl_prefix_traps(parse_nccl_names("eth1"), names);
  ASSERT_EQ(traps.size(), 2u);
  EXPECT_EQ(traps[0], (std::pair<std::string, std::string>("eth1", "eth10")));
  EXPECT_EQ(traps[1].second, "eth11");
  EXPECT_TRUE(nccl_prefix_traps(parse_nccl_names("=eth1"), names).empty());
  EXPECT_TRUE(nccl_prefix_traps(parse_nccl_names("eth"), names).empty());  // a plain prefix is meant to match many
  EXPECT_EQ(nccl_prefix_traps(parse_nccl_names("^eth1"), names).size(), 2u);
  const auto hca = nccl_prefix_traps(parse_nccl_names("mlx5_1:1"), {"mlx5_0", "mlx5_1", "mlx5_10"});
  ASSERT_EQ(hca.size(), 1u);
  EXPECT_EQ(hca[0].second, "mlx5_10");
}

}  // namespace
}  // namespace core_nccl_names_test
}  // namespace preflight
