// SPDX-License-Identifier: MIT
// Probes gather facts. Each fills its part of RankFacts and never throws for a fact it cannot
// read: it records the reason in the Probed<> field instead. The one table is probes/registry.cpp.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/deadlines.hpp"
#include "core/env.hpp"
#include "core/fact_sources.hpp"
#include "core/facts.hpp"
#include "core/mountinfo.hpp"
#include "core/options.hpp"
#include "sys/capture.hpp"
#include "sys/file_system.hpp"
#include "sys/os.hpp"

namespace preflight {

class ProbeContext {
  std::unique_ptr<Os> m_tree_os;  // the Os of a --sysroot tree, when no other was given

 public:
  /// The Os is the live system's for the live file system, else the tree's (probes/tree_os.hpp).
  ProbeContext(const FileSystem& file_system, const EnvSnapshot& environment, const Options& run_options,
               std::chrono::steady_clock::time_point probe_deadline = std::chrono::steady_clock::time_point::max());
  /// With an Os of the caller's (a unit test's fake); it must outlive the context.
  ProbeContext(const FileSystem& file_system, const EnvSnapshot& environment, const Options& run_options,
               const Os& system,
               std::chrono::steady_clock::time_point probe_deadline = std::chrono::steady_clock::time_point::max());
  /// Ends what still runs beside the job when nobody took what it waits on (take_kept): drops it
  /// and waits a few seconds for that work to finish, so that no thread of it outlives the context.
  ~ProbeContext();
  ProbeContext(const ProbeContext&) = delete;
  ProbeContext& operator=(const ProbeContext&) = delete;

  const FileSystem& fs;  // rooted at --sysroot (or /)
  const Os& os;          // what the kernel answers through system calls (hostname, interfaces, lookups, binding)
  const EnvSnapshot& env;
  const Options& options;
  std::chrono::steady_clock::time_point deadline;  // the end of the probe phase (--timeout)

  /// The deadline for one contained helper run: its share of --timeout (core/deadlines.hpp), plus
  /// `allowance_s` of measured cuInit time, cut to what is left of the probe phase so an expired
  /// helper is reported as a fact before the run's own deadline ends the probes.
  HelperDeadline helper_deadline(Helper helper, double allowance_s = 0) const;

  /// /proc/self/mountinfo, read and parsed once for all the probes that need it.
  const Probed<MountInfo>& mountinfo() const;

  /// Under --sysroot: the facts files of a `preflight capture` tree, read once (nothing for the
  /// live system or a tree that is no capture).
  const CapturedFacts& captured() const;

  /// What background work writes into the facts once it is done.
  using Finisher = std::function<void(RankFacts&)>;
  /// Starts `work` on a thread of its own, next to the probes that come after it (the /dev/shm
  /// allocation test, which is all kernel time). `work` must own what it captures. Its result is
  /// applied by finish_background() at the end of the probes.
  void in_background(std::function<Finisher()> work) const;
  /// Waits for the background work until `until` and applies what finished, in start order; false
  /// when something is still running (it is left behind, like a stuck probe).
  bool finish_background(RankFacts& facts, std::chrono::steady_clock::time_point until) const;
  /// Starts `work` like in_background, for work that goes on beside the job after the probes (the
  /// GPU hold helper, the driver's client until the job's GPU work ends): finish_background() does
  /// not wait for it and applies its finisher when it is done by then, `pending` when it is not.
  void beside_the_job(std::function<Finisher()> work, Finisher pending) const;
  /// Keeps `resource` until the job's GPU work ends (the node's all_reduce, after the probes): what
  /// work started beside_the_job waits on to stop, such as the write end of a contained helper's
  /// cancel pipe. take_kept() hands it to whoever runs that work; dropping what it returned ends
  /// that work and waits for it (5 s at most). The context's end does so with what was not taken.
  void keep_through_gpu_work(std::shared_ptr<const void> resource) const;
  std::vector<std::shared_ptr<const void>> take_kept() const;

 private:
  struct Background;
  mutable std::optional<Probed<MountInfo>> m_mountinfo;
  mutable std::optional<CapturedFacts> m_captured;
  mutable std::vector<std::shared_ptr<Background>> m_background;
  mutable std::vector<std::shared_ptr<const void>> m_kept;
};

/// Under --sysroot, the fact `key` of the capture's facts file `name` (the whole file for an empty
/// key): Unsupported "not in the capture (…)" when the tree does not hold it, ParseError when the
/// file holds something else. Never taken from the live machine.
template <typename T>
Probed<T> captured_fact(const ProbeContext& ctx, std::string_view name, std::string_view key, std::string_view what) {
  const CapturedFacts& c = ctx.captured();
  std::string source = "--sysroot " + ctx.fs.root();
  for (const CaptureFactFile& f : capture_fact_files()) {
    if (f.name == name && c.is_capture) source += std::string(f.path);
  }
  const nlohmann::json* doc = c.get(name);
  if (doc == nullptr || (!key.empty() && (!doc->is_object() || !doc->contains(key)))) {
    return Probed<T>::error(ProbeErrc::Unsupported, c.missing(name, what), source);
  }
  try {
    return Probed<T>::ok((key.empty() ? *doc : doc->at(std::string(key))).template get<T>(), source);
  } catch (const nlohmann::json::exception& e) {
    // By the error's id, not its text, which may quote the file (a capture may be anyone's).
    return Probed<T>::error(ProbeErrc::ParseError,
                            "the capture's " + std::string(what) +
                                " cannot be read: a value of another type or shape (JSON error " +
                                std::to_string(e.id) + ")",
                            source);
  }
}

/// captured_fact for a fact that is itself a Probed<T> (the capture keeps why a fact was missing).
template <typename T>
Probed<T> captured_probed(const ProbeContext& ctx, std::string_view name, std::string_view key, std::string_view what) {
  Probed<Probed<T>> outer = captured_fact<Probed<T>>(ctx, name, key, what);
  if (Probed<T>* inner = outer.value()) return std::move(*inner);
  return Probed<T>::error(*outer.error(), outer.source());
}

/// How a probe of the node's facts takes them from the node's leader (RankFacts::node_facts): it
/// compares every input of the probe that may differ between ranks of one host (their environment,
/// the libraries they would load) with the leader's, and copies the leader's facts when they are the
/// same. Returns "" when it took them, else why this rank must probe itself (then nothing changed).
using AdoptFn = std::string (*)(const ProbeContext& ctx, const RankFacts& leader, RankFacts& facts);

/// How a probe gathers its facts (from the live system, or from a --sysroot tree).
using ProbeFn = void (*)(const ProbeContext& ctx, RankFacts& facts);

struct ProbeSpec {
  FactSource source;  // its row of core/fact_sources.hpp: its name, and the probes it reads
  ProbeFn run;        // the live system; also a --sysroot tree, through the FileSystem and Os, when `tree` is null
  /// Set for the probes of the node's facts (run once per node in a job); null for a rank's own.
  AdoptFn adopt = nullptr;
  /// Set for the probes whose facts no file of a tree holds (what a GPU helper reports, the /dev/shm
  /// allocation test, statvfs of a directory): under --sysroot they are read from the facts files of a
  /// `preflight capture` (probes/probe.hpp's captured_fact), or reported missing, never probed on the
  /// machine preflight runs on.
  ProbeFn tree = nullptr;
  constexpr std::string_view name() const { return to_string(source); }
  /// The function that gathers this probe's facts in `ctx`: `tree` under --sysroot where it is set.
  ProbeFn for_context(const ProbeContext& ctx) const { return tree != nullptr && !ctx.fs.is_live() ? tree : run; }
};

/// The adopt functions of the node's probes (in their probes' files).
std::string adopt_gpu_driver(const ProbeContext& ctx, const RankFacts& leader, RankFacts& facts);
std::string adopt_nccl(const ProbeContext& ctx, const RankFacts& leader, RankFacts& facts);
std::string adopt_topology(const ProbeContext& ctx, const RankFacts& leader, RankFacts& facts);
std::string adopt_pcie(const ProbeContext& ctx, const RankFacts& leader, RankFacts& facts);

/// The --sysroot forms of the probes with a `tree` function (in their probes' files).
void probe_shm_tree(const ProbeContext& ctx, RankFacts& facts);
void probe_cuda_runtime_tree(const ProbeContext& ctx, RankFacts& facts);
void probe_gpu_driver_tree(const ProbeContext& ctx, RankFacts& facts);
void probe_nccl_tree(const ProbeContext& ctx, RankFacts& facts);
void probe_gpu_p2p_tree(const ProbeContext& ctx, RankFacts& facts);
void probe_gpu_health_tree(const ProbeContext& ctx, RankFacts& facts);
void probe_kernel_log_tree(const ProbeContext& ctx, RankFacts& facts);
void probe_disk_tree(const ProbeContext& ctx, RankFacts& facts);

/// Runs the probe of `source` as a run does (its `tree` function under --sysroot): for tests.
void run_probe(FactSource source, const ProbeContext& ctx, RankFacts& facts);

/// "" when `names` (environment variables, and every variable starting with a name ending in '*')
/// have the same values for this rank as for the leader, else which differs first:
/// "its CUDA_VISIBLE_DEVICES differs from the leader's ('1' here, '0' there)".
std::string env_differs(const EnvSnapshot& mine, const EnvSnapshot& leader,
                        std::initializer_list<std::string_view> names);

/// Every probe, in the order they run (a probe may read what an earlier one found).
std::span<const ProbeSpec> all_probes();

void probe_identity(const ProbeContext& ctx, RankFacts& facts);
void probe_placement(const ProbeContext& ctx, RankFacts& facts);
void probe_memory(const ProbeContext& ctx, RankFacts& facts);
void probe_limits(const ProbeContext& ctx, RankFacts& facts);
void probe_nccl_conf(const ProbeContext& ctx, RankFacts& facts);
void probe_nccl_names(const ProbeContext& ctx, RankFacts& facts);
void probe_shm(const ProbeContext& ctx, RankFacts& facts);
void probe_cuda_runtime(const ProbeContext& ctx, RankFacts& facts);
void probe_gpu_driver(const ProbeContext& ctx, RankFacts& facts);
void probe_nccl(const ProbeContext& ctx, RankFacts& facts);
void probe_topology(const ProbeContext& ctx, RankFacts& facts);
void probe_pcie(const ProbeContext& ctx, RankFacts& facts);
void probe_affinity(const ProbeContext& ctx, RankFacts& facts);
void probe_net(const ProbeContext& ctx, RankFacts& facts);
void probe_gpu_p2p(const ProbeContext& ctx, RankFacts& facts);
void probe_gpu_health(const ProbeContext& ctx, RankFacts& facts);
void probe_kernel_log(const ProbeContext& ctx, RankFacts& facts);
void probe_disk(const ProbeContext& ctx, RankFacts& facts);

/// The NVIDIA events of /dev/kmsg-format text (a live read or a --sysroot file).
KernelLogFacts kernel_log_facts(std::string_view text, std::string source);

/// Writes hwloc's XML export of the live machine (with the I/O devices the topology probe keeps) to
/// `file`; "" on success, else why not.
std::string export_topology_xml(const std::string& file);

}  // namespace preflight
