// SPDX-License-Identifier: MIT
// Hand-built GPU facts for the tests of the GPU checks: a healthy node with N GPUs, a node with no
// driver at all, and the single GPUs and CUDA runtimes the compatibility checks read.
#pragma once

#include <cstdio>
#include <string>

#include "checks/check.hpp"

namespace preflight::gpu_fixture {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

inline std::string uuid(int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-6a2b%04d-1111-2222-3333-44445555%04d", i, i);
  return buf;
}
inline std::string nvml_bus(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "00000000:%02X:00.0", 0x18 + i);
  return buf;
}
inline std::string cuda_bus(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:%02X:00.0", 0x18 + i);
  return buf;
}

/// A GPU as NVML lists it, with only what the compatibility checks read.
inline NvmlGpu nvml_gpu(int index, const std::string& name, int cc_major, int cc_minor) {
  NvmlGpu g;
  g.index = index;
  g.name = name;
  g.cc_major = cc_major;
  g.cc_minor = cc_minor;
  return g;
}

/// A CUDA runtime the job will load, as the runtime discovery reports it.
inline CudaRuntime cuda_runtime(const std::string& version, const std::string& kind = "torch",
                                const std::string& detail = "",
                                const std::string& path = "/venv/lib/python3.11/site-packages/torch/version.py") {
  CudaRuntime r;
  r.version = version;
  r.kind = kind;
  r.detail = detail;
  r.path = path;
  r.loaded_by = detail.empty() ? kind : detail;  // a runtime the job loads (clear it for one it does not)
  return r;
}

/// A healthy node: driver 550.54.15 (CUDA 12.4), n H100s visible to NVML and CUDA, nothing running.
inline RankFacts healthy(int n = 8) {
  RankFacts f;
  f.identity.pid = 777;
  f.placement.local_ranks = 1;
  DriverFacts& d = f.gpu.driver;
  d.kernel_module_version = Probed<std::string>::ok("550.54.15", "/proc/driver/nvidia/version");
  d.nvml_driver_version = Probed<std::string>::ok("550.54.15", "nvmlSystemGetDriverVersion");
  d.cuda_driver_version = Probed<int>::ok(12040, "cuDriverGetVersion");
  d.loaded_libraries = {"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
                        "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"};
  std::vector<NvmlGpu> nvml;
  std::vector<CudaDevice> cuda;
  for (int i = 0; i < n; ++i) {
    NvmlGpu g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.uuid = uuid(i);
    g.pci_bus_id = nvml_bus(i);
    g.cc_major = 9;
    g.memory_total = 80 * kGiB;
    g.memory_used = 1 * kMiB;
    g.persistence_mode = true;
    g.mig_enabled = false;
    nvml.push_back(g);
    CudaDevice c;
    c.ordinal = i;
    c.name = g.name;
    c.uuid = g.uuid;
    c.pci_bus_id = cuda_bus(i);
    c.cc_major = 9;
    c.memory_total = g.memory_total;
    cuda.push_back(c);
  }
  d.nvml_gpus = Probed<std::vector<NvmlGpu>>::ok(nvml, "nvmlDeviceGetHandleByIndex");
  d.cuda_devices = Probed<std::vector<CudaDevice>>::ok(cuda, "cuDeviceGet");
  SmokeResult s;
  s.ordinal = 0;
  s.bytes = 64 * kMiB;
  s.ok = true;
  s.seconds = 0.05;
  d.smoke = Probed<SmokeResult>::ok(s, "driver helper");
  d.helper = "exited with status 0 after 0.3 s";
  return f;
}

/// No driver at all: neither library loads, no kernel module.
inline RankFacts no_driver() {
  RankFacts f;
  f.identity.pid = 777;
  DriverFacts& d = f.gpu.driver;
  const std::string nvml_err = "libnvidia-ml.so.1: cannot open shared object file: No such file or directory";
  const std::string cuda_err = "libcuda.so.1: cannot open shared object file: No such file or directory";
  d.kernel_module_version =
      Probed<std::string>::error(ProbeErrc::NotFound, "no such file", "/proc/driver/nvidia/version");
  d.nvml_driver_version = Probed<std::string>::error(ProbeErrc::LibraryMissing, nvml_err, "dlopen");
  d.cuda_driver_version = Probed<int>::error(ProbeErrc::LibraryMissing, cuda_err, "dlopen");
  d.nvml_gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::LibraryMissing, nvml_err, "dlopen");
  d.cuda_devices = Probed<std::vector<CudaDevice>>::error(ProbeErrc::LibraryMissing, cuda_err, "dlopen");
  d.smoke = Probed<SmokeResult>::error(ProbeErrc::LibraryMissing, cuda_err, "dlopen");
  return f;
}

inline Verdict judge(const CheckSpec& spec, const RankFacts& f, const Options& o = {}, Profile p = Profile::Node) {
  return run_check(spec, CheckContext{f, o, p});
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace preflight::gpu_fixture
