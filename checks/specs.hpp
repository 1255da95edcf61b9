// SPDX-License-Identifier: MIT
// Every check's CheckSpec, declared once. Each check file defines its spec in a namespace of its
// own (`host_limits_check` for checks/host_limits.cpp), so that the names inside one check file
// (run, kFindings, kExplain, ...) never meet another's when several files compile as one unity
// translation unit; the using-declarations make them `preflight::kHostLimits` for the registry
// (checks/registry.cpp) and the tests.
#pragma once

#include "checks/check.hpp"

namespace preflight {

namespace launch_env_check {
extern const CheckSpec kLaunchEnv;
}
namespace shm_capacity_check {
extern const CheckSpec kShmCapacity;
}
namespace host_memory_check {
extern const CheckSpec kHostMemory;
}
namespace host_disk_check {
extern const CheckSpec kHostDisk;
}
namespace host_limits_check {
extern const CheckSpec kHostLimits;
}
namespace env_nccl_check {
extern const CheckSpec kEnvNccl;
}
namespace driver_loaded_check {
extern const CheckSpec kDriverLoaded;
}
namespace cuda_runtime_check {
extern const CheckSpec kCudaRuntime;
}
namespace cuda_arch_check {
extern const CheckSpec kCudaArch;
}
namespace cuda_smoke_check {
extern const CheckSpec kCudaSmoke;
}
namespace nccl_library_check {
extern const CheckSpec kNcclLibrary;
}
namespace gpu_count_check {
extern const CheckSpec kGpuCount;
}
namespace gpu_busy_check {
extern const CheckSpec kGpuBusy;
}
namespace gpu_memory_health_check {
extern const CheckSpec kGpuMemoryHealth;
}
namespace gpu_clocks_check {
extern const CheckSpec kGpuClocks;
}
namespace gpu_links_check {
extern const CheckSpec kGpuLinks;
}
namespace gpu_fabric_check {
extern const CheckSpec kGpuFabric;
}
namespace gpu_xid_check {
extern const CheckSpec kGpuXid;
}
namespace net_socket_ifname_check {
extern const CheckSpec kNetSocketIfname;
}
namespace net_ib_check {
extern const CheckSpec kNetIb;
}
namespace net_gpu_nic_affinity_check {
extern const CheckSpec kNetGpuNicAffinity;
}
namespace net_master_check {
extern const CheckSpec kNetMaster;
}
namespace topo_p2p_check {
extern const CheckSpec kTopoP2p;
}
namespace topo_pcie_acs_check {
extern const CheckSpec kTopoPcieAcs;
}
namespace topo_numa_affinity_check {
extern const CheckSpec kTopoNumaAffinity;
}
namespace launch_ranks_check {
extern const CheckSpec kLaunchRanks;
}
namespace launch_gpu_binding_check {
extern const CheckSpec kLaunchGpuBinding;
}
namespace cluster_consistency_check {
extern const CheckSpec kClusterConsistency;
}
namespace cluster_shm_namespace_check {
extern const CheckSpec kClusterShmNamespace;
}
namespace net_reachability_check {
extern const CheckSpec kNetReachability;
}
namespace comm_barrier_check {
extern const CheckSpec kCommBarrier;
}
namespace comm_allreduce_check {
extern const CheckSpec kCommAllreduce;
}

using cluster_consistency_check::kClusterConsistency;
using cluster_shm_namespace_check::kClusterShmNamespace;
using comm_allreduce_check::kCommAllreduce;
using comm_barrier_check::kCommBarrier;
using cuda_arch_check::kCudaArch;
using cuda_runtime_check::kCudaRuntime;
using cuda_smoke_check::kCudaSmoke;
using driver_loaded_check::kDriverLoaded;
using env_nccl_check::kEnvNccl;
using gpu_busy_check::kGpuBusy;
using gpu_clocks_check::kGpuClocks;
using gpu_count_check::kGpuCount;
using gpu_fabric_check::kGpuFabric;
using gpu_links_check::kGpuLinks;
using gpu_memory_health_check::kGpuMemoryHealth;
using gpu_xid_check::kGpuXid;
using host_disk_check::kHostDisk;
using host_limits_check::kHostLimits;
using host_memory_check::kHostMemory;
using launch_env_check::kLaunchEnv;
using launch_gpu_binding_check::kLaunchGpuBinding;
using launch_ranks_check::kLaunchRanks;
using nccl_library_check::kNcclLibrary;
using net_gpu_nic_affinity_check::kNetGpuNicAffinity;
using net_ib_check::kNetIb;
using net_master_check::kNetMaster;
using net_reachability_check::kNetReachability;
using net_socket_ifname_check::kNetSocketIfname;
using shm_capacity_check::kShmCapacity;
using topo_numa_affinity_check::kTopoNumaAffinity;
using topo_p2p_check::kTopoP2p;
using topo_pcie_acs_check::kTopoPcieAcs;

}  // namespace preflight
