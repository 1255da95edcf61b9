// SPDX-License-Identifier: MIT
// Host identity as NCCL computes it (hostname + boot_id), kernel release, pid.
#include <unistd.h>

#include "probes/probe.hpp"

namespace preflight {

void probe_identity(const ProbeContext& ctx, RankFacts& facts) {
  Identity& id = facts.identity;
  // The files are read everywhere (a capture keeps them); the system calls answer for the live
  // system, and a --sysroot tree has only its files: never this machine's name or kernel.
  const Probed<std::string> hostname_file = ctx.fs.read_line("/proc/sys/kernel/hostname");
  if (std::optional<std::string> h = ctx.os.hostname()) {
    id.hostname = std::move(*h);
  } else if (hostname_file.ok()) {
    id.hostname = *hostname_file.value();
  }
  if (auto b = ctx.fs.read_line("/proc/sys/kernel/random/boot_id"); b.ok()) id.boot_id = *b.value();
  if (auto k = ctx.fs.read_line("/proc/sys/kernel/osrelease"); k.ok()) {
    id.kernel = *k.value();
  } else if (std::optional<std::string> release = ctx.os.kernel_release()) {
    id.kernel = std::move(*release);
  }
  id.pid = static_cast<int>(::getpid());
}

}  // namespace preflight
