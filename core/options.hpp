// SPDX-License-Identifier: MIT
// Every option of `preflight run` as a plain value (`preflight --help`, packaging/preflight.1).
// The command line and the config file fill it (cli/cli.cpp); checks read the thresholds they need from it, never from
// globals.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

enum class Profile { Node, Job, Image };
enum class Format { Text, Json, Junit, Prometheus };

const char* to_string(Profile p);
const char* to_string(Format f);

/// The all_reduce message sizes every transport runs exactly (--allreduce-bytes): whole 8-byte
/// elements (int64 sums), at least two (the rank count and the rank sum the self-check needs), and at
/// most 8 GiB: the send and receive buffers live on every GPU (2 × the size) and, over MPI, in host
/// memory per rank; 8 GiB is the top of nccl-tests' usual sweep.
inline constexpr std::uint64_t kAllreduceMinBytes = 16;
inline constexpr std::uint64_t kAllreduceMaxBytes = 8ull << 30;
inline constexpr std::uint64_t kAllreduceElementBytes = 8;
/// The sizes without --allreduce-bytes, by transport. Over NCCL, 32 MiB: large enough that the bus
/// bandwidth shows (nccl-tests' curves flatten from a few MiB), small enough for every GPU. Over
/// MPI in host memory (a CPU-only job, where --min-busbw is not judged), 1 MiB: the collective and
/// its sums are what is checked, and 64 oversubscribed ranks must not each hold 64 MiB of buffers
/// or push gigabytes through TCP for it. An explicit --allreduce-bytes is run exactly on both.
inline constexpr std::uint64_t kAllreduceDefaultNcclBytes = 32u << 20;
inline constexpr std::uint64_t kAllreduceDefaultMpiBytes = 1u << 20;

struct Options {
  std::optional<Profile> profile;  // unset: node without a multi-rank launcher, job with one
  std::vector<std::string> only;   // check-id globs
  std::vector<std::string> skip;
  Format format = Format::Text;
  std::string json_file, junit_file, prom_file;
  double timeout_s = 60.0;
  bool strict = false;
  bool verbose = false;
  std::optional<int> color;       // unset: auto (TTY and no NO_COLOR); 0 never; 1 always
  std::string progress = "auto";  // auto (stderr is a terminal) | always | never: the progress line

  std::optional<int> expect_gpus, expect_world_size, expect_nodes;
  std::optional<double> min_busbw_gbps;
  // --allreduce-bytes as given (within kAllreduceMinBytes..kAllreduceMaxBytes, a multiple of 8);
  // unset: the transport's default (allreduce_bytes_for).
  std::optional<std::uint64_t> allreduce_bytes;
  /// The all_reduce's message size over "nccl" or "mpi".
  [[nodiscard]] std::uint64_t allreduce_bytes_for(std::string_view transport) const {
    if (allreduce_bytes) return *allreduce_bytes;
    return transport == "mpi" ? kAllreduceDefaultMpiBytes : kAllreduceDefaultNcclBytes;
  }

  // Image profile. --target-driver as given, checked at option parsing (535, 535.104, 535.104.05).
  std::string target_driver;
  // --target-gpu, normalised to "M.m" compute capabilities ("sm_90a", "90", "compute_90" -> "9.0";
  // "100", "sm_100" -> "10.0"), in the order given, without repeats.
  std::vector<std::string> target_gpus;
  // --target-gpu none: a CPU-only image, no GPU target (target_gpus is then empty). Distinct from
  // no --target-gpu at all (GPU targets unknown).
  bool target_cpu_only = false;
  std::vector<std::string> site_packages;
  std::string python;
  std::vector<std::string> cuda_runtimes;
  std::string nccl_lib;

  // host.memory planning
  std::optional<std::uint64_t> model_params;
  std::optional<int> zero_stage;
  std::optional<int> tensor_parallel, pipeline_parallel;  // Megatron-style model parallelism (unset: 1)
  std::optional<int> ranks_per_node;
  std::uint64_t host_bytes_per_rank = 4ull << 30;  // framework, CUDA context, loaders, per rank

  // host.disk: where checkpoints are written (--checkpoint-dir, repeatable), as given; empty: the
  // current directory.
  std::vector<std::string> checkpoint_dirs;

  // shm.capacity model
  std::uint64_t shm_dataloader_bytes = 256ull << 20;  // per local rank
  int nccl_communicators = 1;

  std::string sysroot;  // empty: the live system
  std::string topology_xml;
  std::string matrix_dir;
  std::string json_per_rank_dir;
  std::string mpi = "auto";  // auto: MPI when a launcher started the process; on: also as a singleton; off: never
  std::string config_file;
};

}  // namespace preflight
