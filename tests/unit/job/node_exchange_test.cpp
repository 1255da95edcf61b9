// SPDX-License-Identifier: MIT
// The exchanges between the ranks of a host (job/node_exchange.hpp) in a fake world: every rank's
// CUDA_VISIBLE_DEVICES reaches the other ranks of its host in local rank order, with rank 0's
// liveness offer; what cannot be exchanged gives no table rather than a wrong one; the node facts
// travel from the host's leader to its ranks, or each says why it probes them itself.
#include <gtest/gtest.h>

#include <chrono>

#include "job/fake_world.hpp"
#include "job/node_exchange.hpp"

namespace preflight {
namespace job_node_exchange_test {
namespace {

using testing::FakeWorld;
using testing::in;
using namespace std::chrono_literals;
using Behaviour = FakeWorld::Behaviour;

std::string host_of(const Transport& t, int per_node) { return "node" + std::to_string(t.rank() / per_node + 1); }

TEST(NodeExchange, EveryRankGetsItsHostsDevicesInLocalRankOrderAndTheWatch) {
  FakeWorld world(4, 2);  // node1: ranks 0, 1; node2: ranks 2, 3
  const std::vector<std::optional<std::string>> cvd = {"0", "1", std::nullopt, "GPU-5f3c"};
  const nlohmann::json offer = {{"addresses", {"127.0.0.1"}}, {"port", 4242}, {"token", "t"}};
  const auto got = world.run<VisibleDevicesOutcome>([&](Transport& t) {
    return exchange_visible_devices(t, host_of(t, 2), cvd[static_cast<std::size_t>(t.rank())],
                                    t.rank() == 0 ? offer : nlohmann::json(), in(5000ms));
  });
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(got[static_cast<std::size_t>(r)].has_value());
    EXPECT_TRUE(got[static_cast<std::size_t>(r)]->completed) << "rank " << r;
  }
  ASSERT_TRUE(got[1]->node.has_value());
  EXPECT_EQ(*got[1]->node, (NodeVisibleDevices{"0", "1"}));
  EXPECT_EQ(*got[0]->node, (NodeVisibleDevices{"0", "1"}));
  EXPECT_EQ(*got[3]->node, (NodeVisibleDevices{std::nullopt, "GPU-5f3c"}));  // unset stays unset
  EXPECT_TRUE(got[0]->watch.is_null());                                      // rank 0 does not connect to its own watch
  EXPECT_EQ(got[2]->watch, offer);
}

TEST(NodeExchange, AValueTooLongForItsRecordGivesNoTableInsteadOfAWrongOne) {
  const std::string record = visible_devices_record("node1", 0, std::string(5000, '7'));
  EXPECT_EQ(record.size(), kVisibleDevicesRecordBytes);
  const std::string ok = visible_devices_record("node1", 1, "3");
  const nlohmann::json table = nlohmann::json::parse(visible_devices_table({record, ok}, nullptr));
  EXPECT_TRUE(table["hosts"].is_null());
  EXPECT_FALSE(table.contains("watch"));
  EXPECT_FALSE(visible_devices_of(table, "node1", 2).has_value());
}

TEST(NodeExchange, AHostWhoseCountDiffersFromItsLocalSizeHasNoValues) {
  const nlohmann::json table =
      nlohmann::json::parse(visible_devices_table({visible_devices_record("node1", 0, "0")}, nullptr));
  ASSERT_TRUE(visible_devices_of(table, "node1", 1).has_value());
  EXPECT_FALSE(visible_devices_of(table, "node1", 2).has_value());  // a rank of the host is not in it
  EXPECT_FALSE(visible_devices_of(table, "node9", 1).has_value());
  EXPECT_FALSE(visible_devices_of(nlohmann::json("garbage"), "node1", 1).has_value());
}

TEST(NodeExchange, ASilentRankLeavesTheExchangeIncompleteAtItsDeadline) {
  FakeWorld world(3);
  world.set(2, FakeWorld::Rank{Behaviour::Silent});
  const auto start = Clock::now();
  const auto got = world.run<VisibleDevicesOutcome>(
      [&](Transport& t) { return exchange_visible_devices(t, "node1", "0", nlohmann::json(), in(400ms)); });
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 3.0);
  ASSERT_TRUE(got[0].has_value());
  // Rank 0's gather expired: it sends an empty table, which tells the others to stop waiting.
  EXPECT_FALSE(got[0]->node.has_value());
  ASSERT_TRUE(got[1].has_value());
  EXPECT_FALSE(got[1]->node.has_value());
  EXPECT_FALSE(got[2].has_value());  // silent: took no part
}

TEST(NodeExchange, TheLeadersNodeFactsReachItsHostsRanks) {
  FakeWorld world(4, 2);
  const auto got = world.run<NodeFactsOutcome>([&](Transport& t) {
    if (t.view().local_rank == 0) {
      RankFacts facts;
      facts.identity.hostname = host_of(t, 2);
      facts.identity.boot_id = "boot-" + std::to_string(t.rank());
      EXPECT_EQ(send_node_facts(t, facts, in(5000ms)), "");
      return NodeFactsOutcome{};
    }
    return receive_node_facts(t, in(5000ms));
  });
  ASSERT_TRUE(got[1].has_value() && got[1]->facts);
  EXPECT_EQ(got[1]->facts->identity.hostname, "node1");
  EXPECT_EQ(got[1]->facts->identity.boot_id, "boot-0");
  EXPECT_EQ(got[3]->facts->identity.boot_id, "boot-2");
  EXPECT_EQ(got[3]->incident, "");
}

TEST(NodeExchange, NodeFactsThatDoNotComeOrDoNotParseAreProbedByTheRankItself) {
  FakeWorld late(2, 2);
  late.set(0, FakeWorld::Rank{Behaviour::Silent});
  const auto none = late.run<NodeFactsOutcome>([&](Transport& t) { return receive_node_facts(t, in(200ms)); });
  ASSERT_TRUE(none[1].has_value());
  EXPECT_EQ(none[1]->facts, nullptr);
  EXPECT_EQ(none[1]->incident,
            "rank 1: its host's local rank 0 sent no node facts before the probe deadline: it probed them itself");

  FakeWorld garbled(2, 2);
  const auto bad = garbled.run<NodeFactsOutcome>([&](Transport& t) {
    if (t.rank() == 0) {
      (void)t.node_broadcast("{not json", in(5000ms));
      return NodeFactsOutcome{};
    }
    return receive_node_facts(t, in(5000ms));
  });
  ASSERT_TRUE(bad[1].has_value());
  EXPECT_EQ(bad[1]->facts, nullptr);
  EXPECT_NE(bad[1]->incident.find("did not parse"), std::string::npos) << bad[1]->incident;
}

}  // namespace
}  // namespace job_node_exchange_test
}  // namespace preflight
