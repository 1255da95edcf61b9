// SPDX-License-Identifier: MIT
#include "job/run.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "checks/check.hpp"
#include "core/text.hpp"
#include "job/job_report.hpp"
#include "job/test_faults.hpp"
#include "probes/probe.hpp"
#include "sys/capture.hpp"

namespace preflight {
namespace {

// Shared between the caller and the probe worker; owned by both, so a worker left behind after a
// deadline still writes into live memory.
struct ProbeState {
  std::mutex mutex;
  std::condition_variable done_cv;
  RankFacts published;
  std::string current;
  bool done = false;
  std::vector<std::shared_ptr<const void>> kept;  // ProbeContext::take_kept()
};

}  // namespace

EnvSnapshot judged_environment(const Options& options, const EnvSnapshot& live) {
  if (options.sysroot.empty()) return live;
  const CapturedFacts captured = load_capture(FileSystem(options.sysroot));
  if (!captured.is_capture) return live;
  return captured_env(captured).value_or(EnvSnapshot{});
}

namespace {

/// Every fact still "not probed" after `probe` hung becomes a Timeout that says so: a hang is named
/// as a hang, with its deadline, not as a file that could not be read (checks/check.hpp).
void mark_hung(nlohmann::json& node, const std::string& detail) {
  if (node.is_object()) {
    if (node.contains("error") && node["error"] == to_string(ProbeErrc::NotProbed)) {
      node["error"] = to_string(ProbeErrc::Timeout);
      node["detail"] = detail;
      return;
    }
    for (auto& item : node.items()) mark_hung(item.value(), detail);
  } else if (node.is_array()) {
    for (auto& child : node) mark_hung(child, detail);
  }
}

RankFacts with_hung_probe(const RankFacts& facts, const std::string& probe, double waited_s, double timeout_s) {
  nlohmann::json doc = facts;
  mark_hung(doc, "probe '" + probe + "' hung: it had not finished when the probe phase's deadline passed (after " +
                     format_duration(waited_s) + " of --timeout " + general(timeout_s) +
                     " s), and the probes after it did not run");
  try {
    return doc.get<RankFacts>();
  } catch (const std::exception&) {
    return facts;  // the facts as they were: still UNKNOWN, only less precisely named
  }
}

}  // namespace

ProbeRun run_probes(const Options& options, const EnvSnapshot& live_env, std::chrono::steady_clock::time_point deadline,
                    RankFacts seed, const std::function<bool()>& interrupted,
                    const std::function<void(const std::string&)>& probing, std::shared_ptr<FsRecorder> recorder,
                    std::shared_ptr<const RankFacts> node_leader) {
  auto state = std::make_shared<ProbeState>();
  const EnvSnapshot env = judged_environment(options, live_env);
  state->published = std::move(seed);
  state->published.env = env;
  // Fault injection for the deadline tests (the test binary only: job/test_faults.hpp).
  const std::string hang = test_faults(live_env).hang_probe;
  // A capture records everything; a run gathers what its selected checks read.
  const FactSources wanted = recorder != nullptr ? all_fact_sources() : probes_for(options);
  if (node_leader) state->published.node_facts = NodeFactsOrigin{node_leader->placement.rank, {}, {}};
  std::thread worker([state, options, env, deadline, recorder, hang, wanted, node_leader] {
    const FileSystem fs(options.sysroot, recorder);
    const ProbeContext ctx(fs, env, options, deadline);
    RankFacts work;
    {
      std::lock_guard lock(state->mutex);
      work = state->published;
    }
    for (const ProbeSpec& probe : all_probes()) {
      if (!wanted.contains(probe.source)) continue;
      {
        std::lock_guard lock(state->mutex);
        state->current = std::string(probe.name());
      }
      if (probe.name() == hang) {
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      }
      const auto t0 = std::chrono::steady_clock::now();
      // Probes whose facts a capture keeps in a facts file of their own: their paths are not copied.
      const bool unrecorded =
          recorder != nullptr && (probe.source == FactSource::CudaRuntime || probe.source == FactSource::Disk);
      if (unrecorded) recorder->set_paused(true);
      const std::string name(probe.name());
      // A probe of the node's facts takes the leader's when the leader finished it and its inputs
      // are the same here (ProbeSpec::adopt); else this rank runs it and says why.
      // A probe that reads a capture's facts under --sysroot (ProbeSpec::tree) reads them on every rank.
      const ProbeFn gather = probe.for_context(ctx);
      std::string probed_here;
      bool adopted = false;
      if (node_leader && probe.adopt != nullptr) {
        probed_here = gather != probe.run ? "a --sysroot tree's facts are read, not probed"
                      : node_leader->probe_seconds.count(name) == 0
                          ? "rank " + std::to_string(node_leader->placement.rank) + " did not run it to the end"
                          : probe.adopt(ctx, *node_leader, work);
        adopted = probed_here.empty();
      }
      if (adopted) {
        work.node_facts->adopted.push_back(name);
      } else {
        if (!probed_here.empty()) work.node_facts->probed_here[name] = probed_here;
        gather(ctx, work);
      }
      if (unrecorded) recorder->set_paused(false);
      work.probe_seconds[name] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard lock(state->mutex);
      state->published = work;
    }
    {
      std::lock_guard lock(state->mutex);
      state->current = "shm (its allocation test)";
    }
    ctx.finish_background(work, deadline);
    std::lock_guard lock(state->mutex);
    state->published = work;
    state->kept = ctx.take_kept();
    state->done = true;
    state->done_cv.notify_all();
  });

  ProbeRun out;
  const auto started = std::chrono::steady_clock::now();
  std::unique_lock lock(state->mutex);
  bool finished = false;
  bool stopped = false;
  for (;;) {
    const auto slice = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
    finished = state->done_cv.wait_until(lock, slice, [&] { return state->done; });
    if (finished || std::chrono::steady_clock::now() >= deadline) break;
    if (interrupted && interrupted()) {
      stopped = true;
      break;
    }
    if (probing) probing(state->current);
  }
  out.facts = state->published;
  if (finished) {
    out.kept = std::move(state->kept);
    lock.unlock();
    worker.join();
  } else {
    out.expired = true;
    out.incident = stopped ? "probe '" + state->current + "' was interrupted: the launcher ended the job"
                           : "probe '" + state->current + "' did not finish within the run's deadline (--timeout " +
                                 std::to_string(static_cast<int>(options.timeout_s)) +
                                 " s); facts it would have gathered are UNKNOWN";
    if (!stopped) {
      out.facts = with_hung_probe(out.facts, state->current,
                                  std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                                  options.timeout_s);
    }
    lock.unlock();
    worker.detach();
  }
  return out;
}

Profile effective_profile(const Options& options, const RankFacts& facts) {
  if (options.profile) return *options.profile;
  return facts.placement.world_size > 1 ? Profile::Job : Profile::Node;
}

FactSources probes_for(const Options& options) {
  // The all_reduce runs for comm.allreduce only (plan_allreduce: Skipped otherwise). Another check
  // that reads what it saw (gpu.xid: the XIDs raised during it) does not make it run, so without
  // comm.allreduce its reads do not bring in the probes the all_reduce needs (the NCCL library,
  // the CUDA runtime, the network).
  const bool allreduce_runs = selected(options, "comm.allreduce");
  FactSources wanted;
  for (const CheckSpec* spec : all_checks()) {
    if (!selected(options, spec->id)) continue;
    for (const FactSourceSpec& source : kFactSources) {
      if (spec->reads.contains(source.source) && (allreduce_runs || source.source != FactSource::Allreduce)) {
        wanted |= FactSources{source.source};
      }
    }
  }
  return with_needs(wanted);
}

bool selected(const Options& options, std::string_view id) {
  bool keep = options.only.empty();
  for (const std::string& glob : options.only) keep = keep || glob_match(glob, id);
  for (const std::string& glob : options.skip) keep = keep && !glob_match(glob, id);
  return keep;
}

Report build_report(const Options& options, ProbeRun probes, double duration_ms, const CompatMatrix* matrix) {
  const Profile profile = effective_profile(options, probes.facts);
  std::vector<CheckResult> mine = judge_rank(options, profile, probes.facts, true, matrix);
  Report report = assemble_report(options, profile, single_rank_job(probes.facts), std::move(mine), matrix);
  report.deadline_expired = probes.expired;
  if (probes.expired) report.incidents.push_back(probes.incident);
  report.duration_ms = duration_ms;
  return report;
}

}  // namespace preflight
