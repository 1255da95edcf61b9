// SPDX-License-Identifier: MIT
// Resource limits of this process, gathered by probes/limits_probe.cpp: getrlimit(2) and capget(2)
// on the live system, the tree's /proc/self/limits and /proc/self/status under --sysroot.
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
PREFLIGHT_JSON_DECLARE(Rlimit)

struct LimitsFacts {
  Probed<Rlimit> memlock;  // bytes
  Probed<Rlimit> nofile;
  Probed<Rlimit> core;                            // bytes
  Probed<bool> cap_ipc_lock;                      // effective CAP_IPC_LOCK (CapEff bit 14)
  Probed<std::string> core_pattern;               // /proc/sys/kernel/core_pattern
  Probed<std::vector<std::string>> rdma_devices;  // /sys/class/infiniband/*
};
PREFLIGHT_JSON_DECLARE(LimitsFacts)

}  // namespace preflight
