// SPDX-License-Identifier: MIT
// topo.numa_affinity on hand-built facts: a two-socket node with 8 GPUs (GPUs 0-3 on NUMA 0, CPUs
// 0-15; GPUs 4-7 on NUMA 1, CPUs 16-31) and every status, with the binding each one prints.
#include <cctype>

#include <gtest/gtest.h>

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"

namespace preflight {
namespace checks_topo_numa_affinity_test {
namespace {
using namespace gpu_fixture;

std::vector<int> range(int a, int b) {
  std::vector<int> v;
  for (int i = a; i <= b; ++i) v.push_back(i);
  return v;
}

/// 8 GPUs on 2 sockets, local rank `local_rank` bound to `cpus`.
RankFacts node(int local_rank, std::vector<int> cpus) {
  RankFacts f = healthy(8);
  f.placement.rank = 8 + local_rank;
  f.placement.local_rank = local_rank;
  f.placement.local_ranks = 8;
  for (NvmlGpu& g : *f.gpu.driver.nvml_gpus.value()) {
    g.numa_node = g.index < 4 ? 0 : 1;
    g.cpu_affinity = g.index < 4 ? range(0, 15) : range(16, 31);
  }
  AffinityFacts& a = f.affinity;
  a.cpus = Probed<std::vector<int>>::ok(std::move(cpus), "sched_getaffinity(0)");
  a.mempolicy = Probed<MemPolicy>::ok({"default", {}}, "get_mempolicy()");
  a.online_cpus = Probed<std::vector<int>>::ok(range(0, 31), "/sys/devices/system/cpu/online");
  a.mems_allowed = Probed<std::vector<int>>::ok({0, 1}, "/proc/self/status");
  a.numa_nodes = Probed<std::vector<NodeCpus>>::ok({{0, range(0, 15)}, {1, range(16, 31)}}, "sysfs");
  return f;
}

Verdict judge_numa(const RankFacts& f, Profile p = Profile::Node) { return judge(kTopoNumaAffinity, f, Options{}, p); }

TEST(TopoNumaAffinity, BoundToItsGpusSocketPasses) {
  const Verdict v = judge_numa(node(5, range(16, 23)));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.summary, "rank 13 runs on CPUs 16-23, all local to its GPU 5: CPUs 16-31 (NUMA 1)");
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/bound-locally");
  EXPECT_EQ(v.finding.params["rank"], 13);
  EXPECT_EQ(v.finding.params["gpu"], 5);
  EXPECT_EQ(v.evidence["cpus"], "16-23");
  EXPECT_EQ(v.evidence["gpu_local_cpus"], "16-31");
  EXPECT_EQ(v.evidence["gpu_numa_node"], 1);
  EXPECT_EQ(v.evidence["locality_source"], "NVML (nvmlDeviceGetCpuAffinity)");
  EXPECT_EQ(v.evidence["mempolicy"]["mode"], "default");
}

TEST(TopoNumaAffinity, WrongSocketFailsWithTheBinding) {
  const Verdict v = judge_numa(node(5, range(0, 15)));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/gpu-cpus-disjoint");
  EXPECT_EQ(v.finding.params["rank"], 13);
  EXPECT_EQ(v.finding.params["local_rank"], 5);
  EXPECT_EQ(v.finding.params["gpu"], 5);
  EXPECT_EQ(v.finding.params["cpus"], "CPUs 0-15");
  EXPECT_EQ(v.finding.params["gpu_cpus"], "CPUs 16-31");
  EXPECT_EQ(v.finding.params["numa_node"], 1);
  // The binding names this rank's local rank; the fix keeps it a parameter, so ranks group into one fix.
  EXPECT_TRUE(has(v.remedy, "Bind local rank 5 to its GPU's CPUs")) << v.remedy;
  EXPECT_TRUE(has(v.finding.fix, "Bind local rank {local_rank} to its GPU's CPUs")) << v.finding.fix;
  EXPECT_TRUE(has(v.summary, "rank 13 runs only on CPUs 0-15, away from its GPU 5 (local to CPUs 16-31 (NUMA 1))"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "numactl --cpunodebind=1 --membind=1 <cmd>")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "taskset -c 16-31 <cmd>")) << v.remedy;
  // No MPI library detected: both spellings, Open MPI 4.x's first.
  EXPECT_TRUE(has(v.remedy,
                  "Open MPI 4.x: `mpirun --map-by ppr:4:socket --bind-to socket ...` (Open MPI 5: `mpirun "
                  "--map-by ppr:4:package --bind-to package ...`)"))
      << v.remedy;
}

TEST(TopoNumaAffinity, TheLauncherDecidesTheFirstLine) {
  RankFacts f = node(5, range(0, 15));
  f.placement.launcher = "openmpi";
  Verdict v = judge_numa(f);
  EXPECT_EQ(v.remedy.rfind("Open MPI 4.x: `mpirun --map-by ppr:4:socket --bind-to socket ...`", 0), 0u) << v.remedy;
  f.placement.launcher = "slurm";
  v = judge_numa(f);
  EXPECT_EQ(v.remedy.rfind("Slurm: `srun --cpu-bind=map_ldom:0,0,0,0,1,1,1,1 ...`", 0), 0u) << v.remedy;
  f.placement.launcher = "torchrun";
  v = judge_numa(f);
  EXPECT_EQ(
      v.remedy.rfind("torchrun does not bind: start each local rank under `numactl --cpunodebind=1 --membind=1", 0), 0u)
      << v.remedy;
}

TEST(TopoNumaAffinity, LocalRankWrapsAroundTheVisibleDevices) {
  const Verdict v = judge_numa(node(9, range(0, 15)));  // 9 % 8 = GPU 1, on NUMA 0
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.evidence["gpu"]["ordinal"], 1);
}

TEST(TopoNumaAffinity, UnboundOnTwoSocketsWarns) {
  const Verdict v = judge_numa(node(0, range(0, 31)));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/unbound");
  EXPECT_EQ(v.finding.params["online_count"], 32);
  EXPECT_EQ(v.finding.params["local_cpus"], "0-15");
  EXPECT_EQ(v.finding.params["rank"], 8);
  EXPECT_TRUE(has(v.summary,
                  "rank 8 is not bound: it may run on all 32 online CPUs, only 0-15 of them "
                  "local to its GPU 0 (NUMA 0)"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "numactl --cpunodebind=0 --membind=0 <cmd>")) << v.remedy;
}

TEST(TopoNumaAffinity, UnboundOnOneNumaNodePassesWithANote) {
  RankFacts f = node(0, {0, 1});
  f.affinity.online_cpus = Probed<std::vector<int>>::ok({0, 1}, "online");
  f.affinity.numa_nodes = Probed<std::vector<NodeCpus>>::ok({{0, {0, 1}}}, "sysfs");
  (*f.gpu.driver.nvml_gpus.value())[0].cpu_affinity = {1};
  const Verdict v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "is not bound (all 2 online CPUs); a single NUMA node")) << v.summary;
}

TEST(TopoNumaAffinity, SpanningSocketsWarns) {
  const Verdict v = judge_numa(node(0, range(8, 23)));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/spans-sockets");
  EXPECT_EQ(v.finding.params["cpus"], "CPUs 8-23");
  EXPECT_EQ(v.finding.params["gpu_cpus"], "CPUs 0-15");
  EXPECT_EQ(v.finding.params["local_cpus"], "8-15");
  EXPECT_TRUE(has(v.summary,
                  "runs on CPUs 8-23, beyond its GPU 0's local CPUs 0-15 (NUMA 0) (only 8-15 "
                  "of them are local): it spans sockets"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "taskset -c 0-15")) << v.remedy;
}

TEST(TopoNumaAffinity, MemoryBoundElsewhereWarns) {
  RankFacts f = node(0, range(0, 15));
  f.affinity.mempolicy = Probed<MemPolicy>::ok({"bind", {1}}, "get_mempolicy()");
  Verdict v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/mempolicy-remote");
  EXPECT_EQ(v.finding.params["mode"], "bind");
  EXPECT_EQ(v.finding.params["policy_nodes"], "1");
  EXPECT_EQ(v.finding.params["gpu_node"], 0);
  EXPECT_TRUE(has(v.summary, "memory policy is bind to node 1, not its GPU's NUMA node 0")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "numactl --cpunodebind=0 --membind=0 <cmd>")) << v.remedy;

  f.affinity.mempolicy = Probed<MemPolicy>::ok({"interleave", {0, 1}}, "get_mempolicy()");
  EXPECT_EQ(judge_numa(f).status, Status::Pass);
  f.affinity.mempolicy = Probed<MemPolicy>::ok({"preferred", {0}}, "get_mempolicy()");
  EXPECT_EQ(judge_numa(f).status, Status::Pass);

  RankFacts g = node(0, range(0, 15));
  g.affinity.mems_allowed = Probed<std::vector<int>>::ok({1}, "/proc/self/status");
  v = judge_numa(g);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/cpuset-mems-exclude");
  EXPECT_EQ(v.finding.params["mems"], "1");
  EXPECT_EQ(v.finding.params["gpu_node"], 0);
  // No CPU finding carries the binding: this one does.
  EXPECT_TRUE(has(v.remedy, "taskset -c 0-15 <cmd>")) << v.remedy;
  EXPECT_TRUE(has(v.summary, "cpuset allows memory on node 1 only, not its GPU's node 0")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "--cpuset-mems=0")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "taskset -c 0-15 <cmd>")) << v.remedy;
}

TEST(TopoNumaAffinity, BlockedGetMempolicyIsANote) {
  RankFacts f = node(0, range(0, 15));
  f.affinity.mempolicy = Probed<MemPolicy>::error(
      ProbeErrc::PermissionDenied, "get_mempolicy: operation not permitted (seccomp)", "get_mempolicy()");
  const Verdict v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "NCCL >= 2.24 then falls back to /dev/shm")) << v.summary;
}

TEST(TopoNumaAffinity, LocalityFromHwlocThenSysfs) {
  RankFacts f = node(4, range(0, 15));
  for (NvmlGpu& g : *f.gpu.driver.nvml_gpus.value()) g.cpu_affinity.clear(), g.numa_node.reset();
  TopologyFacts t;
  t.source = "this machine (hwloc 2.9.0)";
  PciEndpoint e;
  e.kind = "gpu";
  e.bus_id = "0000:1c:00.0";
  e.local_cpus = range(16, 31);
  e.numa_nodes = {1};
  t.gpus = {e};
  f.topology = Probed<TopologyFacts>::ok(t, "hwloc");
  Verdict v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.evidence["locality_source"], "hwloc (this machine (hwloc 2.9.0))");
  EXPECT_EQ(v.evidence["gpu_numa_node"], 1);

  // An XML topology of another machine (--topology-xml): that machine's binding is in no export,
  // and this host's is not that machine's: SKIP, never a verdict on this host's binding.
  f.topology.value()->this_system = false;
  v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/foreign-topology");
  EXPECT_EQ(v.finding.params["source"], "hwloc");
  EXPECT_TRUE(has(v.summary, "another machine's")) << v.summary;

  // Without a topology: sysfs, whose numa_node is -1; the node is the one whose CPUs are the GPU's.
  f.topology = Probed<TopologyFacts>::error(ProbeErrc::ApiError, "hwloc_topology_load failed", "hwloc");
  PciFunction fn;
  fn.bus_id = "0000:1c:00.0";
  fn.kind = "gpu";
  fn.local_cpus = range(16, 31);
  f.pcie.functions = Probed<std::vector<PciFunction>>::ok({fn}, "/sys/bus/pci/devices");
  v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.evidence["locality_source"], "sysfs /sys/bus/pci/devices/0000:1c:00.0/local_cpulist");
  EXPECT_EQ(v.evidence["gpu_numa_node"], 1);
  EXPECT_TRUE(has(v.remedy, "numactl --cpunodebind=1 --membind=1")) << v.remedy;
}

TEST(TopoNumaAffinity, UnknownGpuLocalityIsUnknown) {
  RankFacts f = node(0, range(0, 15));
  for (NvmlGpu& g : *f.gpu.driver.nvml_gpus.value()) g.cpu_affinity.clear();
  const Verdict v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/gpu-locality-unknown");
  EXPECT_EQ(v.finding.params["gpu"], 0);
  EXPECT_EQ(v.finding.params["bus"], "0000:18:00.0");
  EXPECT_TRUE(has(v.summary, "the CPUs local to GPU 0 are not known")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "nvidia-smi topo -m")) << v.remedy;
  // A command with a placeholder, the address named beside it: ranks whose GPUs differ share the
  // remedy, and "devices/0000:18:00.0, 0000:2a:00.0/local_cpulist" would be no command.
  EXPECT_TRUE(has(v.remedy, "PCI address (0000:18:00.0) `cat /sys/bus/pci/devices/ADDRESS/local_cpulist`")) << v.remedy;
}

TEST(TopoNumaAffinity, NoDriverIsUnknownWhenAGpuIsOnTheBus) {
  RankFacts f = no_driver();
  PciFunction fn;
  fn.bus_id = "0000:18:00.0";
  fn.kind = "gpu";
  f.pcie.functions = Probed<std::vector<PciFunction>>::ok({fn}, "/sys/bus/pci/devices");
  const Verdict v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/gpu-unknown");
  EXPECT_TRUE(has(v.finding.params["why"].get<std::string>(), "libcuda.so.1")) << v.summary;
  EXPECT_TRUE(has(v.summary, "the rank's GPU is not known")) << v.summary;
  RankFacts unprobed = no_driver();  // nothing known about the PCI bus either
  EXPECT_EQ(judge_numa(unprobed).status, Status::Unknown);
  EXPECT_EQ(judge_numa(unprobed).finding.code, "topo.numa_affinity/gpu-unknown");
}

TEST(TopoNumaAffinity, NoGpuSkips) {
  RankFacts f = no_driver();
  f.pcie.functions = Probed<std::vector<PciFunction>>::ok({}, "/sys/bus/pci/devices");
  Verdict v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/no-gpu");
  EXPECT_TRUE(has(v.finding.params["why"].get<std::string>(), "libcuda.so.1")) << v.summary;
  EXPECT_TRUE(has(v.summary, "no NVIDIA GPU on this node")) << v.summary;

  RankFacts g = node(0, {0});
  g.gpu.driver.cuda_devices = Probed<std::vector<CudaDevice>>::ok({}, "cuDeviceGetCount");
  g.env.set("CUDA_VISIBLE_DEVICES", "");
  v = judge_numa(g);
  EXPECT_EQ(v.status, Status::Skip) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/no-visible-gpu");
  EXPECT_EQ(v.finding.params["cvd_value"], "");
  EXPECT_EQ(v.summary, "CUDA sees no GPU in this process (CUDA_VISIBLE_DEVICES=): no GPU to bind the rank to");
}

TEST(TopoNumaAffinity, SysrootHasNoProcessBindingUnknown) {
  RankFacts f = node(0, {});
  f.affinity.cpus =
      Probed<std::vector<int>>::error(ProbeErrc::Unsupported, "--sysroot /x: not this system", "sched_getaffinity(0)");
  const Verdict v = judge_numa(f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_EQ(v.finding.code, "topo.numa_affinity/rank-cpus-unknown");
  EXPECT_EQ(v.finding.params["rank"], 8);
  EXPECT_TRUE(has(v.finding.params["why"].get<std::string>(), "--sysroot")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "Bind local rank 0 to its GPU's CPUs")) << v.remedy;
  EXPECT_TRUE(has(v.finding.fix, "Bind local rank {local_rank} to its GPU's CPUs")) << v.finding.fix;
  EXPECT_TRUE(has(v.summary, "--sysroot")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "numactl --cpunodebind=0 --membind=0 <cmd>")) << v.remedy;
}

TEST(TopoNumaAffinity, ImageProfileSkips) {
  EXPECT_EQ(judge_numa(node(0, range(0, 15)), Profile::Image).status, Status::Skip);
}

TEST(TopoNumaAffinity, BindingIsSpelledForTheOpenMpiDetected) {
  // Open MPI 4.1.4 rejects `package` ("The specified binding policy is not recognized"): 4.x says
  // socket, 5.x package. The line is in the evidence on PASS too.
  RankFacts f = node(5, range(0, 15));
  f.placement.launcher = "openmpi";
  f.placement.mpi =
      MpiView{13, 16, 5, 8, 2, false, "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4", {}, "pmix_local_peers"};
  Verdict v = judge_numa(f);
  EXPECT_EQ(v.remedy.rfind("Open MPI 4.x: `mpirun --map-by ppr:4:socket --bind-to socket ...` (4 ranks per socket", 0),
            0u)
      << v.remedy;
  EXPECT_FALSE(has(v.remedy, "package")) << v.remedy;
  EXPECT_EQ(v.evidence["mpirun_binding"], "Open MPI 4.x: `mpirun --map-by ppr:4:socket --bind-to socket ...`");
  f.placement.mpi->library = "Open MPI v5.0.3, package: Open MPI builder Distribution, ident: 5.0.3";
  v = judge_numa(f);
  EXPECT_EQ(v.remedy.rfind("Open MPI 5: `mpirun --map-by ppr:4:package --bind-to package ...`", 0), 0u) << v.remedy;
  EXPECT_FALSE(has(v.remedy, "socket ...")) << v.remedy;
  RankFacts ok = node(5, range(16, 23));
  ok.placement.mpi = MpiView{13, 16, 5, 8, 2, false, "Open MPI v4.1.4", {}, "pmix_local_peers"};
  v = judge_numa(ok);
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.evidence["mpirun_binding"], "Open MPI 4.x: `mpirun --map-by ppr:4:socket --bind-to socket ...`");
}

TEST(TopoNumaAffinity, PprCountsTheGpusSharingTheSocket) {
  // Sub-NUMA clustering: 4 NUMA nodes on 2 sockets, GPUs 0-3 under Package:0 (2 per NUMA node).
  // ppr:N:socket places N ranks per socket: N is the socket's 4 GPUs, not its NUMA node's 2.
  RankFacts f = node(5, range(0, 15));
  for (NvmlGpu& g : *f.gpu.driver.nvml_gpus.value()) g.numa_node = g.index / 2;
  TopologyFacts t;
  t.source = "this machine (hwloc 2.9.0)";
  t.packages = 2;
  for (int i = 0; i < 8; ++i) {
    PciEndpoint g;
    g.kind = "gpu";
    g.bus_id = cuda_bus(i);
    // lower case, as the hwloc probe stores it
    for (char& ch : g.bus_id) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    g.path = {{"machine", "Machine:0"},
              {"package", i < 4 ? "Package:0" : "Package:1"},
              {"numa", "NUMANode:" + std::to_string(i / 2)}};
    t.gpus.push_back(g);
  }
  f.topology = Probed<TopologyFacts>::ok(t, "hwloc");
  f.placement.mpi = MpiView{13, 16, 5, 8, 2, false, "Open MPI v4.1.4", {}, "pmix_local_peers"};
  f.placement.launcher = "openmpi";
  Verdict v = judge_numa(f);
  EXPECT_TRUE(has(v.remedy, "mpirun --map-by ppr:4:socket --bind-to socket")) << v.remedy;
  EXPECT_EQ(v.evidence["gpus_per_socket"], 4);
  // Without hwloc's packages: the GPUs of the rank's NUMA node.
  f.topology = Probed<TopologyFacts>{};
  v = judge_numa(f);
  EXPECT_TRUE(has(v.remedy, "mpirun --map-by ppr:2:socket --bind-to socket")) << v.remedy;
}

}  // namespace
}  // namespace checks_topo_numa_affinity_test
}  // namespace preflight
