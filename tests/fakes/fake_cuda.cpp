// SPDX-License-Identifier: MIT
// The fake libcuda.so.1 of the test tree: the CUDA driver API subset of gpu_probe/nvidia/cuda_api.hpp,
// serving the scenario of $PREFLIGHT_FAKE_GPU (tests/fakes/README.md). Like the real driver it
// reads CUDA_VISIBLE_DEVICES once, at the first cuInit, and cuInit fails with CUDA_ERROR_NO_DEVICE
// when no device is visible. Device memory is host memory, so a write and read-back really happen.
//
// The fake libnccl enqueues its collectives on a stream through preflight_fake_cuda_stream_enqueue
// (exported for it alone): modelled GPU time, and a completion test polled by cuEventQuery.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpu_probe/nvidia/cuda_api.hpp"
#include "tests/fakes/scenario.hpp"

using namespace preflight::cuda;
namespace fake = preflight::fake_gpu;

struct preflight::cuda::CUctx_st {
  int device = 0;
};
/// Polled by cuEventQuery for work another fake enqueued: nonzero once that work is complete.
using PreflightFakeCompletion = int (*)(void* arg);

/// A stream whose work never completes once a "hang" peer copy was queued on it.
struct preflight::cuda::CUstream_st {
  int device = 0;
  bool hung = false;
  double pending_ms = 0;  // the modelled duration of the copies queued since the last event
  std::chrono::steady_clock::time_point last{};
  PreflightFakeCompletion waiter = nullptr;  // enqueued work not complete yet (the fake libnccl's)
  void* waiter_arg = nullptr;
};
struct preflight::cuda::CUevent_st {
  bool recorded = false;
  bool hung = false;
  std::chrono::steady_clock::time_point when{};
  PreflightFakeCompletion waiter = nullptr;  // the stream's pending work when recorded
  void* waiter_arg = nullptr;
};

namespace {

struct State {
  std::mutex mutex;
  bool initialised = false;
  fake::LoadedScenario loaded;
  std::vector<std::size_t> devices;  // CUDA ordinal → index into the scenario's GPUs
  std::vector<CUctx_st> contexts;    // one primary context per device
  std::vector<int> retained;
  /// Device memory is host memory; an allocation set by one whole-buffer memset (or a whole-buffer
  /// copy of such a one) only records the 32-bit value and writes it when read, so peer copies of
  /// 64 MiB between 8 GPUs cost no memory bandwidth.
  struct Allocation {
    std::size_t bytes = 0;
    bool uniform = false;
    std::uint32_t value = 0;
  };
  std::map<CUdeviceptr, Allocation> allocations;
  std::set<std::pair<int, int>> peer_enabled;  // (context device, peer device)
  std::set<CUstream> streams;
  std::set<CUevent> events;
};

State& state() {
  static State s;  // destroyed at dlclose / exit
  return s;
}

thread_local CUcontext current_context = nullptr;

const fake::Scenario& scenario() { return state().loaded.scenario; }

bool valid_device(CUdevice dev) { return dev >= 0 && static_cast<std::size_t>(dev) < state().devices.size(); }

const fake::Gpu& gpu_of(CUdevice dev) { return scenario().gpus[state().devices[static_cast<std::size_t>(dev)]]; }

void* host(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p)); }

/// The allocation holding address p (and its base), or null.
std::pair<const CUdeviceptr, State::Allocation>* allocation_of(CUdeviceptr p) {
  auto& all = state().allocations;
  auto it = all.upper_bound(p);
  if (it == all.begin()) return nullptr;
  --it;
  return p < it->first + it->second.bytes ? &*it : nullptr;
}

/// The fake's device memory: an anonymous mapping aligned to 2 MiB and offered to transparent huge
/// pages, so that filling a 32 MiB buffer takes 16 page faults, not 8192 (on a real node the memory
/// is the GPU's; here the kernel's fault handling would be most of a node run's system time).
std::size_t mapped_length(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

void* map_device_memory(std::size_t bytes) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const std::size_t length = mapped_length(bytes);
  void* raw = ::mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHuge - 1) & ~(kHuge - 1);
  if (aligned > start) ::munmap(raw, aligned - start);
  if (const std::uintptr_t end = start + length + kHuge; end > aligned + length) {
    ::munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
  }
  ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);  // advice: without THP, 4 KiB pages
  return reinterpret_cast<void*>(aligned);
}

/// Writes a uniform allocation's value out, so it can be read or written in part.
void materialize(CUdeviceptr p) {
  auto* a = allocation_of(p);
  if (a == nullptr || !a->second.uniform) return;
  auto* words = static_cast<std::uint32_t*>(host(a->first));
  for (std::size_t i = 0; i < a->second.bytes / 4; ++i) words[i] = a->second.value;
  a->second.uniform = false;
}

/// Reads n bytes at device address p into dst.
void read_device(void* dst, CUdeviceptr p, std::size_t n) {
  auto* a = allocation_of(p);
  if (a == nullptr || !a->second.uniform) {
    std::memcpy(dst, host(p), n);
    return;
  }
  unsigned char value[4];
  std::memcpy(value, &a->second.value, 4);
  const std::size_t offset = static_cast<std::size_t>(p - a->first);
  auto* out = static_cast<unsigned char*>(dst);
  for (std::size_t k = 0; k < n; ++k) out[k] = value[(offset + k) % 4];
}

/// The result of an entry point's fault: CUDA_SUCCESS to go on, else the code to return.
CUresult apply(const fake::Fault& fault) {
  fake::enact(fault);  // a crash or a hang does not come back
  if (fault.kind == fake::Fault::Kind::Error) return static_cast<CUresult>(fault.code);
  return CUDA_SUCCESS;
}

void copy_string(char* dst, int len, const std::string& src) {
  if (len <= 0) return;
  const std::size_t n = std::min(src.size(), static_cast<std::size_t>(len - 1));
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

struct ErrorName {
  int code;
  const char* name;
};
constexpr ErrorName kErrorNames[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY"},
    {CUDA_ERROR_INSUFFICIENT_DRIVER, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
    {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
    {CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"},
    {CUDA_ERROR_TOO_MANY_PEERS, "CUDA_ERROR_TOO_MANY_PEERS"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
    {CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
};

}  // namespace

namespace {

/// The driver's clients, when PREFLIGHT_FAKE_GPU_CLIENTS names a lock file standing for them
/// (persistence mode off): the driver initialises the GPUs for the first client and tears them down
/// after the last one exits, so a cuInit while another client process lives is fast. Each client
/// holds a shared flock on the file until it exits; the one initialising holds it exclusively
/// meanwhile, so a cuInit started then waits for that init, as the driver makes it.
struct DriverClient {
  bool others_hold_the_gpus = false;  // this process pays no init of its own
  int initialising_fd = -1;           // the first client's lock, shared once its init is done
  void initialised() const {
    if (initialising_fd >= 0) ::flock(initialising_fd, LOCK_SH);
  }
};

DriverClient become_driver_client() {
  DriverClient c;
  const char* clients = std::getenv("PREFLIGHT_FAKE_GPU_CLIENTS");
  if (clients == nullptr || *clients == '\0') return c;
  const int fd = ::open(clients, O_RDWR | O_CREAT | O_CLOEXEC, 0600);  // open until this process exits
  if (fd < 0) return c;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    c.initialising_fd = fd;
  } else {
    ::flock(fd, LOCK_SH);  // waits for the one initialising, if any
    c.others_hold_the_gpus = true;
  }
  return c;
}

}  // namespace

PREFLIGHT_FAKE_EXPORT CUresult cuInit(unsigned int flags) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (s.initialised) return CUDA_SUCCESS;
  // A slow but healthy first init (persistence mode off on a big node): PREFLIGHT_FAKE_CUINIT_DELAY_S
  // seconds (fractions allowed) before the first cuInit of the process returns.
  // With PREFLIGHT_FAKE_GPU_CLIENTS, only while no other process is the driver's client.
  const DriverClient client = become_driver_client();
  if (const char* delay = std::getenv("PREFLIGHT_FAKE_CUINIT_DELAY_S"); delay != nullptr && *delay != '\0') {
    char* end = nullptr;
    const double seconds = std::strtod(delay, &end);
    if (end != nullptr && *end == '\0' && seconds > 0 && seconds < 3600 && !client.others_hold_the_gpus) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    }
  }
  client.initialised();
  s.loaded = fake::load_scenario_from_env();
  if (!s.loaded.error.empty()) {
    std::fprintf(stderr, "fake libcuda.so.1: %s\n", s.loaded.error.c_str());
    return CUDA_ERROR_UNKNOWN;
  }
  if (const CUresult r = apply(s.loaded.scenario.cu_init); r != CUDA_SUCCESS) return r;
  s.devices = fake::cuda_visible_gpus(s.loaded.scenario, std::getenv("CUDA_VISIBLE_DEVICES"));
  if (s.devices.empty()) return CUDA_ERROR_NO_DEVICE;
  s.contexts.assign(s.devices.size(), CUctx_st{});
  for (std::size_t i = 0; i < s.contexts.size(); ++i) s.contexts[i].device = static_cast<int>(i);
  s.retained.assign(s.devices.size(), 0);
  s.initialised = true;
  return CUDA_SUCCESS;
}

/// Works before cuInit, like the real one. The scenario is read here if cuInit has not run.
PREFLIGHT_FAKE_EXPORT CUresult cuDriverGetVersion(int* driver_version) {
  if (driver_version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mutex);
  const fake::LoadedScenario loaded = s.initialised ? s.loaded : fake::load_scenario_from_env();
  if (!loaded.error.empty()) return CUDA_ERROR_UNKNOWN;
  *driver_version = loaded.scenario.cuda_driver_version;
  return CUDA_SUCCESS;
}

#define PREFLIGHT_FAKE_REQUIRE_INIT() \
  State& s = state();                 \
  std::lock_guard lock(s.mutex);      \
  if (!s.initialised) return CUDA_ERROR_NOT_INITIALIZED

#define PREFLIGHT_FAKE_REQUIRE_CONTEXT() \
  if (current_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(s.devices.size());
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  copy_string(name, len, gpu_of(dev).name);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const fake::Gpu& gpu = gpu_of(dev);
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = static_cast<int>(gpu.pci_bus); return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = static_cast<int>(gpu.pci_device); return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = static_cast<int>(gpu.pci_domain); return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = gpu.cc_major; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = gpu.cc_minor; return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceTotalMem_v2(std::size_t* bytes, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = static_cast<std::size_t>(gpu_of(dev).memory_total_mib * fake::kMiB);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::memcpy(uuid->bytes, gpu_of(dev).uuid_bytes.data(), sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

PREFLIGHT_FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (const CUresult r = apply(scenario().ctx); r != CUDA_SUCCESS) return r;
  ++s.retained[static_cast<std::size_t>(dev)];
  *pctx = &s.contexts[static_cast<std::size_t>(dev)];
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  int& count = s.retained[static_cast<std::size_t>(dev)];
  if (count == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --count;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (ctx != nullptr) {
    bool ours = false;
    for (const CUctx_st& c : s.contexts) ours = ours || &c == ctx;
    if (!ours || s.retained[static_cast<std::size_t>(ctx->device)] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  }
  current_context = ctx;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuCtxSynchronize() {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, std::size_t bytesize) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult r = apply(scenario().alloc); r != CUDA_SUCCESS) return r;
  const fake::Gpu& gpu = gpu_of(current_context->device);
  const std::uint64_t free_bytes = (gpu.memory_total_mib - gpu.memory_used_mib) * fake::kMiB;
  if (bytesize > free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = map_device_memory(bytesize);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
  s.allocations[*dptr] = State::Allocation{bytesize, false, 0};
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (dptr == 0) return CUDA_SUCCESS;
  const auto it = s.allocations.find(dptr);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  ::munmap(host(dptr), mapped_length(it->second.bytes));
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, std::size_t count) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (dst == 0 || dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult r = apply(scenario().memset); r != CUDA_SUCCESS) return r;
  if (auto it = s.allocations.find(dst); it != s.allocations.end() && it->second.bytes / 4 == count) {
    it->second.uniform = true;
    it->second.value = value;
    return CUDA_SUCCESS;
  }
  materialize(dst);
  auto* words = reinterpret_cast<std::uint32_t*>(static_cast<std::uintptr_t>(dst));
  for (std::size_t i = 0; i < count; ++i) words[i] = value;
  return CUDA_SUCCESS;
}

/// A "corrupt" copy delivers everything but word 17 (or the last whole word of a shorter copy),
/// which arrives inverted.
PREFLIGHT_FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void* dst_host, CUdeviceptr src_device, std::size_t byte_count) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (dst_host == nullptr || src_device == 0) return CUDA_ERROR_INVALID_VALUE;
  const fake::Fault& fault = scenario().copy;
  if (const CUresult r = apply(fault); r != CUDA_SUCCESS) return r;
  read_device(dst_host, src_device, byte_count);
  if (fault.kind == fake::Fault::Kind::Corrupt && byte_count > 0) {
    auto* bytes = static_cast<unsigned char*>(dst_host);
    const std::size_t words = byte_count / 4;
    if (words == 0) {
      bytes[0] = static_cast<unsigned char>(~bytes[0]);
    } else {
      const std::size_t word = std::min<std::size_t>(17, words - 1);
      for (std::size_t k = 0; k < 4; ++k) bytes[word * 4 + k] = static_cast<unsigned char>(~bytes[word * 4 + k]);
    }
  }
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst_device, const void* src_host, std::size_t byte_count) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (src_host == nullptr || dst_device == 0) return CUDA_ERROR_INVALID_VALUE;
  if (byte_count == 0) return CUDA_SUCCESS;
  auto* a = allocation_of(dst_device);
  if (a == nullptr || dst_device + byte_count > a->first + a->second.bytes) return CUDA_ERROR_INVALID_VALUE;
  if (dst_device == a->first && byte_count == a->second.bytes) {
    a->second.uniform = false;  // overwritten whole: the recorded value need not be written first
  } else {
    materialize(dst_device);
  }
  std::memcpy(host(dst_device), src_host, byte_count);
  return CUDA_SUCCESS;
}

/// For the fake libnccl: work on `stream` that takes `modelled_ms` of GPU time and, when `complete`
/// is not null, is complete only once complete(arg) answers nonzero (cuEventQuery on an event
/// recorded after it polls it, without the driver's lock held, in the querying thread).
PREFLIGHT_FAKE_EXPORT void preflight_fake_cuda_stream_enqueue(CUstream stream, double modelled_ms,
                                                              PreflightFakeCompletion complete, void* arg) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (stream == nullptr || s.streams.count(stream) == 0) return;
  if (modelled_ms > 0) stream->pending_ms += modelled_ms;
  if (complete != nullptr) {
    stream->waiter = complete;
    stream->waiter_arg = arg;
  }
}

PREFLIGHT_FAKE_EXPORT CUresult cuDeviceCanAccessPeer(int* can_access_peer, CUdevice dev, CUdevice peer_dev) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (can_access_peer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev) || !valid_device(peer_dev)) return CUDA_ERROR_INVALID_DEVICE;
  *can_access_peer = scenario().can_access_peer(s.devices[static_cast<std::size_t>(dev)],
                                                s.devices[static_cast<std::size_t>(peer_dev)])
                         ? 1
                         : 0;
  return CUDA_SUCCESS;
}

/// Lets the current context's device access peer_context's device; a second call answers
/// CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, a pair without access CUDA_ERROR_PEER_ACCESS_UNSUPPORTED.
PREFLIGHT_FAKE_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer_context, unsigned int flags) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (peer_context == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const int self = current_context->device, peer = peer_context->device;
  if (!valid_device(peer) || peer == self) return CUDA_ERROR_INVALID_DEVICE;
  const std::size_t a = s.devices[static_cast<std::size_t>(self)], b = s.devices[static_cast<std::size_t>(peer)];
  if (const fake::PeerCopyFault* f = scenario().peer_copy_fault(a, b);
      f != nullptr && f->step == fake::PeerCopyFault::Step::Enable) {
    return static_cast<CUresult>(f->code);
  }
  if (!scenario().can_access_peer(a, b)) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (!s.peer_enabled.insert({self, peer}).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer_context) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (peer_context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (s.peer_enabled.erase({current_context->device, peer_context->device}) == 0)
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  return CUDA_SUCCESS;
}

/// Copies at once (host memory). The scenario's peer copy faults: "hang" leaves the stream's later
/// work never complete, "block" never returns, "segv" crashes, "corrupt" inverts word 17, "error:N".
PREFLIGHT_FAKE_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst_device, CUcontext dst_context, CUdeviceptr src_device,
                                                 CUcontext src_context, std::size_t byte_count, CUstream stream) {
  const fake::PeerCopyFault* fault = nullptr;
  {
    PREFLIGHT_FAKE_REQUIRE_INIT();
    if (dst_device == 0 || src_device == 0 || dst_context == nullptr || src_context == nullptr)
      return CUDA_ERROR_INVALID_VALUE;
    if (stream != nullptr && s.streams.count(stream) == 0) return CUDA_ERROR_INVALID_VALUE;
    fault = scenario().peer_copy_fault(s.devices[static_cast<std::size_t>(src_context->device)],
                                       s.devices[static_cast<std::size_t>(dst_context->device)]);
    if (fault != nullptr && fault->step == fake::PeerCopyFault::Step::Enable) fault = nullptr;
  }
  using Kind = fake::PeerCopyFault::Kind;
  if (fault != nullptr && fault->kind == Kind::Block) fake::enact({fake::Fault::Kind::Hang, 0});
  if (fault != nullptr && fault->kind == Kind::Segv) fake::enact({fake::Fault::Kind::Segv, 0});
  if (fault != nullptr && fault->kind == Kind::Error) return static_cast<CUresult>(fault->code);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (fault != nullptr && fault->kind == Kind::Hang) {
    if (stream != nullptr) stream->hung = true;
    return CUDA_SUCCESS;
  }
  auto src_it = s.allocations.find(src_device);
  auto dst_it = s.allocations.find(dst_device);
  const bool corrupt = fault != nullptr && fault->kind == Kind::Corrupt;
  if (!corrupt && src_it != s.allocations.end() && dst_it != s.allocations.end() && src_it->second.uniform &&
      byte_count == dst_it->second.bytes && byte_count % 4 == 0) {
    dst_it->second.uniform = true;
    dst_it->second.value = src_it->second.value;
  } else {
    materialize(dst_device);
    read_device(host(dst_device), src_device, byte_count);
  }
  if (stream != nullptr) {
    const double gbps = fault != nullptr && fault->kind == Kind::Slow
                            ? 1.0
                            : scenario().peer_gbps(s.devices[static_cast<std::size_t>(src_context->device)],
                                                   s.devices[static_cast<std::size_t>(dst_context->device)]);
    stream->pending_ms += static_cast<double>(byte_count) / (gbps * 1e9) * 1e3;
  }
  if (fault != nullptr && fault->kind == Kind::Corrupt && byte_count >= 4) {
    auto* words = reinterpret_cast<std::uint32_t*>(static_cast<std::uintptr_t>(dst_device));
    const std::size_t word = std::min<std::size_t>(17, byte_count / 4 - 1);
    words[word] = ~words[word];
  }
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (stream == nullptr || flags > 1) return CUDA_ERROR_INVALID_VALUE;
  *stream = new CUstream_st{current_context->device, false, 0.0, std::chrono::steady_clock::now()};
  s.streams.insert(*stream);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (s.streams.erase(stream) == 0) return CUDA_ERROR_INVALID_VALUE;
  delete stream;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  PREFLIGHT_FAKE_REQUIRE_CONTEXT();
  if (event == nullptr || flags > 0xF) return CUDA_ERROR_INVALID_VALUE;
  *event = new CUevent_st{};
  s.events.insert(*event);
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (s.events.count(event) == 0) return CUDA_ERROR_INVALID_VALUE;
  if (stream != nullptr && s.streams.count(stream) == 0) return CUDA_ERROR_INVALID_VALUE;
  event->recorded = true;
  event->hung = stream != nullptr && stream->hung;
  event->when = std::chrono::steady_clock::now();
  event->waiter = stream != nullptr ? stream->waiter : nullptr;
  event->waiter_arg = stream != nullptr ? stream->waiter_arg : nullptr;
  if (stream != nullptr) {
    // Events on a stream time its copies at the modelled link speed, not at memcpy's.
    if (stream->pending_ms > 0) {
      event->when = stream->last + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double, std::milli>(stream->pending_ms));
    }
    stream->pending_ms = 0;
    stream->last = event->when;
  }
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuEventQuery(CUevent event) {
  PreflightFakeCompletion waiter = nullptr;
  void* arg = nullptr;
  {
    PREFLIGHT_FAKE_REQUIRE_INIT();
    if (s.events.count(event) == 0) return CUDA_ERROR_INVALID_VALUE;
    if (event->hung) return CUDA_ERROR_NOT_READY;
    if (event->waiter == nullptr) return CUDA_SUCCESS;
    waiter = event->waiter;
    arg = event->waiter_arg;
  }
  // Outside the lock: the completion test may call back into this library (cuMemcpyHtoD_v2).
  if (waiter(arg) == 0) return CUDA_ERROR_NOT_READY;
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.events.count(event) != 0 && event->waiter == waiter && event->waiter_arg == arg) event->waiter = nullptr;
  for (CUstream stream : s.streams) {
    if (stream->waiter == waiter && stream->waiter_arg == arg) {
      stream->waiter = nullptr;
      stream->waiter_arg = nullptr;
    }
  }
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuEventElapsedTime_v2(float* milliseconds, CUevent start, CUevent end) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (milliseconds == nullptr || s.events.count(start) == 0 || s.events.count(end) == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_VALUE;
  if (start->hung || end->hung || start->waiter != nullptr || end->waiter != nullptr) return CUDA_ERROR_NOT_READY;
  const double ms = std::chrono::duration<double, std::milli>(end->when - start->when).count();
  *milliseconds = static_cast<float>(std::max(ms, 0.0005));  // the timer's resolution is 0.5 us
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(milliseconds, start, end);
}

PREFLIGHT_FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent event) {
  PREFLIGHT_FAKE_REQUIRE_INIT();
  if (s.events.erase(event) == 0) return CUDA_ERROR_INVALID_VALUE;
  delete event;
  return CUDA_SUCCESS;
}

PREFLIGHT_FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrorName& e : kErrorNames) {
    if (e.code == error) {
      *name = e.name;
      return CUDA_SUCCESS;
    }
  }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

// The fake and the header can never drift: every export has exactly the header's type.
#define PREFLIGHT_FAKE_SAME_TYPE(fn) static_assert(std::is_same_v<decltype(&fn), PFN_##fn>, #fn)
PREFLIGHT_FAKE_SAME_TYPE(cuInit);
PREFLIGHT_FAKE_SAME_TYPE(cuDriverGetVersion);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetCount);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGet);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetName);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetAttribute);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceTotalMem_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetUuid_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceGetUuid);
PREFLIGHT_FAKE_SAME_TYPE(cuDevicePrimaryCtxRetain);
PREFLIGHT_FAKE_SAME_TYPE(cuDevicePrimaryCtxRelease_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuCtxSetCurrent);
PREFLIGHT_FAKE_SAME_TYPE(cuCtxSynchronize);
PREFLIGHT_FAKE_SAME_TYPE(cuMemAlloc_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuMemFree_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuMemsetD32_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuMemcpyDtoH_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuMemcpyHtoD_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuGetErrorName);
PREFLIGHT_FAKE_SAME_TYPE(cuDeviceCanAccessPeer);
PREFLIGHT_FAKE_SAME_TYPE(cuCtxEnablePeerAccess);
PREFLIGHT_FAKE_SAME_TYPE(cuCtxDisablePeerAccess);
PREFLIGHT_FAKE_SAME_TYPE(cuMemcpyPeerAsync);
PREFLIGHT_FAKE_SAME_TYPE(cuStreamCreate);
PREFLIGHT_FAKE_SAME_TYPE(cuStreamDestroy_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuEventCreate);
PREFLIGHT_FAKE_SAME_TYPE(cuEventRecord);
PREFLIGHT_FAKE_SAME_TYPE(cuEventQuery);
PREFLIGHT_FAKE_SAME_TYPE(cuEventElapsedTime_v2);
PREFLIGHT_FAKE_SAME_TYPE(cuEventElapsedTime);
PREFLIGHT_FAKE_SAME_TYPE(cuEventDestroy_v2);
