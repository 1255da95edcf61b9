// SPDX-License-Identifier: MIT
#include "probes/tree_os.hpp"

#include "core/text.hpp"
#include "probes/net_probe.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

class TreeOs final : public Os {
 public:
  explicit TreeOs(const ProbeContext& ctx) : m_ctx(ctx) {}

  std::optional<std::string> hostname() const override { return std::nullopt; }
  std::optional<std::string> kernel_release() const override { return std::nullopt; }

  Probed<std::vector<NetInterface>> interfaces() const override {
    return captured_probed<std::vector<NetInterface>>(m_ctx, "net", "interfaces", "interface list");
  }

  std::unique_ptr<PendingLookup> lookup(const std::string& name) const override {
    using Result = Probed<std::vector<std::string>>;
    const Probed<std::string> hosts = m_ctx.fs.read("/etc/hosts", 1u << 20);
    if (hosts.ok()) {
      std::vector<std::string> found = hosts_file_lookup(*hosts.value(), name);
      if (!found.empty()) return std::make_unique<ReadyLookup>(Result::ok(std::move(found), "/etc/hosts"));
    }
    return std::make_unique<ReadyLookup>(Result::error(
        ProbeErrc::Unsupported,
        "not resolved: a --sysroot tree has no resolver, and its /etc/hosts does not list '" + printable(name) + "'",
        "/etc/hosts"));
  }

  Probed<std::string> bind_test(const std::string&, int) const override {
    return Probed<std::string>::error(ProbeErrc::Unsupported, "no bind test on a --sysroot tree", "bind()");
  }

  Probed<std::vector<int>> process_cpus(int) const override {
    return captured_probed<std::vector<int>>(m_ctx, "process", "cpus", "process CPU affinity");
  }
  Probed<MemPolicy> process_mempolicy(int) const override {
    return captured_probed<MemPolicy>(m_ctx, "process", "mempolicy", "process memory policy");
  }
  // The tree's /proc/self/limits and /proc/self/status say it (a capture holds the captured
  // process's copies).
  std::optional<ProcessLimits> process_limits() const override { return std::nullopt; }

 private:
  const ProbeContext& m_ctx;
};

}  // namespace

std::unique_ptr<Os> make_tree_os(const ProbeContext& ctx) { return std::make_unique<TreeOs>(ctx); }

}  // namespace preflight
