// SPDX-License-Identifier: MIT
// The affinity probe: where this process may run (sched_getaffinity, sized from
// /sys/devices/system/cpu/possible) and allocate (get_mempolicy as a raw system call, no libnuma;
// Mems_allowed_list of the cpuset), the online CPUs, and each NUMA node's CPUs. The process facts
// only describe this machine: with --sysroot they are Unsupported.
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "probes/affinity_probe.hpp"

#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

constexpr int kMaxCpus = 1 << 20;

/// The highest number in a kernel list file plus one ("0-255" -> 256); fallback when unreadable.
int list_span(const FileSystem& fs, const char* path, int fallback) {
  const auto text = fs.read_line(path);
  if (!text.ok()) return fallback;
  const auto list = parse_cpu_list(*text.value());
  if (!list || list->empty()) return fallback;
  return list->back() + 1;
}

Probed<std::vector<int>> process_cpus(const FileSystem& fs) {
  using Result = Probed<std::vector<int>>;
  int n = std::max(list_span(fs, "/sys/devices/system/cpu/possible", 1024), 64);
  for (;;) {
    cpu_set_t* set = CPU_ALLOC(static_cast<std::size_t>(n));
    if (set == nullptr) return Result::error(ProbeErrc::Unreadable, "CPU_ALLOC failed", "sched_getaffinity(0)");
    const std::size_t size = CPU_ALLOC_SIZE(static_cast<std::size_t>(n));
    CPU_ZERO_S(size, set);
    if (::sched_getaffinity(0, size, set) == 0) {
      std::vector<int> cpus;
      for (int c = 0; c < n; ++c) {
        if (CPU_ISSET_S(static_cast<std::size_t>(c), size, set)) cpus.push_back(c);
      }
      CPU_FREE(set);
      return Result::ok(std::move(cpus), "sched_getaffinity(0)");
    }
    const int err = errno;
    CPU_FREE(set);
    if (err != EINVAL || n >= kMaxCpus) {
      return Result::error(ProbeErrc::Unreadable, std::string("sched_getaffinity: ") + std::strerror(err),
                           "sched_getaffinity(0)");
    }
    n *= 2;  // the kernel's mask is larger than /sys said
  }
}

}  // namespace

std::string mempolicy_mode_name(int mode) {
  // Flags the kernel ORs into the mode: MPOL_F_STATIC_NODES, MPOL_F_RELATIVE_NODES, MPOL_F_NUMA_BALANCING.
  const int base = mode & ~((1 << 15) | (1 << 14) | (1 << 13));
  switch (base) {
    case 0: return "default";
    case 1: return "preferred";
    case 2: return "bind";
    case 3: return "interleave";
    case 4: return "local";
    case 5: return "preferred_many";
    case 6: return "weighted_interleave";
    default: return "unknown(" + std::to_string(base) + ")";
  }
}

namespace {

Probed<MemPolicy> process_mempolicy(const FileSystem& fs) {
  using Result = Probed<MemPolicy>;
  const char* source = "get_mempolicy()";
  constexpr std::size_t kBits = 8 * sizeof(unsigned long);
  std::size_t nodes = static_cast<std::size_t>(std::max(list_span(fs, "/sys/devices/system/node/possible", 1024), 64));
  for (;;) {
    std::vector<unsigned long> mask((nodes + kBits - 1) / kBits, 0);
    const unsigned long maxnode = mask.size() * kBits;
    int mode = 0;
    if (::syscall(SYS_get_mempolicy, &mode, mask.data(), maxnode, nullptr, 0UL) == 0) {
      MemPolicy p;
      p.mode = mempolicy_mode_name(mode);
      for (std::size_t i = 0; i < mask.size() * kBits; ++i) {
        if ((mask[i / kBits] >> (i % kBits)) & 1UL) p.nodes.push_back(static_cast<int>(i));
      }
      return Result::ok(std::move(p), source);
    }
    const int err = errno;
    if (err == EPERM || err == EACCES) {
      return Result::error(ProbeErrc::PermissionDenied,
                           "get_mempolicy: operation not permitted (seccomp: a container without CAP_SYS_NICE)", source);
    }
    if (err == ENOSYS) return Result::error(ProbeErrc::Unsupported, "get_mempolicy: the kernel has no NUMA support", source);
    if (err != EINVAL || nodes >= (1u << 16)) {
      return Result::error(ProbeErrc::Unreadable, std::string("get_mempolicy: ") + std::strerror(err), source);
    }
    nodes *= 2;
  }
}

Probed<std::vector<int>> read_list(const FileSystem& fs, const std::string& path) {
  const auto text = fs.read_line(path);
  if (!text.ok()) return Probed<std::vector<int>>::error(*text.error(), path);
  auto list = parse_cpu_list(*text.value());
  if (!list) return Probed<std::vector<int>>::error(ProbeErrc::ParseError, "not a list: '" + printable(*text.value(), 60) + "'", path);
  return Probed<std::vector<int>>::ok(std::move(*list), path);
}

Probed<std::vector<int>> mems_allowed(const FileSystem& fs) {
  const char* path = "/proc/self/status";
  const auto text = fs.read(path, 1u << 20);
  if (!text.ok()) return Probed<std::vector<int>>::error(*text.error(), path);
  for (const std::string_view line : split(*text.value(), '\n')) {
    constexpr std::string_view kKey = "Mems_allowed_list:";
    if (line.substr(0, kKey.size()) != kKey) continue;
    auto list = parse_cpu_list(trim(line.substr(kKey.size())));
    if (!list) return Probed<std::vector<int>>::error(ProbeErrc::ParseError, "malformed Mems_allowed_list", path);
    return Probed<std::vector<int>>::ok(std::move(*list), path);
  }
  return Probed<std::vector<int>>::error(ProbeErrc::ParseError, "no Mems_allowed_list line", path);
}

Probed<std::vector<NodeCpus>> numa_nodes(const FileSystem& fs) {
  using Result = Probed<std::vector<NodeCpus>>;
  const std::string dir = "/sys/devices/system/node";
  const auto names = fs.list(dir);
  if (!names.ok()) return Result::error(*names.error(), dir);
  std::vector<NodeCpus> out;
  for (const std::string& name : *names.value()) {
    if (name.rfind("node", 0) != 0) continue;
    const auto index = parse_int(std::string_view(name).substr(4));
    if (!index || *index < 0 || *index >= (1 << 20)) continue;
    const auto cpus = read_list(fs, dir + "/" + name + "/cpulist");
    if (!cpus.ok()) return Result::error(*cpus.error(), cpus.source());
    out.push_back({static_cast<int>(*index), *cpus.value()});
  }
  std::sort(out.begin(), out.end(), [](const NodeCpus& a, const NodeCpus& b) { return a.node < b.node; });
  if (out.empty()) return Result::error(ProbeErrc::NotFound, "no node<N> directory", dir);
  return Result::ok(std::move(out), dir + "/node*/cpulist");
}

}  // namespace

void probe_affinity(const ProbeContext& ctx, RankFacts& facts) {
  AffinityFacts& a = facts.affinity;
  const FileSystem& fs = ctx.fs;
  if (fs.is_live()) {
    a.cpus = process_cpus(fs);
    a.mempolicy = process_mempolicy(fs);
  } else {
    // The capture's own process binding; this process's is not the captured system's.
    a.cpus = captured_probed<std::vector<int>>(ctx, "process", "cpus", "process CPU affinity");
    a.mempolicy = captured_probed<MemPolicy>(ctx, "process", "mempolicy", "process memory policy");
  }
  a.online_cpus = read_list(fs, "/sys/devices/system/cpu/online");
  a.mems_allowed = mems_allowed(fs);
  a.numa_nodes = numa_nodes(fs);
}

}  // namespace preflight
