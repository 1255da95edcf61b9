// SPDX-License-Identifier: MIT
// The affinity probe: where this process may run and allocate (the Os seam's sched_getaffinity and
// get_mempolicy, their masks sized from /sys/devices/system/{cpu,node}/possible; Mems_allowed_list
// of the cpuset), the online CPUs, and each NUMA node's CPUs. Under --sysroot the process facts are
// the capture's own (Unsupported in a plain tree): this process's binding is not the captured node's.
#include <algorithm>

#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

/// The highest number in a kernel list file plus one ("0-255" -> 256); fallback when unreadable.
int list_span(const FileSystem& fs, const char* path, int fallback) {
  const auto text = fs.read_line(path);
  if (!text.ok()) return fallback;
  const auto list = parse_cpu_list(*text.value());
  if (!list || list->empty()) return fallback;
  return list->back() + 1;
}

Probed<std::vector<int>> read_list(const FileSystem& fs, const std::string& path) {
  const auto text = fs.read_line(path);
  if (!text.ok()) return Probed<std::vector<int>>::error(*text.error(), path);
  auto list = parse_cpu_list(*text.value());
  if (!list)
    return Probed<std::vector<int>>::error(ProbeErrc::ParseError, "not a list: '" + printable(*text.value(), 60) + "'",
                                           path);
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
  // The masks' first sizes: how many CPUs and nodes the kernel may have (grown when it has more).
  a.cpus = ctx.os.process_cpus(list_span(fs, "/sys/devices/system/cpu/possible", 1024));
  a.mempolicy = ctx.os.process_mempolicy(list_span(fs, "/sys/devices/system/node/possible", 1024));
  a.online_cpus = read_list(fs, "/sys/devices/system/cpu/online");
  a.mems_allowed = mems_allowed(fs);
  a.numa_nodes = numa_nodes(fs);
}

}  // namespace preflight
