// SPDX-License-Identifier: MIT
// RankFacts: everything one rank's probes found. Typed per area (core/facts/*.hpp); serialised to
// JSON in one way, used for the report's "ranks[].facts", for gathering to rank 0 and for replay.
#pragma once

#include <map>

#include <optional>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/facts/affinity.hpp"
#include "core/facts/disk.hpp"
#include "core/facts/gpu.hpp"
#include "core/facts/limits.hpp"
#include "core/facts/memory.hpp"
#include "core/facts/nccl_conf.hpp"
#include "core/facts/net.hpp"
#include "core/facts/pcie.hpp"
#include "core/facts/shm.hpp"
#include "core/facts/topology.hpp"
#include "core/json_util.hpp"

namespace preflight {

struct Identity {
  std::string hostname;
  std::string boot_id;  // /proc/sys/kernel/random/boot_id: with the hostname, NCCL's host identity
  std::string kernel;   // uname -r
  int pid = 0;
};
PREFLIGHT_JSON_DECLARE(Identity)

/// MPI's own view of this process (MPI_COMM_WORLD and the shared-memory split): the launcher's
/// truth that launch.env compares the environment variables with.
struct MpiView {
  int rank = 0;
  int size = 1;
  /// Among the job's ranks on this node: the launcher's PMIx local peers (the placement the MPI
  /// library's own shared-memory locality comes from), else MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).
  int local_rank = 0;
  int local_size = 1;
  int nodes = 1;           // distinct shared-memory domains (hosts) in the world
  bool singleton = false;  // MPI initialised without a launcher
  std::string library;     // MPI_Get_library_version, first line: "Open MPI v4.1.4, ..."
  /// CUDA_VISIBLE_DEVICES of every rank on this host (in local rank order; nullopt entries: unset),
  /// exchanged before the probes so that local rank 0's node-level GPU work (the peer copies) sees
  /// the union of the GPUs the node's ranks use. nullopt: not exchanged.
  std::optional<std::vector<std::optional<std::string>>> node_cvd;
  std::string locality;  // where the node's ranks came from: "pmix_local_peers" or "mpi_comm_type_shared"
};
PREFLIGHT_JSON_DECLARE(MpiView)

/// Where this rank sits in the job, as far as this rank can tell (launcher variables and options;
/// MPI's own view replaces it when the job runs under MPI).
struct Placement {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_ranks = 1;
  std::optional<int> nodes;       // unknown unless a launcher or --expect-nodes says
  std::optional<int> node_rank;   // this node's index, where the launcher says (SLURM_NODEID, GROUP_RANK)
  std::string launcher = "none";  // "openmpi", "slurm", "pmix", "hydra", "torchrun", "none"
  std::string source;             // where local_ranks came from: "--ranks-per-node", "OMPI_COMM_WORLD_LOCAL_SIZE", ...
  std::optional<MpiView> mpi;     // set when the run initialised MPI: rank/world_size/local_* above are MPI's then
  /// Why the launcher this process's variables name could not be reached (a PMIx server that does
  /// not answer: variables left from another job); empty where none was named or it answered.
  std::string launcher_gone;
  /// Why this process could not reach the PMIx server of a launcher that may well be live (its own
  /// descriptor limit: EMFILE), so it ran alone; empty otherwise.
  std::string launcher_unreachable;
};
PREFLIGHT_JSON_DECLARE(Placement)

/// Where a rank's facts about its node came from. In a job with several ranks on one host, the
/// host's local rank 0 (its leader) probes what belongs to the node (the GPU driver helper, the NCCL
/// library, the hwloc topology, the PCIe chains) and sends those facts to the host's other ranks,
/// which take them instead of probing again when every input of the probe is the same for them
/// (their CUDA_VISIBLE_DEVICES, loader path, libnccl candidate, ...). Unset: this rank probed alone
/// or is its node's leader.
struct NodeFactsOrigin {
  int leader_rank = -1;                            // the world rank whose facts were taken
  std::vector<std::string> adopted;                // the probes whose facts are the leader's
  std::map<std::string, std::string> probed_here;  // probe -> why this rank probed it itself
};
PREFLIGHT_JSON_DECLARE(NodeFactsOrigin)

struct RankFacts {
  Identity identity;
  Placement placement;
  EnvSnapshot env;
  ShmFacts shm;
  MemoryFacts memory;
  LimitsFacts limits;
  NcclConfFacts nccl_conf;
  GpuStackFacts gpu;
  Probed<TopologyFacts> topology;  // hwloc (or --topology-xml)
  PcieFacts pcie;                  // sysfs: bridge chains, ACS, IOMMU
  AffinityFacts affinity;          // this process's CPU and memory binding
  NetFacts net;
  Probed<DiskFacts> disk;                       // the checkpoint directories (--checkpoint-dir)
  std::map<std::string, double> probe_seconds;  // how long each probe took on this rank
  std::optional<NodeFactsOrigin> node_facts;    // set on a rank that took its leader's node facts
};
PREFLIGHT_JSON_DECLARE(RankFacts)

}  // namespace preflight
