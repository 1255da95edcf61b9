// SPDX-License-Identifier: MIT
// kernel_log: this boot's NVIDIA events from /dev/kmsg — Xid, SXid and "fallen off the bus" —
// read to the end without blocking (O_NONBLOCK: EAGAIN is the end, EPIPE means records were
// overwritten and reading goes on). Under --sysroot the tree's /dev/kmsg file (the same record
// format) is read through the file-system seam; a capture keeps the NVIDIA lines in the GPU facts.
// Without permission (kernel.dmesg_restrict=1 without CAP_SYSLOG, most containers) the fact is
// PermissionDenied, never an empty log.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/kmsg.hpp"
#include "core/text.hpp"
#include "probes/image_profile.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

using Log = Probed<KernelLogFacts>;

constexpr char kKmsg[] = "/dev/kmsg";
constexpr std::size_t kMaxLog = 16u << 20;        // the ring is at most a few MiB
constexpr std::size_t kMaxKeptLines = 64u << 10;  // the NVIDIA lines kept for a capture

const char* kNeeds =
    "reading the kernel log needs CAP_SYSLOG (or kernel.dmesg_restrict=0); in a container "
    "--cap-add syslog, or run preflight on the host";

/// Every record of the live /dev/kmsg, one read() each, to the end of the ring.
Probed<std::string> read_live_kmsg() {
  const int fd = ::open(kKmsg, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == EPERM || e == EACCES)
      return Probed<std::string>::error(ProbeErrc::PermissionDenied,
                                        std::string(kKmsg) + ": " + std::strerror(e) + " (" + kNeeds + ")", kKmsg);
    return Probed<std::string>::error(e == ENOENT ? ProbeErrc::NotFound : ProbeErrc::Unreadable,
                                      std::string(kKmsg) + ": " + std::strerror(e), kKmsg);
  }
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      if (text.empty() || text.back() != '\n') text.push_back('\n');
      if (text.size() > kMaxLog) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) continue;  // overwritten records: the next read returns the next one
    if (n < 0 && (errno == EPERM || errno == EACCES)) {
      const int e = errno;
      ::close(fd);
      return Probed<std::string>::error(ProbeErrc::PermissionDenied,
                                        std::string(kKmsg) + ": " + std::strerror(e) + " (" + kNeeds + ")", kKmsg);
    }
    break;  // EAGAIN: the end of the ring; 0 or another error: nothing more
  }
  ::close(fd);
  return Probed<std::string>::ok(std::move(text), kKmsg);
}

}  // namespace

KernelLogFacts kernel_log_facts(std::string_view text, std::string source) {
  KernelLogFacts k;
  k.source = std::move(source);
  const std::vector<KmsgRecord> records = parse_kmsg(text);
  k.records = records.size();
  for (const GpuKernelEvent& e : nvidia_kernel_events(records)) {
    KernelGpuEvent f;
    f.kind = e.kind == GpuKernelEvent::Kind::Xid    ? "xid"
             : e.kind == GpuKernelEvent::Kind::SXid ? "sxid"
                                                    : "fallen_off_bus";
    f.code = e.code;
    f.bus_id = e.bus_id;
    f.usec = e.usec;
    f.text = e.text.substr(0, 300);
    k.events.push_back(std::move(f));
  }
  k.nvidia_lines = nvidia_kmsg_lines(text);
  if (k.nvidia_lines.size() > kMaxKeptLines) k.nvidia_lines.resize(kMaxKeptLines);
  return k;
}

namespace {

constexpr std::string_view kNoLogInImage = "image profile: no kernel log of the node";

}  // namespace

void probe_kernel_log_tree(const ProbeContext& ctx, RankFacts& facts) {
  DriverFacts& d = facts.gpu.driver;
  if (not_in_image(ctx.options, kNoLogInImage, d.kernel_log)) return;
  // A capture's GPU facts hold the kernel log as it was read there; a plain tree's /dev/kmsg file.
  if (d.kernel_log.value() != nullptr || (d.kernel_log.error() && d.kernel_log.error()->code != ProbeErrc::Unsupported))
    return;
  const Probed<std::string> text = ctx.fs.read(kKmsg, kMaxLog);
  if (const std::string* t = text.value())
    d.kernel_log = Log::ok(kernel_log_facts(*t, text.source()), text.source());
  else
    d.kernel_log = Log::error(*text.error(), text.source());
}

void probe_kernel_log(const ProbeContext& ctx, RankFacts& facts) {
  DriverFacts& d = facts.gpu.driver;
  if (not_in_image(ctx.options, kNoLogInImage, d.kernel_log)) return;
  if (facts.placement.local_rank != 0) {
    d.kernel_log = Log::error(ProbeErrc::Unsupported, "read once per node, by local rank 0");
    return;
  }
  bool keep = ctx.options.only.empty();
  for (const std::string& glob : ctx.options.only) keep = keep || glob_match(glob, "gpu.xid");
  for (const std::string& glob : ctx.options.skip) keep = keep && !glob_match(glob, "gpu.xid");
  if (!keep) {
    d.kernel_log = Log::error(ProbeErrc::Unsupported, "not read: gpu.xid is not selected");
    return;
  }
  const Probed<std::string> text = read_live_kmsg();
  if (const std::string* t = text.value())
    d.kernel_log = Log::ok(kernel_log_facts(*t, kKmsg), kKmsg);
  else
    d.kernel_log = Log::error(*text.error(), kKmsg);
}

}  // namespace preflight
