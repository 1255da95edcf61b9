// SPDX-License-Identifier: MIT
// The job's status table (core/job.hpp): a rank never heard from is named with the host the
// launcher placed it on, from the PMIx join's placement, and a rank heard from keeps its own.
#include "core/job.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job_fixture.hpp"

namespace preflight {
namespace core_job_test {
namespace {

using job_fixture::status_row;

TEST(JobStatus, ARankNeverHeardFromIsPlacedOnTheLaunchersHost) {
  JobFacts j;
  j.world_size = 4;
  j.status = {status_row(0, true, "node1"), status_row(1, true, "node1"), status_row(2, false, ""),
              status_row(3, false, "")};
  EXPECT_EQ(j.describe_rank(2), "rank 2 (never heard from)");
  j.place_unheard({"node1", "node1", "node2", ""});
  EXPECT_EQ(j.describe_rank(2), "rank 2 (never heard from; placed on node2)");
  EXPECT_EQ(j.describe_rank(3), "rank 3 (never heard from)") << "the launcher did not say";
  EXPECT_EQ(j.status[0].host, "node1");
}

TEST(JobStatus, PlacementNeverOverridesWhatARankSaid) {
  JobFacts j;
  j.status = {status_row(0, true, "node1"), status_row(1, false, "where-the-join-saw-it")};
  j.place_unheard({"other", "other"});
  EXPECT_EQ(j.status[0].host, "node1");
  EXPECT_EQ(j.status[1].host, "where-the-join-saw-it");
  j.place_unheard({});  // no placement (no PMIx join, or a world too large to look up)
  EXPECT_EQ(j.status[1].host, "where-the-join-saw-it");
}

}  // namespace
}  // namespace core_job_test
}  // namespace preflight
