// SPDX-License-Identifier: MIT
// Where this process may run and allocate: its CPU affinity (sched_getaffinity), its memory policy
// (get_mempolicy), the cpuset cgroup's view (/proc/self/status), and the NUMA nodes' CPUs from
// sysfs, so topo.numa_affinity can judge the rank against its GPU even without hwloc.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

struct MemPolicy {
  std::string mode;  // "default", "preferred", "bind", "interleave", "local", "preferred_many", "weighted_interleave"
  std::vector<int> nodes;  // the policy's node mask (empty for default/local)
};
PREFLIGHT_JSON_DECLARE(MemPolicy)

struct NodeCpus {
  int node = 0;
  std::vector<int> cpus;
};
PREFLIGHT_JSON_DECLARE(NodeCpus)

struct AffinityFacts {
  Probed<std::vector<int>> cpus;             // sched_getaffinity(0)
  Probed<MemPolicy> mempolicy;               // get_mempolicy(); EPERM in seccomp'd containers
  Probed<std::vector<int>> online_cpus;      // /sys/devices/system/cpu/online
  Probed<std::vector<int>> mems_allowed;     // /proc/self/status Mems_allowed_list
  Probed<std::vector<NodeCpus>> numa_nodes;  // /sys/devices/system/node/node*/cpulist
};
PREFLIGHT_JSON_DECLARE(AffinityFacts)

}  // namespace preflight
