// SPDX-License-Identifier: MIT
// The limits of this process that host.limits judges: getrlimit(2) and capget(2) through the Os
// seam on the live system (no file descriptor needed), the tree's /proc/self/limits and
// /proc/self/status under --sysroot; the RDMA devices and core_pattern through the FileSystem.
#include "probes/limits_probe.hpp"

#include "core/text.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

constexpr unsigned kCapIpcLock = 14;

std::optional<std::optional<std::uint64_t>> parse_limit_value(std::string_view text) {
  if (text == "unlimited") return std::optional<std::uint64_t>();
  if (const auto v = parse_uint(text)) return std::optional<std::uint64_t>(*v);
  return std::nullopt;
}

std::optional<std::uint64_t> parse_hex(std::string_view text) {
  if (text.empty() || text.size() > 16) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) return std::nullopt;
    value = value << 4 | static_cast<std::uint64_t>(digit);
  }
  return value;
}

/// The rest of the first line that starts with `prefix`, or nullopt.
std::optional<std::string_view> line_after(std::string_view text, std::string_view prefix) {
  for (std::string_view line : split(text, '\n')) {
    if (line.substr(0, prefix.size()) == prefix) return line.substr(prefix.size());
  }
  return std::nullopt;
}

template <typename T>
Probed<T> parse_error(const std::string& source, std::string detail) {
  return Probed<T>::error(ProbeErrc::ParseError, std::move(detail), source);
}

Probed<std::vector<std::string>> rdma_devices(const FileSystem& fs) {
  constexpr std::string_view kDir = "/sys/class/infiniband";
  Probed<std::vector<std::string>> names = fs.list(kDir);
  if (!names.ok() && names.error()->code == ProbeErrc::NotFound) {
    return Probed<std::vector<std::string>>::ok({}, std::string(kDir));  // no RDMA driver loaded
  }
  return names;
}

}  // namespace

Probed<Rlimit> parse_limit_row(std::string_view limits_text, std::string_view name, std::string_view unit,
                               const std::string& source) {
  const std::optional<std::string_view> rest = line_after(limits_text, name);
  if (!rest) return parse_error<Rlimit>(source, "no '" + std::string(name) + "' line");
  const std::vector<std::string_view> cols = split_ws(trim(*rest));
  const auto soft = cols.size() == 3 ? parse_limit_value(cols[0]) : std::nullopt;
  const auto hard = cols.size() == 3 ? parse_limit_value(cols[1]) : std::nullopt;
  if (!soft || !hard || cols[2] != unit) {
    return parse_error<Rlimit>(source, "unexpected '" + std::string(name) + "' line: '" + printable(trim(*rest)) +
                                           "' (want soft, hard, " + std::string(unit) + ")");
  }
  return Probed<Rlimit>::ok(Rlimit{*soft, *hard}, source);
}

Probed<bool> parse_cap_ipc_lock(std::string_view status_text, const std::string& source) {
  const std::optional<std::string_view> rest = line_after(status_text, "CapEff:");
  if (!rest) return parse_error<bool>(source, "no 'CapEff:' line");
  const std::optional<std::uint64_t> caps = parse_hex(trim(*rest));
  if (!caps) return parse_error<bool>(source, "CapEff is not a hex mask: '" + printable(trim(*rest)) + "'");
  return Probed<bool>::ok(((*caps >> kCapIpcLock) & 1u) != 0, source);
}

void probe_limits(const ProbeContext& ctx, RankFacts& facts) {
  LimitsFacts& out = facts.limits;
  const std::string limits_path = "/proc/self/limits";
  const std::string status_path = "/proc/self/status";
  if (std::optional<ProcessLimits> live = ctx.os.process_limits()) {
    // getrlimit(2) and capget(2) open nothing: a rank that has run out of file descriptors (the
    // very limit judged here) is judged too, where reading /proc/self/limits would fail with EMFILE.
    out.memlock = std::move(live->memlock);
    out.nofile = std::move(live->nofile);
    out.core = std::move(live->core);
    out.cap_ipc_lock = std::move(live->cap_ipc_lock);
    // A capture keeps the files that a --sysroot judge reads in place of the calls.
    if (ctx.fs.recorder() != nullptr) {
      (void)ctx.fs.read(limits_path);
      (void)ctx.fs.read(status_path);
    }
  } else {
    // A --sysroot tree: its /proc/self/limits and /proc/self/status.
    const Probed<std::string> limits = ctx.fs.read(limits_path);
    if (const std::string* text = limits.value()) {
      out.memlock = parse_limit_row(*text, "Max locked memory", "bytes", limits_path);
      out.nofile = parse_limit_row(*text, "Max open files", "files", limits_path);
      out.core = parse_limit_row(*text, "Max core file size", "bytes", limits_path);
    } else {
      out.memlock = out.nofile = out.core = Probed<Rlimit>::error(*limits.error(), limits_path);
    }
    const Probed<std::string> status = ctx.fs.read(status_path);
    out.cap_ipc_lock = status.ok() ? parse_cap_ipc_lock(*status.value(), status_path)
                                   : Probed<bool>::error(*status.error(), status_path);
  }
  out.core_pattern = ctx.fs.read_line("/proc/sys/kernel/core_pattern");
  out.rdma_devices = rdma_devices(ctx.fs);
}

}  // namespace preflight
