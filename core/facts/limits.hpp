// SPDX-License-Identifier: MIT
// Resource limits of this process, gathered by probes/limits_probe.cpp from /proc/self/limits
// (through the sysroot seam) and /proc/self/status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "core/probed.hpp"

namespace preflight {

struct Rlimit {
  std::optional<std::uint64_t> soft;  // nullopt: unlimited
  std::optional<std::uint64_t> hard;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Rlimit, soft, hard)

struct LimitsFacts {
  Probed<Rlimit> memlock;  // bytes
  Probed<Rlimit> nofile;
  Probed<Rlimit> core;     // bytes
  Probed<bool> cap_ipc_lock;                      // CapEff bit 14
  Probed<std::string> core_pattern;               // /proc/sys/kernel/core_pattern
  Probed<std::vector<std::string>> rdma_devices;  // /sys/class/infiniband/*
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LimitsFacts, memlock, nofile, core, cap_ipc_lock, core_pattern, rdma_devices)

}  // namespace preflight
