// SPDX-License-Identifier: MIT
// The one table of checks. Adding a check: one file in checks/, one line here, one test.
#include <array>
#include <exception>

#include "checks/check.hpp"
#include "checks/specs.hpp"
#include "core/text.hpp"
#include "matrix/compat_matrix.hpp"

namespace preflight {

namespace {
// Report order: launcher first (a wrong launch explains everything after it), then the GPU stack
// (driver before what needs it), then the host, then the environment the libraries will read, then
// the network and the machine's shape.
// The size is the rows': a row added or removed needs no count kept by hand.
constexpr auto kChecks = std::to_array<const CheckSpec*>({
    &kLaunchEnv,       &kLaunchRanks,   &kLaunchGpuBinding,  &kDriverLoaded,       &kCudaRuntime,
    &kCudaArch,        &kCudaSmoke,     &kNcclLibrary,       &kGpuCount,           &kGpuBusy,
    &kGpuMemoryHealth, &kGpuXid,        &kGpuFabric,         &kGpuLinks,           &kGpuClocks,
    &kShmCapacity,     &kHostMemory,    &kHostDisk,          &kHostLimits,         &kEnvNccl,
    &kNetSocketIfname, &kNetIb,         &kNetGpuNicAffinity, &kNetMaster,          &kNetReachability,
    &kTopoP2p,         &kTopoPcieAcs,   &kTopoNumaAffinity,  &kClusterConsistency, &kClusterShmNamespace,
    &kCommBarrier,     &kCommAllreduce,
});
}  // namespace

std::span<const CheckSpec* const> all_checks() { return kChecks; }

const CheckSpec* find_check(std::string_view id) {
  for (const CheckSpec* spec : kChecks) {
    if (spec->id == id) return spec;
  }
  return nullptr;
}

bool runs_in(const CheckSpec& spec, Profile profile) {
  const unsigned bit = profile == Profile::Node ? kInNode : profile == Profile::Job ? kInJob : kInImage;
  return (spec.profiles & bit) != 0;
}

bool may_follow_from(const CheckSpec& spec, std::string_view cause) {
  for (std::string_view id : split(spec.causes, ',')) {
    id = trim(id);
    if (id == cause || (id.starts_with(cause) && id.size() > cause.size() && id[cause.size()] == '/')) return true;
  }
  return false;
}

std::vector<std::string_view> explaining_findings(const CheckSpec& spec, std::string_view cause) {
  std::vector<std::string_view> out;
  for (std::string_view id : split(spec.causes, ',')) {
    id = trim(id);
    if (id.starts_with(cause) && id.size() > cause.size() && id[cause.size()] == '/') out.push_back(id);
  }
  return out;
}

const char* to_string(Scope s) {
  switch (s) {
    case Scope::Rank: return "rank";
    case Scope::Node: return "node";
    case Scope::Job: return "job";
  }
  return "node";
}

std::vector<const RankFacts*> job_ranks(const CheckContext& ctx) {
  std::vector<const RankFacts*> ranks;
  if (ctx.job == nullptr) return {&ctx.facts};
  ranks.reserve(ctx.job->ranks.size());
  for (const RankFacts& f : ctx.job->ranks) ranks.push_back(&f);
  return ranks;
}

std::vector<const RankFacts*> node_ranks(const CheckContext& ctx) {
  if (ctx.host_ranks == nullptr || ctx.host_ranks->empty()) return {&ctx.facts};
  return *ctx.host_ranks;
}

const CompatMatrix& compat_matrix(const CheckContext& ctx) {
  return ctx.matrix != nullptr ? *ctx.matrix : builtin_compat_matrix();
}

Verdict run_check(const CheckSpec& spec, const CheckContext& ctx) {
  if (!runs_in(spec, ctx.profile)) {
    if (ctx.profile == Profile::Node && (spec.profiles & kInJob) != 0) {
      return Verdict::skip(
          "no job to check: preflight runs alone (profile node); start it the way the job starts "
          "(mpirun, srun) to check the job");
    }
    return Verdict::skip(std::string(spec.skip_reason.empty() ? "not part of this profile" : spec.skip_reason) +
                         " (profile " + to_string(ctx.profile) + ")");
  }
  try {
    Verdict v = spec.run(ctx);
    // A verdict built on facts a hung probe left behind (job/run.cpp names them "probe 'X'
    // hung: …") gets the fix for a hang, whatever the check says about an unreadable fact.
    if (v.status != Status::Pass && v.status != Status::Skip &&
        v.summary.find("' hung: it had not finished") != std::string::npos &&
        v.remedy.find(kHungProbeRemedy) == std::string::npos) {
      v.remedy = std::string(kHungProbeRemedy) + (v.remedy.empty() ? std::string() : " " + v.remedy);
    }
    return v;
  } catch (const std::exception& e) {
    return Verdict::unknown(std::string("internal error in the check: ") + e.what(),
                            "Report this as a preflight bug with the --json output attached.");
  }
}

}  // namespace preflight
