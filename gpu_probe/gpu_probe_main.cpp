// SPDX-License-Identifier: MIT
// preflight-gpu-probe: the contained GPU helper. preflight starts it with posix_spawn (CUDA is not
// fork-safe) under a deadline; everything that initialises the NVIDIA driver happens here, so a
// driver that crashes or hangs takes only this process down.
//
//   preflight-gpu-probe driver
//   preflight-gpu-probe smoke --ordinal N --bytes B
//   preflight-gpu-probe health [--max-load S]
//   preflight-gpu-probe nccl --lib PATH        (PATH "": the soname libnccl.so.2)
//   preflight-gpu-probe p2p --bytes B [--pair-timeout S]
//   preflight-gpu-probe nccl-id --root ADDR:PORT [--lib PATH]
//   preflight-gpu-probe hold --seconds S
//   preflight-gpu-probe nccl-allreduce --id HEX --rank R --nranks N --device D --bytes B
//                       [--repeats K] [--timeout S] [--lib PATH] [--root ADDR:PORT]
//
// Each prints ONE JSON document on stdout and exits 0; driver errors are inside the document.
// p2p and nccl-allreduce print JSON Lines instead (one event per line, flushed), so a run killed at its deadline
// still names the copy in progress.
// A usage error exits 2 with a message on stderr.
#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/text.hpp"
#include "gpu_probe/gpu_probe.hpp"
#include "gpu_probe/protocol.hpp"

namespace {

int usage(const std::string& why) {
  std::cerr << "preflight-gpu-probe: " << why << "\n"
            << "usage: preflight-gpu-probe driver\n"
            << "       preflight-gpu-probe smoke --ordinal N --bytes B\n"
            << "       preflight-gpu-probe health [--max-load S]\n"
            << "       preflight-gpu-probe nccl --lib PATH\n"
            << "       preflight-gpu-probe p2p --bytes B [--pair-timeout S]\n"
            << "       preflight-gpu-probe nccl-id --root ADDR:PORT [--lib PATH]\n"
            << "       preflight-gpu-probe hold --seconds S\n"
            << "       preflight-gpu-probe nccl-allreduce --id HEX --rank R --nranks N --device D --bytes B\n"
            << "                           [--repeats K] [--timeout S] [--lib PATH] [--root ADDR:PORT]\n";
  return 2;
}

int emit(const nlohmann::json& doc) {
  std::cout << doc.dump() << "\n";
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace preflight::gpu_protocol;
  // Die with preflight: a helper stuck in the driver must not outlive it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);

  if (argc < 2) return usage("missing subcommand");
  const std::string_view subcommand = argv[1];
  std::string ordinal_text, bytes_text, lib, pair_timeout_text, max_load_text;
  std::string id_text, rank_text, nranks_text, device_text, repeats_text, timeout_text, root, seconds_text;
  bool have_lib = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) return usage("missing value after " + std::string(arg));
    if (arg == option::kOrdinal) {
      ordinal_text = argv[++i];
    } else if (arg == option::kBytes) {
      bytes_text = argv[++i];
    } else if (arg == option::kMaxLoad) {
      max_load_text = argv[++i];
    } else if (arg == option::kPairTimeout) {
      pair_timeout_text = argv[++i];
    } else if (arg == option::kId) {
      id_text = argv[++i];
    } else if (arg == option::kRank) {
      rank_text = argv[++i];
    } else if (arg == option::kNranks) {
      nranks_text = argv[++i];
    } else if (arg == option::kDevice) {
      device_text = argv[++i];
    } else if (arg == option::kRepeats) {
      repeats_text = argv[++i];
    } else if (arg == option::kTimeout) {
      timeout_text = argv[++i];
    } else if (arg == option::kRoot) {
      root = argv[++i];
    } else if (arg == option::kSeconds) {
      seconds_text = argv[++i];
    } else if (arg == option::kLib) {
      lib = argv[++i];
      have_lib = true;
    } else {
      return usage("unknown argument " + std::string(arg));
    }
  }
  try {
    if (subcommand == command::kDriver) {
      if (argc != 2) return usage("driver takes no arguments");
      return emit(preflight::helper::run_driver());
    }
    if (subcommand == command::kHealth) {
      double max_load = 1.0;
      if (!max_load_text.empty()) {
        char* end = nullptr;
        max_load = std::strtod(max_load_text.c_str(), &end);
        if (end == max_load_text.c_str() || *end != '\0' || !(max_load >= 0.0) || max_load > 60.0)
          return usage("--max-load needs seconds (0 <= S <= 60)");
      }
      return emit(preflight::helper::run_health(max_load));
    }
    if (subcommand == command::kSmoke) {
      const auto ordinal = preflight::parse_int(ordinal_text);
      const auto bytes = preflight::parse_size(bytes_text);
      if (!ordinal || *ordinal < 0 || *ordinal > 1 << 20) return usage("smoke needs --ordinal N (N >= 0)");
      if (!bytes || *bytes == 0) return usage("smoke needs --bytes B (64M, 1G, 4096)");
      return emit(preflight::helper::run_smoke(static_cast<int>(*ordinal), *bytes));
    }
    if (subcommand == command::kP2p) {
      const auto bytes = preflight::parse_size(bytes_text);
      if (!bytes || *bytes == 0) return usage("p2p needs --bytes B (64M, 1G, 4096)");
      double pair_timeout = 10.0;
      if (!pair_timeout_text.empty()) {
        char* end = nullptr;
        pair_timeout = std::strtod(pair_timeout_text.c_str(), &end);
        if (end == pair_timeout_text.c_str() || *end != '\0' || !(pair_timeout > 0.0) || pair_timeout > 3600.0)
          return usage("--pair-timeout needs seconds (0 < S <= 3600)");
      }
      return preflight::helper::run_p2p(*bytes, pair_timeout);
    }
    if (subcommand == command::kHold) {
      char* end = nullptr;
      const double seconds = std::strtod(seconds_text.c_str(), &end);
      if (seconds_text.empty() || *end != '\0' || !(seconds > 0.0) || seconds > 86400.0)
        return usage("hold needs --seconds S (0 < S <= 86400)");
      return preflight::helper::run_hold(seconds);
    }
    if (subcommand == command::kNcclId) {
      return preflight::helper::run_nccl_id(lib, root);
    }
    if (subcommand == command::kNcclAllreduce) {
      preflight::helper::AllreduceArgs a;
      const auto rank = preflight::parse_int(rank_text);
      const auto nranks = preflight::parse_int(nranks_text);
      const auto device = preflight::parse_int(device_text);
      const auto bytes = preflight::parse_size(bytes_text);
      if (id_text.empty()) return usage("nccl-allreduce needs --id HEX (from nccl-id)");
      if (!nranks || *nranks < 1 || *nranks > 1 << 20) return usage("nccl-allreduce needs --nranks N (N >= 1)");
      if (!rank || *rank < 0 || *rank >= *nranks) return usage("nccl-allreduce needs --rank R (0 <= R < N)");
      if (!device || *device < 0 || *device > 1 << 20) return usage("nccl-allreduce needs --device D (D >= 0)");
      if (!bytes || *bytes == 0) return usage("nccl-allreduce needs --bytes B (64M, 1G, 4096)");
      if (!repeats_text.empty()) {
        const auto repeats = preflight::parse_int(repeats_text);
        if (!repeats || *repeats < 0 || *repeats > 10000) return usage("--repeats needs 0..10000");
        a.repeats = static_cast<int>(*repeats);
      }
      if (!timeout_text.empty()) {
        char* end = nullptr;
        a.timeout_s = std::strtod(timeout_text.c_str(), &end);
        if (end == timeout_text.c_str() || *end != '\0' || !(a.timeout_s > 0.0) || a.timeout_s > 3600.0)
          return usage("--timeout needs seconds (0 < S <= 3600)");
      }
      a.id_hex = id_text;
      a.root = root;
      a.lib = lib;
      a.rank = static_cast<int>(*rank);
      a.nranks = static_cast<int>(*nranks);
      a.device = static_cast<int>(*device);
      a.bytes = *bytes;
      return preflight::helper::run_nccl_allreduce(a);
    }
    if (subcommand == command::kNccl) {
      if (!have_lib) return usage("nccl needs --lib PATH (\"\" for the soname)");
      return emit(preflight::helper::run_nccl(lib));
    }
  } catch (const std::exception& e) {
    std::cerr << "preflight-gpu-probe: " << e.what() << "\n";
    return 3;
  }
  return usage("unknown subcommand " + std::string(subcommand));
}
