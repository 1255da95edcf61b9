// SPDX-License-Identifier: MIT
// The tables of checks and probes: every row is whole, ids are unique, and what a check reads is a
// probe (or a phase of the job run).
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "checks/check.hpp"
#include "core/text.hpp"
#include "job/run.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace checks_registry_test {
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

TEST(Registry, OneProbeRowForEveryProbeSourceInItsOrder) {
  // The probe table runs the probes of core/fact_sources.hpp, each once, in the sources' order (a
  // probe reads only what an earlier one found).
  std::vector<FactSource> rows;
  for (const ProbeSpec& p : all_probes()) {
    EXPECT_NE(p.run, nullptr) << p.name();
    EXPECT_EQ(spec_of(p.source).kind, SourceKind::Probe) << p.name() << " is a phase, not a probe";
    rows.push_back(p.source);
  }
  std::vector<FactSource> expected;
  for (const FactSourceSpec& s : kFactSources) {
    if (s.kind == SourceKind::Probe) expected.push_back(s.source);
  }
  EXPECT_EQ(rows, expected);
}

TEST(Registry, WhatStartsAHelperOrProbesThisMachineHasATreeForm) {
  // Under --sysroot the judged node is not this machine: a probe that starts a GPU helper, allocates
  // in /dev/shm, reads /dev/kmsg or statvfs()s directories reads the capture's facts instead.
  const std::set<FactSource> need_tree = {FactSource::Shm,       FactSource::CudaRuntime, FactSource::GpuDriver,
                                          FactSource::Nccl,      FactSource::GpuP2p,      FactSource::GpuHealth,
                                          FactSource::KernelLog, FactSource::Disk};
  const FileSystem live;
  const FileSystem tree(::testing::TempDir());
  const EnvSnapshot env;
  const Options options;
  const ProbeContext on_live(live, env, options);
  const ProbeContext on_tree(tree, env, options);
  for (const ProbeSpec& p : all_probes()) {
    EXPECT_EQ(p.tree != nullptr, need_tree.contains(p.source)) << p.name();
    EXPECT_EQ(p.for_context(on_live), p.run) << p.name();
    EXPECT_EQ(p.for_context(on_tree), p.tree != nullptr ? p.tree : p.run) << p.name();
  }
}

TEST(Registry, EveryCheckReadsSomething) {
  // A check that declares no source would run on facts nobody gathered under --only.
  for (const CheckSpec* spec : all_checks()) EXPECT_FALSE(spec->reads.empty()) << spec->id;
}

TEST(Registry, ChecksSelectTheProbesTheyRead) {
  Options all;
  EXPECT_EQ(probes_for(all), with_needs(all_fact_sources()));
  Options limits;
  limits.only = {"host.limits"};
  EXPECT_EQ(names_of(probes_for(limits)), "identity,placement,limits");
  Options nccl_env;
  nccl_env.only = {"env.nccl"};
  const FactSources env_sources = probes_for(nccl_env);
  EXPECT_TRUE(env_sources.contains(FactSource::CudaRuntime)) << names_of(env_sources);  // nccl reads it first
  EXPECT_FALSE(env_sources.contains(FactSource::Disk)) << names_of(env_sources);
  Options skip_gpu;
  skip_gpu.skip = {"gpu.*", "cuda.*", "driver.*",  "nccl.*",   "topo.*",
                   "net.*", "comm.*", "cluster.*", "launch.*", "env.*"};
  EXPECT_FALSE(probes_for(skip_gpu).contains(FactSource::GpuDriver)) << names_of(probes_for(skip_gpu));
}

TEST(Registry, ACheckThatReadsTheAllreduceDoesNotMakeItRun) {
  // gpu.xid reads the XIDs raised during the all_reduce, which runs for comm.allreduce only: alone
  // it reads the kernel log and the GPUs, not what the all_reduce would have needed.
  Options xid;
  xid.only = {"gpu.xid"};
  const FactSources alone = probes_for(xid);
  EXPECT_EQ(names_of(alone), "identity,placement,gpu_driver,gpu_health,kernel_log");
  xid.only = {"gpu.xid", "comm.allreduce"};
  const FactSources with_allreduce = probes_for(xid);
  for (FactSource s :
       {FactSource::Allreduce, FactSource::Nccl, FactSource::CudaRuntime, FactSource::Net, FactSource::NcclConf}) {
    EXPECT_TRUE(with_allreduce.contains(s)) << names_of(with_allreduce);
  }
}

TEST(Registry, FindingTablesAreWellFormed) {
  // Codes are "<check id>/<kebab-case>", unique; a WARN, FAIL or UNKNOWN finding has a fix; every {name} of a
  // template is a parameter name (lower case, digits, underscores).
  const std::regex suffix("[a-z0-9]+(-[a-z0-9]+)*");
  std::set<std::string> codes;
  int declared = 0;
  for (const CheckSpec* spec : all_checks()) {
    for (const FindingSpec& f : spec->findings) {
      ++declared;
      const std::string code(f.code);
      const std::string prefix = std::string(spec->id) + "/";
      ASSERT_TRUE(code.starts_with(prefix)) << code << " is not a finding of " << spec->id;
      EXPECT_TRUE(std::regex_match(code.substr(prefix.size()), suffix)) << code;
      EXPECT_TRUE(codes.insert(code).second) << code << " is declared twice";
      EXPECT_FALSE(f.message.empty()) << code;
      if (f.status != Status::Pass && f.status != Status::Skip) {  // a SKIP says why, and needs no fix
        EXPECT_FALSE(f.fix.empty()) << code << " says what is wrong but not the fix";
      }
    }
  }
  EXPECT_GT(declared, 0);
}

TEST(FactSources, NamesParseAndNeedsClose) {
  constexpr FactSources s = "kernel_log,allreduce";
  static_assert(s.contains(FactSource::KernelLog) && s.contains(FactSource::Allreduce) && !s.contains(FactSource::Shm));
  EXPECT_EQ(names_of(with_needs(s)),
            "identity,placement,cuda_runtime,gpu_driver,nccl,kernel_log,net,nccl_conf,allreduce");
  EXPECT_THROW(FactSources::parse("shm,shmm"), const char*);
  EXPECT_EQ(FactSources::parse(""), FactSources{});
}

}  // namespace
}  // namespace checks_registry_test
}  // namespace preflight
