// SPDX-License-Identifier: MIT
// What the contained GPU helpers print (one JSON document, or JSON Lines), read whatever became of
// the helper: parse_contained_json, for_each_event, parse_peer_copies (p2p), and
// parse_nccl_rank_outcome (nccl-allreduce). The first input byte picks how the helper ended.
#include "fuzz_common.hpp"
#include "job/nccl_allreduce.hpp"
#include "probes/gpu_p2p_probe.hpp"
#include "sys/contained.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  ContainedResult r;
  switch (data[0] % 4) {
    case 0:
      r.outcome = ContainedOutcome::Exited;
      r.exit_code = 0;
      break;
    case 1:
      r.outcome = ContainedOutcome::Exited;
      r.exit_code = 3;
      r.err = "cuInit failed\n";
      break;
    case 2:
      r.outcome = ContainedOutcome::Signaled;
      r.signal = 11;
      r.signal_name = "SIGSEGV";
      break;
    default: r.outcome = ContainedOutcome::TimedOut; break;
  }
  r.elapsed_s = 0.2;
  r.deadline_s = 5.0;
  r.max_output = 1u << 20;
  r.pid = 4242;
  r.out = std::string(fuzz::text(data + 1, size - 1));

  const ContainedJson j = parse_contained_json(r);
  FUZZ_CHECK(j.ok() == j.error.empty());
  if (!r.clean()) FUZZ_CHECK(!j.ok());
  (void)for_each_event(
      r.out, [](const std::string& event, const nlohmann::json& doc) { return !event.empty() && doc.is_object(); });
  std::vector<CudaDevice> devices(2);
  devices[0].pci_bus_id = "00000000:18:00.0";
  devices[1].ordinal = 1;
  devices[1].pci_bus_id = "00000000:3B:00.0";
  (void)parse_peer_copies(r, devices, "preflight-gpu-probe p2p");
  (void)parse_nccl_rank_outcome(r, 0, 0);
  (void)parse_nccl_rank_outcome(r, 3, 1);
  return 0;
}
