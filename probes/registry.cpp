// SPDX-License-Identifier: MIT
// The one table of probes, in run order.
#include <array>

#include "probes/probe.hpp"

namespace preflight {
namespace {
constexpr std::array<ProbeSpec, 6> kProbes = {{
    {"identity", &probe_identity},
    {"placement", &probe_placement},  // before shm: the shm need depends on the local rank count
    {"memory", &probe_memory},
    {"limits", &probe_limits},
    {"nccl_conf", &probe_nccl_conf},
    {"shm", &probe_shm},
}};
}  // namespace

std::span<const ProbeSpec> all_probes() { return kProbes; }

const Probed<MountInfo>& ProbeContext::mountinfo() const {
  if (!m_mountinfo) {
    const Probed<std::string> text = fs.read("/proc/self/mountinfo");
    m_mountinfo = text.ok() ? Probed<MountInfo>::ok(parse_mountinfo(*text.value()), text.source())
                            : Probed<MountInfo>::error(*text.error(), text.source());
  }
  return *m_mountinfo;
}

}  // namespace preflight
