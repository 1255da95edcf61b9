// SPDX-License-Identifier: MIT
// preflight-gpu-probe `driver` and `smoke`: NVML and the CUDA driver API through dlopen.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/backoff.hpp"
#include "core/gpu_text.hpp"
#include "core/pci_topology.hpp"
#include "gpu_probe/dynlib.hpp"
#include "gpu_probe/gpu_probe.hpp"
#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nvml_api.hpp"
#include "gpu_probe/protocol.hpp"
#include "gpu_probe/xid_watch.hpp"

namespace preflight::helper {

// ---- NVML --------------------------------------------------------------------------------------

const char* nvml_code_name(nvml::nvmlReturn_t rc) {
  using namespace nvml;
  switch (rc) {
    case NVML_SUCCESS: return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED: return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT: return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED: return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION: return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED: return "NVML_ERROR_ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND: return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER: return "NVML_ERROR_INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT: return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE: return "NVML_ERROR_IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM: return "NVML_ERROR_CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST: return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED: return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM: return "NVML_ERROR_OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE: return "NVML_ERROR_IN_USE";
    case NVML_ERROR_MEMORY: return "NVML_ERROR_MEMORY";
    case NVML_ERROR_NO_DATA: return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_DEPRECATED: return "NVML_ERROR_DEPRECATED";
    case NVML_ERROR_UNKNOWN: return "NVML_ERROR_UNKNOWN";
  }
  return nullptr;
}

namespace {

struct Nvml {
  DynLib lib;
  nvml::NvmlFunctions fn{};  // resolved once from lib when it is opened
  nvml::PFN_nvmlErrorString error_string = nullptr;

  /// "nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED (Driver Not Loaded)"
  std::string failure(const char* call, nvml::nvmlReturn_t rc) const {
    const char* name = nvml_code_name(rc);
    std::string out = std::string(call) + ": " + (name != nullptr ? name : "nvmlReturn_t " + std::to_string(rc));
    if (error_string != nullptr) {
      if (const char* text = error_string(rc); text != nullptr && *text != '\0') out += std::string(" (") + text + ")";
    }
    return out;
  }
  std::string source(const char* call) const { return std::string(call) + " in " + lib.path(); }
};

std::string from_buffer(const char* buf, std::size_t size) {
  std::size_t n = 0;
  while (n < size && buf[n] != '\0') ++n;
  return std::string(buf, n);
}

/// The bits set in a mask of unsigned longs.
std::vector<int> mask_bits(const std::vector<unsigned long>& mask) {
  std::vector<int> bits;
  constexpr unsigned kBits = sizeof(unsigned long) * 8;
  for (std::size_t w = 0; w < mask.size(); ++w)
    for (unsigned b = 0; b < kBits; ++b)
      if ((mask[w] >> b) & 1UL) bits.push_back(static_cast<int>(w * kBits + b));
  return bits;
}

/// CPU affinity, NUMA node and NVLinks of one GPU. Supplementary: a function an older
/// libnvidia-ml lacks, or one that fails, leaves its field empty.
void nvml_locality(const Nvml& n, nvml::nvmlDevice_t dev, NvmlGpu& gpu) {
  using namespace nvml;
  constexpr unsigned int kSetSize = 64;  // unsigned longs: 4096 CPUs / NUMA nodes
  if (const auto get = n.fn.nvmlDeviceGetCpuAffinity) {
    std::vector<unsigned long> set(kSetSize, 0UL);
    if (get(dev, kSetSize, set.data()) == NVML_SUCCESS) gpu.cpu_affinity = mask_bits(set);
  }
  bool numa_done = false;
  if (const auto get = n.fn.nvmlDeviceGetNumaNodeId) {
    unsigned int node = 0;
    const nvmlReturn_t rc = get(dev, &node);
    if (rc == NVML_SUCCESS) gpu.numa_node = static_cast<int>(node);
    numa_done = rc != NVML_ERROR_FUNCTION_NOT_FOUND;
  }
  if (!numa_done) {
    if (const auto get = n.fn.nvmlDeviceGetMemoryAffinity) {
      std::vector<unsigned long> set(kSetSize, 0UL);
      if (get(dev, kSetSize, set.data(), NVML_AFFINITY_SCOPE_NODE) == NVML_SUCCESS) {
        const std::vector<int> nodes = mask_bits(set);
        if (nodes.size() == 1) gpu.numa_node = nodes.front();
      }
    }
  }
  const auto get_state = n.fn.nvmlDeviceGetNvLinkState;
  const auto get_remote = n.fn.nvmlDeviceGetNvLinkRemotePciInfo_v2;
  if (get_state == nullptr) return;
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    const nvmlReturn_t rc = get_state(dev, link, &active);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;  // past this GPU's links
    if (rc != NVML_SUCCESS) {
      if (link == 0) break;  // no NVLink on this GPU
      continue;
    }
    if (active != NVML_FEATURE_ENABLED) continue;
    ++gpu.nvlinks_active;
    std::string remote;
    if (get_remote != nullptr) {
      nvmlPciInfo_t pci{};
      if (get_remote(dev, link, &pci) == NVML_SUCCESS) {
        remote = normalize_bus_id(from_buffer(pci.busId, sizeof pci.busId));
        if (remote.empty()) remote = normalize_bus_id(gpu_text::format_pci_bus_id(pci.domain, pci.bus, pci.device));
      }
    }
    gpu.nvlink_remotes.push_back(remote);
  }
}

const char* path_label(nvml::nvmlGpuTopologyLevel_t level) {
  using namespace nvml;
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
    case NVML_TOPOLOGY_SINGLE: return "PIX";
    case NVML_TOPOLOGY_MULTIPLE: return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE: return "PHB";
    case NVML_TOPOLOGY_NODE: return "NODE";
    case NVML_TOPOLOGY_SYSTEM: return "SYS";
  }
  return nullptr;
}

const char* p2p_label(nvml::nvmlGpuP2PStatus_t status) {
  using namespace nvml;
  switch (status) {
    case NVML_P2P_STATUS_OK: return "OK";
    case NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED: return "CNS";
    case NVML_P2P_STATUS_GPU_NOT_SUPPORTED: return "GNS";
    case NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED: return "TNS";
    case NVML_P2P_STATUS_DISABLED_BY_REGKEY: return "DR";
    case NVML_P2P_STATUS_NOT_SUPPORTED: return "NS";
    case NVML_P2P_STATUS_UNKNOWN: return "U";
  }
  return "U";
}

/// NVML's matrix over every pair a < b: the PCIe path, the NVLinks joining them (direct links to the
/// other GPU plus, when both lead to NVSwitches, the smaller of their switch link counts) and the
/// P2P status. A function the library lacks leaves its field empty; a pair with a lost or unreadable
/// GPU, or whose call failed, keeps the reason in its `error` (the other pairs are read).
Probed<std::vector<GpuPair>> nvml_pairs(const Nvml& n, const std::vector<NvmlGpu>& gpus) {
  using namespace nvml;
  using Result = Probed<std::vector<GpuPair>>;
  const std::string source = n.source("nvmlDeviceGetTopologyCommonAncestor/nvmlDeviceGetP2PStatus");
  const auto get_handle = n.fn.nvmlDeviceGetHandleByIndex_v2;
  const auto get_ancestor = n.fn.nvmlDeviceGetTopologyCommonAncestor;
  const auto get_p2p = n.fn.nvmlDeviceGetP2PStatus;
  if (get_handle == nullptr)
    return Result::error(ProbeErrc::ApiError, "nvmlDeviceGetHandleByIndex_v2 not exported", source);
  // A GPU that is lost or could not be read gives its pairs an error; the other pairs are read.
  std::vector<nvmlDevice_t> handles;
  std::vector<std::string> unusable(gpus.size());
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const NvmlGpu& g = gpus[i];
    nvmlDevice_t dev = nullptr;
    if (!g.lost.empty()) {
      unusable[i] = "GPU " + std::to_string(g.index) + " is lost";
    } else if (const nvmlReturn_t rc = get_handle(static_cast<unsigned>(g.index), &dev); rc != NVML_SUCCESS) {
      unusable[i] = "GPU " + std::to_string(g.index) + ": " + n.failure("nvmlDeviceGetHandleByIndex_v2", rc);
    }
    handles.push_back(dev);
  }
  std::vector<std::string> bus(gpus.size());
  for (std::size_t i = 0; i < gpus.size(); ++i) bus[i] = normalize_bus_id(gpus[i].pci_bus_id);
  auto is_gpu = [&](const std::string& remote) {
    return !remote.empty() && std::find(bus.begin(), bus.end(), remote) != bus.end();
  };
  auto switch_links = [&](const NvmlGpu& g) {
    int count = 0;
    for (const std::string& r : g.nvlink_remotes) count += (!r.empty() && !is_gpu(r)) ? 1 : 0;
    return count;
  };
  auto ignorable = [](nvmlReturn_t rc) {
    return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND;
  };
  std::vector<GpuPair> pairs;
  for (std::size_t a = 0; a < gpus.size(); ++a) {
    for (std::size_t b = a + 1; b < gpus.size(); ++b) {
      GpuPair p;
      p.a = gpus[a].index;
      p.b = gpus[b].index;
      if (!unusable[a].empty() || !unusable[b].empty()) {
        p.error = !unusable[a].empty() ? unusable[a] : unusable[b];
        pairs.push_back(std::move(p));
        continue;
      }
      if (get_ancestor != nullptr) {
        nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
        const nvmlReturn_t rc = get_ancestor(handles[a], handles[b], &level);
        if (rc == NVML_SUCCESS) {
          const char* label = path_label(level);
          p.path = label != nullptr ? label : "";
        } else if (!ignorable(rc)) {
          p.error = n.failure("nvmlDeviceGetTopologyCommonAncestor", rc);
        }
      }
      for (const std::string& r : gpus[a].nvlink_remotes) p.nvlinks += (!r.empty() && r == bus[b]) ? 1 : 0;
      const int sa = switch_links(gpus[a]), sb = switch_links(gpus[b]);
      if (sa > 0 && sb > 0) p.nvlinks += std::min(sa, sb);
      if (get_p2p != nullptr) {
        const nvmlGpuP2PCapsIndex_t caps[3] = {NVML_P2P_CAPS_INDEX_READ, NVML_P2P_CAPS_INDEX_WRITE,
                                               NVML_P2P_CAPS_INDEX_NVLINK};
        std::string* fields[3] = {&p.p2p_read, &p.p2p_write, &p.p2p_nvlink};
        for (int k = 0; k < 3; ++k) {
          nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_UNKNOWN;
          const nvmlReturn_t rc = get_p2p(handles[a], handles[b], caps[k], &status);
          if (rc == NVML_SUCCESS)
            *fields[k] = p2p_label(status);
          else if (!ignorable(rc) && p.error.empty())
            p.error = n.failure("nvmlDeviceGetP2PStatus", rc);
        }
      }
      pairs.push_back(std::move(p));
    }
  }
  return Result::ok(std::move(pairs), source);
}

bool nvml_lost_code(nvml::nvmlReturn_t rc) {
  return rc == nvml::NVML_ERROR_GPU_IS_LOST || rc == nvml::NVML_ERROR_RESET_REQUIRED;
}

/// One GPU of NVML's list. A call the GPU does not support leaves its field empty; another error is
/// recorded on the GPU (`error`, the first one) and its field stays empty; a lost GPU (`lost`) is
/// read no further. The other GPUs are read as usual: an error on one GPU never fails the list (a
/// lost GPU must read neither as "fewer GPUs" nor as "NVML's view not available").
void nvml_gpu(const Nvml& n, unsigned int i, NvmlGpu& gpu) {
  using namespace nvml;
  gpu.index = static_cast<int>(i);
  // NOT_SUPPORTED: the field stays empty. Anything else: recorded; false once the GPU is lost.
  auto read = [&](const char* call, nvmlReturn_t rc) {
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_SUPPORTED) return true;
    if (nvml_lost_code(rc)) {
      gpu.lost = n.failure(call, rc);
      return false;
    }
    if (gpu.error.empty()) gpu.error = n.failure(call, rc);
    return true;
  };
  nvmlDevice_t dev = nullptr;
  if (!read("nvmlDeviceGetHandleByIndex_v2", n.fn.nvmlDeviceGetHandleByIndex_v2(i, &dev)) || dev == nullptr) return;
  // The bus id first: it names the GPU in every finding, also when the GPU is lost.
  if (const auto get_pci = n.fn.nvmlDeviceGetPciInfo_v3) {
    nvmlPciInfo_t pci{};
    const nvmlReturn_t rc = get_pci(dev, &pci);
    if (rc == NVML_SUCCESS) {
      gpu.pci_bus_id = from_buffer(pci.busId, sizeof pci.busId);
      if (gpu.pci_bus_id.empty()) gpu.pci_bus_id = gpu_text::format_pci_bus_id(pci.domain, pci.bus, pci.device);
    }
    if (!read("nvmlDeviceGetPciInfo_v3", rc)) return;
  }
  if (const auto get_name = n.fn.nvmlDeviceGetName) {
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    const nvmlReturn_t rc = get_name(dev, buf, sizeof buf);
    if (rc == NVML_SUCCESS) gpu.name = from_buffer(buf, sizeof buf);
    if (!read("nvmlDeviceGetName", rc)) return;
  }
  if (const auto get_uuid = n.fn.nvmlDeviceGetUUID) {
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    const nvmlReturn_t rc = get_uuid(dev, buf, sizeof buf);
    if (rc == NVML_SUCCESS) gpu.uuid = from_buffer(buf, sizeof buf);
    if (!read("nvmlDeviceGetUUID", rc)) return;
  }
  if (const auto get_cc = n.fn.nvmlDeviceGetCudaComputeCapability) {
    int major = 0, minor = 0;
    const nvmlReturn_t rc = get_cc(dev, &major, &minor);
    if (rc == NVML_SUCCESS) {
      gpu.cc_major = major;
      gpu.cc_minor = minor;
    }
    if (!read("nvmlDeviceGetCudaComputeCapability", rc)) return;
  }
  if (const auto get_mem = n.fn.nvmlDeviceGetMemoryInfo) {
    nvmlMemory_t mem{};
    const nvmlReturn_t rc = get_mem(dev, &mem);
    if (rc == NVML_SUCCESS) {
      gpu.memory_total = mem.total;
      gpu.memory_used = mem.used;
    }
    if (!read("nvmlDeviceGetMemoryInfo", rc)) return;
  }
  if (const auto get_persistence = n.fn.nvmlDeviceGetPersistenceMode) {
    nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
    const nvmlReturn_t rc = get_persistence(dev, &mode);
    if (rc == NVML_SUCCESS) gpu.persistence_mode = mode == NVML_FEATURE_ENABLED;
    if (!read("nvmlDeviceGetPersistenceMode", rc)) return;
  }
  if (const auto get_mig = n.fn.nvmlDeviceGetMigMode) {
    unsigned int current = 0, pending = 0;
    const nvmlReturn_t rc = get_mig(dev, &current, &pending);
    if (rc == NVML_SUCCESS) gpu.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
    if (!read("nvmlDeviceGetMigMode", rc)) return;
  }
  nvml_locality(n, dev, gpu);
  if (const auto get_procs = n.fn.nvmlDeviceGetComputeRunningProcesses_v3) {
    std::vector<nvmlProcessInfo_t> infos(16);
    unsigned int n_infos = 0;
    nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < 8 && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
      n_infos = static_cast<unsigned int>(infos.size());
      rc = get_procs(dev, &n_infos, infos.data());
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        // n_infos holds the count needed; leave room for processes that start meanwhile.
        infos.resize(std::max<std::size_t>(infos.size() * 2, std::size_t{n_infos} + 8));
      }
    }
    if (rc == NVML_SUCCESS) {
      for (unsigned int k = 0; k < n_infos && k < infos.size(); ++k) {
        GpuProcess p;
        p.pid = static_cast<int>(infos[k].pid);
        p.used_bytes = infos[k].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE ? 0 : infos[k].usedGpuMemory;
        gpu.processes.push_back(p);
      }
    }
    read("nvmlDeviceGetComputeRunningProcesses_v3", rc);
  }
}

/// Every GPU NVML sees, each read by nvml_gpu: only a count that cannot be read fails the list.
Probed<std::vector<NvmlGpu>> nvml_gpus(const Nvml& n) {
  using namespace nvml;
  const auto get_count = n.fn.nvmlDeviceGetCount_v2;
  if (get_count == nullptr || n.fn.nvmlDeviceGetHandleByIndex_v2 == nullptr) {
    return Probed<std::vector<NvmlGpu>>::error(
        ProbeErrc::ApiError, "nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2 not exported by " + n.lib.path());
  }
  const std::string source = n.source("nvmlDeviceGet*");
  unsigned int count = 0;
  if (const nvmlReturn_t rc = get_count(&count); rc != NVML_SUCCESS) {
    return Probed<std::vector<NvmlGpu>>::error(ProbeErrc::ApiError, n.failure("nvmlDeviceGetCount_v2", rc), source);
  }
  std::vector<NvmlGpu> gpus(count);
  for (unsigned int i = 0; i < count; ++i) nvml_gpu(n, i, gpus[i]);
  return Probed<std::vector<NvmlGpu>>::ok(std::move(gpus), source);
}

// ---- CUDA driver API ---------------------------------------------------------------------------

struct Cuda {
  DynLib lib;
  cuda::CudaFunctions fn{};  // resolved once from lib when it is opened
  cuda::PFN_cuGetErrorName error_name = nullptr;

  /// "CUDA_ERROR_NO_DEVICE (100)"
  std::string name(cuda::CUresult rc) const {
    const char* text = nullptr;
    if (error_name != nullptr && error_name(rc, &text) == cuda::CUDA_SUCCESS && text != nullptr) {
      return std::string(text) + " (" + std::to_string(static_cast<int>(rc)) + ")";
    }
    return "CUresult " + std::to_string(static_cast<int>(rc));
  }
  std::string failure(const char* call, cuda::CUresult rc) const { return std::string(call) + ": " + name(rc); }
  std::string source(const char* call) const { return std::string(call) + " in " + lib.path(); }
};

Cuda open_cuda() {
  Cuda c{DynLib::open(cuda::soname)};
  c.fn = resolve_table<cuda::CudaFunctions>(c.lib);
  c.error_name = c.fn.cuGetErrorName;
  return c;
}

Probed<std::vector<CudaDevice>> cuda_devices(const Cuda& c, std::optional<double>& init_seconds) {
  using namespace cuda;
  using Result = Probed<std::vector<CudaDevice>>;
  const std::string source = c.source("cuInit/cuDeviceGet*");
  const auto init = c.fn.cuInit;
  const auto get_count = c.fn.cuDeviceGetCount;
  const auto get = c.fn.cuDeviceGet;
  const auto get_name = c.fn.cuDeviceGetName;
  const auto get_attr = c.fn.cuDeviceGetAttribute;
  const auto total_mem = c.fn.cuDeviceTotalMem_v2;
  auto get_uuid = c.fn.cuDeviceGetUuid_v2;
  if (get_uuid == nullptr) get_uuid = c.fn.cuDeviceGetUuid;
  if (init == nullptr || get_count == nullptr || get == nullptr) {
    return Result::error(ProbeErrc::ApiError, "cuInit/cuDeviceGetCount/cuDeviceGet not exported by " + c.lib.path(),
                         source);
  }
  const auto init_start = std::chrono::steady_clock::now();
  const CUresult init_rc = init(0);
  init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();
  if (init_rc != CUDA_SUCCESS) return Result::error(ProbeErrc::ApiError, c.failure("cuInit", init_rc), source);
  int count = 0;
  if (const CUresult rc = get_count(&count); rc != CUDA_SUCCESS) {
    return Result::error(ProbeErrc::ApiError, c.failure("cuDeviceGetCount", rc), source);
  }
  // An error on one device is recorded on that device (the first call that failed; the fields it
  // reads stay empty) and the other devices are read as usual.
  std::vector<CudaDevice> devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CudaDevice d;
    d.ordinal = ordinal;
    auto read = [&](const char* call, CUresult rc) {
      if (rc != CUDA_SUCCESS && d.error.empty()) d.error = c.failure(call, rc);
      return rc == CUDA_SUCCESS;
    };
    CUdevice dev = 0;
    if (!read("cuDeviceGet", get(&dev, ordinal))) {
      devices.push_back(std::move(d));
      continue;
    }
    if (get_name != nullptr) {
      char buf[256] = {};
      if (read("cuDeviceGetName", get_name(buf, static_cast<int>(sizeof buf - 1), dev)))
        d.name = from_buffer(buf, sizeof buf);
    }
    if (get_attr != nullptr) {
      int values[5] = {};
      const CUdevice_attribute attrs[5] = {
          CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
          CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID};
      bool all = true;
      for (int k = 0; k < 5; ++k) all = read("cuDeviceGetAttribute", get_attr(&values[k], attrs[k], dev)) && all;
      if (all) {
        d.cc_major = values[0];
        d.cc_minor = values[1];
        d.pci_bus_id = gpu_text::format_pci_bus_id(static_cast<unsigned>(values[2]), static_cast<unsigned>(values[3]),
                                                   static_cast<unsigned>(values[4]));
      }
    }
    if (total_mem != nullptr) {
      std::size_t bytes = 0;
      if (read("cuDeviceTotalMem_v2", total_mem(&bytes, dev))) d.memory_total = bytes;
    }
    if (get_uuid != nullptr) {
      CUuuid uuid{};
      if (read("cuDeviceGetUuid", get_uuid(&uuid, dev))) {
        unsigned char raw[16];
        std::memcpy(raw, uuid.bytes, sizeof raw);
        d.uuid = gpu_text::format_gpu_uuid(raw);
      }
    }
    devices.push_back(std::move(d));
  }
  return Result::ok(std::move(devices), source);
}

}  // namespace

/// libnvidia-ml initialised in this process for an XID watch on the one GPU a test uses, found by
/// its PCI bus id. Nothing here may fail the test it watches.
class DeviceXidWatch::Impl {
 public:
  Impl(std::string work, std::string what) : m_work(std::move(work)), m_what(std::move(what)) {}

  /// Registers XID events on the NVML GPU at `bus_id` (any spelling normalize_bus_id accepts).
  void start(const std::string& bus_id) {
    using namespace nvml;
    m_n.lib = DynLib::open(nvml::soname);
    m_n.fn = resolve_table<NvmlFunctions>(m_n.lib);
    if (!m_n.lib) return void(m_why = m_n.lib.error());
    m_n.error_string = m_n.fn.nvmlErrorString;
    const auto init = m_n.fn.nvmlInit_v2;
    if (init == nullptr) return void(m_why = "nvmlInit_v2 not exported by " + m_n.lib.path());
    if (const nvmlReturn_t rc = init(); rc != NVML_SUCCESS) return void(m_why = m_n.failure("nvmlInit_v2", rc));
    m_shutdown = m_n.fn.nvmlShutdown;
    m_initialised = true;
    std::string driver;
    if (const auto get = m_n.fn.nvmlSystemGetDriverVersion) {
      char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
      if (get(buf, sizeof buf) == NVML_SUCCESS) driver = from_buffer(buf, sizeof buf);
    }
    const auto get_count = m_n.fn.nvmlDeviceGetCount_v2;
    const auto get_handle = m_n.fn.nvmlDeviceGetHandleByIndex_v2;
    const auto get_pci = m_n.fn.nvmlDeviceGetPciInfo_v3;
    if (get_count == nullptr || get_handle == nullptr || get_pci == nullptr)
      return void(m_why = "nvmlDeviceGetCount_v2/HandleByIndex_v2/GetPciInfo_v3 not exported by " + m_n.lib.path());
    unsigned count = 0;
    if (const nvmlReturn_t rc = get_count(&count); rc != NVML_SUCCESS)
      return void(m_why = m_n.failure("nvmlDeviceGetCount_v2", rc));
    const std::string want = normalize_bus_id(bus_id);
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      nvmlPciInfo_t pci{};
      if (get_handle(i, &dev) != NVML_SUCCESS || get_pci(dev, &pci) != NVML_SUCCESS) continue;
      std::string nvml_bus = from_buffer(pci.busId, sizeof pci.busId);
      if (nvml_bus.empty()) nvml_bus = gpu_text::format_pci_bus_id(pci.domain, pci.bus, pci.device);
      if (normalize_bus_id(nvml_bus) != want) continue;
      m_watch = std::make_unique<XidWatch>(m_n.fn, driver, m_work);
      m_watch->start({{static_cast<int>(i), dev, nvml_bus}});
      return;
    }
    m_why = "NVML has no GPU at " + bus_id + ", the device of " + m_what;
  }

  /// No watch, for `why`.
  void skip(std::string why) { m_why = std::move(why); }

  /// The watch's facts (or why there is none); NVML shut down again.
  NvmlXidWatch finish(const std::string& step) {
    NvmlXidWatch w = m_watch
                         ? m_watch->finish()
                         : XidWatch::not_collected(m_work, !m_why.empty() ? m_why
                                                                          : "not started: " + m_what + " ended at " +
                                                                                step + " before its GPU work");
    m_watch.reset();
    if (m_initialised && m_shutdown != nullptr) m_shutdown();
    m_initialised = false;
    return w;
  }

 private:
  Nvml m_n;
  nvml::PFN_nvmlShutdown m_shutdown = nullptr;
  bool m_initialised = false;
  std::unique_ptr<XidWatch> m_watch;
  std::string m_why;
  const std::string m_work;
  const std::string m_what;
};

DeviceXidWatch::DeviceXidWatch(std::string work, std::string what)
    : m(std::make_unique<Impl>(std::move(work), std::move(what))) {}
DeviceXidWatch::~DeviceXidWatch() = default;
void DeviceXidWatch::start(const std::string& bus_id) { m->start(bus_id); }
void DeviceXidWatch::start(const cuda::CudaFunctions& cuda_fn, cuda::CUdevice dev, int ordinal) {
  using namespace cuda;
  const auto get_attr = cuda_fn.cuDeviceGetAttribute;
  int dom = 0, bus = 0, slot = 0;
  if (get_attr != nullptr && get_attr(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) == CUDA_SUCCESS &&
      get_attr(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) == CUDA_SUCCESS &&
      get_attr(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) == CUDA_SUCCESS) {
    start(gpu_text::format_pci_bus_id(static_cast<unsigned>(dom), static_cast<unsigned>(bus),
                                      static_cast<unsigned>(slot)));
  } else {
    skip("the PCI bus id of CUDA device " + std::to_string(ordinal) + " is not known (cuDeviceGetAttribute)");
  }
}
void DeviceXidWatch::skip(std::string why) { m->skip(std::move(why)); }
NvmlXidWatch DeviceXidWatch::finish(const std::string& step) { return m->finish(step); }

namespace {}  // namespace

nlohmann::json run_driver() {
  Probed<std::string> nvml_driver_version;
  Probed<int> cuda_driver_version;
  std::vector<std::string> loaded;
  Probed<std::vector<NvmlGpu>> gpus;
  Probed<std::vector<CudaDevice>> devices;
  Probed<std::vector<GpuPair>> pairs;
  std::optional<double> nvml_init_seconds, cuda_init_seconds;

  // NVML: the kernel driver's view, every GPU of the node.
  Nvml n{DynLib::open(nvml::soname)};
  n.fn = resolve_table<nvml::NvmlFunctions>(n.lib);
  if (!n.lib) {
    nvml_driver_version = Probed<std::string>::error(ProbeErrc::LibraryMissing, n.lib.error(), nvml::soname);
    gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::LibraryMissing, n.lib.error(), nvml::soname);
    pairs = Probed<std::vector<GpuPair>>::error(ProbeErrc::LibraryMissing, n.lib.error(), nvml::soname);
  } else {
    loaded.push_back(n.lib.path());
    n.error_string = n.fn.nvmlErrorString;
    const auto init = n.fn.nvmlInit_v2;
    const auto init_start = std::chrono::steady_clock::now();
    const nvml::nvmlReturn_t rc = init != nullptr ? init() : nvml::NVML_ERROR_FUNCTION_NOT_FOUND;
    if (init != nullptr) {
      nvml_init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();
    }
    if (rc != nvml::NVML_SUCCESS) {
      const std::string why = n.failure("nvmlInit_v2", rc);
      nvml_driver_version = Probed<std::string>::error(ProbeErrc::ApiError, why, n.lib.path());
      gpus = Probed<std::vector<NvmlGpu>>::error(ProbeErrc::ApiError, why, n.lib.path());
      pairs = Probed<std::vector<GpuPair>>::error(ProbeErrc::ApiError, why, n.lib.path());
    } else {
      if (const auto get = n.fn.nvmlSystemGetDriverVersion) {
        char buf[nvml::NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
        const nvml::nvmlReturn_t vrc = get(buf, sizeof buf);
        nvml_driver_version =
            vrc == nvml::NVML_SUCCESS
                ? Probed<std::string>::ok(from_buffer(buf, sizeof buf), n.source("nvmlSystemGetDriverVersion"))
                : Probed<std::string>::error(ProbeErrc::ApiError, n.failure("nvmlSystemGetDriverVersion", vrc),
                                             n.lib.path());
      } else {
        nvml_driver_version = Probed<std::string>::error(
            ProbeErrc::ApiError, "nvmlSystemGetDriverVersion not exported by " + n.lib.path(), n.lib.path());
      }
      gpus = nvml_gpus(n);
      if (const std::vector<NvmlGpu>* list = gpus.value())
        pairs = nvml_pairs(n, *list);
      else
        pairs = Probed<std::vector<GpuPair>>::error(gpus.error()->code, "not read: " + gpus.why(), n.lib.path());
      if (const auto shutdown = n.fn.nvmlShutdown) shutdown();
    }
  }

  // The CUDA driver API: this process's view (honours CUDA_VISIBLE_DEVICES).
  const Cuda c = open_cuda();
  if (!c.lib) {
    cuda_driver_version = Probed<int>::error(ProbeErrc::LibraryMissing, c.lib.error(), cuda::soname);
    devices = Probed<std::vector<CudaDevice>>::error(ProbeErrc::LibraryMissing, c.lib.error(), cuda::soname);
  } else {
    loaded.push_back(c.lib.path());
    if (const auto get = c.fn.cuDriverGetVersion) {
      int version = 0;
      const cuda::CUresult rc = get(&version);
      cuda_driver_version =
          rc == cuda::CUDA_SUCCESS
              ? Probed<int>::ok(version, c.source("cuDriverGetVersion"))
              : Probed<int>::error(ProbeErrc::ApiError, c.failure("cuDriverGetVersion", rc), c.lib.path());
    } else {
      cuda_driver_version =
          Probed<int>::error(ProbeErrc::ApiError, "cuDriverGetVersion not exported by " + c.lib.path(), c.lib.path());
    }
    devices = cuda_devices(c, cuda_init_seconds);
  }

  nlohmann::json doc = nlohmann::json::object();
  doc["nvml_driver_version"] = nvml_driver_version;
  doc["cuda_driver_version"] = cuda_driver_version;
  doc["loaded_libraries"] = loaded;
  doc["nvml_gpus"] = gpus;
  doc["cuda_devices"] = devices;
  doc["gpu_pairs"] = pairs;
  if (nvml_init_seconds) doc["nvml_init_seconds"] = *nvml_init_seconds;
  if (cuda_init_seconds) doc["cuda_init_seconds"] = *cuda_init_seconds;
  return doc;
}

int run_hold(double seconds) {
  const auto start = std::chrono::steady_clock::now();
  const Cuda c = open_cuda();
  nlohmann::json doc;
  if (!c.lib) {
    doc = {{"held", false}, {"error", c.lib.error()}};
  } else if (c.fn.cuInit == nullptr) {
    doc = {{"held", false}, {"error", "cuInit is not exported by " + c.lib.path()}};
  } else if (const cuda::CUresult rc = c.fn.cuInit(0); rc != cuda::CUDA_SUCCESS) {
    doc = {{"held", false}, {"error", c.failure("cuInit", rc)}};
  } else {
    doc = {{"held", true},
           {"cuda_init_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()}};
  }
  std::cout << doc.dump() << "\n";
  std::cout.flush();
  if (!doc["held"].get<bool>()) return 0;
  const auto until =
      start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  while (std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return 0;
}

SmokeResult run_smoke(int ordinal, std::uint64_t bytes) {
  using namespace cuda;
  const auto start = std::chrono::steady_clock::now();
  SmokeResult r;
  r.ordinal = ordinal;
  r.bytes = bytes;
  DeviceXidWatch xids("cuda.smoke", "the smoke test");  // XIDs NVML reports on this GPU while the test runs
  auto finish = [&](const char* step, std::string error) {
    r.ok = error.empty();
    r.failed_step = r.ok ? std::string() : std::string(step);
    r.error = std::move(error);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.xid_watch = xids.finish(step);
    return r;
  };
  if (bytes < 4) return finish("verify", "nothing to test: " + std::to_string(bytes) + " bytes");

  const Cuda c = open_cuda();
  if (!c.lib) return finish("dlopen", c.lib.error());
  const auto init = c.fn.cuInit;
  const auto get = c.fn.cuDeviceGet;
  const auto retain = c.fn.cuDevicePrimaryCtxRetain;
  const auto release = c.fn.cuDevicePrimaryCtxRelease_v2;
  const auto set_current = c.fn.cuCtxSetCurrent;
  const auto synchronize = c.fn.cuCtxSynchronize;
  const auto alloc = c.fn.cuMemAlloc_v2;
  const auto mem_free = c.fn.cuMemFree_v2;
  const auto memset32 = c.fn.cuMemsetD32_v2;
  const auto copy_dtoh = c.fn.cuMemcpyDtoH_v2;
  if (init == nullptr || get == nullptr || retain == nullptr || release == nullptr || set_current == nullptr ||
      synchronize == nullptr || alloc == nullptr || mem_free == nullptr || memset32 == nullptr ||
      copy_dtoh == nullptr) {
    return finish("dlsym", "a driver API entry point of the smoke test is not exported by " + c.lib.path());
  }

  if (const CUresult rc = init(0); rc != CUDA_SUCCESS) return finish("cuInit", c.name(rc));
  CUdevice dev = 0;
  if (const CUresult rc = get(&dev, ordinal); rc != CUDA_SUCCESS) return finish("cuDeviceGet", c.name(rc));
  // The XID watch is registered on this device before the work (context, allocation, write).
  xids.start(c.fn, dev, ordinal);
  CUcontext ctx = nullptr;
  if (const CUresult rc = retain(&ctx, dev); rc != CUDA_SUCCESS) return finish("cuDevicePrimaryCtxRetain", c.name(rc));
  CUdeviceptr ptr = 0;
  bool allocated = false;
  auto cleanup = [&] {
    if (allocated) mem_free(ptr);
    set_current(nullptr);
    release(dev);
  };
  auto fail = [&](const char* step, std::string error) {
    cleanup();
    return finish(step, std::move(error));
  };
  if (const CUresult rc = set_current(ctx); rc != CUDA_SUCCESS) return fail("cuCtxSetCurrent", c.name(rc));
  if (const CUresult rc = alloc(&ptr, static_cast<std::size_t>(bytes)); rc != CUDA_SUCCESS) {
    return fail("cuMemAlloc", c.name(rc));
  }
  allocated = true;
  constexpr std::uint32_t kPattern = 0x5AA5F00Du;
  const std::size_t words = static_cast<std::size_t>(bytes / 4);
  if (const CUresult rc = memset32(ptr, kPattern, words); rc != CUDA_SUCCESS) return fail("cuMemsetD32", c.name(rc));
  if (const CUresult rc = synchronize(); rc != CUDA_SUCCESS) return fail("cuCtxSynchronize", c.name(rc));
  // Read back and verify every word, one kHostStageBytes slice at a time through one host buffer.
  constexpr std::size_t kSliceWords = kHostStageBytes / 4;
  std::vector<std::uint32_t> host(std::min(words, kSliceWords), 0u);
  std::size_t wrong = 0, first = 0;
  std::uint32_t first_value = 0;
  for (std::size_t i0 = 0; i0 < words; i0 += kSliceWords) {
    const std::size_t len = std::min(kSliceWords, words - i0);
    if (const CUresult rc = copy_dtoh(host.data(), ptr + i0 * 4, len * 4); rc != CUDA_SUCCESS) {
      return fail("cuMemcpyDtoH", c.name(rc));
    }
    for (std::size_t k = 0; k < len; ++k) {
      if (host[k] != kPattern) {
        if (wrong == 0) {
          first = i0 + k;
          first_value = host[k];
        }
        ++wrong;
      }
    }
  }
  if (wrong != 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "word %zu is 0x%08X, wrote 0x%08X (%zu of %zu words wrong)", first,
                  static_cast<unsigned>(first_value), static_cast<unsigned>(kPattern), wrong, words);
    return fail("verify", buf);
  }
  allocated = false;
  if (const CUresult rc = mem_free(ptr); rc != CUDA_SUCCESS) return fail("cuMemFree", c.name(rc));
  set_current(nullptr);
  if (const CUresult rc = release(dev); rc != CUDA_SUCCESS) return finish("cuDevicePrimaryCtxRelease", c.name(rc));
  return finish("", {});
}

namespace {

void emit_line(const nlohmann::json& line) {
  const std::string text = line.dump() + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

/// The pattern written on src for the copy src -> dst: distinct per ordered pair, never 0.
std::uint32_t peer_pattern(int src, int dst) {
  return 0x5A000000u ^ (static_cast<std::uint32_t>(src & 0xff) << 16) ^ (static_cast<std::uint32_t>(dst & 0xff) << 8) ^
         0xA5u;
}

}  // namespace

int run_p2p(std::uint64_t bytes, double pair_timeout_s) {
  using namespace cuda;
  auto fatal = [](const std::string& step, const std::string& error) {
    emit_line({{"event", to_string(gpu_protocol::Event::Error)}, {"failed_step", step}, {"error", error}});
    emit_line({{"event", to_string(gpu_protocol::Event::End)}});
    return 0;
  };
  if (bytes < 4 * 3) return fatal("verify", "nothing to test: " + std::to_string(bytes) + " bytes");
  const Cuda c = open_cuda();
  if (!c.lib) return fatal("dlopen", c.lib.error());
  const auto init = c.fn.cuInit;
  const auto get_count = c.fn.cuDeviceGetCount;
  const auto get = c.fn.cuDeviceGet;
  const auto get_attr = c.fn.cuDeviceGetAttribute;
  const auto retain = c.fn.cuDevicePrimaryCtxRetain;
  const auto set_current = c.fn.cuCtxSetCurrent;
  const auto synchronize = c.fn.cuCtxSynchronize;
  const auto alloc = c.fn.cuMemAlloc_v2;
  const auto memset32 = c.fn.cuMemsetD32_v2;
  const auto copy_dtoh = c.fn.cuMemcpyDtoH_v2;
  const auto can_access = c.fn.cuDeviceCanAccessPeer;
  const auto enable_peer = c.fn.cuCtxEnablePeerAccess;
  const auto copy_peer = c.fn.cuMemcpyPeerAsync;
  const auto disable_peer = c.fn.cuCtxDisablePeerAccess;
  const auto stream_create = c.fn.cuStreamCreate;
  const auto event_create = c.fn.cuEventCreate;
  const auto event_record = c.fn.cuEventRecord;
  const auto event_query = c.fn.cuEventQuery;
  auto elapsed = c.fn.cuEventElapsedTime_v2;
  if (elapsed == nullptr) elapsed = c.fn.cuEventElapsedTime;
  if (init == nullptr || get_count == nullptr || get == nullptr || get_attr == nullptr || retain == nullptr ||
      set_current == nullptr || synchronize == nullptr || alloc == nullptr || memset32 == nullptr ||
      copy_dtoh == nullptr || can_access == nullptr || enable_peer == nullptr || copy_peer == nullptr ||
      stream_create == nullptr || event_create == nullptr || event_record == nullptr || event_query == nullptr ||
      elapsed == nullptr) {
    return fatal("dlsym", "a driver API entry point of the peer copy test is not exported by " + c.lib.path());
  }
  if (const CUresult rc = init(0); rc != CUDA_SUCCESS) return fatal("cuInit", c.name(rc));
  int count = 0;
  if (const CUresult rc = get_count(&count); rc != CUDA_SUCCESS) return fatal("cuDeviceGetCount", c.name(rc));

  struct Device {
    CUdevice dev = 0;
    std::string bus_id;
    CUcontext ctx = nullptr;
    CUdeviceptr src = 0, dst = 0;
    CUstream stream = nullptr;
    CUevent start = nullptr, end = nullptr;
    bool ready = false;
    std::string broken_step, broken;  // set up failed: every copy from or to it fails the same way
  };
  std::vector<Device> devices(static_cast<std::size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) {
    Device& d = devices[static_cast<std::size_t>(i)];
    if (const CUresult rc = get(&d.dev, i); rc != CUDA_SUCCESS) return fatal("cuDeviceGet", c.name(rc));
    int dom = 0, bus = 0, slot = 0;
    get_attr(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d.dev);
    get_attr(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d.dev);
    get_attr(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d.dev);
    d.bus_id = gpu_text::format_pci_bus_id(static_cast<unsigned>(dom), static_cast<unsigned>(bus),
                                           static_cast<unsigned>(slot));
  }
  // Contexts, buffers, a stream and two events per device, made when first needed.
  auto prepare = [&](Device& d) -> bool {
    if (!d.broken_step.empty()) return false;
    if (d.ready) return true;
    auto broke = [&](const char* step, CUresult rc) {
      d.broken_step = step;
      d.broken = c.name(rc);
      return false;
    };
    CUcontext ctx = nullptr;
    if (const CUresult rc = retain(&ctx, d.dev); rc != CUDA_SUCCESS) return broke("cuDevicePrimaryCtxRetain", rc);
    d.ctx = ctx;  // retained: released at the end, whatever fails next
    if (const CUresult rc = set_current(ctx); rc != CUDA_SUCCESS) return broke("cuCtxSetCurrent", rc);
    if (const CUresult rc = alloc(&d.src, static_cast<std::size_t>(bytes)); rc != CUDA_SUCCESS)
      return broke("cuMemAlloc", rc);
    if (const CUresult rc = alloc(&d.dst, static_cast<std::size_t>(bytes)); rc != CUDA_SUCCESS)
      return broke("cuMemAlloc", rc);
    if (const CUresult rc = stream_create(&d.stream, CU_STREAM_DEFAULT); rc != CUDA_SUCCESS)
      return broke("cuStreamCreate", rc);
    if (const CUresult rc = event_create(&d.start, CU_EVENT_DEFAULT); rc != CUDA_SUCCESS)
      return broke("cuEventCreate", rc);
    if (const CUresult rc = event_create(&d.end, CU_EVENT_DEFAULT); rc != CUDA_SUCCESS)
      return broke("cuEventCreate", rc);
    d.ready = true;
    return true;
  };

  const std::size_t words = static_cast<std::size_t>(bytes / 4);
  const std::size_t sample = std::min<std::size_t>(words / 3, (std::size_t{1} << 20) / 4);  // 1 MiB or a third
  const std::size_t offsets[3] = {0, (words - sample) / 2, words - sample};
  const auto pair_timeout = std::chrono::duration<double>(pair_timeout_s);

  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      Device& s = devices[static_cast<std::size_t>(i)];
      Device& t = devices[static_cast<std::size_t>(j)];
      PeerCopy r;
      r.src = i;
      r.dst = j;
      r.src_bus_id = s.bus_id;
      r.dst_bus_id = t.bus_id;
      r.bytes = bytes;
      auto done = [&](const std::string& step, std::string error) {
        r.ok = error.empty() && step.empty();
        r.failed_step = step;
        r.error = std::move(error);
        nlohmann::json line = r;
        line["event"] = to_string(gpu_protocol::Event::Done);
        emit_line(line);
      };
      int access = 0;
      if (const CUresult rc = can_access(&access, s.dev, t.dev); rc != CUDA_SUCCESS) {
        done("cuDeviceCanAccessPeer", c.name(rc));
        continue;
      }
      r.can_access = access == 1;
      if (!r.can_access) {
        nlohmann::json line = r;
        line["event"] = to_string(gpu_protocol::Event::Done);
        emit_line(line);
        continue;
      }
      emit_line({{"event", to_string(gpu_protocol::Event::Start)}, {"src", i}, {"dst", j}});
      if (!prepare(s)) {
        done(s.broken_step, "GPU " + std::to_string(i) + ": " + s.broken);
        continue;
      }
      if (!prepare(t)) {
        done(t.broken_step, "GPU " + std::to_string(j) + ": " + t.broken);
        continue;
      }
      const std::uint32_t pattern = peer_pattern(i, j);
      // j's buffer zeroed, in j's context.
      if (const CUresult rc = set_current(t.ctx); rc != CUDA_SUCCESS) {
        done("cuCtxSetCurrent", c.name(rc));
        continue;
      }
      if (const CUresult rc = memset32(t.dst, 0u, words); rc != CUDA_SUCCESS) {
        done("cuMemsetD32", c.name(rc));
        continue;
      }
      if (const CUresult rc = synchronize(); rc != CUDA_SUCCESS) {
        done("cuCtxSynchronize", c.name(rc));
        continue;
      }
      // i may write j's memory; the pattern on i.
      if (const CUresult rc = set_current(s.ctx); rc != CUDA_SUCCESS) {
        done("cuCtxSetCurrent", c.name(rc));
        continue;
      }
      const CUresult enabled = enable_peer(t.ctx, 0);
      if (enabled != CUDA_SUCCESS && enabled != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        done("cuCtxEnablePeerAccess", c.name(enabled));
        continue;
      }
      // Access enabled here is disabled again after the copy: PCIe systems allow only 8 peers per
      // GPU (CUDA_ERROR_TOO_MANY_PEERS), and a node may have more GPUs.
      auto release_peer = [&] {
        if (enabled == CUDA_SUCCESS && disable_peer != nullptr && set_current(s.ctx) == CUDA_SUCCESS)
          disable_peer(t.ctx);
      };
      if (const CUresult rc = memset32(s.src, pattern, words); rc != CUDA_SUCCESS) {
        done("cuMemsetD32", c.name(rc));
        continue;
      }
      if (const CUresult rc = synchronize(); rc != CUDA_SUCCESS) {
        done("cuCtxSynchronize", c.name(rc));
        continue;
      }
      if (const CUresult rc = event_record(s.start, s.stream); rc != CUDA_SUCCESS) {
        done("cuEventRecord", c.name(rc));
        continue;
      }
      if (const CUresult rc = copy_peer(t.dst, t.ctx, s.src, s.ctx, static_cast<std::size_t>(bytes), s.stream);
          rc != CUDA_SUCCESS) {
        done("cuMemcpyPeerAsync", c.name(rc));
        continue;
      }
      if (const CUresult rc = event_record(s.end, s.stream); rc != CUDA_SUCCESS) {
        done("cuEventRecord", c.name(rc));
        continue;
      }
      // Poll, never block: a copy that never completes must be reported, not waited for.
      const auto begin = std::chrono::steady_clock::now();
      CUresult q = CUDA_ERROR_NOT_READY;
      for (Backoff b = poll_backoff(); (q = event_query(s.end)) == CUDA_ERROR_NOT_READY;) {
        const auto left = pair_timeout - (std::chrono::steady_clock::now() - begin);
        if (left <= left.zero()) break;
        std::this_thread::sleep_for(b.next(std::chrono::duration_cast<Backoff::Duration>(left)));
      }
      if (q == CUDA_ERROR_NOT_READY) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "did not finish within %.1f s", pair_timeout_s);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        done("deadline", buf);
        emit_line({{"event", to_string(gpu_protocol::Event::End)}});
        std::fflush(stdout);
        std::_Exit(0);  // the stuck copy holds the device: no cleanup, no further pairs
      }
      if (q != CUDA_SUCCESS) {
        done("cuMemcpyPeerAsync", c.name(q));
        continue;
      }
      float ms = 0.0f;
      if (const CUresult rc = elapsed(&ms, s.start, s.end); rc != CUDA_SUCCESS) {
        done("cuEventElapsedTime", c.name(rc));
        continue;
      }
      r.seconds = static_cast<double>(ms) / 1000.0;
      r.gbps = r.seconds > 0 ? static_cast<double>(bytes) / r.seconds / 1e9 : 0.0;
      // Verify head, middle and tail on j.
      if (const CUresult rc = set_current(t.ctx); rc != CUDA_SUCCESS) {
        done("cuCtxSetCurrent", c.name(rc));
        continue;
      }
      std::vector<std::uint32_t> host(sample, 0u);
      std::string bad_step, bad;
      for (const std::size_t off : offsets) {
        if (const CUresult rc = copy_dtoh(host.data(), t.dst + off * 4, sample * 4); rc != CUDA_SUCCESS) {
          bad_step = "cuMemcpyDtoH";
          bad = c.name(rc);
          break;
        }
        for (std::size_t k = 0; k < sample; ++k) {
          if (host[k] != pattern) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "word %zu is 0x%08X, wrote 0x%08X", off + k, static_cast<unsigned>(host[k]),
                          static_cast<unsigned>(pattern));
            bad_step = "verify";
            bad = buf;
            break;
          }
        }
        if (!bad.empty()) break;
      }
      release_peer();
      done(bad_step, bad);
    }
  }
  // Give back what was taken: buffers, streams, events, the primary contexts.
  const auto mem_free = c.fn.cuMemFree_v2;
  const auto stream_destroy = c.fn.cuStreamDestroy_v2;
  const auto event_destroy = c.fn.cuEventDestroy_v2;
  const auto release = c.fn.cuDevicePrimaryCtxRelease_v2;
  for (Device& d : devices) {
    if (d.ctx == nullptr) continue;
    if (set_current(d.ctx) == CUDA_SUCCESS) {
      if (event_destroy != nullptr) {
        if (d.start != nullptr) event_destroy(d.start);
        if (d.end != nullptr) event_destroy(d.end);
      }
      if (stream_destroy != nullptr && d.stream != nullptr) stream_destroy(d.stream);
      if (mem_free != nullptr) {
        if (d.src != 0) mem_free(d.src);
        if (d.dst != 0) mem_free(d.dst);
      }
    }
    if (release != nullptr) release(d.dev);
  }
  emit_line({{"event", to_string(gpu_protocol::Event::End)}});
  return 0;
}

}  // namespace preflight::helper
