// SPDX-License-Identifier: MIT
// Host identity as NCCL computes it (hostname + boot_id), kernel release, pid.
#include <sys/utsname.h>
#include <unistd.h>

#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {

void probe_identity(const ProbeContext& ctx, RankFacts& facts) {
  Identity& id = facts.identity;
  // Under --sysroot the tree's own files, or nothing: never this machine's name or kernel.
  const bool live = ctx.fs.is_live();
  if (auto h = ctx.fs.read_line("/proc/sys/kernel/hostname"); h.ok() && !live) {
    id.hostname = *h.value();
  } else if (live) {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) == 0) id.hostname = buf;
  }
  if (auto b = ctx.fs.read_line("/proc/sys/kernel/random/boot_id"); b.ok()) id.boot_id = *b.value();
  if (auto k = ctx.fs.read_line("/proc/sys/kernel/osrelease"); k.ok()) {
    id.kernel = *k.value();
  } else if (live) {
    struct utsname u {};
    if (::uname(&u) == 0) id.kernel = u.release;
  }
  id.pid = static_cast<int>(::getpid());
}

}  // namespace preflight
