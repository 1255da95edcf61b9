// SPDX-License-Identifier: MIT
#include "core/launch.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace preflight {
namespace core_launch_test {
namespace {

// Rank 1 of `mpirun -np 3`, as Open MPI 4.1.4 sets it (OMPI_UNIVERSE_SIZE is the slot count).
const std::map<std::string, std::string> kOpenMpiRank1 = {
    {"OMPI_COMM_WORLD_RANK", "1"},
    {"OMPI_COMM_WORLD_SIZE", "3"},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
    {"OMPI_COMM_WORLD_NODE_RANK", "1"},
    {"OMPI_UNIVERSE_SIZE", "2"},
    {"PMIX_RANK", "1"},
    {"PMIX_NAMESPACE", "1234567890"},
    {"OMPI_MCA_orte_ess_num_procs", "3"},
    {"OMPI_APP_CTX_NUM_PROCS", "3"},
};

std::map<std::string, std::string> with(std::map<std::string, std::string> base,
                                        const std::map<std::string, std::string>& extra) {
  for (const auto& [k, v] : extra) base[k] = v;
  return base;
}

std::vector<std::string> names(const LaunchView& view) {
  std::vector<std::string> out;
  for (const LauncherClaim& c : view.launchers) out.push_back(c.launcher + ":" + to_string(c.role));
  return out;
}

long long value(const std::optional<Claimed>& c) { return c ? c->value : -1; }

TEST(LaunchDetect, NothingIsNoLauncher) {
  const LaunchView view = detect_launchers(EnvSnapshot());
  EXPECT_TRUE(view.launchers.empty());
  EXPECT_EQ(view.active(), nullptr);
  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.world_size, 1);
  EXPECT_EQ(p.local_ranks, 1);
  EXPECT_EQ(p.launcher, "none");
  EXPECT_FALSE(p.nodes);
}

TEST(LaunchDetect, OpenMpiFoldsItsPmixRank) {
  const LaunchView view = detect_launchers(EnvSnapshot(kOpenMpiRank1));
  ASSERT_EQ(names(view), std::vector<std::string>{"openmpi:active"});
  const LauncherClaim& c = view.launchers[0];
  EXPECT_EQ(value(c.rank), 1);
  EXPECT_EQ(value(c.size), 3);  // not OMPI_UNIVERSE_SIZE=2
  EXPECT_EQ(value(c.local_rank), 1);
  EXPECT_EQ(value(c.local_size), 3);
  EXPECT_FALSE(c.node_rank);  // OMPI_COMM_WORLD_NODE_RANK is not a node index
  EXPECT_TRUE(c.errors.empty());
  EXPECT_NE(std::find(c.variables.begin(), c.variables.end(), "PMIX_RANK=1"), c.variables.end());

  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.launcher, "openmpi");
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.world_size, 3);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.local_ranks, 3);
  EXPECT_EQ(p.source, "OMPI_COMM_WORLD_LOCAL_SIZE");
}

TEST(LaunchDetect, OpenMpiWithDifferentPmixRankIsAPeer) {
  const LaunchView view = detect_launchers(EnvSnapshot(with(kOpenMpiRank1, {{"PMIX_RANK", "2"}})));
  EXPECT_EQ(names(view), (std::vector<std::string>{"openmpi:active", "pmix:peer"}));
}

TEST(LaunchDetect, SrunWithPmix) {
  const LaunchView view = detect_launchers(EnvSnapshot({{"SLURM_PROCID", "9"},
                                                        {"SLURM_STEP_ID", "0"},
                                                        {"SLURM_NTASKS", "16"},
                                                        {"SLURM_STEP_NUM_TASKS", "16"},
                                                        {"SLURM_LOCALID", "1"},
                                                        {"SLURM_NODEID", "1"},
                                                        {"SLURM_NNODES", "2"},
                                                        {"SLURM_STEP_TASKS_PER_NODE", "8(x2)"},
                                                        {"SLURM_JOB_ID", "4242"},
                                                        {"PMIX_RANK", "9"},
                                                        {"PMIX_NAMESPACE", "slurm.pmix.4242.0"}}));
  ASSERT_EQ(names(view), std::vector<std::string>{"slurm:active"});
  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.launcher, "slurm");
  EXPECT_EQ(p.rank, 9);
  EXPECT_EQ(p.world_size, 16);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.local_ranks, 8);
  EXPECT_EQ(p.source, "SLURM_STEP_TASKS_PER_NODE");
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.node_rank, 1);
}

TEST(LaunchDetect, SrunPmi2IsSlurmNotHydra) {
  const LaunchView view = detect_launchers(EnvSnapshot({{"SLURM_PROCID", "3"},
                                                        {"SLURM_NTASKS", "4"},
                                                        {"SLURM_STEP_ID", "1"},
                                                        {"PMI_RANK", "3"},
                                                        {"PMI_SIZE", "4"},
                                                        {"PMI_FD", "7"}}));
  EXPECT_EQ(names(view), std::vector<std::string>{"slurm:active"});
}

TEST(LaunchDetect, MpirunInsideSbatchMarksSlurmStale) {
  const LaunchView view = detect_launchers(EnvSnapshot(with(
      kOpenMpiRank1, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "3"}, {"SLURM_LOCALID", "0"}, {"SLURM_JOB_ID", "7"}})));
  EXPECT_EQ(names(view), (std::vector<std::string>{"openmpi:active", "slurm:stale"}));
  EXPECT_EQ(placement_from(view, Options()).launcher, "openmpi");
}

// In the job's batch script Slurm sets SLURM_PROCID=0 and the allocation's SLURM_NTASKS, but no
// SLURM_STEP_ID: no srun started the process, so no launcher did (a world of one).
TEST(LaunchDetect, ASlurmBatchScriptIsNoLaunch) {
  const std::map<std::string, std::string> batch = {{"SLURM_PROCID", "0"},   {"SLURM_NTASKS", "16"},
                                                    {"SLURM_LOCALID", "0"},  {"SLURM_NODEID", "0"},
                                                    {"SLURM_NNODES", "2"},   {"SLURM_TASKS_PER_NODE", "8(x2)"},
                                                    {"SLURM_JOB_ID", "4242"}};
  const LaunchView view = detect_launchers(EnvSnapshot(batch));
  EXPECT_EQ(names(view), std::vector<std::string>{"slurm:stale"});
  EXPECT_EQ(view.active(), nullptr);
  EXPECT_EQ(view.launchers.at(0).outside_step, "no SLURM_STEP_ID: the job's batch script, not a task srun started");
  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.world_size, 1);
  EXPECT_EQ(p.launcher, "none");
  // the batch and extern steps where a Slurm names them; a step srun started, by either name
  EXPECT_EQ(detect_launchers(EnvSnapshot(with(batch, {{"SLURM_STEP_ID", "4294967294"}}))).active(), nullptr);
  EXPECT_EQ(detect_launchers(EnvSnapshot(with(batch, {{"SLURM_STEP_ID", "extern"}}))).active(), nullptr);
  EXPECT_EQ(names(detect_launchers(EnvSnapshot(with(batch, {{"SLURM_STEP_ID", "3"}})))),
            std::vector<std::string>{"slurm:active"});
  EXPECT_EQ(names(detect_launchers(EnvSnapshot(with(batch, {{"SLURM_STEPID", "0"}})))),
            std::vector<std::string>{"slurm:active"});
  // mpirun in the batch script: Open MPI started the process, the batch script's variables are stale
  EXPECT_EQ(names(detect_launchers(EnvSnapshot(with(kOpenMpiRank1, batch)))),
            (std::vector<std::string>{"openmpi:active", "slurm:stale"}));
}

// OMPI_COMM_WORLD_* without the PMIx variables every mpirun gives its processes (a saved environment
// sourced again, an image's ENV): no launch started this process, so no launcher did.
TEST(LaunchDetect, OpenMpiVariablesWithoutPmixAreNoLaunch) {
  const std::map<std::string, std::string> left = {{"OMPI_COMM_WORLD_RANK", "0"},
                                                   {"OMPI_COMM_WORLD_SIZE", "4"},
                                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
  const LaunchView view = detect_launchers(EnvSnapshot(left));
  EXPECT_EQ(names(view), std::vector<std::string>{"openmpi:stale"});
  EXPECT_EQ(view.active(), nullptr);
  EXPECT_EQ(value(view.launchers.at(0).size), 4);
  EXPECT_NE(view.launchers.at(0).outside_step.find("no PMIX_RANK or PMIX_NAMESPACE"), std::string::npos)
      << view.launchers.at(0).outside_step;
  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.world_size, 1);
  EXPECT_EQ(p.launcher, "none");
  // With mpirun's PMIx variables it is the launch (kOpenMpiRank1 has both).
  EXPECT_EQ(names(detect_launchers(EnvSnapshot(with(left, {{"PMIX_RANK", "0"}}))))[0], "openmpi:active");
  EXPECT_EQ(names(detect_launchers(EnvSnapshot(with(left, {{"PMIX_NAMESPACE", "prterun-x-1@1"}})))),
            std::vector<std::string>{"openmpi:active"});
  // Left in the environment of a task srun started: stale, never a peer of Slurm's claim.
  EXPECT_EQ(names(detect_launchers(
                EnvSnapshot(with(left, {{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "8"}, {"SLURM_STEP_ID", "0"}})))),
            (std::vector<std::string>{"openmpi:stale", "slurm:active"}));
}

TEST(LaunchDetect, TorchrunUnderSrunIsInnermost) {
  const LaunchView view = detect_launchers(EnvSnapshot({{"TORCHELASTIC_RUN_ID", "job7"},
                                                        {"RANK", "5"},
                                                        {"WORLD_SIZE", "8"},
                                                        {"LOCAL_RANK", "1"},
                                                        {"LOCAL_WORLD_SIZE", "4"},
                                                        {"GROUP_RANK", "1"},
                                                        {"GROUP_WORLD_SIZE", "2"},
                                                        {"SLURM_PROCID", "1"},
                                                        {"SLURM_STEP_ID", "0"},
                                                        {"SLURM_NTASKS", "2"},
                                                        {"SLURM_LOCALID", "0"},
                                                        {"SLURM_NODEID", "1"},
                                                        {"SLURM_NNODES", "2"}}));
  EXPECT_EQ(names(view), (std::vector<std::string>{"torchrun:active", "slurm:outer"}));
  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.launcher, "torchrun");
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.world_size, 8);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.local_ranks, 4);
  EXPECT_EQ(p.source, "LOCAL_WORLD_SIZE");
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.node_rank, 1);
  EXPECT_EQ(value(view.framework.rank), 5);
}

TEST(LaunchDetect, Hydra) {
  const LaunchView view = detect_launchers(
      EnvSnapshot({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}}));
  ASSERT_EQ(names(view), std::vector<std::string>{"hydra:active"});
  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.world_size, 4);
  EXPECT_EQ(p.local_ranks, 2);
  EXPECT_EQ(p.source, "MPI_LOCALNRANKS");
}

TEST(LaunchDetect, MixedOpenMpiAndHydraArePeers) {
  const LaunchView view = detect_launchers(EnvSnapshot(with(kOpenMpiRank1, {{"PMI_RANK", "0"}})));
  EXPECT_EQ(names(view), (std::vector<std::string>{"openmpi:active", "hydra:peer"}));
}

TEST(LaunchDetect, Mvapich2) {
  const LaunchView view = detect_launchers(EnvSnapshot({{"MV2_COMM_WORLD_RANK", "1"},
                                                        {"MV2_COMM_WORLD_SIZE", "2"},
                                                        {"MV2_COMM_WORLD_LOCAL_RANK", "1"},
                                                        {"MV2_COMM_WORLD_LOCAL_SIZE", "2"}}));
  ASSERT_EQ(names(view), std::vector<std::string>{"mvapich2:active"});
  EXPECT_EQ(placement_from(view, Options()).local_ranks, 2);
}

TEST(LaunchDetect, GarbageIsAnErrorNotACrash) {
  const LaunchView view = detect_launchers(EnvSnapshot({{"OMPI_COMM_WORLD_RANK", "three"},
                                                        {"OMPI_COMM_WORLD_SIZE", "-4"},
                                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "99999999999999999999"},
                                                        {"RANK", "1\x01"}}));
  ASSERT_EQ(view.launchers.size(), 1u);
  const LauncherClaim& c = view.launchers[0];
  EXPECT_FALSE(c.rank);
  EXPECT_FALSE(c.size);
  EXPECT_FALSE(c.local_size);
  ASSERT_EQ(c.errors.size(), 3u);
  EXPECT_EQ(c.errors[0], "OMPI_COMM_WORLD_RANK='three' is not a non-negative integer");
  ASSERT_EQ(view.framework.errors.size(), 1u);
  EXPECT_EQ(view.framework.errors[0], "RANK='1\\x01' is not a non-negative integer");
  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.world_size, 1);
}

TEST(LaunchDetect, SlurmTasksPerNodeNeedsTheNodeIndex) {
  const LaunchView view = detect_launchers(EnvSnapshot(
      {{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "5"}, {"SLURM_NODEID", "1"}, {"SLURM_TASKS_PER_NODE", "4,1"}}));
  EXPECT_EQ(value(view.launchers.at(0).local_size), 1);
  const LaunchView no_entry =
      detect_launchers(EnvSnapshot({{"SLURM_PROCID", "4"}, {"SLURM_NODEID", "2"}, {"SLURM_TASKS_PER_NODE", "4,1"}}));
  ASSERT_EQ(no_entry.launchers.at(0).errors.size(), 1u);
  EXPECT_EQ(no_entry.launchers[0].errors[0], "SLURM_TASKS_PER_NODE='4,1' has no entry for SLURM_NODEID=2");
}

TEST(LaunchPlacement, OptionsOverride) {
  const LaunchView view = detect_launchers(EnvSnapshot(kOpenMpiRank1));
  Options options;
  options.ranks_per_node = 8;
  options.expect_nodes = 4;
  const Placement p = placement_from(view, options);
  EXPECT_EQ(p.local_ranks, 8);
  EXPECT_EQ(p.source, "--ranks-per-node");
  EXPECT_EQ(p.nodes, 4);  // Open MPI does not say

  const LaunchView slurm =
      detect_launchers(EnvSnapshot({{"SLURM_PROCID", "0"}, {"SLURM_NNODES", "2"}, {"SLURM_STEP_ID", "0"}}));
  EXPECT_EQ(placement_from(slurm, options).nodes, 2);  // the launcher wins over --expect-nodes
}

TEST(LaunchPlacement, LocalRanksFromWorldAndNodesWhenUnsaid) {
  const LaunchView view = detect_launchers(
      EnvSnapshot({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}, {"SLURM_NNODES", "2"}, {"SLURM_STEP_ID", "0"}}));
  const Placement p = placement_from(view, Options());
  EXPECT_EQ(p.local_ranks, 8);
  EXPECT_EQ(p.source, "world size / nodes");
}

TEST(LaunchTasksPerNode, Parses) {
  EXPECT_EQ(parse_tasks_per_node("8"), (std::vector<std::int64_t>{8}));
  EXPECT_EQ(parse_tasks_per_node("8(x2)"), (std::vector<std::int64_t>{8, 8}));
  EXPECT_EQ(parse_tasks_per_node("3(x2),1"), (std::vector<std::int64_t>{3, 3, 1}));
  for (const char* bad : {"", "8(x)", "8(2)", "x", "8(x2", "8,,1", "8(x0)", "-1"}) {
    EXPECT_FALSE(parse_tasks_per_node(bad)) << bad;
  }
}

TEST(LaunchJson, ClaimEvidence) {
  const LaunchView view = detect_launchers(EnvSnapshot(kOpenMpiRank1));
  const nlohmann::json j = view.launchers.at(0);
  EXPECT_EQ(j["launcher"], "openmpi");
  EXPECT_EQ(j["role"], "active");
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["size"], 3);
  EXPECT_FALSE(j.contains("node_rank"));
  EXPECT_FALSE(j.contains("errors"));
}

}  // namespace
}  // namespace core_launch_test
}  // namespace preflight
