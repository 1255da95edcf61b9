// SPDX-License-Identifier: MIT
// The one table of probes, in run order.
#include <algorithm>
#include <array>

#include "probes/probe.hpp"

namespace preflight {
namespace {
constexpr std::array<ProbeSpec, 14> kProbes = {{
    {"identity", &probe_identity},
    {"placement", &probe_placement},  // before shm: the shm need depends on the local rank count
    {"cuda_runtime", &probe_cuda_runtime},  // files only; finds the libnccl candidates
    {"gpu_driver", &probe_gpu_driver},      // the contained GPU helper: NVML, CUDA driver, smoke test
    {"nccl", &probe_nccl},                  // the contained GPU helper loads the first candidate
    {"gpu_p2p", &probe_gpu_p2p},            // the contained GPU helper: peer copies where NVML claims P2P
    {"topology", &probe_topology},          // hwloc with I/O devices, or --topology-xml
    {"pcie", &probe_pcie},                  // sysfs chains, ACS bits, IOMMU
    {"affinity", &probe_affinity},          // this process's CPU and memory binding
    {"net", &probe_net},                    // interfaces, RDMA devices, MASTER_ADDR/MASTER_PORT
    {"memory", &probe_memory},
    {"limits", &probe_limits},
    {"nccl_conf", &probe_nccl_conf},
    {"shm", &probe_shm},
}};
}  // namespace

std::span<const ProbeSpec> all_probes() { return kProbes; }

std::chrono::milliseconds ProbeContext::helper_deadline() const {
  using std::chrono::milliseconds;
  milliseconds budget(static_cast<long long>(std::min(options.timeout_s, 10.0) * 1000.0));
  if (deadline != std::chrono::steady_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    budget = std::min(budget, left * 2 / 5);
  }
  return std::max(budget, milliseconds(200));
}

const Probed<MountInfo>& ProbeContext::mountinfo() const {
  if (!m_mountinfo) {
    const Probed<std::string> text = fs.read("/proc/self/mountinfo");
    m_mountinfo = text.ok() ? Probed<MountInfo>::ok(parse_mountinfo(*text.value()), text.source())
                            : Probed<MountInfo>::error(*text.error(), text.source());
  }
  return *m_mountinfo;
}

}  // namespace preflight
