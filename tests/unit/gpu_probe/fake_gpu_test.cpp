// SPDX-License-Identifier: MIT
// The fake NVIDIA libraries of the test tree (tests/fakes): each is dlopened by its full path,
// its functions are resolved by name with dlsym and called through the types of
// gpu_probe/nvidia/*.hpp, and each scenario must be served as written. Crashes and hangs happen in
// tests/fakes/fake_gpu_driver_main.cpp under run_contained, never in this process.
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nccl_api.hpp"
#include "gpu_probe/nvidia/nvml_api.hpp"
#include "sys/contained.hpp"
#include "test_paths.hpp"
#include "tests/fakes/scenario.hpp"

namespace preflight {
namespace gpu_probe_fake_gpu_test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace fake = fake_gpu;

const std::string kLibDir = preflight::test_paths::fake_gpu_lib_dir();
const std::string kScenarios = preflight::test_paths::fake_gpu_scenarios_dir();

std::string scenario_path(const std::string& name) { return kScenarios + "/" + name + ".json"; }

/// Sets (or, with nullopt, unsets) environment variables for one test and restores them.
class EnvGuard {
 public:
  EnvGuard() = default;
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }
  void set(const std::string& name, const std::optional<std::string>& value) {
    if (saved_.find(name) == saved_.end()) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    if (value)
      ::setenv(name.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

/// A fake opened by its full path for one test; closing it unloads it, so the next test's
/// scenario and CUDA_VISIBLE_DEVICES are read afresh.
class Library {
 public:
  explicit Library(const std::string& path) : path_(path), handle_(::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) ADD_FAILURE() << "dlopen " << path << ": " << ::dlerror();
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  bool loaded() const { return handle_ != nullptr; }
  template <typename Fn>
  Fn fn(const char* name) const {
    void* p = handle_ ? ::dlsym(handle_, name) : nullptr;
    if (p == nullptr) throw std::runtime_error(std::string("no symbol ") + name + " in " + path_);
    return reinterpret_cast<Fn>(p);
  }
  void* symbol(const char* name) const { return handle_ ? ::dlsym(handle_, name) : nullptr; }

 private:
  std::string path_;
  void* handle_;
};

// ---------------------------------------------------------------------------------------------
// The scenario format and CUDA_VISIBLE_DEVICES rules (compiled into the test too).

TEST(FakeGpuScenario, DefaultIsAHealthyH100Node) {
  const fake::Scenario s = fake::default_scenario();
  EXPECT_EQ(s.driver_version, "550.54.15");
  EXPECT_EQ(s.cuda_driver_version, 12040);
  ASSERT_EQ(s.gpus.size(), 8u);
  EXPECT_EQ(s.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(s.gpus[7].pci_bus_id, "00000000:DB:00.0");
  EXPECT_EQ(s.gpus[0].cc_major, 9);
  EXPECT_TRUE(s.cu_init.ok() && s.nvml_init.ok() && s.copy.ok());
}

TEST(FakeGpuScenario, EverySampleScenarioParses) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(kScenarios)) {
    if (entry.path().extension() != ".json") continue;
    ++n;
    EXPECT_NO_THROW(fake::load_scenario_file(entry.path().string())) << entry.path();
  }
  EXPECT_GE(n, 11);
}

TEST(FakeGpuScenario, SampleScenariosSayWhatTheirNamesSay) {
  const fake::Scenario busy = fake::load_scenario_file(scenario_path("busy-30000mib"));
  ASSERT_EQ(busy.gpus[0].processes.size(), 1u);
  EXPECT_EQ(busy.gpus[0].processes[0].pid, 4242u);
  EXPECT_EQ(busy.gpus[0].processes[0].used_mib, 30000u);
  const fake::Scenario volta = fake::load_scenario_file(scenario_path("cc70-volta"));
  EXPECT_EQ(volta.gpus[0].cc_major, 7);
  EXPECT_EQ(volta.gpus[0].cc_minor, 0);
  EXPECT_FALSE(volta.gpus[0].mig.has_value());
  EXPECT_EQ(fake::load_scenario_file(scenario_path("driver535-cuda122")).cuda_driver_version, 12020);
  EXPECT_EQ(fake::load_scenario_file(scenario_path("cuinit-segv")).cu_init.kind, fake::Fault::Kind::Segv);
  EXPECT_EQ(fake::load_scenario_file(scenario_path("copy-corrupt")).copy.kind, fake::Fault::Kind::Corrupt);
  EXPECT_TRUE(fake::load_scenario_file(scenario_path("no-devices")).gpus.empty());
  const fake::Scenario more = fake::load_scenario_file(scenario_path("nvml-sees-more"));
  EXPECT_FALSE(more.gpus[7].cuda_visible);
}

TEST(FakeGpuScenario, DefaultsFillOmittedFields) {
  const fake::Scenario s = fake::parse_scenario(nlohmann::json::parse(R"({
    "driver_version": "535.104.05", "cuda_driver_version": 12020, "nccl_version": 22809,
    "gpus": [{"cc": "7.0"}, {"pci_bus_id": "0000:3b:00.0", "processes": [{"pid": 7, "used_mib": 100}]}],
    "faults": {"cuInit": "error:100"}, "copy": "corrupt"})"));
  EXPECT_EQ(s.driver_version, "535.104.05");
  EXPECT_EQ(s.nccl_version, 22809);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].name, "Tesla V100-SXM2-32GB");
  EXPECT_EQ(s.gpus[0].memory_total_mib, 32768u);
  EXPECT_EQ(s.gpus[1].pci_bus_id, "00000000:3B:00.0") << "normalised to NVML's spelling";
  EXPECT_EQ(s.gpus[1].memory_used_mib, 100u) << "memory used defaults to the processes' sum";
  EXPECT_EQ(s.cu_init.kind, fake::Fault::Kind::Error);
  EXPECT_EQ(s.cu_init.code, 100);
  EXPECT_EQ(s.copy.kind, fake::Fault::Kind::Corrupt);
  EXPECT_EQ(fake::parse_scenario(nlohmann::json::parse(R"({"gpus": 2})")).gpus.size(), 2u);
}

TEST(FakeGpuScenario, MistakesAreNamed) {
  auto error_of = [](const char* text) -> std::string {
    try {
      fake::parse_scenario(nlohmann::json::parse(text));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(R"({"gpu": []})").find("unknown key 'gpu'"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": [{"uuid": "GPU-123"}]})").find("gpus[0].uuid"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": [{"cc": "nine"}]})").find("gpus[0].cc"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": [{"pci_bus_id": "18:00"}]})").find("pci_bus_id"), std::string::npos);
  EXPECT_NE(error_of(R"({"faults": {"cuInit": "crash"}})").find("faults.cuInit"), std::string::npos);
  EXPECT_NE(error_of(R"({"faults": {"cuInit": "corrupt"}})").find("faults.cuInit"), std::string::npos);
  EXPECT_NE(error_of(R"({"nvml_only_gpus": [8]})").find("nvml_only_gpus"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": [{"memory_total_mib": 10, "memory_used_mib": 11}]})").find("exceeds"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": [{}, {"uuid": "GPU-10001b2c3d-4e5f-6071-8293-a4b5c6d7e800"}]})"), "");
  EXPECT_THROW(fake::load_scenario_file("/nonexistent/scenario.json"), std::invalid_argument);
  EXPECT_NE(error_of(R"({"gpus": [{"cpu_affinity": "0-x"}]})").find("gpus[0].cpu_affinity"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": [{"numa_node": -1}]})").find("gpus[0].numa_node"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": [{"nvlink_remote": "bridge"}]})").find("gpus[0].nvlink_remote"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": 2, "topology": [["X", "PIX"], ["SYS", "X"]]})").find("symmetric"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": 2, "topology": [["X", "NV4"], ["NV4", "X"]]})").find("topology[0][1]"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"p2p": {"read": "ok"}})").find("p2p.read"), std::string::npos);
  EXPECT_NE(error_of(R"({"gpus": 2, "peer_copy_faults": [{"src": 0, "dst": 2, "fault": "hang"}]})")
                .find("peer_copy_faults[0].dst"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"peer_copy_faults": [{"src": 0, "dst": 1, "fault": "hang", "step": "enable"}]})")
                .find("takes only error:N"),
            std::string::npos);
}

TEST(FakeGpuScenario, TopologyP2pAndPeerAccessDefaults) {
  const fake::Scenario d = fake::default_scenario();
  EXPECT_EQ(d.gpus[0].nvlinks, 18);
  EXPECT_FALSE(d.gpus[0].cpu_affinity.has_value());
  EXPECT_FALSE(d.gpus[0].numa_node.has_value());
  EXPECT_EQ(d.path(0, 3), "NODE");
  EXPECT_EQ(d.path(0, 4), "SYS");
  EXPECT_EQ(d.path(2, 2), "X");
  EXPECT_EQ(d.p2p_status(0, 1).nvlink, "OK");
  EXPECT_TRUE(d.can_access_peer(0, 7));
  const fake::Scenario pcie = fake::load_scenario_file(scenario_path("p2p-sys-pcie"));
  EXPECT_EQ(pcie.gpus[0].nvlinks, 0) << "an L40S has no NVLink";
  EXPECT_EQ(pcie.gpus[0].cpu_affinity, (std::vector<int>([] {
              std::vector<int> v;
              for (int i = 0; i < 32; ++i) v.push_back(i);
              return v;
            }())));
  EXPECT_EQ(pcie.p2p_status(2, 0).read, "TNS");
  EXPECT_EQ(pcie.p2p_status(0, 2).nvlink, "NS");
  EXPECT_FALSE(pcie.can_access_peer(1, 3)) << "no peer access where NVML's read status is not OK";
  EXPECT_TRUE(pcie.can_access_peer(0, 1));
  const fake::Scenario numa = fake::load_scenario_file(scenario_path("numa-gpu0-cpu1"));
  EXPECT_EQ(numa.gpus[0].cpu_affinity, std::vector<int>{1});
  EXPECT_EQ(numa.gpus[0].numa_node, 0);
  EXPECT_EQ(numa.gpus[1].cpu_affinity, std::vector<int>{0});
  const fake::Scenario hang = fake::load_scenario_file(scenario_path("p2p-hang"));
  ASSERT_NE(hang.peer_copy_fault(0, 1), nullptr);
  EXPECT_EQ(hang.peer_copy_fault(0, 1)->kind, fake::PeerCopyFault::Kind::Hang);
  EXPECT_EQ(hang.peer_copy_fault(1, 0), nullptr);
}

std::vector<std::size_t> visible(const fake::Scenario& s, const char* cvd) { return fake::cuda_visible_gpus(s, cvd); }

TEST(FakeGpuScenario, CudaVisibleDevicesFollowsTheDriversRules) {
  const fake::Scenario s = fake::default_scenario();
  using V = std::vector<std::size_t>;
  EXPECT_EQ(visible(s, nullptr).size(), 8u);
  EXPECT_EQ(visible(s, ""), V{});
  EXPECT_EQ(visible(s, "3"), V{3});
  EXPECT_EQ(visible(s, "2,0"), (V{2, 0})) << "the listed order is the CUDA order";
  EXPECT_EQ(visible(s, "0,2,-1,1"), (V{0, 2})) << "parsing stops at the first invalid entry";
  EXPECT_EQ(visible(s, "1,1,2"), V{1}) << "a duplicate is invalid";
  EXPECT_EQ(visible(s, "0,8,1"), V{0}) << "out of range is invalid";
  EXPECT_EQ(visible(s, "-1"), V{});
  EXPECT_EQ(visible(s, "x"), V{});
  EXPECT_EQ(visible(s, "1,"), V{1});
  const std::string uuid5 = s.gpus[5].uuid;
  EXPECT_EQ(visible(s, uuid5.c_str()), V{5});
  EXPECT_EQ(visible(s, uuid5.substr(0, 6).c_str()), V{5}) << "a unique prefix selects";
  EXPECT_EQ(visible(s, ("4," + uuid5.substr(0, 7)).c_str()), (V{4, 5}));
  EXPECT_EQ(visible(s, "GPU-"), V{});
  EXPECT_EQ(visible(s, "GPU-ffff"), V{}) << "no such GPU";

  fake::Scenario shared_prefix = s;
  shared_prefix.gpus[1].uuid = "GPU-aaaa0000-0000-0000-0000-000000000001";
  shared_prefix.gpus[2].uuid = "GPU-aaaa0000-0000-0000-0000-000000000002";
  EXPECT_EQ(visible(shared_prefix, "0,GPU-aaaa,3"), V{0}) << "an ambiguous prefix is invalid";

  const fake::Scenario more = fake::load_scenario_file(scenario_path("nvml-sees-more"));
  EXPECT_EQ(visible(more, nullptr).size(), 7u) << "nvml_only_gpus are invisible to CUDA";
  EXPECT_EQ(visible(more, "6,7"), V{6}) << "ordinals count CUDA's devices only";
}

// ---------------------------------------------------------------------------------------------
// libcuda.so.1

std::string cuda_lib() { return kLibDir + "/libcuda.so.1"; }
std::string nvml_lib() { return kLibDir + "/libnvidia-ml.so.1"; }
std::string nccl_lib() { return kLibDir + "/libnccl.so.2"; }

/// With the scenario and CUDA_VISIBLE_DEVICES given, cuInit's result and the device count.
struct CudaView {
  int init = -1;
  int count = -1;
};
CudaView cuda_view(const std::optional<std::string>& scenario, const std::optional<std::string>& cvd) {
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", scenario);
  env.set("CUDA_VISIBLE_DEVICES", cvd);
  Library lib(cuda_lib());
  CudaView view;
  if (!lib.loaded()) return view;
  view.init = lib.fn<cuda::PFN_cuInit>(cuda::name_cuInit)(0);
  int count = -1;
  if (lib.fn<cuda::PFN_cuDeviceGetCount>(cuda::name_cuDeviceGetCount)(&count) == cuda::CUDA_SUCCESS) view.count = count;
  return view;
}

TEST(FakeLibcuda, ClosingUnloadsSoTheNextOpenStartsAfresh) {
  { Library lib(cuda_lib()); }
  EXPECT_EQ(::dlopen(cuda_lib().c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
  { Library lib(nvml_lib()); }
  EXPECT_EQ(::dlopen(nvml_lib().c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
  { Library lib(nccl_lib()); }
  EXPECT_EQ(::dlopen(nccl_lib().c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
}

TEST(FakeLibcuda, ExportsOnlyTheDriverApi) {
  Library lib(cuda_lib());
  for (const char* name :
       {cuda::name_cuInit, cuda::name_cuDriverGetVersion, cuda::name_cuDeviceGetCount, cuda::name_cuDeviceGet,
        cuda::name_cuDeviceGetName, cuda::name_cuDeviceGetAttribute, cuda::name_cuDeviceTotalMem_v2,
        cuda::name_cuDeviceGetUuid_v2, cuda::name_cuDeviceGetUuid, cuda::name_cuDevicePrimaryCtxRetain,
        cuda::name_cuDevicePrimaryCtxRelease_v2, cuda::name_cuCtxSetCurrent, cuda::name_cuCtxSynchronize,
        cuda::name_cuMemAlloc_v2, cuda::name_cuMemFree_v2, cuda::name_cuMemsetD32_v2, cuda::name_cuMemcpyDtoH_v2,
        cuda::name_cuGetErrorName})
    EXPECT_NE(lib.symbol(name), nullptr) << name;
  EXPECT_EQ(lib.symbol("_ZN9preflight8fake_gpu16default_scenarioEv"), nullptr) << "internals are hidden";
}

TEST(FakeLibcuda, ServesTheDefaultNode) {
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", std::nullopt);
  env.set("CUDA_VISIBLE_DEVICES", std::nullopt);
  Library lib(cuda_lib());
  ASSERT_TRUE(lib.loaded());
  int version = 0;
  ASSERT_EQ(lib.fn<cuda::PFN_cuDriverGetVersion>(cuda::name_cuDriverGetVersion)(&version), cuda::CUDA_SUCCESS);
  EXPECT_EQ(version, 12040) << "answered before cuInit, as the real driver does";
  int count = 0;
  EXPECT_EQ(lib.fn<cuda::PFN_cuDeviceGetCount>(cuda::name_cuDeviceGetCount)(&count), cuda::CUDA_ERROR_NOT_INITIALIZED);
  ASSERT_EQ(lib.fn<cuda::PFN_cuInit>(cuda::name_cuInit)(0), cuda::CUDA_SUCCESS);
  ASSERT_EQ(lib.fn<cuda::PFN_cuDeviceGetCount>(cuda::name_cuDeviceGetCount)(&count), cuda::CUDA_SUCCESS);
  EXPECT_EQ(count, 8);

  cuda::CUdevice dev = -1;
  ASSERT_EQ(lib.fn<cuda::PFN_cuDeviceGet>(cuda::name_cuDeviceGet)(&dev, 1), cuda::CUDA_SUCCESS);
  EXPECT_EQ(lib.fn<cuda::PFN_cuDeviceGet>(cuda::name_cuDeviceGet)(&dev, 8), cuda::CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(lib.fn<cuda::PFN_cuDeviceGet>(cuda::name_cuDeviceGet)(&dev, 1), cuda::CUDA_SUCCESS);
  char name[256] = {};
  ASSERT_EQ(lib.fn<cuda::PFN_cuDeviceGetName>(cuda::name_cuDeviceGetName)(name, sizeof name, dev), cuda::CUDA_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
  char small[6] = {};
  ASSERT_EQ(lib.fn<cuda::PFN_cuDeviceGetName>(cuda::name_cuDeviceGetName)(small, sizeof small, dev),
            cuda::CUDA_SUCCESS);
  EXPECT_STREQ(small, "NVIDI") << "truncated and terminated";

  const auto attribute = lib.fn<cuda::PFN_cuDeviceGetAttribute>(cuda::name_cuDeviceGetAttribute);
  auto attr = [&](cuda::CUdevice_attribute a) {
    int v = -1;
    EXPECT_EQ(attribute(&v, a, dev), cuda::CUDA_SUCCESS);
    return v;
  };
  EXPECT_EQ(attr(cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 9);
  EXPECT_EQ(attr(cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), 0);
  EXPECT_EQ(attr(cuda::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID), 0x2a);
  EXPECT_EQ(attr(cuda::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID), 0);
  EXPECT_EQ(attr(cuda::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID), 0);
  int v = 0;
  EXPECT_EQ(attribute(&v, static_cast<cuda::CUdevice_attribute>(1), dev), cuda::CUDA_ERROR_INVALID_VALUE);

  std::size_t total = 0;
  ASSERT_EQ(lib.fn<cuda::PFN_cuDeviceTotalMem_v2>(cuda::name_cuDeviceTotalMem_v2)(&total, dev), cuda::CUDA_SUCCESS);
  EXPECT_EQ(total, std::size_t{81559} * 1024 * 1024);

  cuda::CUuuid uuid{}, uuid_v1{};
  ASSERT_EQ(lib.fn<cuda::PFN_cuDeviceGetUuid_v2>(cuda::name_cuDeviceGetUuid_v2)(&uuid, dev), cuda::CUDA_SUCCESS);
  ASSERT_EQ(lib.fn<cuda::PFN_cuDeviceGetUuid>(cuda::name_cuDeviceGetUuid)(&uuid_v1, dev), cuda::CUDA_SUCCESS);
  const fake::Scenario expected = fake::default_scenario();
  EXPECT_EQ(std::memcmp(uuid.bytes, expected.gpus[1].uuid_bytes.data(), 16), 0);
  EXPECT_EQ(std::memcmp(uuid.bytes, uuid_v1.bytes, 16), 0);
  EXPECT_EQ(static_cast<unsigned char>(uuid.bytes[0]), 0x21) << expected.gpus[1].uuid;

  const auto error_name = lib.fn<cuda::PFN_cuGetErrorName>(cuda::name_cuGetErrorName);
  const char* text = nullptr;
  ASSERT_EQ(error_name(cuda::CUDA_ERROR_NO_DEVICE, &text), cuda::CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(error_name(static_cast<cuda::CUresult>(12345), &text), cuda::CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(text, nullptr);
}

TEST(FakeLibcuda, ServesTheScenarioVersions) {
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", scenario_path("driver535-cuda122"));
  Library lib(cuda_lib());
  int version = 0;
  ASSERT_EQ(lib.fn<cuda::PFN_cuDriverGetVersion>(cuda::name_cuDriverGetVersion)(&version), cuda::CUDA_SUCCESS);
  EXPECT_EQ(version, 12020);
}

TEST(FakeLibcuda, HonoursCudaVisibleDevices) {
  EXPECT_EQ(cuda_view(std::nullopt, std::nullopt).count, 8);
  EXPECT_EQ(cuda_view(std::nullopt, "0,2,-1,1").count, 2);
  EXPECT_EQ(cuda_view(std::nullopt, "7,6,5").count, 3);
  EXPECT_EQ(cuda_view(std::nullopt, "1,1").count, 1);
  EXPECT_EQ(cuda_view(std::nullopt, fake::default_scenario().gpus[3].uuid.substr(0, 8)).count, 1);
  EXPECT_EQ(cuda_view(scenario_path("h100x8-healthy"), "GPU-9f3a,GPU-6a2b").count, 2);

  const CudaView none = cuda_view(std::nullopt, "");
  EXPECT_EQ(none.init, cuda::CUDA_ERROR_NO_DEVICE) << "no visible device: cuInit fails, as the driver's does";
  EXPECT_EQ(none.count, -1);
  EXPECT_EQ(cuda_view(std::nullopt, "-1").init, cuda::CUDA_ERROR_NO_DEVICE);

  const CudaView more = cuda_view(scenario_path("nvml-sees-more"), std::nullopt);
  EXPECT_EQ(more.init, cuda::CUDA_SUCCESS);
  EXPECT_EQ(more.count, 7);
  EXPECT_EQ(cuda_view(scenario_path("no-devices"), std::nullopt).init, cuda::CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(cuda_view(scenario_path("cuinit-error100"), std::nullopt).init, cuda::CUDA_ERROR_NO_DEVICE);
}

TEST(FakeLibcuda, AnUnusableScenarioFailsInit) {
  const fs::path bad = fs::temp_directory_path() / ("fake-gpu-bad-" + std::to_string(::getpid()) + ".json");
  std::ofstream(bad) << R"({"gpus": [{"cc": "nine"}]})";
  EXPECT_EQ(cuda_view(bad.string(), std::nullopt).init, cuda::CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(cuda_view("/nonexistent/scenario.json", std::nullopt).init, cuda::CUDA_ERROR_UNKNOWN);
  fs::remove(bad);
}

/// The smoke sequence: context, allocate, write a pattern, read it back. Returns the index of the
/// first wrong word, -1 when all are right; fails the test on an error code.
long smoke(const Library& lib, std::size_t words, unsigned int pattern) {
  using namespace cuda;
  EXPECT_EQ(lib.fn<PFN_cuInit>(name_cuInit)(0), CUDA_SUCCESS);
  CUdevice dev = 0;
  EXPECT_EQ(lib.fn<PFN_cuDeviceGet>(name_cuDeviceGet)(&dev, 0), CUDA_SUCCESS);
  CUdeviceptr mem = 0;
  EXPECT_EQ(lib.fn<PFN_cuMemAlloc_v2>(name_cuMemAlloc_v2)(&mem, words * 4), CUDA_ERROR_INVALID_CONTEXT)
      << "no current context yet";
  CUcontext ctx = nullptr;
  EXPECT_EQ(lib.fn<PFN_cuDevicePrimaryCtxRetain>(name_cuDevicePrimaryCtxRetain)(&ctx, dev), CUDA_SUCCESS);
  EXPECT_NE(ctx, nullptr);
  EXPECT_EQ(lib.fn<PFN_cuCtxSetCurrent>(name_cuCtxSetCurrent)(ctx), CUDA_SUCCESS);
  EXPECT_EQ(lib.fn<PFN_cuMemAlloc_v2>(name_cuMemAlloc_v2)(&mem, words * 4), CUDA_SUCCESS);
  EXPECT_NE(mem, 0u);
  EXPECT_EQ(lib.fn<PFN_cuMemsetD32_v2>(name_cuMemsetD32_v2)(mem, pattern, words), CUDA_SUCCESS);
  EXPECT_EQ(lib.fn<PFN_cuCtxSynchronize>(name_cuCtxSynchronize)(), CUDA_SUCCESS);
  std::vector<unsigned int> host(words, 0);
  EXPECT_EQ(lib.fn<PFN_cuMemcpyDtoH_v2>(name_cuMemcpyDtoH_v2)(host.data(), mem, words * 4), CUDA_SUCCESS);
  EXPECT_EQ(lib.fn<PFN_cuMemFree_v2>(name_cuMemFree_v2)(mem), CUDA_SUCCESS);
  EXPECT_EQ(lib.fn<PFN_cuMemFree_v2>(name_cuMemFree_v2)(mem), CUDA_ERROR_INVALID_VALUE) << "double free";
  EXPECT_EQ(lib.fn<PFN_cuCtxSetCurrent>(name_cuCtxSetCurrent)(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(lib.fn<PFN_cuDevicePrimaryCtxRelease_v2>(name_cuDevicePrimaryCtxRelease_v2)(dev), CUDA_SUCCESS);
  for (std::size_t i = 0; i < words; ++i)
    if (host[i] != pattern) return static_cast<long>(i);
  return -1;
}

TEST(FakeLibcuda, SmokeSequenceWritesAndReadsBack) {
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", std::nullopt);
  env.set("CUDA_VISIBLE_DEVICES", std::nullopt);
  Library lib(cuda_lib());
  EXPECT_EQ(smoke(lib, 1 << 18, 0x5AA5F00Du), -1);
  EXPECT_EQ(smoke(lib, 16, 0u), -1);
}

TEST(FakeLibcuda, CorruptCopyGivesAWrongWord) {
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", scenario_path("copy-corrupt"));
  env.set("CUDA_VISIBLE_DEVICES", std::nullopt);
  Library lib(cuda_lib());
  EXPECT_EQ(smoke(lib, 1024, 0x5AA5F00Du), 17);
  EXPECT_EQ(smoke(lib, 4, 0x5AA5F00Du), 3) << "a short copy loses its last word";
}

TEST(FakeLibcuda, AllocationBeyondFreeMemoryFails) {
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", scenario_path("busy-30000mib"));
  env.set("CUDA_VISIBLE_DEVICES", std::nullopt);
  Library lib(cuda_lib());
  using namespace cuda;
  ASSERT_EQ(lib.fn<PFN_cuInit>(name_cuInit)(0), CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  ASSERT_EQ(lib.fn<PFN_cuDevicePrimaryCtxRetain>(name_cuDevicePrimaryCtxRetain)(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(lib.fn<PFN_cuCtxSetCurrent>(name_cuCtxSetCurrent)(ctx), CUDA_SUCCESS);
  CUdeviceptr mem = 0;
  EXPECT_EQ(lib.fn<PFN_cuMemAlloc_v2>(name_cuMemAlloc_v2)(&mem, std::size_t{60000} << 20), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(lib.fn<PFN_cuCtxSetCurrent>(name_cuCtxSetCurrent)(nullptr), CUDA_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// libnvidia-ml.so.1

TEST(FakeLibnvml, ServesTheDefaultNode) {
  using namespace nvml;
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", std::nullopt);
  env.set("CUDA_VISIBLE_DEVICES", "0");
  Library lib(nvml_lib());
  ASSERT_TRUE(lib.loaded());
  unsigned int count = 0;
  EXPECT_EQ(lib.fn<PFN_nvmlDeviceGetCount_v2>(name_nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_SUCCESS);

  char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  ASSERT_EQ(lib.fn<PFN_nvmlSystemGetDriverVersion>(name_nvmlSystemGetDriverVersion)(text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, "550.54.15");
  EXPECT_EQ(lib.fn<PFN_nvmlSystemGetDriverVersion>(name_nvmlSystemGetDriverVersion)(text, 5),
            NVML_ERROR_INSUFFICIENT_SIZE);
  int cuda_version = 0;
  ASSERT_EQ(lib.fn<PFN_nvmlSystemGetCudaDriverVersion_v2>(name_nvmlSystemGetCudaDriverVersion_v2)(&cuda_version),
            NVML_SUCCESS);
  EXPECT_EQ(cuda_version, 12040);
  cuda_version = 0;
  ASSERT_EQ(lib.fn<PFN_nvmlSystemGetCudaDriverVersion>(name_nvmlSystemGetCudaDriverVersion)(&cuda_version),
            NVML_SUCCESS);
  EXPECT_EQ(cuda_version, 12040);

  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetCount_v2>(name_nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 8u) << "NVML ignores CUDA_VISIBLE_DEVICES";
  nvmlDevice_t dev = nullptr;
  EXPECT_EQ(lib.fn<PFN_nvmlDeviceGetHandleByIndex_v2>(name_nvmlDeviceGetHandleByIndex_v2)(8, &dev),
            NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetHandleByIndex_v2>(name_nvmlDeviceGetHandleByIndex_v2)(7, &dev), NVML_SUCCESS);

  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetName>(name_nvmlDeviceGetName)(dev, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetUUID>(name_nvmlDeviceGetUUID)(dev, uuid, sizeof uuid), NVML_SUCCESS);
  EXPECT_EQ(std::string(uuid), fake::default_scenario().gpus[7].uuid);

  nvmlPciInfo_t pci{};
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetPciInfo_v3>(name_nvmlDeviceGetPciInfo_v3)(dev, &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:DB:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:DB:00.0");
  EXPECT_EQ(pci.bus, 0xdbu);
  EXPECT_EQ(pci.domain, 0u);
  EXPECT_EQ(pci.pciDeviceId, 0x233010DEu);

  int major = 0, minor = -1;
  ASSERT_EQ(
      lib.fn<PFN_nvmlDeviceGetCudaComputeCapability>(name_nvmlDeviceGetCudaComputeCapability)(dev, &major, &minor),
      NVML_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(minor, 0);
  nvmlMemory_t memory{};
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetMemoryInfo>(name_nvmlDeviceGetMemoryInfo)(dev, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 81559ull << 20);
  EXPECT_EQ(memory.used, 0u);
  EXPECT_EQ(memory.free, memory.total);
  unsigned int n = 0;
  EXPECT_EQ(lib.fn<PFN_nvmlDeviceGetComputeRunningProcesses_v3>(name_nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n,
                                                                                                              nullptr),
            NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
  nvmlEnableState_t persistence = NVML_FEATURE_DISABLED;
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetPersistenceMode>(name_nvmlDeviceGetPersistenceMode)(dev, &persistence),
            NVML_SUCCESS);
  EXPECT_EQ(persistence, NVML_FEATURE_ENABLED);
  unsigned int current = 9, pending = 9;
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetMigMode>(name_nvmlDeviceGetMigMode)(dev, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, NVML_DEVICE_MIG_DISABLE);
  EXPECT_EQ(pending, NVML_DEVICE_MIG_DISABLE);

  const auto error_string = lib.fn<PFN_nvmlErrorString>(name_nvmlErrorString);
  EXPECT_STREQ(error_string(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");
  EXPECT_STREQ(error_string(static_cast<nvmlReturn_t>(4242)), "Unknown Error");

  ASSERT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_SUCCESS) << "init is counted";
  EXPECT_EQ(lib.fn<PFN_nvmlShutdown>(name_nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(lib.fn<PFN_nvmlDeviceGetCount_v2>(name_nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
  EXPECT_EQ(lib.fn<PFN_nvmlShutdown>(name_nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(lib.fn<PFN_nvmlDeviceGetCount_v2>(name_nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(lib.fn<PFN_nvmlShutdown>(name_nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);
}

TEST(FakeLibnvml, ProcessListUsesTheInsufficientSizeProtocol) {
  using namespace nvml;
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", scenario_path("busy-30000mib"));
  Library lib(nvml_lib());
  ASSERT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_SUCCESS);
  nvmlDevice_t dev = nullptr;
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetHandleByIndex_v2>(name_nvmlDeviceGetHandleByIndex_v2)(0, &dev), NVML_SUCCESS);
  const auto processes =
      lib.fn<PFN_nvmlDeviceGetComputeRunningProcesses_v3>(name_nvmlDeviceGetComputeRunningProcesses_v3);
  unsigned int n = 0;
  ASSERT_EQ(processes(dev, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(n, 1u);
  std::vector<nvmlProcessInfo_t> infos(n + 2);
  n = static_cast<unsigned int>(infos.size());
  ASSERT_EQ(processes(dev, &n, infos.data()), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos[0].pid, 4242u);
  EXPECT_EQ(infos[0].usedGpuMemory, 30000ull << 20);
  nvmlMemory_t memory{};
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetMemoryInfo>(name_nvmlDeviceGetMemoryInfo)(dev, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 30000ull << 20);
  EXPECT_EQ(memory.free, (81559ull - 30000) << 20);
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetHandleByIndex_v2>(name_nvmlDeviceGetHandleByIndex_v2)(1, &dev), NVML_SUCCESS);
  n = 0;
  EXPECT_EQ(processes(dev, &n, nullptr), NVML_SUCCESS) << "an idle GPU";
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(lib.fn<PFN_nvmlShutdown>(name_nvmlShutdown)(), NVML_SUCCESS);
}

TEST(FakeLibnvml, ServesTheScenario) {
  using namespace nvml;
  {
    EnvGuard env;
    env.set("PREFLIGHT_FAKE_GPU", scenario_path("cc70-volta"));
    Library lib(nvml_lib());
    ASSERT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_SUCCESS);
    char text[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    ASSERT_EQ(lib.fn<PFN_nvmlSystemGetDriverVersion>(name_nvmlSystemGetDriverVersion)(text, sizeof text), NVML_SUCCESS);
    EXPECT_STREQ(text, "580.65.06");
    nvmlDevice_t dev = nullptr;
    ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetHandleByIndex_v2>(name_nvmlDeviceGetHandleByIndex_v2)(0, &dev), NVML_SUCCESS);
    int major = 0, minor = -1;
    ASSERT_EQ(
        lib.fn<PFN_nvmlDeviceGetCudaComputeCapability>(name_nvmlDeviceGetCudaComputeCapability)(dev, &major, &minor),
        NVML_SUCCESS);
    EXPECT_EQ(major * 10 + minor, 70);
    unsigned int current = 0, pending = 0;
    EXPECT_EQ(lib.fn<PFN_nvmlDeviceGetMigMode>(name_nvmlDeviceGetMigMode)(dev, &current, &pending),
              NVML_ERROR_NOT_SUPPORTED);
  }
  {
    EnvGuard env;
    env.set("PREFLIGHT_FAKE_GPU", scenario_path("nvml-sees-more"));
    Library lib(nvml_lib());
    ASSERT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_SUCCESS);
    unsigned int count = 0;
    ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetCount_v2>(name_nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
    EXPECT_EQ(count, 8u);
  }
  {
    EnvGuard env;
    env.set("PREFLIGHT_FAKE_GPU", scenario_path("no-devices"));
    Library lib(nvml_lib());
    ASSERT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_SUCCESS);
    unsigned int count = 9;
    ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetCount_v2>(name_nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
    EXPECT_EQ(count, 0u);
  }
  {
    EnvGuard env;
    env.set("PREFLIGHT_FAKE_GPU", scenario_path("nvml-driver-not-loaded"));
    Library lib(nvml_lib());
    EXPECT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  }
  {
    EnvGuard env;
    env.set("PREFLIGHT_FAKE_GPU", "/nonexistent/scenario.json");
    Library lib(nvml_lib());
    EXPECT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  }
}

// ---------------------------------------------------------------------------------------------
// libnccl.so.2

int nccl_version(const std::string& path, const std::optional<std::string>& scenario) {
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", scenario);
  Library lib(path);
  int version = -1;
  const int r = lib.fn<nccl::PFN_ncclGetVersion>(nccl::name_ncclGetVersion)(&version);
  return r == nccl::ncclSuccess ? version : -1000 - r;
}

/// The "NCCL version ..." strings in the file, as preflight's scan would find them.
std::vector<std::string> version_strings(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> found;
  for (std::size_t at = bytes.find("NCCL version "); at != std::string::npos; at = bytes.find("NCCL version ", at + 1))
    found.push_back(bytes.substr(at, std::strlen(bytes.c_str() + at)));
  return found;
}

TEST(FakeLibnccl, VersionAndEmbeddedString) {
  EXPECT_EQ(nccl_version(nccl_lib(), std::nullopt), 22105);
  EXPECT_EQ(nccl_version(nccl_lib(), scenario_path("h100x8-healthy")), 22105);
  const fs::path scenario = fs::temp_directory_path() / ("fake-gpu-nccl-" + std::to_string(::getpid()) + ".json");
  std::ofstream(scenario) << R"({"nccl_version": 22809})";
  EXPECT_EQ(nccl_version(nccl_lib(), scenario.string()), 22809);
  fs::remove(scenario);
  EXPECT_EQ(nccl_version(nccl_lib(), "/nonexistent/scenario.json"), -1000 - nccl::ncclSystemError);

  EXPECT_EQ(version_strings(nccl_lib()), std::vector<std::string>{"NCCL version 2.21.5+cuda12.4"});
  const std::string cuda13 = preflight::test_paths::fake_nccl_cuda13_dir() + "/libnccl.so.2";
  EXPECT_EQ(version_strings(cuda13), std::vector<std::string>{"NCCL version 2.28.9+cuda13.0"});
  EXPECT_EQ(nccl_version(cuda13, std::nullopt), 22809);

  Library lib(nccl_lib());
  const auto error_string = lib.fn<nccl::PFN_ncclGetErrorString>(nccl::name_ncclGetErrorString);
  EXPECT_STREQ(error_string(nccl::ncclSuccess), "no error");
  EXPECT_STREQ(error_string(nccl::ncclSystemError), "unhandled system error (run with NCCL_DEBUG=INFO for details)");
  EXPECT_STREQ(error_string(static_cast<nccl::ncclResult_t>(99)), "unknown result code");
  EXPECT_EQ(lib.fn<nccl::PFN_ncclGetVersion>(nccl::name_ncclGetVersion)(nullptr), nccl::ncclInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Crashes and hangs, in a contained stand-in helper that loads the fakes by soname.

ContainedResult driver(const std::string& mode, const std::optional<std::string>& scenario,
                       std::chrono::milliseconds deadline = 20s, const std::optional<std::string>& cvd = std::nullopt) {
  ContainedRequest r;
  r.executable = preflight::test_paths::fake_gpu_driver();
  r.args = {mode};
  r.extra_env = {"LD_LIBRARY_PATH=" + kLibDir, scenario ? "PREFLIGHT_FAKE_GPU=" + *scenario : "PREFLIGHT_FAKE_GPU",
                 cvd ? "CUDA_VISIBLE_DEVICES=" + *cvd : "CUDA_VISIBLE_DEVICES"};
  r.deadline = deadline;
  r.kill_grace = 5s;
  return run_contained(r);
}

TEST(FakeGpuContained, LoadedBySonameThroughLdLibraryPath) {
  const ContainedResult cu = driver("cuInit", std::nullopt);
  ASSERT_TRUE(cu.clean()) << cu.describe() << cu.err;
  EXPECT_EQ(cu.out, "cuInit=0 lib=" + kLibDir + "/libcuda.so.1\n");
  const ContainedResult ml = driver("nvmlInit", std::nullopt);
  ASSERT_TRUE(ml.clean()) << ml.describe() << ml.err;
  EXPECT_EQ(ml.out, "nvmlInit=0 lib=" + kLibDir + "/libnvidia-ml.so.1\n");
  const ContainedResult none = driver("cuInit", std::nullopt, 20s, "");
  EXPECT_EQ(none.out.substr(0, 11), "cuInit=100 ") << none.out;
}

TEST(FakeGpuContained, SmokeOkAndCorrupt) {
  const ContainedResult ok = driver("smoke", std::nullopt);
  ASSERT_TRUE(ok.clean()) << ok.describe() << ok.err;
  EXPECT_EQ(ok.out, "smoke=ok\n");
  const ContainedResult bad = driver("smoke", scenario_path("copy-corrupt"));
  ASSERT_TRUE(bad.clean()) << bad.describe() << bad.err;
  EXPECT_EQ(bad.out, "smoke=verify word 17 is 0xA55A0FF2, wrote 0x5AA5F00D\n");
}

TEST(FakeGpuContained, CuInitSegvKillsTheHelperWithSigsegv) {
  const ContainedResult r = driver("cuInit", scenario_path("cuinit-segv"));
  ASSERT_EQ(r.outcome, ContainedOutcome::Signaled) << r.describe() << r.err;
  EXPECT_EQ(r.signal_name, "SIGSEGV");
  const ContainedResult smoke = driver("smoke", scenario_path("cuinit-segv"));
  EXPECT_EQ(smoke.signal_name, "SIGSEGV") << smoke.describe();
  const ContainedResult nvml = driver("nvmlInit", scenario_path("cuinit-segv"));
  EXPECT_TRUE(nvml.clean()) << "NVML is unaffected: " << nvml.describe();
}

TEST(FakeGpuContained, HangsRunIntoTheDeadline) {
  for (const char* mode_and_scenario : {"cuInit:cuinit-hang", "nvmlInit:nvml-hang", "smoke:copy-hang"}) {
    const std::string spec = mode_and_scenario;
    const std::string mode = spec.substr(0, spec.find(':'));
    const ContainedResult r = driver(mode, scenario_path(spec.substr(spec.find(':') + 1)), 700ms);
    EXPECT_EQ(r.outcome, ContainedOutcome::TimedOut) << spec << ": " << r.describe() << r.err;
    EXPECT_GE(r.elapsed_s, 0.6) << spec;
  }
}

TEST(FakeLibnvml, CpuAffinityNumaNodeAndNvLinks) {
  using namespace nvml;
  EnvGuard env;
  env.set("PREFLIGHT_FAKE_GPU", scenario_path("numa-gpu0-cpu1"));
  Library lib(nvml_lib());
  ASSERT_TRUE(lib.loaded());
  ASSERT_EQ(lib.fn<PFN_nvmlInit_v2>(name_nvmlInit_v2)(), NVML_SUCCESS);
  nvmlDevice_t dev0 = nullptr, dev1 = nullptr;
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetHandleByIndex_v2>(name_nvmlDeviceGetHandleByIndex_v2)(0, &dev0), NVML_SUCCESS);
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetHandleByIndex_v2>(name_nvmlDeviceGetHandleByIndex_v2)(1, &dev1), NVML_SUCCESS);
  const auto affinity = lib.fn<PFN_nvmlDeviceGetCpuAffinity>(name_nvmlDeviceGetCpuAffinity);
  unsigned long set[16] = {};
  ASSERT_EQ(affinity(dev0, 16, set), NVML_SUCCESS);
  EXPECT_EQ(set[0], 2UL);
  ASSERT_EQ(affinity(dev1, 16, set), NVML_SUCCESS);
  EXPECT_EQ(set[0], 1UL);
  const auto numa = lib.fn<PFN_nvmlDeviceGetNumaNodeId>(name_nvmlDeviceGetNumaNodeId);
  unsigned int node = 99;
  ASSERT_EQ(numa(dev0, &node), NVML_SUCCESS);
  EXPECT_EQ(node, 0u);
  EXPECT_EQ(numa(dev1, &node), NVML_ERROR_NOT_SUPPORTED);
  const auto memory = lib.fn<PFN_nvmlDeviceGetMemoryAffinity>(name_nvmlDeviceGetMemoryAffinity);
  unsigned long nodes[4] = {};
  ASSERT_EQ(memory(dev0, 4, nodes, NVML_AFFINITY_SCOPE_NODE), NVML_SUCCESS);
  EXPECT_EQ(nodes[0], 1UL);
  nvmlEnableState_t active = NVML_FEATURE_DISABLED;
  const auto state = lib.fn<PFN_nvmlDeviceGetNvLinkState>(name_nvmlDeviceGetNvLinkState);
  ASSERT_EQ(state(dev0, 17, &active), NVML_SUCCESS);
  EXPECT_EQ(active, NVML_FEATURE_ENABLED);
  EXPECT_EQ(state(dev0, 18, &active), NVML_ERROR_INVALID_ARGUMENT);
  nvmlPciInfo_t pci{};
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetNvLinkRemotePciInfo_v2>(name_nvmlDeviceGetNvLinkRemotePciInfo_v2)(dev0, 5, &pci),
            NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:F1:00.0");
  nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  ASSERT_EQ(lib.fn<PFN_nvmlDeviceGetNvLinkRemoteDeviceType>(name_nvmlDeviceGetNvLinkRemoteDeviceType)(dev0, 5, &type),
            NVML_SUCCESS);
  EXPECT_EQ(type, NVML_NVLINK_DEVICE_TYPE_SWITCH);
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_INTERNAL;
  ASSERT_EQ(
      lib.fn<PFN_nvmlDeviceGetTopologyCommonAncestor>(name_nvmlDeviceGetTopologyCommonAncestor)(dev0, dev1, &level),
      NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM) << "the default: SYS across the two halves";
  nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_UNKNOWN;
  const auto p2p = lib.fn<PFN_nvmlDeviceGetP2PStatus>(name_nvmlDeviceGetP2PStatus);
  ASSERT_EQ(p2p(dev0, dev1, NVML_P2P_CAPS_INDEX_READ, &status), NVML_SUCCESS);
  EXPECT_EQ(status, NVML_P2P_STATUS_OK);
  EXPECT_EQ(p2p(dev0, dev0, NVML_P2P_CAPS_INDEX_READ, &status), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(lib.fn<PFN_nvmlShutdown>(name_nvmlShutdown)(), NVML_SUCCESS);
}

}  // namespace
}  // namespace gpu_probe_fake_gpu_test
}  // namespace preflight
