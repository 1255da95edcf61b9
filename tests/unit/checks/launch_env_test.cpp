// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "checks/check.hpp"

namespace preflight {
namespace checks_launch_env_test {
namespace {

using Env = std::map<std::string, std::string>;
using nlohmann::json;

const Env kOpenMpi3of4 = {
    {"OMPI_COMM_WORLD_RANK", "3"},
    {"OMPI_COMM_WORLD_SIZE", "4"},
    {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
    {"PMIX_RANK", "3"},
    {"PMIX_NAMESPACE", "prterun-vm-1@1"},
};

Env with(Env base, const Env& extra) {
  for (const auto& [k, v] : extra) base[k] = v;
  return base;
}

// What torch.distributed's env:// rendezvous reads besides RANK and WORLD_SIZE.
const Env kMaster = {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}};

Verdict check(const Env& env, Profile profile = Profile::Job) {
  RankFacts facts;
  facts.env = EnvSnapshot(env);
  const Options options;
  const CheckSpec* spec = find_check("launch.env");
  EXPECT_NE(spec, nullptr);
  return run_check(*spec, CheckContext{facts, options, profile});
}

struct Case {
  const char* name;
  Env env;
  Status status;
  std::vector<std::string> summary_has;
  std::string remedy_has;
  std::string code;       // the worst finding's code; "" on PASS
  nlohmann::json params;  // some of that finding's parameters
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class LaunchEnvCase : public ::testing::TestWithParam<Case> {};

TEST_P(LaunchEnvCase, Verdict) {
  const Case& c = GetParam();
  const Verdict v = check(c.env);
  EXPECT_EQ(v.status, c.status) << v.summary;
  for (const std::string& part : c.summary_has) EXPECT_NE(v.summary.find(part), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find(c.remedy_has), std::string::npos) << v.remedy;
  if (c.status == Status::Pass) {
    EXPECT_TRUE(v.remedy.empty()) << v.remedy;
    EXPECT_TRUE(v.findings.empty()) << v.summary;
    return;
  }
  ASSERT_FALSE(v.findings.empty()) << v.summary;
  const Finding& f = v.findings.front();
  EXPECT_EQ(f.code, c.code) << v.summary;
  for (const auto& [name, value] : c.params.items()) {
    ASSERT_TRUE(f.params.contains(name)) << name;
    EXPECT_EQ(f.params.at(name), value) << name;
  }
}

const Case kCases[] = {
    {"Nothing", {}, Status::Pass, {"no launcher: a world of one"}, "", "", json::object()},
    {"OpenMpi",
     kOpenMpi3of4,
     Status::Pass,
     {"openmpi: rank 3 of 4, local 3 of 4", "RANK/WORLD_SIZE not set"},
     "",
     "",
     json::object()},
    {"OpenMpiWithAgreeingRank",
     with(with(kOpenMpi3of4, {{"RANK", "3"}, {"WORLD_SIZE", "4"}}), kMaster),
     Status::Pass,
     {"openmpi: rank 3 of 4, local 3 of 4; RANK/WORLD_SIZE agree"},
     "",
     "",
     json::object()},
    {"ExportedRankUnderMpirun",
     with(with(kOpenMpi3of4, {{"RANK", "0"}, {"WORLD_SIZE", "4"}}), kMaster),
     Status::Fail,
     {"RANK=0 but OMPI_COMM_WORLD_RANK=3"},
     "Do not export RANK",
     "launch.env/framework-disagrees-with-launcher",
     {{"f0", 0}, {"l0", 3}, {"launcher", "openmpi"}, {"rank_variable", "OMPI_COMM_WORLD_RANK"}}},
    {"WorldSizeDisagrees",
     with(with(kOpenMpi3of4, {{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "8"}}), kMaster),
     Status::Fail,
     {"WORLD_SIZE=8 but OMPI_COMM_WORLD_SIZE=4", "LOCAL_WORLD_SIZE=8 but OMPI_COMM_WORLD_LOCAL_SIZE=4"},
     "set them per rank in a wrapper script (`export RANK=$OMPI_COMM_WORLD_RANK`",
     "launch.env/framework-disagrees-with-launcher",
     {{"f0", 8}, {"l0", 4}, {"f1", 8}, {"l1", 4}}},
    {"MixedLaunchers",
     with(kOpenMpi3of4, {{"PMI_RANK", "1"}, {"PMI_SIZE", "4"}}),
     Status::Fail,
     {"mixed launchers: PMI_RANK=1 but OMPI_COMM_WORLD_RANK=3"},
     "start the job with one launcher",
     "launch.env/mixed-launchers",
     {{"peer0", 1}, {"active0", 3}}},
    {"PmixDisagrees",
     with(kOpenMpi3of4, {{"PMIX_RANK", "0"}}),
     Status::Fail,
     {"PMIX_RANK=0 but OMPI_COMM_WORLD_RANK=3"},
     "",
     "launch.env/mixed-launchers",
     {{"peer0", 0}, {"active0", 3}}},
    {"RankNotBelowSize",
     {{"PMI_RANK", "4"}, {"PMI_SIZE", "4"}},
     Status::Fail,
     {"hydra: PMI_RANK=4 is not below PMI_SIZE=4"},
     "start the job with one launcher",
     "launch.env/rank-not-below-size",
     {{"claim", "hydra"}, {"rank_name", "PMI_RANK"}, {"rank", 4}, {"size_name", "PMI_SIZE"}, {"size", 4}}},
    {"LocalRankNotBelowLocalSize",
     {{"SLURM_PROCID", "2"},
      {"SLURM_NTASKS", "4"},
      {"SLURM_LOCALID", "2"},
      {"SLURM_NTASKS_PER_NODE", "2"},
      {"SLURM_STEP_ID", "0"}},
     Status::Fail,
     {"slurm: SLURM_LOCALID=2 is not below SLURM_NTASKS_PER_NODE=2"},
     "",
     "launch.env/local-rank-not-below-local-size",
     {{"claim", "slurm"}, {"local_rank", 2}, {"local_size_name", "SLURM_NTASKS_PER_NODE"}, {"local_size", 2}}},
    {"LocalSizeAboveSize",
     with(kOpenMpi3of4, {{"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}),
     Status::Fail,
     {"OMPI_COMM_WORLD_LOCAL_SIZE=8 exceeds OMPI_COMM_WORLD_SIZE=4"},
     "",
     "launch.env/local-size-above-size",
     {{"claim", "openmpi"}, {"local_size", 8}, {"size", 4}}},
    {"Garbage",
     with(kOpenMpi3of4, {{"OMPI_COMM_WORLD_RANK", "3abc"}, {"LOCAL_RANK", ""}}),
     Status::Fail,
     {"openmpi: OMPI_COMM_WORLD_RANK='3abc' is not a non-negative integer",
      "framework: LOCAL_RANK='' is not a non-negative integer"},
     "Unset or fix the variable named",
     "launch.env/not-a-number",
     {{"claim", "openmpi"}, {"error", "OMPI_COMM_WORLD_RANK='3abc' is not a non-negative integer"}}},
    {"StaleSlurmUnderMpirun",
     with(kOpenMpi3of4, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_JOB_ID", "77"}}),
     Status::Warn,
     {"stale slurm variables under openmpi: SLURM_PROCID=0 but OMPI_COMM_WORLD_RANK=3",
      "SLURM_NTASKS=2 but OMPI_COMM_WORLD_SIZE=4"},
     "Don't derive the rank from SLURM_PROCID",
     "launch.env/stale-launcher-variables",
     {{"stale", "slurm"},
      {"launcher", "openmpi"},
      {"stale0", 0},
      {"current0", 3},
      {"rank_source", "OMPI_COMM_WORLD_RANK"}}},
    {"AgreeingSlurmUnderMpirun",
     with(kOpenMpi3of4, {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}),
     Status::Pass,
     {"slurm variables of the enclosing allocation agree"},
     "",
     "",
     json::object()},
    {"SlurmBatchScript",  // preflight run directly in an sbatch script of 2 tasks (as Slurm 22.05 sets it)
     {{"SLURM_PROCID", "0"},
      {"SLURM_NTASKS", "2"},
      {"SLURM_NPROCS", "2"},
      {"SLURM_LOCALID", "0"},
      {"SLURM_NODEID", "0"},
      {"SLURM_TASKS_PER_NODE", "2"},
      {"SLURM_JOB_ID", "1"}},
     Status::Warn,
     {"Slurm's variables claim SLURM_NTASKS=2 tasks, but no srun step started this process (no SLURM_STEP_ID",
      "preflight checked this node alone"},
     "`srun --mpi=pmix preflight` checks all 2 together",
     "launch.env/outside-slurm-step",
     {{"size_variable", "SLURM_NTASKS"}, {"size", 2}}},
    {"SlurmBatchStepNamed",
     {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "1"}, {"SLURM_STEP_ID", "4294967294"}},
     Status::Warn,
     {"(SLURM_STEP_ID=4294967294: the batch step)"},
     "",
     "launch.env/outside-slurm-step",
     {{"size", 4}}},
    {"SlurmBatchScriptOfOneTask",
     {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", "1"}},
     Status::Pass,
     {"slurm: no SLURM_STEP_ID: the job's batch script, not a task srun started, a job of one task"},
     "",
     "",
     json::object()},
    {"SrunPmix",
     {{"SLURM_PROCID", "9"},
      {"SLURM_STEP_ID", "0"},
      {"SLURM_NTASKS", "16"},
      {"SLURM_LOCALID", "1"},
      {"SLURM_NODEID", "1"},
      {"SLURM_NNODES", "2"},
      {"SLURM_TASKS_PER_NODE", "8(x2)"},
      {"PMIX_RANK", "9"}},
     Status::Pass,
     {"slurm: rank 9 of 16, local 1 of 8, node 1 of 2"},
     "",
     "",
     json::object()},
    {"Torchrun",
     {{"TORCHELASTIC_RUN_ID", "r1"},
      {"RANK", "5"},
      {"WORLD_SIZE", "8"},
      {"LOCAL_RANK", "1"},
      {"LOCAL_WORLD_SIZE", "4"},
      {"GROUP_RANK", "1"},
      {"MASTER_ADDR", "node1"},
      {"MASTER_PORT", "29500"}},
     Status::Pass,
     {"torchrun: rank 5 of 8, local 1 of 4, node 1 of ?"},
     "",
     "",
     json::object()},
    {"TorchrunUnderSrun",
     {{"TORCHELASTIC_RUN_ID", "r1"},
      {"RANK", "5"},
      {"WORLD_SIZE", "8"},
      {"LOCAL_RANK", "1"},
      {"LOCAL_WORLD_SIZE", "4"},
      {"GROUP_RANK", "1"},
      {"GROUP_WORLD_SIZE", "2"},
      {"SLURM_PROCID", "1"},
      {"SLURM_NTASKS", "2"},
      {"SLURM_LOCALID", "0"},
      {"SLURM_NODEID", "1"},
      {"MASTER_ADDR", "node1"},
      {"MASTER_PORT", "29500"}},
     Status::Pass,
     {"torchrun: rank 5 of 8, local 1 of 4, node 1 of 2", "started by slurm"},
     "",
     "",
     json::object()},
    {"Hydra",
     {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}},
     Status::Pass,
     {"hydra: rank 1 of 2, local 1 of 2"},
     "",
     "",
     json::object()},
    {"TorchrunGarbageReportedOnce",
     {{"TORCHELASTIC_RUN_ID", "r1"}, {"RANK", "x"}, {"WORLD_SIZE", "8"}},
     Status::Fail,
     {"torchrun: RANK='x' is not a non-negative integer"},
     "Unset or fix",
     "launch.env/not-a-number",
     {{"claim", "torchrun"}}},
    {"RankWithoutLauncher",
     with({{"RANK", "0"}, {"WORLD_SIZE", "8"}}, kMaster),
     Status::Warn,
     {"WORLD_SIZE=8 says the job has more than one rank, but preflight was started alone"},
     "Start preflight the way the job is started",
     "launch.env/ranks-without-launcher",
     {{"variable", "WORLD_SIZE"}, {"value", 8}}},
    {"RankOneWithoutLauncher",
     with({{"RANK", "1"}, {"WORLD_SIZE", "2"}}, kMaster),
     Status::Warn,
     {"WORLD_SIZE=2 says"},
     "",
     "launch.env/ranks-without-launcher",
     {{"variable", "WORLD_SIZE"}, {"value", 2}}},
    {"WorldOfOneWithoutLauncher",
     with({{"RANK", "0"}, {"WORLD_SIZE", "1"}}, kMaster),
     Status::Pass,
     {"no launcher"},
     "",
     "",
     json::object()},
    {"OpenMpiVariablesLeftInTheEnvironment",  // no PMIX_RANK/PMIX_NAMESPACE: no mpirun started it
     {{"OMPI_COMM_WORLD_RANK", "0"},
      {"OMPI_COMM_WORLD_SIZE", "4"},
      {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}},
     Status::Warn,
     {"OMPI_COMM_WORLD_SIZE=4 claims a job of 4 ranks, but no launch started this process (no PMIX_RANK or "
      "PMIX_NAMESPACE, which mpirun gives every process it starts",
      "preflight checked this process alone"},
     "`unset $(env | sed -n 's/^\\(OMPI_COMM_WORLD_[A-Z_]*\\)=.*/\\1/p')`",
     "launch.env/launcher-variables-left",
     {{"size_variable", "OMPI_COMM_WORLD_SIZE"}, {"size", 4}}},
    {"OpenMpiVariablesOfOneLeft",
     {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}},
     Status::Pass,
     {"openmpi: no PMIX_RANK or PMIX_NAMESPACE"},
     "",
     "",
     json::object()},
    // torch.distributed's env:// rendezvous: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, where the
    // environment says the job uses it.
    {"WorldSizeWithoutRank",
     with({{"WORLD_SIZE", "1"}}, kMaster),
     Status::Fail,
     {"with WORLD_SIZE set, torch.distributed's env:// rendezvous (init_process_group's default) reads RANK, which "
      "is not set: init_process_group fails with \"Error initializing torch.distributed using env:// rendezvous: "
      "environment variable RANK expected, but not set\""},
     "Set RANK for every rank to its own rank",
     "launch.env/rank-not-set",
     {{"present", "WORLD_SIZE"}}},
    {"RankWithoutWorldSize",
     with({{"RANK", "1"}}, kMaster),
     Status::Fail,
     {"with RANK set", "reads WORLD_SIZE, which is not set", "environment variable WORLD_SIZE expected, but not set",
      "also WARN: RANK=1 says the job has more than one rank"},
     "Set WORLD_SIZE to the job's number of ranks",
     "launch.env/world-size-not-set",
     {{"present", "RANK"}}},
    {"WorldSizeWithoutRankUnderMpirun",
     with(with(kOpenMpi3of4, {{"WORLD_SIZE", "4"}}), kMaster),
     Status::Fail,
     {"environment variable RANK expected, but not set"},
     "`export RANK=$OMPI_COMM_WORLD_RANK` under mpirun",
     "launch.env/rank-not-set",
     {{"present", "WORLD_SIZE"}}},
    {"RankAndWorldSizeWithoutMaster",
     {{"RANK", "0"}, {"WORLD_SIZE", "1"}},
     Status::Warn,
     {"with RANK and WORLD_SIZE set, torch.distributed's env:// rendezvous (init_process_group's default) reads "
      "MASTER_ADDR and MASTER_PORT, and neither is set",
      "environment variable MASTER_ADDR expected, but not set"},
     "`export MASTER_PORT=29500`",
     "launch.env/master-not-set",
     {{"present", "RANK and WORLD_SIZE"}}},
    {"TorchrunWithoutMaster",
     {{"TORCHELASTIC_RUN_ID", "r1"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}},
     Status::Warn,
     {"reads MASTER_ADDR and MASTER_PORT, and neither is set"},
     "",
     "launch.env/master-not-set",
     {{"present", "RANK and WORLD_SIZE"}}},
    {"MasterAloneDoesNotImplyEnvRendezvous",  // Lightning under srun: rank from SLURM_PROCID, given in code
     with({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_ID", "0"}}, kMaster),
     Status::Pass,
     {"slurm: rank 1 of 2", "RANK/WORLD_SIZE not set"},
     "",
     "",
     json::object()},
};

INSTANTIATE_TEST_SUITE_P(LaunchEnv, LaunchEnvCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& param) { return std::string(param.param.name); });

TEST(LaunchEnv, TorchrunGarbageIsNotRepeatedAsFramework) {
  const Verdict v = check({{"TORCHELASTIC_RUN_ID", "r1"}, {"RANK", "x"}});
  EXPECT_EQ(v.summary.find("framework:"), std::string::npos) << v.summary;
}

TEST(LaunchEnv, EvidenceCarriesEveryClaim) {
  const Verdict v = check(with(kOpenMpi3of4, {{"RANK", "0"}, {"SLURM_PROCID", "0"}}));
  ASSERT_EQ(v.evidence["launchers"].size(), 2u);
  EXPECT_EQ(v.evidence["launchers"][0]["launcher"], "openmpi");
  EXPECT_EQ(v.evidence["launchers"][0]["rank"], 3);
  EXPECT_EQ(v.evidence["launchers"][1]["role"], "stale");
  EXPECT_EQ(v.evidence["framework"]["rank"], 0);
  EXPECT_EQ(v.evidence["framework"]["variables"][0], "RANK=0");
}

TEST(LaunchEnv, SkippedInImageProfile) {
  const Verdict v = check(with(kOpenMpi3of4, {{"RANK", "0"}}), Profile::Image);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_NE(v.summary.find("image build has no launcher"), std::string::npos) << v.summary;
}

TEST(LaunchEnv, VariablesOfAJobWhoseLauncherIsGoneWarn) {
  // The join found that the PMIx server PMIX_SERVER_URI41 names does not answer: the run was alone.
  RankFacts facts;
  facts.env = EnvSnapshot(Env{{"PMIX_RANK", "0"},
                              {"PMIX_NAMESPACE", "stale.job.1"},
                              {"PMIX_SERVER_URI41", "pmix-server.99999;tcp4://127.0.0.1:9"}});
  facts.placement.launcher_gone =
      "the PMIx server that PMIX_SERVER_URI* names does not answer (PMIx_Init: UNREACHABLE)";
  const Options options;
  const Verdict v = run_check(*find_check("launch.env"), CheckContext{facts, options, Profile::Node});
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.env/launcher-gone");
  EXPECT_EQ(v.finding.params["why"], facts.placement.launcher_gone);
  EXPECT_NE(v.summary.find("name a job that is gone: the PMIx server"), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find("unset $(env | sed -n 's/^\\(PMIX_"), std::string::npos) << v.remedy;
  // The same variables with a launcher that answered: nothing to say about them.
  facts.placement.launcher_gone.clear();
  EXPECT_EQ(run_check(*find_check("launch.env"), CheckContext{facts, options, Profile::Node}).status, Status::Pass);
}

TEST(LaunchEnv, ARankThatCouldNotReachALiveLauncherFails) {
  // Out of descriptors (ulimit -n 8 on one rank): PMIx_Init failed because this process could not
  // open a socket, not because the launcher is gone. The rank ran alone, outside the job.
  RankFacts facts;
  facts.env = EnvSnapshot(Env{{"PMIX_RANK", "3"},
                              {"PMIX_NAMESPACE", "prterun-node1-77@1"},
                              {"PMIX_SERVER_URI41", "prterun-node1-77@0.0;tcp4://127.0.0.1:40211"}});
  facts.placement.launcher_unreachable =
      "the PMIx server that PMIX_SERVER_URI* names does not answer (PMIx_Init: UNREACHABLE; this process cannot open "
      "a socket: Too many open files (EMFILE)): this process's own limits, not the launcher (see host.limits)";
  const Options options;
  const Verdict v = run_check(*find_check("launch.env"), CheckContext{facts, options, Profile::Node});
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.env/launcher-unreachable");
  EXPECT_NE(v.summary.find("ran alone, outside the job"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("(EMFILE)"), std::string::npos) << v.summary;
  EXPECT_EQ(v.summary.find("gone"), std::string::npos) << "not blamed on stale variables: " << v.summary;
  EXPECT_NE(v.remedy.find("open-files limit"), std::string::npos) << v.remedy;
}

TEST(LaunchEnv, RunsInNodeProfile) {
  EXPECT_EQ(check(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, kMaster), Profile::Node).status, Status::Warn);
}

TEST(LaunchEnv, EveryVariableTheEnvRendezvousMissesIsNamedWithItsFix) {
  // WORLD_SIZE alone: torch raises at RANK first, then MASTER_ADDR; both are named, each with its fix.
  const Verdict v = check({{"WORLD_SIZE", "1"}});
  ASSERT_EQ(v.status, Status::Fail) << v.summary;
  ASSERT_EQ(v.findings.size(), 2u) << v.summary;
  EXPECT_EQ(v.findings[0].code, "launch.env/rank-not-set");
  EXPECT_EQ(v.findings[1].code, "launch.env/master-not-set");
  EXPECT_NE(v.remedy.find("`export RANK=$SLURM_PROCID` under srun"), std::string::npos) << v.remedy;
  EXPECT_NE(v.remedy.find("`export MASTER_ADDR=<rank 0's host"), std::string::npos) << v.remedy;
  // An empty MASTER_ADDR is not set for torch either (MASTER_PORT alone is net.master's to judge).
  EXPECT_EQ(check(with({{"RANK", "0"}, {"WORLD_SIZE", "1"}}, {{"MASTER_ADDR", ""}, {"MASTER_PORT", ""}})).finding.code,
            "launch.env/master-not-set");
  EXPECT_EQ(check(with({{"RANK", "0"}, {"WORLD_SIZE", "1"}}, {{"MASTER_PORT", "29500"}})).status, Status::Pass);
  // An empty RANK is a value that is not a number: one finding, not two.
  const Verdict empty = check(with({{"RANK", ""}, {"WORLD_SIZE", "1"}}, kMaster));
  ASSERT_EQ(empty.findings.size(), 1u) << empty.summary;
  EXPECT_EQ(empty.findings[0].code, "launch.env/not-a-number");
}

// Under MPI, MPI's own numbers are the truth every claim is compared with.
Verdict check_mpi(const Env& env, const MpiView& mpi) {
  RankFacts facts;
  facts.env = EnvSnapshot(env);
  facts.placement.mpi = mpi;
  const Options options;
  return run_check(*find_check("launch.env"), CheckContext{facts, options, Profile::Job});
}

Env open_mpi(int rank, int size) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(size)},
          {"PMIX_RANK", std::to_string(rank)}};
}

TEST(LaunchEnvMpi, AgreementPasses) {
  const Verdict v = check_mpi(with(with(open_mpi(1, 4), {{"RANK", "1"}, {"WORLD_SIZE", "4"}}), kMaster),
                              MpiView{1, 4, 1, 4, 1, false, "Open MPI v4.1.4", {}, "pmix_local_peers"});
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_NE(v.summary.find("MPI agrees: rank 1 of 4, local 1 of 4"), std::string::npos) << v.summary;
  EXPECT_EQ(v.evidence["mpi"]["rank"], 1);
}

TEST(LaunchEnvMpi, RankExportedToEveryRankFails) {
  // mpirun -x RANK=0 -np 4: rank 1 reads RANK=0.
  const Verdict v = check_mpi(with(with(open_mpi(1, 4), {{"RANK", "0"}, {"WORLD_SIZE", "4"}}), kMaster),
                              MpiView{1, 4, 1, 4, 1, false, "Open MPI v4.1.4", {}, "pmix_local_peers"});
  EXPECT_EQ(v.status, Status::Fail);
  ASSERT_EQ(v.findings.size(), 2u) << v.summary;
  EXPECT_EQ(v.findings[0].code, "launch.env/framework-disagrees-with-mpi");
  EXPECT_EQ(v.findings[0].params["claimed0"], 0);
  EXPECT_EQ(v.findings[0].params["mpi0"], 1);
  EXPECT_EQ(v.findings[0].params["library"], "Open MPI v4.1.4");
  EXPECT_EQ(v.findings[1].code, "launch.env/framework-disagrees-with-launcher");
  EXPECT_EQ(v.findings[1].params["f0"], 0);
  EXPECT_EQ(v.findings[1].params["l0"], 1);
  EXPECT_EQ(v.finding.code, "launch.env/framework-disagrees-with-mpi");  // the first of the two decides
  EXPECT_NE(v.summary.find("the environment disagrees with MPI (Open MPI v4.1.4): RANK=0 but MPI's rank is 1"),
            std::string::npos)
      << v.summary;
  EXPECT_NE(v.remedy.find("mpirun -x RANK=…"), std::string::npos) << v.remedy;
  // Found by two comparisons (with the launcher's variables and with MPI), fixed by one sentence.
  EXPECT_EQ(v.remedy.find("Do not export"), v.remedy.rfind("Do not export")) << v.remedy;
}

TEST(LaunchEnvMpi, LauncherVariablesOfAnotherJobFail) {
  // The launcher's own variables say rank 0 of 2 (exported into the image), MPI says 3 of 8.
  const Verdict v = check_mpi(open_mpi(0, 2), MpiView{3, 8, 3, 8, 1, false, "", {}, "pmix_local_peers"});
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.env/launcher-disagrees-with-mpi");
  EXPECT_EQ(v.finding.params["library"], "MPI_COMM_WORLD");
  EXPECT_EQ(v.finding.params["claimed0"], 0);
  EXPECT_EQ(v.finding.params["mpi0"], 3);
  EXPECT_EQ(v.finding.params["claimed1"], 2);
  EXPECT_EQ(v.finding.params["mpi1"], 8);
  EXPECT_NE(v.summary.find("OMPI_COMM_WORLD_RANK=0 but MPI's rank is 3"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("OMPI_COMM_WORLD_SIZE=2 but MPI's world size is 8"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("OMPI_COMM_WORLD_LOCAL_SIZE=2 but MPI's local size is 8"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("(MPI_COMM_WORLD)"), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find("export none of them"), std::string::npos) << v.remedy;
}

TEST(LaunchEnvMpi, FrameworkVariablesWithoutALauncherFail) {
  // MPI ran (e.g. a PMI the environment does not show), the framework's variables disagree.
  const Verdict v = check_mpi({{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}},
                              MpiView{2, 4, 2, 4, 1, false, "", {}, "pmix_local_peers"});
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.finding.code, "launch.env/framework-disagrees-with-mpi");
  EXPECT_EQ(v.finding.params["claimed0"], 0);
  EXPECT_EQ(v.finding.params["mpi0"], 2);
  EXPECT_EQ(v.finding.params["launcher"], "the launcher");  // no launcher's variables to name
  EXPECT_NE(v.remedy.find("under the launcher let the framework read its rank variable"), std::string::npos)
      << v.remedy;
  EXPECT_NE(v.summary.find("LOCAL_RANK=0 but MPI's local rank is 2"), std::string::npos) << v.summary;
  EXPECT_EQ(v.summary.find("started alone"), std::string::npos) << v.summary;
}

TEST(LaunchEnvMpi, MpiWorldOfOneUnderALargerLauncherWarns) {
  // srun without --mpi=pmix: every task's MPI is a world of 1 while Slurm says 4.
  const Verdict v = check_mpi({{"SLURM_PROCID", "2"},
                               {"SLURM_NTASKS", "4"},
                               {"SLURM_LOCALID", "2"},
                               {"SLURM_JOB_ID", "7"},
                               {"SLURM_STEP_ID", "0"}},
                              MpiView{0, 1, 0, 1, 1, false, "", {}, "pmix_local_peers"});
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "launch.env/mpi-world-of-one");
  EXPECT_EQ(v.finding.params["variable"], "SLURM_NTASKS");
  EXPECT_EQ(v.finding.params["claimed_size"], 4);
  EXPECT_EQ(v.finding.params["claimed_by"], "slurm");
  EXPECT_NE(v.summary.find("MPI started as a world of 1 while SLURM_NTASKS=4 (slurm)"), std::string::npos) << v.summary;
  EXPECT_NE(v.remedy.find("srun --mpi=pmix"), std::string::npos) << v.remedy;
}

TEST(LaunchEnvMpi, SingletonMpiIsNotTheTruth) {
  const Verdict v = check_mpi(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, kMaster),
                              MpiView{0, 1, 0, 1, 1, true, "", {}, "pmix_local_peers"});
  EXPECT_EQ(v.status, Status::Warn) << v.summary;  // alone, as without MPI
}

TEST(LaunchEnvMpi, StaleSlurmVariablesAreNotComparedWithMpi) {
  const Verdict v =
      check_mpi(with(open_mpi(2, 4), {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", "7"}}),
                MpiView{2, 4, 2, 4, 1, false, "", {}, "pmix_local_peers"});
  EXPECT_NE(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.summary.find("disagrees with MPI"), std::string::npos) << v.summary;
}

TEST(LaunchEnvJob, TheSameRankOnEveryRankIsOneJobFinding) {
  // RANK=0 exported to all three ranks of an Open MPI job.
  JobFacts job;
  job.source = "mpi";
  job.world_size = 3;
  for (int r = 0; r < 3; ++r) {
    RankFacts f;
    f.placement.rank = r;
    f.env = EnvSnapshot(Env{{"OMPI_COMM_WORLD_RANK", std::to_string(r)}, {"OMPI_COMM_WORLD_SIZE", "3"}, {"RANK", "0"}});
    job.ranks.push_back(std::move(f));
  }
  const Options options;
  const CheckSpec* spec = find_check("launch.env");
  ASSERT_NE(spec->job_finding, nullptr);
  const CheckContext ctx{job.ranks.front(), options, Profile::Job, nullptr, &job};
  const std::optional<Verdict> v = spec->job_finding(ctx);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->status, Status::Fail);
  EXPECT_EQ(v->finding.code, "launch.env/same-rank-on-every-rank");
  EXPECT_EQ(v->finding.params["claims"], "RANK=0");
  EXPECT_EQ(v->finding.params["ranks"], 3);
  EXPECT_EQ(v->finding.params["first"], "RANK=0");
  EXPECT_NE(v->summary.find("every rank claims RANK=0: all 3 ranks read the same rank (`mpirun -x RANK=0`"),
            std::string::npos)
      << v->summary;
  EXPECT_NE(v->remedy.find("Remove RANK=0 from what every rank inherits"), std::string::npos) << v->remedy;
  // Ranks that read their own rank: no job finding.
  for (int r = 0; r < 3; ++r) {
    job.ranks[static_cast<std::size_t>(r)].env =
        EnvSnapshot(Env{{"OMPI_COMM_WORLD_RANK", std::to_string(r)}, {"OMPI_COMM_WORLD_SIZE", "3"}});
  }
  EXPECT_FALSE(spec->job_finding(ctx).has_value());
}

TEST(LaunchEnvMpi, ExplainNamesTheMpiComparison) {
  const std::string explain(find_check("launch.env")->explain);
  EXPECT_NE(explain.find("mpirun -x RANK=0"), std::string::npos);
  EXPECT_NE(explain.find("MPI_Comm_rank"), std::string::npos);
}

}  // namespace
}  // namespace checks_launch_env_test
}  // namespace preflight
