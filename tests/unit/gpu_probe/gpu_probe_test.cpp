// SPDX-License-Identifier: MIT
// The GPU stack probes without a GPU: the pure parsers (core/gpu_text.hpp), the contained helper
// preflight-gpu-probe run for real on this machine (no driver: LibraryMissing facts, not a crash),
// its JSON round trip into DriverFacts, and the real libnccl.so.2 of /usr/local/cuda where present.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/gpu_text.hpp"
#include "probes/gpu_driver_probe.hpp"
#include "probes/gpu_p2p_probe.hpp"
#include "probes/probe.hpp"
#include "sys/contained.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace gpu_probe_gpu_probe_test {
namespace {

namespace fs = std::filesystem;
using gpu_text::parse_kernel_module_version;

constexpr char kRealNccl[] = "/usr/local/cuda/lib64/libnccl.so.2";

std::string helper_exe() { return preflight::test_paths::gpu_helper_dir() + "/preflight-gpu-probe"; }

/// PREFLIGHT_HELPER_DIR pointing at the built helper for the scope of a test.
class HelperDirGuard {
 public:
  explicit HelperDirGuard(const std::string& dir) {
    if (const char* old = ::getenv("PREFLIGHT_HELPER_DIR")) m_old = old;
    ::setenv("PREFLIGHT_HELPER_DIR", dir.c_str(), 1);
  }
  ~HelperDirGuard() {
    if (m_old)
      ::setenv("PREFLIGHT_HELPER_DIR", m_old->c_str(), 1);
    else
      ::unsetenv("PREFLIGHT_HELPER_DIR");
  }
  HelperDirGuard(const HelperDirGuard&) = delete;
  HelperDirGuard& operator=(const HelperDirGuard&) = delete;

 private:
  std::optional<std::string> m_old;
};

/// A sysroot in a temporary directory.
class Sysroot {
 public:
  Sysroot() {
    m_dir = fs::temp_directory_path() / ("preflight-gpu-" + std::to_string(::getpid()) + "-" + std::to_string(s_n++));
    fs::create_directories(m_dir);
  }
  ~Sysroot() {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  Sysroot(const Sysroot&) = delete;
  Sysroot& operator=(const Sysroot&) = delete;
  void write(const std::string& path, const std::string& text) const {
    const fs::path p = m_dir / path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string root() const { return m_dir.string(); }

 private:
  static inline int s_n = 0;
  fs::path m_dir;
};

bool no_driver_here() { return !fs::exists("/proc/driver/nvidia/version") && !fs::exists("/dev/nvidiactl"); }

// ---- parsers -----------------------------------------------------------------------------------

TEST(GpuText, KernelModuleVersionProprietary) {
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 "
                                        "01:15:15 UTC 2023\nGCC version:  gcc version 12.3.0\n"),
            "535.104.05");
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  Thu Apr  3 "
                                        "01:14:19 UTC 2025\n"),
            "535.216.03");
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX Kernel Module for aarch64  550.54.14  Thu Feb 22\n"),
            "550.54.14");
}

TEST(GpuText, KernelModuleVersionOpen) {
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release "
                                        "Build  (dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 07:09:31 UTC 2025\n"),
            "580.65.06");
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.142  Release\n"),
            "580.142");
}

TEST(GpuText, KernelModuleVersionSysfs) {
  EXPECT_EQ(parse_kernel_module_version("550.54.14\n"), "550.54.14");
  EXPECT_EQ(parse_kernel_module_version("515.76"), "515.76");
}

TEST(GpuText, KernelModuleVersionGarbage) {
  EXPECT_EQ(parse_kernel_module_version(""), std::nullopt);
  EXPECT_EQ(parse_kernel_module_version("\n"), std::nullopt);
  EXPECT_EQ(parse_kernel_module_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  \n"), std::nullopt);
  EXPECT_EQ(parse_kernel_module_version("NVRM version: something else 535.104.05\n"), std::nullopt);  // no "Module"
  EXPECT_EQ(parse_kernel_module_version("535\n"), std::nullopt);
  EXPECT_EQ(parse_kernel_module_version("535.104.05.1\n"), std::nullopt);
  EXPECT_EQ(parse_kernel_module_version("535..05\n"), std::nullopt);
  EXPECT_EQ(parse_kernel_module_version("v535.104\n"), std::nullopt);
  EXPECT_EQ(parse_kernel_module_version(std::string("\x01\xff\x00 Module x1.2", 15)), std::nullopt);
  // The version is on the first line only.
  EXPECT_EQ(parse_kernel_module_version("garbage\n535.104.05\n"), std::nullopt);
}

TEST(GpuText, NcclVersionCodes) {
  EXPECT_EQ(gpu_text::decode_nccl_version(22809), "2.28.9");
  EXPECT_EQ(gpu_text::decode_nccl_version(21805), "2.18.5");
  EXPECT_EQ(gpu_text::decode_nccl_version(21003), "2.10.3");
  EXPECT_EQ(gpu_text::decode_nccl_version(2804), "2.8.4");
  EXPECT_EQ(gpu_text::decode_nccl_version(0), "");
  EXPECT_EQ(gpu_text::decode_nccl_version(-1), "");
}

TEST(GpuText, NcclCudaBuild) {
  using gpu_text::find_nccl_cuda_build;
  const std::string bytes = std::string("\0junk NCCL version 2.28.9\0NCCL version %s\0", 40) +
                            "NCCL version 2.21.5+cuda12.4 %s" + std::string("\0", 1) +
                            "NCCL version 2.28.9+cuda13.0 %s NCCL_MNNVL_";
  EXPECT_EQ(find_nccl_cuda_build(bytes, "2.28.9"), "13.0");
  EXPECT_EQ(find_nccl_cuda_build(bytes, "2.21.5"), "12.4");
  EXPECT_EQ(find_nccl_cuda_build(bytes), "12.4");            // the first one
  EXPECT_EQ(find_nccl_cuda_build(bytes, "2.99.0"), "12.4");  // no exact match: the first one
  EXPECT_EQ(find_nccl_cuda_build("NCCL version 2.28.9+cuda"), "");
  EXPECT_EQ(find_nccl_cuda_build("NCCL version 2.28.9+cuda12.9."), "12.9");
  EXPECT_EQ(find_nccl_cuda_build("nothing here"), "");
}

TEST(GpuText, Formats) {
  EXPECT_EQ(gpu_text::format_cuda_version(12040), "12.4");
  EXPECT_EQ(gpu_text::format_cuda_version(13000), "13.0");
  EXPECT_EQ(gpu_text::format_pci_bus_id(0, 0x3b, 0), "00000000:3B:00.0");
  const unsigned char uuid[16] = {0x6a, 0x2b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb, 0xc, 0xff};
  EXPECT_EQ(gpu_text::format_gpu_uuid(uuid), "GPU-6a2b0001-0203-0405-0607-08090a0b0cff");
}

// ---- kernel module version through the sysroot seam --------------------------------------------

TEST(GpuDriverProbe, KernelModuleFromProc) {
  Sysroot root;
  root.write("/proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n");
  root.write("/sys/module/nvidia/version", "550.54.14\n");
  const Probed<std::string> v = read_kernel_module_version(FileSystem(root.root()));
  ASSERT_TRUE(v.ok()) << v.why();
  EXPECT_EQ(*v.value(), "535.104.05");
  EXPECT_EQ(v.source(), "/proc/driver/nvidia/version");
}

TEST(GpuDriverProbe, KernelModuleFromSysfs) {
  Sysroot root;
  root.write("/sys/module/nvidia/version", "580.65.06\n");
  const Probed<std::string> v = read_kernel_module_version(FileSystem(root.root()));
  ASSERT_TRUE(v.ok()) << v.why();
  EXPECT_EQ(*v.value(), "580.65.06");
  EXPECT_EQ(v.source(), "/sys/module/nvidia/version");
}

TEST(GpuDriverProbe, KernelModuleGarbageAndMissing) {
  Sysroot garbage;
  garbage.write("/proc/driver/nvidia/version", "\x01\x02 not a driver\n");
  const Probed<std::string> g = read_kernel_module_version(FileSystem(garbage.root()));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error()->code, ProbeErrc::ParseError);
  EXPECT_NE(g.error()->detail.find("\\x01"), std::string::npos) << g.error()->detail;

  Sysroot empty;
  const Probed<std::string> m = read_kernel_module_version(FileSystem(empty.root()));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error()->code, ProbeErrc::NotFound);
  EXPECT_NE(m.error()->detail.find("kernel module is not loaded"), std::string::npos);
}

// ---- the real helper, on this machine ----------------------------------------------------------

ContainedResult run_helper(std::vector<std::string> args) {
  ContainedRequest r;
  r.executable = helper_exe();
  r.args = std::move(args);
  r.deadline = std::chrono::seconds(20);
  return run_contained(r);
}

TEST(GpuHelper, DriverDocumentRoundTripsIntoDriverFacts) {
  const ContainedResult result = run_helper({"driver"});
  ASSERT_TRUE(result.clean()) << result.describe() << " " << result.err;
  const ContainedJson parsed = parse_contained_json(result);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  DriverFacts d;
  ASSERT_EQ(apply_driver_document(parsed.value, d), "");
  // Every field the helper owns is filled one way or the other (never "not probed").
  for (const ProbeError* e :
       {d.nvml_driver_version.error(), d.cuda_driver_version.error(), d.nvml_gpus.error(), d.cuda_devices.error()}) {
    if (e != nullptr) {
      EXPECT_NE(e->code, ProbeErrc::NotProbed);
    }
  }
  // The document is DriverFacts' own JSON for those fields.
  const nlohmann::json back = d;
  for (const char* key :
       {"nvml_driver_version", "cuda_driver_version", "loaded_libraries", "nvml_gpus", "cuda_devices"}) {
    EXPECT_EQ(back.at(key), parsed.value.at(key)) << key;
  }
  if (no_driver_here()) {
    ASSERT_FALSE(d.nvml_driver_version.ok());
    EXPECT_EQ(d.nvml_driver_version.error()->code, ProbeErrc::LibraryMissing);
    EXPECT_NE(d.nvml_driver_version.error()->detail.find("libnvidia-ml.so.1"), std::string::npos);
    EXPECT_EQ(d.cuda_devices.error()->code, ProbeErrc::LibraryMissing);
    EXPECT_NE(d.cuda_devices.error()->detail.find("libcuda.so.1"), std::string::npos);
    EXPECT_TRUE(d.loaded_libraries.empty());
  }
}

TEST(GpuHelper, SmokeWithoutDriverIsAResultNotACrash) {
  if (!no_driver_here()) GTEST_SKIP() << "a driver is installed here";
  const ContainedResult result = run_helper({"smoke", "--ordinal", "0", "--bytes", "64M"});
  ASSERT_TRUE(result.clean()) << result.describe();
  const ContainedJson parsed = parse_contained_json(result);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  const SmokeResult s = parsed.value.get<SmokeResult>();
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.failed_step, "dlopen");
  EXPECT_EQ(s.bytes, 64u << 20);
  EXPECT_NE(s.error.find("libcuda.so.1"), std::string::npos);
}

TEST(GpuHelper, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                               {"bogus"},
                                               {"smoke", "--ordinal", "x", "--bytes", "64M"},
                                               {"smoke", "--ordinal"},
                                               {"nccl"},
                                               {"driver", "--lib", "x"},
                                               {"p2p"},
                                               {"p2p", "--bytes", "1M", "--pair-timeout", "x"},
                                               {"p2p", "--bytes", "1M", "--pair-timeout", "0"},
                                               {"hold"},
                                               {"hold", "--seconds", "0"},
                                               {"hold", "--seconds", "x"}}) {
    const ContainedResult result = run_helper(args);
    EXPECT_EQ(result.outcome, ContainedOutcome::Exited);
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_TRUE(result.out.empty());
  }
}

TEST(GpuHelper, NcclMissingLibraryIsLibraryMissing) {
  const ContainedResult result = run_helper({"nccl", "--lib", "/nonexistent/libnccl.so.2"});
  ASSERT_TRUE(result.clean()) << result.describe();
  const Probed<NcclLibrary> lib = parse_contained_json(result).value.get<Probed<NcclLibrary>>();
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error()->code, ProbeErrc::LibraryMissing);
  EXPECT_NE(lib.error()->detail.find("/nonexistent/libnccl.so.2"), std::string::npos);
}

TEST(GpuHelper, RealNccl) {
  if (!fs::exists(kRealNccl)) GTEST_SKIP() << kRealNccl << " is not installed";
  const ContainedResult result = run_helper({"nccl", "--lib", kRealNccl});
  ASSERT_TRUE(result.clean()) << result.describe() << " " << result.err;
  const ContainedJson parsed = parse_contained_json(result);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  const Probed<NcclLibrary> lib = parsed.value.get<Probed<NcclLibrary>>();
  ASSERT_TRUE(lib.ok()) << lib.why();
  EXPECT_EQ(lib.value()->version_code, 22809);
  EXPECT_EQ(lib.value()->version, "2.28.9");
  EXPECT_EQ(lib.value()->path, fs::canonical(kRealNccl).string());
  EXPECT_EQ(lib.value()->cuda_build, "13.0");
}

// ---- the probes, running the real helper -------------------------------------------------------

// The live file system: under --sysroot no helper runs (a captured node's GPUs are in its capture).
struct ProbeRun {
  FileSystem fs;
  EnvSnapshot env;
  Options options;
  RankFacts facts;
};

TEST(GpuDriverProbe, NoDriverGivesLibraryMissingNotACrash) {
  if (!no_driver_here()) GTEST_SKIP() << "a driver is installed here";
  HelperDirGuard guard(preflight::test_paths::gpu_helper_dir());
  ProbeRun run;
  probe_gpu_driver(ProbeContext(run.fs, run.env, run.options), run.facts);
  const DriverFacts& d = run.facts.gpu.driver;
  ASSERT_FALSE(d.kernel_module_version.ok());
  EXPECT_EQ(d.kernel_module_version.error()->code, ProbeErrc::NotFound);
  ASSERT_FALSE(d.nvml_driver_version.ok());
  EXPECT_EQ(d.nvml_driver_version.error()->code, ProbeErrc::LibraryMissing) << d.nvml_driver_version.why();
  EXPECT_EQ(d.cuda_driver_version.error()->code, ProbeErrc::LibraryMissing);
  EXPECT_EQ(d.nvml_gpus.error()->code, ProbeErrc::LibraryMissing);
  EXPECT_EQ(d.cuda_devices.error()->code, ProbeErrc::LibraryMissing);
  ASSERT_FALSE(d.smoke.ok());
  EXPECT_EQ(d.smoke.error()->code, ProbeErrc::LibraryMissing);
  EXPECT_NE(d.smoke.error()->detail.find("not run"), std::string::npos) << d.smoke.error()->detail;
  EXPECT_EQ(d.helper.rfind("driver: exited with status 0 after ", 0), 0u) << d.helper;
  ASSERT_FALSE(d.gpu_pairs.ok());
  EXPECT_EQ(d.gpu_pairs.error()->code, ProbeErrc::LibraryMissing);
  probe_gpu_p2p(ProbeContext(run.fs, run.env, run.options), run.facts);
  ASSERT_FALSE(d.peer_copies.ok());
  EXPECT_EQ(d.peer_copies.error()->code, ProbeErrc::LibraryMissing);
  EXPECT_NE(d.peer_copies.error()->detail.find("not run"), std::string::npos) << d.peer_copies.why();
}

TEST(GpuHelper, P2pWithoutDriverReportsTheStep) {
  if (!no_driver_here()) GTEST_SKIP() << "a driver is installed here";
  const ContainedResult result = run_helper({"p2p", "--bytes", "1M"});
  ASSERT_TRUE(result.clean()) << result.describe();
  const auto copies = parse_peer_copies(result, {}, "preflight-gpu-probe p2p");
  ASSERT_FALSE(copies.ok());
  EXPECT_EQ(copies.error()->code, ProbeErrc::ApiError);
  EXPECT_NE(copies.why().find("dlopen: libcuda.so.1"), std::string::npos) << copies.why();
}

/// Environment variables set for one test (the helper inherits them), restored after.
class EnvVars {
 public:
  EnvVars(std::initializer_list<std::pair<const char*, std::optional<std::string>>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = ::getenv(name);
      m_saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value)
        ::setenv(name, value->c_str(), 1);
      else
        ::unsetenv(name);
    }
  }
  ~EnvVars() {
    for (const auto& [name, value] : m_saved) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }
  EnvVars(const EnvVars&) = delete;
  EnvVars& operator=(const EnvVars&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> m_saved;
};

/// gpu_driver then gpu_p2p against a fake scenario under --timeout `timeout_s`, the probe phase
/// ending `budget` from now.
RankFacts probe_with_fakes(const std::string& scenario_file,
                           std::chrono::milliseconds budget = std::chrono::seconds(20), double timeout_s = 60.0) {
  HelperDirGuard guard(preflight::test_paths::gpu_helper_dir());
  EnvVars env{{"LD_LIBRARY_PATH", preflight::test_paths::fake_gpu_lib_dir()},
              {"PREFLIGHT_FAKE_GPU", scenario_file},
              {"CUDA_VISIBLE_DEVICES", std::nullopt}};
  ProbeRun run;
  run.options.timeout_s = timeout_s;
  const ProbeContext ctx(run.fs, run.env, run.options, std::chrono::steady_clock::now() + budget);
  probe_gpu_driver(ctx, run.facts);
  probe_gpu_p2p(ctx, run.facts);
  return run.facts;
}

/// Is some process the fake driver's client (a lock on `clients`, as fake_cuda.cpp models them)?
bool driver_has_clients(const fs::path& clients) {
  const int fd = ::open(clients.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  return busy;
}

struct SlowInitRun {
  RankFacts facts;
  bool held_after_the_probes = false;  // the driver had a client after finish_background
  bool let_go = false;                 // and none within 10 s of dropping what the probes kept
};

/// gpu_driver against a fake scenario whose first cuInit takes `delay` (persistence mode off, the
/// driver's clients modelled in a file of its own), then the end of the probes, then the end of
/// the job's GPU work (what the probes kept dropped, as the job does after its all_reduce).
SlowInitRun probe_driver_with_slow_init(const std::string& scenario_file, const std::string& delay,
                                        std::chrono::milliseconds before_the_end = std::chrono::milliseconds(0)) {
  HelperDirGuard guard(preflight::test_paths::gpu_helper_dir());
  const fs::path clients = fs::temp_directory_path() / ("preflight-gpu-clients-" + std::to_string(::getpid()) + "-" +
                                                        fs::path(scenario_file).stem().string());
  fs::remove(clients);
  EnvVars env{{"LD_LIBRARY_PATH", preflight::test_paths::fake_gpu_lib_dir()},
              {"PREFLIGHT_FAKE_GPU", scenario_file},
              {"CUDA_VISIBLE_DEVICES", std::nullopt},
              {"PREFLIGHT_FAKE_CUINIT_DELAY_S", delay},
              {"PREFLIGHT_FAKE_GPU_CLIENTS", clients.string()}};
  ProbeRun run;
  run.options.timeout_s = 120;
  const auto start = std::chrono::steady_clock::now();
  const ProbeContext ctx(run.fs, run.env, run.options, start + std::chrono::seconds(60));
  probe_gpu_driver(ctx, run.facts);
  std::this_thread::sleep_for(before_the_end);  // the probes after it
  EXPECT_TRUE(ctx.finish_background(run.facts, std::chrono::steady_clock::now() + std::chrono::seconds(20)));
  SlowInitRun out;
  std::vector<std::shared_ptr<const void>> kept = ctx.take_kept();
  out.held_after_the_probes = driver_has_clients(clients);
  kept.clear();  // the job's GPU work is done
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (driver_has_clients(clients) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  out.let_go = !driver_has_clients(clients);
  fs::remove(clients);
  out.facts = std::move(run.facts);
  return out;
}

// With persistence mode off the driver tears the GPUs down after its last client: the hold helper
// is a client from beside the driver helper until the job's GPU work ends (after the probes: the
// all_reduce's helpers start new processes too), so only the first cuInit pays the init, and the
// smoke test (a new process) initialises at once; once the job drops what the probes kept, the
// hold lets the GPUs go.
TEST(GpuDriverProbe, TheHoldHelperKeepsTheGpusInitialisedThroughTheGpuWork) {
  const SlowInitRun run =
      probe_driver_with_slow_init(preflight::test_paths::fake_gpu_scenarios_dir() + "/h100x8-healthy.json", "5");
  const DriverFacts& d = run.facts.gpu.driver;
  ASSERT_TRUE(d.cuda_init_seconds.has_value()) << d.helper;
  // The driver helper's cuInit pays the 5 s, or waits for the hold's, started a moment before it.
  EXPECT_GE(*d.cuda_init_seconds, 3.0) << "the driver helper's cuInit";
  ASSERT_TRUE(d.smoke.ok()) << d.smoke.why();
  EXPECT_TRUE(d.smoke.value()->ok) << d.smoke.value()->error;
  EXPECT_LT(d.smoke.value()->seconds, 3.0) << "the smoke test paid an init of its own";
  EXPECT_NE(d.helper.find("; hold: holding the GPUs until the job's GPU work ends"), std::string::npos) << d.helper;
  EXPECT_TRUE(run.held_after_the_probes) << "the hold ended with the probes";
  EXPECT_TRUE(run.let_go) << "the hold outlived the job's GPU work";
}

TEST(GpuDriverProbe, AHoldThatCannotInitialiseSaysWhy) {
  // 2 s for the probes after the driver's: a hold that fails says so within milliseconds.
  const SlowInitRun run = probe_driver_with_slow_init(
      preflight::test_paths::fake_gpu_scenarios_dir() + "/cuinit-error100.json", "0", std::chrono::seconds(2));
  const std::string& line = run.facts.gpu.driver.helper;
  EXPECT_NE(line.find("; hold: could not hold the GPUs: cuInit: CUDA_ERROR_NO_DEVICE"), std::string::npos) << line;
  EXPECT_FALSE(run.held_after_the_probes);
}

TEST(GpuP2pProbe, CopiesEveryOrderedPairOfTheFakeNode) {
  // --timeout 200 and a 90 s probe phase: the 56 copies of 64 MiB, each verified on the CPU by
  // the fake, take seconds in a sanitized build on a busy machine; a healthy node ends early.
  const RankFacts f = probe_with_fakes(preflight::test_paths::fake_gpu_scenarios_dir() + "/nvlink-h100x8.json",
                                       std::chrono::seconds(90), 200.0);
  const DriverFacts& d = f.gpu.driver;
  ASSERT_TRUE(d.gpu_pairs.ok()) << d.gpu_pairs.why();
  EXPECT_EQ(d.gpu_pairs.value()->size(), 28u);
  ASSERT_TRUE(d.peer_copies.ok()) << d.peer_copies.why();
  ASSERT_EQ(d.peer_copies.value()->size(), 56u);
  for (const PeerCopy& c : *d.peer_copies.value()) {
    EXPECT_TRUE(c.ok) << c.src << "->" << c.dst << ": " << c.failed_step << " " << c.error;
    EXPECT_EQ(c.bytes, 64u << 20);
  }
  EXPECT_NE(d.helper.find("p2p: exited with status 0"), std::string::npos) << d.helper;
}

TEST(GpuP2pProbe, HungCopyIsNamedWithinTheHelperDeadline) {
  // --timeout 64: the probe phase is 32 s, the smoke test's share 9.6 s (its 64 MiB written and
  // verified on the CPU by the fake, which a ThreadSanitizer build on a loaded machine makes slow),
  // the hung copy's at most 4.8 s (half the peer copies' 15%).
  const auto start = std::chrono::steady_clock::now();
  const RankFacts f = probe_with_fakes(preflight::test_paths::fake_gpu_scenarios_dir() + "/p2p-hang.json",
                                       std::chrono::seconds(32), 64.0);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 32.0);
  const DriverFacts& d = f.gpu.driver;
  ASSERT_TRUE(d.peer_copies.ok()) << d.peer_copies.why();
  const PeerCopy& last = d.peer_copies.value()->back();
  EXPECT_EQ(last.src, 0);
  EXPECT_EQ(last.dst, 1);
  EXPECT_EQ(last.failed_step, "deadline");
  EXPECT_NE(last.error.find("did not finish within"), std::string::npos) << last.error;
}

TEST(GpuP2pProbe, OneGpuIsUnsupported) {
  const std::string one =
      (fs::temp_directory_path() / ("preflight-one-gpu-" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(one) << R"({"gpus": 1})";
  const RankFacts f = probe_with_fakes(one);
  fs::remove(one);
  const DriverFacts& d = f.gpu.driver;
  ASSERT_FALSE(d.peer_copies.ok());
  EXPECT_EQ(d.peer_copies.error()->code, ProbeErrc::Unsupported);
  EXPECT_EQ(d.peer_copies.error()->detail, "fewer than 2 GPUs visible (1 CUDA device)");
}

TEST(GpuP2pProbe, NotRunAfterAFailedSmokeTest) {
  const RankFacts f = probe_with_fakes(preflight::test_paths::fake_gpu_scenarios_dir() + "/copy-corrupt.json");
  const DriverFacts& d = f.gpu.driver;
  ASSERT_FALSE(d.peer_copies.ok());
  EXPECT_NE(d.peer_copies.why().find("not run: the smoke test on GPU 0 failed at verify"), std::string::npos)
      << d.peer_copies.why();
}

TEST(GpuDriverProbe, KernelModuleReadThroughSysroot) {
  HelperDirGuard guard(preflight::test_paths::gpu_helper_dir());
  Sysroot root;
  const FileSystem fs(root.root());
  const EnvSnapshot env;
  const Options options;
  RankFacts facts;
  root.write("/proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build\n");
  run_probe(FactSource::GpuDriver, ProbeContext(fs, env, options), facts);
  ASSERT_TRUE(facts.gpu.driver.kernel_module_version.ok());
  EXPECT_EQ(*facts.gpu.driver.kernel_module_version.value(), "580.65.06");
  // The tree is no capture: its GPUs are not in it, and no helper ran here to stand in for them.
  ASSERT_FALSE(facts.gpu.driver.nvml_gpus.ok());
  EXPECT_EQ(facts.gpu.driver.nvml_gpus.error()->code, ProbeErrc::Unsupported);
  EXPECT_NE(facts.gpu.driver.nvml_gpus.why().find("not in the capture"), std::string::npos);
  EXPECT_NE(facts.gpu.driver.helper.find("not run under --sysroot"), std::string::npos);
}

TEST(GpuDriverProbe, MissingHelperIsAnErrorOnEveryHelperField) {
  HelperDirGuard guard("/nonexistent-helper-dir");
  ProbeRun run;
  probe_gpu_driver(ProbeContext(run.fs, run.env, run.options), run.facts);
  const DriverFacts& d = run.facts.gpu.driver;
  ASSERT_FALSE(d.nvml_driver_version.ok());
  EXPECT_EQ(d.nvml_driver_version.error()->code, ProbeErrc::NotFound);
  EXPECT_NE(d.nvml_driver_version.error()->detail.find("preflight-gpu-probe driver"), std::string::npos);
  EXPECT_NE(d.nvml_driver_version.error()->detail.find("could not start"), std::string::npos);
  EXPECT_EQ(d.cuda_devices.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(d.smoke.error()->code, ProbeErrc::NotFound);
  EXPECT_EQ(d.nvml_driver_version.source(), "/nonexistent-helper-dir/preflight-gpu-probe");
}

TEST(GpuDriverProbe, ImageProfileRunsNoHelper) {
  HelperDirGuard guard("/nonexistent-helper-dir");  // would fail if it ran
  ProbeRun run;
  run.options.profile = Profile::Image;
  probe_gpu_driver(ProbeContext(run.fs, run.env, run.options), run.facts);
  const DriverFacts& d = run.facts.gpu.driver;
  for (const ProbeError* e :
       {d.kernel_module_version.error(), d.nvml_driver_version.error(), d.cuda_driver_version.error(),
        d.nvml_gpus.error(), d.cuda_devices.error(), d.smoke.error()}) {
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->code, ProbeErrc::Unsupported);
    EXPECT_EQ(e->detail, "image profile: no driver expected");
  }
}

// Every probe of the driver's facts, live or of a tree, leaves its field Unsupported with the
// image profile's reason and starts nothing (no helper, no /dev/kmsg read).
TEST(GpuDriverProbe, ImageProfileLeavesEveryDriverFactUnsupported) {
  HelperDirGuard guard("/nonexistent-helper-dir");
  using Field = const ProbeError* (*)(const DriverFacts&);
  const Field copies = [](const DriverFacts& d) { return d.peer_copies.error(); };
  const Field health = [](const DriverFacts& d) { return d.health.error(); };
  const Field log = [](const DriverFacts& d) { return d.kernel_log.error(); };
  const Field smoke = [](const DriverFacts& d) { return d.smoke.error(); };
  const std::string no_driver = "image profile: no driver expected";
  const struct {
    ProbeFn probe;
    Field field;
    std::string detail;
  } rows[] = {{probe_gpu_p2p, copies, no_driver},
              {probe_gpu_p2p_tree, copies, no_driver},
              {probe_gpu_health, health, no_driver},
              {probe_gpu_health_tree, health, no_driver},
              {probe_kernel_log, log, "image profile: no kernel log of the node"},
              {probe_kernel_log_tree, log, "image profile: no kernel log of the node"},
              {probe_gpu_driver_tree, smoke, no_driver}};
  for (const auto& row : rows) {
    ProbeRun run;
    run.options.profile = Profile::Image;
    row.probe(ProbeContext(run.fs, run.env, run.options), run.facts);
    const ProbeError* e = row.field(run.facts.gpu.driver);
    ASSERT_NE(e, nullptr) << row.detail;
    EXPECT_EQ(e->code, ProbeErrc::Unsupported);
    EXPECT_EQ(e->detail, row.detail);
  }
  ProbeRun run;
  run.options.profile = Profile::Image;
  probe_gpu_driver_tree(ProbeContext(run.fs, run.env, run.options), run.facts);
  EXPECT_EQ(run.facts.gpu.driver.helper, "not run (image profile)");
}

TEST(NcclProbe, FirstCandidateWithItsSource) {
  if (!fs::exists(kRealNccl)) GTEST_SKIP() << kRealNccl << " is not installed";
  HelperDirGuard guard(preflight::test_paths::gpu_helper_dir());
  ProbeRun run;
  run.options.profile = Profile::Image;  // NCCL is read in every profile
  run.facts.gpu.runtime.nccl_candidates = {{kRealNccl, "--nccl-lib", ""}, {"/nonexistent/libnccl.so.2", "loader", ""}};
  probe_nccl(ProbeContext(run.fs, run.env, run.options), run.facts);
  const Probed<NcclLibrary>& lib = run.facts.gpu.nccl;
  ASSERT_TRUE(lib.ok()) << lib.why();
  EXPECT_EQ(lib.value()->version, "2.28.9");
  EXPECT_EQ(lib.value()->source, "--nccl-lib");
  EXPECT_EQ(lib.value()->path, fs::canonical(kRealNccl).string());
}

TEST(NcclProbe, NoCandidateFallsBackToOptionThenSoname) {
  HelperDirGuard guard(preflight::test_paths::gpu_helper_dir());
  ProbeRun run;
  run.options.nccl_lib = "/nonexistent/libnccl.so.2";
  probe_nccl(ProbeContext(run.fs, run.env, run.options), run.facts);
  ASSERT_FALSE(run.facts.gpu.nccl.ok());
  EXPECT_EQ(run.facts.gpu.nccl.error()->code, ProbeErrc::LibraryMissing);
  EXPECT_NE(run.facts.gpu.nccl.error()->detail.find("/nonexistent/libnccl.so.2"), std::string::npos);

  ProbeRun soname;
  probe_nccl(ProbeContext(soname.fs, soname.env, soname.options), soname.facts);
  // Whatever the loader finds (or not): a fact or a library error, never "not probed" or a crash.
  if (const ProbeError* e = soname.facts.gpu.nccl.error()) {
    EXPECT_EQ(e->code, ProbeErrc::LibraryMissing) << e->detail;
  } else {
    EXPECT_EQ(soname.facts.gpu.nccl.value()->source, "loader");
  }
}

TEST(NcclProbe, MissingHelper) {
  HelperDirGuard guard("/nonexistent-helper-dir");
  ProbeRun run;
  probe_nccl(ProbeContext(run.fs, run.env, run.options), run.facts);
  ASSERT_FALSE(run.facts.gpu.nccl.ok());
  EXPECT_EQ(run.facts.gpu.nccl.error()->code, ProbeErrc::NotFound);
  EXPECT_NE(run.facts.gpu.nccl.error()->detail.find("preflight-gpu-probe nccl"), std::string::npos);
}

}  // namespace
}  // namespace gpu_probe_gpu_probe_test
}  // namespace preflight
