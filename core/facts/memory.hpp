// SPDX-License-Identifier: MIT
// Facts about host memory, gathered by probes/memory_probe.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

/// From /proc/meminfo (kB values converted to bytes).
struct MemInfo {
  std::uint64_t mem_total = 0;
  std::uint64_t mem_available = 0;
  std::uint64_t swap_total = 0;
  std::uint64_t swap_free = 0;
};
PREFLIGHT_JSON_DECLARE(MemInfo)

/// The memory limit of this process's cgroup (v2 memory.max / v1 memory.limit_in_bytes), walked up
/// to the root: the smallest limit on the path wins.
struct CgroupMemory {
  int version = 0;                             // 1 or 2
  std::string path;                            // cgroup path of the limiting group (this process's when none)
  std::optional<std::uint64_t> limit;          // nullopt: unlimited ("max")
  std::optional<std::uint64_t> usage;          // memory.current / memory.usage_in_bytes
  std::optional<std::uint64_t> inactive_file;  // reclaimable page cache inside usage (memory.stat)
  std::optional<std::uint64_t> swap_limit;     // swap beyond `limit`: memory.swap.max, v1 memsw - limit;
                                               // nullopt: unlimited or not accounted
};
PREFLIGHT_JSON_DECLARE(CgroupMemory)

struct MemoryFacts {
  Probed<MemInfo> meminfo;
  Probed<CgroupMemory> cgroup;
};
PREFLIGHT_JSON_DECLARE(MemoryFacts)

}  // namespace preflight
