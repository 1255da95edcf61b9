// SPDX-License-Identifier: MIT
// nccl: the libnccl.so.2 the job will load (the first candidate the cuda_runtime probe found;
// --nccl-lib comes first among them), read by the contained GPU helper: ncclGetVersion, the real
// path, and the CUDA build. Allowed in every profile (no driver needed).
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "gpu_probe/protocol.hpp"
#include "probes/probe.hpp"
#include "sys/contained.hpp"

namespace preflight {

namespace {

/// The libnccl.so.2 the job loads, and how it was found: the first candidate, else --nccl-lib,
/// else the soname through the loader search ("").
std::pair<std::string, std::string> library_to_load(const ProbeContext& ctx, const RankFacts& facts) {
  if (!facts.gpu.runtime.nccl_candidates.empty()) {
    return {facts.gpu.runtime.nccl_candidates.front().path, facts.gpu.runtime.nccl_candidates.front().source};
  }
  if (!ctx.options.nccl_lib.empty()) return {ctx.options.nccl_lib, "--nccl-lib"};
  return {"", "loader"};
}

}  // namespace

// A captured node's NCCL is the one the capture's helper read there; never a library loaded here.
void probe_nccl_tree(const ProbeContext& ctx, RankFacts& facts) {
  facts.gpu.nccl = captured_probed<NcclLibrary>(ctx, "nccl", "nccl", "report of the libnccl.so.2 the job loads");
}

void probe_nccl(const ProbeContext& ctx, RankFacts& facts) {
  const auto [path, source] = library_to_load(ctx, facts);
  const std::string helper = helper_path("preflight-gpu-probe");
  const std::string what = "preflight-gpu-probe nccl --lib '" + path + "' (dlopen, ncclGetVersion)";
  ContainedRequest request;
  request.executable = helper;
  request.args = gpu_protocol::Request(gpu_protocol::command::kNccl).with(gpu_protocol::option::kLib, path).args();
  const HelperDeadline deadline = ctx.helper_deadline(Helper::Nccl);
  request.deadline = deadline.limit;
  const ContainedResult result = run_contained(request);
  const ContainedJson parsed = parse_contained_json(result);
  if (!parsed.ok()) {
    ProbeError e = result.clean() ? ProbeError{ProbeErrc::ParseError, parsed.error} : result.to_probe_error();
    e.detail = what + (result.clean() ? ": " : " ") + e.detail;
    if (result.outcome == ContainedOutcome::TimedOut) {
      e.code = deadline.expiry_code();
      e.detail = what + ": " + deadline.expired(result.elapsed_s);
    }
    facts.gpu.nccl = Probed<NcclLibrary>::error(std::move(e), helper);
    return;
  }
  try {
    Probed<NcclLibrary> lib = parsed.value.get<Probed<NcclLibrary>>();
    if (NcclLibrary* value = lib.value()) value->source = source;
    facts.gpu.nccl = std::move(lib);
  } catch (const nlohmann::json::exception& e) {
    facts.gpu.nccl = Probed<NcclLibrary>::error(
        ProbeErrc::ParseError, what + ": the helper's document is not an NCCL report: " + e.what(), helper);
  }
}

std::string adopt_nccl(const ProbeContext& ctx, const RankFacts& leader, RankFacts& facts) {
  const auto [path, source] = library_to_load(ctx, facts);
  const std::string leaders = library_to_load(ctx, leader).first;
  if (path != leaders) {
    return "it loads another libnccl.so.2 ('" + (path.empty() ? std::string("the loader's") : path) + "' here, '" +
           (leaders.empty() ? std::string("the loader's") : leaders) + "' there)";
  }
  // The same path resolves its dependencies (libcudart, the plugins) through the same loader path.
  if (std::string why = env_differs(ctx.env, leader.env, {"LD_LIBRARY_PATH", "LD_PRELOAD"}); !why.empty()) return why;
  facts.gpu.nccl = leader.gpu.nccl;
  if (NcclLibrary* value = facts.gpu.nccl.value()) value->source = source;
  return {};
}

}  // namespace preflight
