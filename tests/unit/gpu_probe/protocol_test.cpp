// SPDX-License-Identifier: MIT
// The GPU helper's protocol: requests as argv, and event names both ways.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "gpu_probe/protocol.hpp"

namespace preflight::gpu_protocol {
namespace {

TEST(GpuProtocol, EveryEventNameRoundTripsAndIsUnique) {
  std::set<std::string_view> names;
  for (const auto& [event, name] : kEventNames) {
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << name << " names two events";
    EXPECT_EQ(to_string(event), name);
    EXPECT_EQ(parse_event(name), event) << name;
  }
  EXPECT_EQ(parse_event("finished"), std::nullopt);
  EXPECT_EQ(parse_event(""), std::nullopt);
  EXPECT_EQ(parse_event("Start"), std::nullopt);  // names are exact
}

TEST(GpuProtocol, ARequestIsTheSubcommandThenOptionValuePairs) {
  Request r(command::kNcclAllreduce);
  r.with(option::kRank, "3").with(option::kLib, "");
  const std::vector<std::string> want = {"nccl-allreduce", "--rank", "3", "--lib", ""};
  EXPECT_EQ(r.args(), want);
  EXPECT_EQ(Request(command::kDriver).args(), std::vector<std::string>{"driver"});
}

}  // namespace
}  // namespace preflight::gpu_protocol
