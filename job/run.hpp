// SPDX-License-Identifier: MIT
// One run of the checks on this rank: probe (with a deadline), judge, report.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "core/env.hpp"
#include "core/fact_sources.hpp"
#include "core/options.hpp"
#include "report/report.hpp"
#include "sys/file_system.hpp"

namespace preflight {

/// Runs the probes the selected checks read (probes_for; every probe for a capture) on a worker
/// thread, in the probe table's order. When `deadline` passes first, the facts gathered so far are returned, `expired`
/// names the probe that was running, and the worker is left behind (the caller must end the process with _exit: a probe
/// stuck in the kernel cannot be joined).
struct ProbeRun {
  RankFacts facts;
  bool expired = false;
  std::string incident;
  /// What the probes keep until the job's GPU work ends (the GPU hold helper's cancel pipe): the
  /// caller drops it after the all_reduce phase.
  std::vector<std::shared_ptr<const void>> kept;
};
/// `seed`: facts known before the probes (MPI's view of this process in placement.mpi).
/// `interrupted`: polled while waiting; true ends the wait early, as an expired deadline does.
/// `probing`: told the name of the probe that runs, while waiting (the progress line).
/// `recorder`: `preflight capture` copies what the probes read (the CUDA runtime discovery, kept
/// as a facts file instead, is not recorded).
/// `node_leader`: the facts of this host's local rank 0 in a job; each probe of the node's facts
/// (ProbeSpec::adopt) takes them when its inputs are the same here, and the facts' node_facts says
/// which it took and why it probed the others itself.
/// Under --sysroot the probes and checks see the capture's environment when the tree is a
/// capture (none when it recorded none), `env` for a plain tree.
ProbeRun run_probes(const Options& options, const EnvSnapshot& env, std::chrono::steady_clock::time_point deadline,
                    RankFacts seed = {}, const std::function<bool()>& interrupted = {},
                    const std::function<void(const std::string&)>& probing = {},
                    std::shared_ptr<FsRecorder> recorder = {}, std::shared_ptr<const RankFacts> node_leader = {});

/// The environment judged: a capture's own under --sysroot, else `live`.
EnvSnapshot judged_environment(const Options& options, const EnvSnapshot& live);

/// The profile in effect: --profile, else job when the launcher says world size > 1, else node.
Profile effective_profile(const Options& options, const RankFacts& facts);

/// Judges the facts with every selected check (--only/--skip) and assembles the report.
/// `matrix`: the compatibility data of --matrix DIR, or nullptr for the built-in copy.
Report build_report(const Options& options, ProbeRun probes, double duration_ms, const CompatMatrix* matrix = nullptr);

/// True when --only/--skip select the check id.
bool selected(const Options& options, std::string_view id);

/// The probes and phases the selected checks read, with what those read (identity and placement
/// always): `--only host.limits` runs three probes, not eighteen.
FactSources probes_for(const Options& options);

}  // namespace preflight
