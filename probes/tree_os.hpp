// SPDX-License-Identifier: MIT
// The Os of a --sysroot tree: what the captured node's system calls answered, from its capture's
// facts files; what a tree cannot answer is Unsupported, never this machine's answer.
#pragma once

#include <memory>

#include "sys/os.hpp"

namespace preflight {

class ProbeContext;

/// hostname and kernel_release: nullopt (the tree's /proc/sys/kernel files are what it says);
/// interfaces: the capture's getifaddrs list (Unsupported in a plain tree); lookup: the tree's
/// /etc/hosts (Unsupported "not resolved" when it does not list the name); bind_test: Unsupported;
/// the process binding: the capture's own; the process limits: nullopt (the tree's /proc/self/limits
/// and /proc/self/status say them). `ctx` must outlive it.
std::unique_ptr<Os> make_tree_os(const ProbeContext& ctx);

}  // namespace preflight
