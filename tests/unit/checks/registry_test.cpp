// SPDX-License-Identifier: MIT
// The tables of checks and probes: every row is whole, ids are unique, and what a check reads is a
// probe (or a phase of the job run).
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "checks/check.hpp"
#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

TEST(Registry, EveryCheckRowIsWholeAndUnique) {
  std::set<std::string> ids;
  const std::regex id_form("^[a-z0-9_]+\\.[a-z0-9_]+$");
  ASSERT_FALSE(all_checks().empty());
  for (const CheckSpec* spec : all_checks()) {
    ASSERT_NE(spec, nullptr) << "a row of checks/registry.cpp is empty";
    EXPECT_TRUE(std::regex_match(std::string(spec->id), id_form)) << spec->id;
    EXPECT_TRUE(ids.insert(std::string(spec->id)).second) << spec->id << " is in the table twice";
    EXPECT_EQ(find_check(spec->id), spec);
    EXPECT_FALSE(spec->explain.empty()) << spec->id;
  }
}

TEST(Registry, EveryProbeRowIsWholeAndWhatChecksReadExists) {
  std::set<std::string> names;
  for (const ProbeSpec& p : all_probes()) {
    EXPECT_FALSE(p.name.empty());
    EXPECT_NE(p.run, nullptr) << p.name;
    EXPECT_TRUE(names.insert(std::string(p.name)).second) << p.name << " is in the table twice";
  }
  const std::set<std::string> phases = {"reach", "gather", "barrier", "allreduce"};  // the job run's own
  for (const CheckSpec* spec : all_checks()) {
    for (std::string_view read : split(spec->reads, ',')) {
      const std::string r(read);
      EXPECT_TRUE(names.count(r) != 0 || phases.count(r) != 0) << spec->id << " reads '" << r << "', which nothing gathers";
    }
  }
}

}  // namespace
}  // namespace preflight
