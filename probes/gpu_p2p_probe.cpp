// SPDX-License-Identifier: MIT
// gpu_p2p: after gpu_driver, when the driver works and CUDA sees at least two devices, the
// contained helper copies 64 MiB between every ordered pair with peer access (cuMemcpyPeerAsync
// with peer access enabled, polled against a per-pair deadline) and verifies samples on the
// destination. The helper streams one JSON line per event, so a copy that hangs or crashes the
// helper is named by the "start" line that has no "done".
#include "probes/gpu_p2p_probe.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "core/gpu_binding.hpp"
#include "core/text.hpp"
#include "gpu_probe/protocol.hpp"
#include "probes/image_profile.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace {

constexpr char kP2pHelper[] = "preflight-gpu-probe";
using Copies = Probed<std::vector<PeerCopy>>;

std::string bus_of(const std::vector<CudaDevice>& devices, int ordinal) {
  for (const CudaDevice& d : devices)
    if (d.ordinal == ordinal) return d.pci_bus_id;
  return {};
}

}  // namespace

Copies parse_peer_copies(const ContainedResult& result, const std::vector<CudaDevice>& devices,
                         const std::string& source) {
  std::vector<PeerCopy> copies;
  bool running = false;  // a "start" without its "done"
  int run_src = -1, run_dst = -1;
  bool ended = false;
  std::string fatal_step, fatal;
  const EventLines read = for_each_event(result.out, [&](const std::string& event, const nlohmann::json& doc) {
    if (event == to_string(gpu_protocol::Event::Start)) {
      run_src = doc.at("src").get<int>();
      run_dst = doc.at("dst").get<int>();
      running = true;
    } else if (event == to_string(gpu_protocol::Event::Done)) {
      PeerCopy c = doc.get<PeerCopy>();
      if (running && run_src == c.src && run_dst == c.dst) running = false;
      copies.push_back(std::move(c));
    } else if (event == to_string(gpu_protocol::Event::Error)) {
      fatal_step = doc.value("failed_step", std::string("?"));
      fatal = doc.value("error", std::string());
    } else if (event == to_string(gpu_protocol::Event::End)) {
      ended = true;
    } else {
      return false;
    }
    return true;
  });
  if (!fatal.empty() || !fatal_step.empty()) {
    return Copies::error(ProbeErrc::ApiError, source + ": " + fatal_step + ": " + fatal);
  }
  if (running) {
    PeerCopy c;
    c.src = run_src;
    c.dst = run_dst;
    c.src_bus_id = bus_of(devices, c.src);
    c.dst_bus_id = bus_of(devices, c.dst);
    c.can_access = true;
    c.seconds = result.elapsed_s;
    if (result.outcome == ContainedOutcome::TimedOut) {
      c.failed_step = "deadline";
      c.error = "did not finish within " + fixed(result.deadline_s, 1) + " s" + " (the helper was killed)";
    } else if (result.outcome == ContainedOutcome::Signaled) {
      c.failed_step = "crash";
      c.error = "the helper died of " + result.signal_name + " during this copy";
    } else {
      c.failed_step = "helper";
      c.error = "no result for this copy: the helper " + result.describe();
    }
    copies.push_back(std::move(c));
    return Copies::ok(std::move(copies), source);
  }
  if (copies.empty()) {
    if (!result.clean()) {
      ProbeError e = result.to_probe_error();
      e.detail = source + " " + e.detail;
      return Copies::error(e);
    }
    if (read.lines == 0) return Copies::error(ProbeErrc::ParseError, source + ": nothing on the helper's pipe");
    if (read.bad > 0 || !ended)
      return Copies::error(ProbeErrc::ParseError, source + ": no peer copy result in the helper's output");
    return Copies::ok(std::move(copies), source);  // no pairs
  }
  if (!ended && result.clean()) {
    return Copies::error(ProbeErrc::ParseError, source + ": the helper's output ended before its last line");
  }
  if (!result.clean() && !ended) {
    // Killed between two copies: what arrived stands, the rest was not tried.
    return Copies::error(result.to_probe_error().code,
                         source + " " + result.describe() + " after " + std::to_string(copies.size()) + " copies");
  }
  return Copies::ok(std::move(copies), source);
}

// gpu_driver took the captured node's peer copies from its capture.
void probe_gpu_p2p_tree(const ProbeContext& ctx, RankFacts& facts) {
  not_in_image(ctx.options, kNoDriverInImage, facts.gpu.driver.peer_copies);
}

void probe_gpu_p2p(const ProbeContext& ctx, RankFacts& facts) {
  DriverFacts& d = facts.gpu.driver;
  if (not_in_image(ctx.options, kNoDriverInImage, d.peer_copies)) return;
  const std::vector<CudaDevice>* devices = d.cuda_devices.value();
  // In a job with several ranks on this host, local rank 0 copies between the union of the GPUs
  // the node's ranks see (their CUDA_VISIBLE_DEVICES, exchanged before the probes), whatever its
  // own value is; the other local ranks leave the node-level copies to it.
  std::vector<std::string> extra_env;
  std::vector<CudaDevice> union_devices;
  std::string scope_note;
  const std::optional<MpiView>& mpi = facts.placement.mpi;
  if (mpi && mpi->local_size > 1) {
    if (mpi->local_rank != 0) {
      d.peer_copies = Copies::error(ProbeErrc::Unsupported, "run once per node, by local rank 0");
      return;
    }
    const std::vector<NvmlGpu>* nvml = d.nvml_gpus.value();
    if (mpi->node_cvd && nvml != nullptr) {
      const std::optional<std::string> cvd = union_cvd(*mpi->node_cvd, *nvml);
      if (!cvd) {
        extra_env.push_back("CUDA_VISIBLE_DEVICES");  // a rank sees every GPU: so does the helper
        for (const NvmlGpu& g : *nvml) {
          union_devices.push_back(CudaDevice{g.index, g.name, g.uuid, g.pci_bus_id, 0, 0, 0, {}});
        }
        scope_note = " (every GPU of the node: a rank has CUDA_VISIBLE_DEVICES unset)";
      } else {
        extra_env.push_back("CUDA_VISIBLE_DEVICES=" + *cvd);
        for (std::string_view u : split(*cvd, ',')) {
          for (const NvmlGpu& g : *nvml) {
            if (g.uuid == u) {
              union_devices.push_back(
                  CudaDevice{static_cast<int>(union_devices.size()), g.name, g.uuid, g.pci_bus_id, 0, 0, 0, {}});
            }
          }
        }
        scope_note =
            " (the union of the node's " + std::to_string(mpi->node_cvd->size()) + " ranks' CUDA_VISIBLE_DEVICES)";
      }
      devices = &union_devices;
    }
  }
  if (devices == nullptr) {
    d.peer_copies = Copies::error(d.cuda_devices.error()->code, "not run: " + d.cuda_devices.why());
    return;
  }
  if (devices->size() < 2) {
    d.peer_copies =
        Copies::error(ProbeErrc::Unsupported, "fewer than 2 GPUs visible (" + std::to_string(devices->size()) +
                                                  " CUDA device" + (devices->size() == 1 ? ")" : "s)") + scope_note);
    return;
  }
  if (const SmokeResult* smoke = d.smoke.value(); smoke != nullptr && !smoke->ok) {
    d.peer_copies =
        Copies::error(ProbeErrc::ApiError, "not run: the smoke test on GPU " + std::to_string(smoke->ordinal) +
                                               " failed at " + smoke->failed_step + " (" + smoke->error + ")");
    return;
  }
  if (d.smoke.error() != nullptr && d.smoke.error()->code != ProbeErrc::Unsupported) {
    d.peer_copies = Copies::error(d.smoke.error()->code, "not run: the smoke test failed (" + d.smoke.why() + ")");
    return;
  }
  ContainedRequest request;
  request.executable = helper_path(kP2pHelper);
  // A new process initialises CUDA again: the copies also get the cuInit time the driver helper
  // measured. Each copy gets at most half of the deadline, so a hung copy is reported by the
  // helper itself (with the others done) before our deadline kills it.
  const HelperDeadline deadline = ctx.helper_deadline(Helper::GpuP2p, d.cuda_init_seconds.value_or(0.0));
  request.deadline = deadline.limit;
  request.extra_env = extra_env;
  const double copies_s = std::max(deadline.seconds() - deadline.allowance_s, deadline.seconds() / 2);
  const double pair_s = std::max(0.1, copies_s / 2);
  request.args = gpu_protocol::Request(gpu_protocol::command::kP2p)
                     .with(gpu_protocol::option::kBytes, kPeerCopyBytes)
                     .with(gpu_protocol::option::kPairTimeout, fixed(pair_s, 2))
                     .args();
  const std::string source = std::string(kP2pHelper) + " p2p --bytes " + kPeerCopyBytes + scope_note;
  const ContainedResult result = run_contained(request);
  d.helper += (d.helper.empty() ? "" : "; ") + std::string("p2p: ") + result.describe();
  d.peer_copies = parse_peer_copies(result, *devices, source);
  if (result.outcome == ContainedOutcome::TimedOut) {
    const std::string why = deadline.expired(result.elapsed_s);
    if (std::vector<PeerCopy>* copies = d.peer_copies.value()) {
      for (PeerCopy& c : *copies) {
        if (c.failed_step == "deadline") c.error = why;
      }
    } else if (d.peer_copies.error() != nullptr) {
      d.peer_copies = Copies::error(deadline.expiry_code(), source + ": " + why);
    }
  }
}

}  // namespace preflight
