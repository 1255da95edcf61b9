// SPDX-License-Identifier: MIT
// The fake libnccl.so.2 of the test tree: the subset of gpu_probe/nvidia/nccl_api.hpp, plus the
// "NCCL version X.Y.Z+cudaA.B" string real NCCL carries in its read-only data, which preflight
// finds by scanning the file for the CUDA it was built for.
//
// That string is fixed when the library is built: PREFLIGHT_FAKE_NCCL_VERSION (default
// "2.21.5+cuda12.4"; tests/CMakeLists.txt builds a second copy for "2.28.9+cuda13.0").
// ncclGetVersion returns the scenario's "nccl_version" when it has one, else the code of that
// string (2.21.5 → 22105), so by default the two agree.
//
// Communicators really reduce across processes, so that wrong data is detectable: the ranks of
// one unique id meet in a rendezvous directory, $PREFLIGHT_FAKE_NCCL_DIR (default $TMPDIR, else
// /tmp) / preflight-fake-nccl-<the id's first 16 bytes in hex>. Init writes init.<rank> and
// completes once every rank's file exists. The all_reduces share one mapped file, data, with a
// slot per rank and one for the sum: the rank copies its send buffer (read through the fake
// libcuda) into its slot and counts itself in <seq>.in, and the op is enqueued on the stream with
// the fake libcuda's preflight_fake_cuda_stream_enqueue.
// cuEventQuery advances it as a ring all_reduce does its work: once every rank is in, each rank
// sums its own share of the elements into the sum slot (<seq>.sum counts them); once every share
// is summed, each rank copies the sum into its receive buffer. The last rank to read a step
// removes its counts; the last rank to leave (ncclCommDestroy / ncclCommAbort) removes the
// directory and all in it. The scenario's "allreduce" object scripts faults and the modelled bus
// bandwidth (tests/fakes/README.md).
// One thread per communicator, as the helper uses it.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nccl_api.hpp"
#include "tests/fakes/scenario.hpp"

#ifndef PREFLIGHT_FAKE_NCCL_VERSION
#define PREFLIGHT_FAKE_NCCL_VERSION "2.21.5+cuda12.4"
#endif

using namespace preflight::nccl;
namespace fake = preflight::fake_gpu;

/// Exported and marked used so that neither the compiler nor the linker drops it.
PREFLIGHT_FAKE_EXPORT __attribute__((used)) const char preflight_fake_nccl_version_string[] =
    "NCCL version " PREFLIGHT_FAKE_NCCL_VERSION;
static_assert(sizeof("NCCL version ") - 1 == 13);

namespace {

/// NCCL_VERSION_CODE of the embedded string: major*10000 + minor*100 + patch (NCCL >= 2.9).
int embedded_version_code() {
  // Past "NCCL version ", so that the library holds that phrase only once.
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(preflight_fake_nccl_version_string + 13, "%d.%d.%d", &major, &minor, &patch) != 3) return 0;
  return major * 10000 + minor * 100 + patch;
}

const fake::LoadedScenario& scenario() {
  static const fake::LoadedScenario loaded = [] {
    fake::LoadedScenario l = fake::load_scenario_from_env();
    if (!l.error.empty()) std::fprintf(stderr, "fake libnccl.so.2: %s\n", l.error.c_str());
    return l;
  }();
  return loaded;
}

thread_local std::string g_last_error;

/// The fake libcuda's entry points this library needs (it is loaded before any communicator).
struct CudaFns {
  preflight::cuda::PFN_cuMemcpyDtoH_v2 dtoh = nullptr;
  preflight::cuda::PFN_cuMemcpyHtoD_v2 htod = nullptr;
  void (*enqueue)(preflight::cuda::CUstream, double, int (*)(void*), void*) = nullptr;
  bool ok() const { return dtoh != nullptr && htod != nullptr && enqueue != nullptr; }
};

CudaFns cuda_fns() {
  CudaFns f;
  void* handle = ::dlopen(preflight::cuda::soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) return f;
  auto sym = [&](const char* name, auto& out) {
    void* p = ::dlsym(handle, name);
    static_assert(sizeof out == sizeof p);
    if (p != nullptr) std::memcpy(&out, &p, sizeof out);
  };
  sym(preflight::cuda::name_cuMemcpyDtoH_v2, f.dtoh);
  sym(preflight::cuda::name_cuMemcpyHtoD_v2, f.htod);
  sym("preflight_fake_cuda_stream_enqueue", f.enqueue);
  ::dlclose(handle);  // drops only the reference RTLD_NOLOAD took
  return f;
}

std::string rendezvous_base() {
  for (const char* name : {"PREFLIGHT_FAKE_NCCL_DIR", "TMPDIR"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "/tmp";
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

/// Writes `data` to `path` atomically (a temporary name, then rename).
bool write_file(const std::string& path, const void* data, std::size_t size) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, p + done, size - done);
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return ::rename(tmp.c_str(), path.c_str()) == 0;
}

/// Appends one byte to `path` and answers how many bytes it now holds (O_APPEND is atomic): the
/// rank that makes it `n` is the last of n.
long long count_in(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  const char one = 1;
  long long size = -1;
  if (::write(fd, &one, 1) == 1) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) size = static_cast<long long>(st.st_size);
  }
  ::close(fd);
  return size;
}

/// How many ranks count_in() has counted in `path` so far (0 before the first).
long long count_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : 0;
}

std::size_t element_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

template <typename T>
void add_into(unsigned char* acc, const unsigned char* in, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
    std::memcpy(&b, in + i * sizeof(T), sizeof(T));
    if constexpr (std::is_integral_v<T>) {
      // Two's-complement wrap, as the GPU's integer adds do.
      using U = std::make_unsigned_t<T>;
      a = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      a = a + b;
    }
    std::memcpy(acc + i * sizeof(T), &a, sizeof(T));
  }
}

void add_into(ncclDataType_t t, unsigned char* acc, const unsigned char* in, std::size_t count) {
  switch (t) {
    case ncclInt32: add_into<std::int32_t>(acc, in, count); break;
    case ncclUint32: add_into<std::uint32_t>(acc, in, count); break;
    case ncclFloat32: add_into<float>(acc, in, count); break;
    case ncclInt64: add_into<std::int64_t>(acc, in, count); break;
    case ncclUint64: add_into<std::uint64_t>(acc, in, count); break;
    case ncclFloat64: add_into<double>(acc, in, count); break;
    default: break;
  }
}

/// A step's shared file, mapped: nranks slots of the send buffers, then the sum.
struct StepMap {
  unsigned char* base = nullptr;
  std::size_t size = 0;
  std::size_t populated_offset = 0, populated_bytes = 0;  // the slot populate() last mapped in
  StepMap() = default;
  StepMap(const StepMap&) = delete;
  StepMap& operator=(const StepMap&) = delete;
  ~StepMap() { close(); }
  void close() {
    if (base != nullptr) ::munmap(base, size);
    base = nullptr;
    size = 0;
    populated_offset = populated_bytes = 0;
  }
  /// Maps `path`, made at least `bytes` long by whichever rank comes first. False when it cannot.
  bool open(const std::string& path, std::size_t bytes) {
    if (bytes == 0) return true;
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 &&
              (static_cast<std::size_t>(st.st_size) >= bytes || ::ftruncate(fd, static_cast<off_t>(bytes)) == 0);
    void* p = ok ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    ::close(fd);
    if (p == MAP_FAILED) return false;
    base = static_cast<unsigned char*>(p);
    size = bytes;
    return true;
  }
};

/// Allocates and maps the pages of [offset, offset + bytes) of the map in one call where the kernel
/// can (Linux 5.14's MADV_POPULATE_WRITE): writing a 32 MiB slot page by page otherwise costs 8192
/// page faults per rank, most of a fake node run's system time. Without it the pages fault in.
/// Once per map and slot: the pages stay mapped for the all_reduces that follow.
void populate(StepMap& map, std::size_t offset, std::size_t bytes) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t begin = offset / page * page;
  if (map.base == nullptr || bytes == 0 || begin >= map.size) return;
  if (map.populated_offset == offset && map.populated_bytes == bytes) return;
  ::madvise(map.base + begin, std::min(map.size, offset + bytes) - begin, MADV_POPULATE_WRITE);
  map.populated_offset = offset;
  map.populated_bytes = bytes;
}

struct Op;

}  // namespace

struct preflight::nccl::ncclComm {
  int rank = 0;
  int nranks = 1;
  bool blocking = true;
  std::string dir;
  enum class State { Init, Ready } state = State::Init;
  bool hang_init = false;
  bool init_counted = false;
  bool in_progress_once = false;  // non-blocking: the next ncclCommGetAsyncError answers ncclInProgress once
  ncclResult_t async = ncclSuccess;
  std::string last_error;
  std::uint64_t seq = 0;
  CudaFns cuda;
  std::vector<std::unique_ptr<Op>> ops;
  // The steps' shared file, mapped once and reused. A rank waits for each all_reduce before it
  // starts the next (as the helper does), so a rank in step k + 1 knows every rank has summed its
  // share of step k (the slots are free), and the sum slot is written again only once every rank
  // is in step k + 1 (so has copied the sum of step k out).
  StepMap map;
};

namespace {

struct Op {
  ncclComm* comm = nullptr;
  std::uint64_t seq = 0;
  void* recv = nullptr;
  std::size_t count = 0;
  ncclDataType_t type = ncclInt32;
  StepMap* map = nullptr;                                    // the communicator's
  enum class Stage { Gather, Share } stage = Stage::Gather;  // waiting for every rank's data / every share
  bool done = false;
  bool never = false;        // hang / async_error: never completes
  bool async_error = false;  // reports the scenario's error to ncclCommGetAsyncError when polled
  bool corrupt = false;
};

/// Ops of aborted communicators: a stream may still point at them.
std::vector<std::unique_ptr<Op>>& graveyard() {
  static std::vector<std::unique_ptr<Op>> ops;
  return ops;
}

/// <dir>/<seq>.<what>: "in", "sum" and "read", the counts of ranks of a step.
std::string step_file(const ncclComm& c, std::uint64_t seq, const char* what) {
  return c.dir + "/" + std::to_string(seq) + "." + what;
}

bool init_complete(ncclComm& c) {
  if (c.hang_init) return false;
  for (int r = 0; r < c.nranks; ++r)
    if (!exists(c.dir + "/init." + std::to_string(r))) return false;
  if (!c.init_counted) {
    c.init_counted = true;
    if (count_in(c.dir + "/init.read") == c.nranks) {
      for (int r = 0; r < c.nranks; ++r) ::unlink((c.dir + "/init." + std::to_string(r)).c_str());
      ::unlink((c.dir + "/init.read").c_str());
    }
  }
  c.state = ncclComm::State::Ready;
  return true;
}

/// cuEventQuery's completion test for one all_reduce: 1 once every rank's send buffer is there
/// and the sum is in this rank's receive buffer.
int complete_op(void* arg) {
  Op& op = *static_cast<Op*>(arg);
  if (op.done) return 1;
  ncclComm* c = op.comm;
  if (op.never || c == nullptr) {
    if (op.async_error && c != nullptr && c->async == ncclSuccess) {
      const fake::AllreduceScript& script = scenario().scenario.allreduce;
      c->async = static_cast<ncclResult_t>(script.error_code);
      c->last_error = "rank " + std::to_string(c->rank) + ": scripted asynchronous error " +
                      std::to_string(script.error_code) + " during all_reduce " + std::to_string(op.seq);
    }
    return 0;
  }
  const std::size_t element = element_size(op.type);
  const std::size_t bytes = op.count * element;
  const auto n = static_cast<std::size_t>(c->nranks);
  if (op.stage == Op::Stage::Gather) {
    if (count_of(step_file(*c, op.seq, "in")) < c->nranks) return 0;
    // This rank's share of the elements, summed over every rank's slot into the sum slot.
    const std::size_t per = (op.count + n - 1) / n;
    const std::size_t first = std::min(op.count, per * static_cast<std::size_t>(c->rank));
    const std::size_t last = std::min(op.count, first + per);
    if (last > first) {
      unsigned char* sum = op.map->base + n * bytes + first * element;
      std::memcpy(sum, op.map->base + first * element, (last - first) * element);
      for (std::size_t r = 1; r < n; ++r)
        add_into(op.type, sum, op.map->base + r * bytes + first * element, last - first);
    }
    count_in(step_file(*c, op.seq, "sum"));
    op.stage = Op::Stage::Share;
  }
  if (count_of(step_file(*c, op.seq, "sum")) < c->nranks) return 0;
  const unsigned char* sum = op.map->base != nullptr ? op.map->base + n * bytes : nullptr;
  std::vector<unsigned char> corrupted;
  if (op.corrupt && op.count > 0) {
    corrupted.assign(sum, sum + bytes);
    const std::size_t e = std::min<std::size_t>(17, op.count - 1) * element;
    for (std::size_t k = 0; k < element; ++k) corrupted[e + k] = static_cast<unsigned char>(~corrupted[e + k]);
    sum = corrupted.data();
  }
  const auto dst = static_cast<preflight::cuda::CUdeviceptr>(reinterpret_cast<std::uintptr_t>(op.recv));
  if (bytes > 0 && c->cuda.htod(dst, sum, bytes) != preflight::cuda::CUDA_SUCCESS) {
    c->async = ncclUnhandledCudaError;
    c->last_error = "cuMemcpyHtoD_v2 into the receive buffer failed";
    return 0;
  }
  if (count_in(step_file(*c, op.seq, "read")) == c->nranks) {
    for (const char* what : {"in", "sum", "read"}) ::unlink(step_file(*c, op.seq, what).c_str());
  }
  op.done = true;
  return 1;
}

/// The rank leaves the rendezvous: the last one removes the directory.
void leave(ncclComm& c) {
  c.map.close();
  if (count_in(c.dir + "/gone") == c.nranks) {
    // Everything, the files of a step that never completed included.
    if (DIR* d = ::opendir(c.dir.c_str())) {
      while (const dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ::unlinkat(::dirfd(d), e->d_name, 0);
      }
      ::closedir(d);
    }
    ::rmdir(c.dir.c_str());
  }
}

ncclResult_t fail(ncclComm* c, ncclResult_t rc, const std::string& why) {
  g_last_error = why;
  if (c != nullptr) c->last_error = why;
  return rc;
}

}  // namespace

PREFLIGHT_FAKE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  const fake::LoadedScenario& loaded = scenario();
  if (!loaded.error.empty()) return ncclSystemError;
  *version = loaded.scenario.nccl_version.value_or(embedded_version_code());
  return ncclSuccess;
}

PREFLIGHT_FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (static_cast<int>(result)) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

PREFLIGHT_FAKE_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  return comm != nullptr ? comm->last_error.c_str() : g_last_error.c_str();
}

/// Random bytes; the first 16 name the rendezvous directory.
PREFLIGHT_FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  if (unique_id == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclGetUniqueId: null argument");
  if (!scenario().error.empty()) return fail(nullptr, ncclSystemError, scenario().error);
  std::memset(unique_id->internal, 0, sizeof unique_id->internal);
  bool random = false;
  if (const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC); fd >= 0) {
    random = ::read(fd, unique_id->internal, 16) == 16;
    ::close(fd);
  }
  if (!random) {
    const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    const auto pid = static_cast<std::uint64_t>(::getpid());
    std::memcpy(unique_id->internal, &now, 8);
    std::memcpy(unique_id->internal + 8, &pid, 8);
  }
  // Like NCCL_COMM_ID's handle, the root's address follows (for the curious; unused here).
  if (const char* root = std::getenv("NCCL_COMM_ID"); root != nullptr)
    std::strncpy(unique_id->internal + 16, root, sizeof unique_id->internal - 17);
  return ncclSuccess;
}

PREFLIGHT_FAKE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank,
                                                          ncclConfig_t* config) {
  if (comm == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclCommInitRankConfig: comm is null");
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return fail(nullptr, ncclInvalidArgument,
                "ncclCommInitRankConfig: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  }
  if (config != nullptr && (config->magic != kConfigMagic || config->size < kConfigMinSize ||
                            config->version < static_cast<unsigned>(nccl_version(2, 14, 0)))) {
    return fail(nullptr, ncclInvalidArgument,
                "ncclCommInitRankConfig: the config was not made by NCCL_CONFIG_INITIALIZER");
  }
  const fake::LoadedScenario& loaded = scenario();
  if (!loaded.error.empty()) return fail(nullptr, ncclSystemError, loaded.error);
  const fake::AllreduceScript& script = loaded.scenario.allreduce;
  using Fault = fake::AllreduceScript::Fault;
  if (script.fault == Fault::InitError && script.applies_to(rank)) {
    return fail(nullptr, static_cast<ncclResult_t>(script.error_code),
                "rank " + std::to_string(rank) + ": scripted init error " + std::to_string(script.error_code));
  }
  auto c = std::make_unique<ncclComm>();
  c->rank = rank;
  c->nranks = nranks;
  c->blocking = config == nullptr || config->blocking != 0;
  c->cuda = cuda_fns();
  char hex[33];
  for (int i = 0; i < 16; ++i)
    std::snprintf(hex + 2 * i, 3, "%02x", static_cast<unsigned>(static_cast<unsigned char>(comm_id.internal[i])));
  c->dir = rendezvous_base() + "/preflight-fake-nccl-" + hex;
  if (::mkdir(c->dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fail(nullptr, ncclSystemError, "cannot create " + c->dir + ": " + std::strerror(errno));
  }
  c->hang_init = script.fault == Fault::HangInit && script.applies_to(rank);
  if (!c->hang_init && !write_file(c->dir + "/init." + std::to_string(rank), "", 0)) {
    return fail(nullptr, ncclSystemError, "cannot write to " + c->dir);
  }
  if (c->blocking) {
    if (c->hang_init) fake::enact({fake::Fault::Kind::Hang, 0});
    // A blocking init waits for every rank, like the real one (bounded here: 60 s).
    for (int i = 0; i < 60000 && !init_complete(*c); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (c->state != ncclComm::State::Ready) {
      return fail(nullptr, ncclRemoteError, "ncclCommInitRankConfig: the other ranks did not arrive within 60 s");
    }
    *comm = c.release();
    return ncclSuccess;
  }
  *comm = c.release();
  return ncclInProgress;
}

PREFLIGHT_FAKE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (comm == nullptr || async_error == nullptr)
    return fail(comm, ncclInvalidArgument, "ncclCommGetAsyncError: null argument");
  if (comm->state == ncclComm::State::Init && !init_complete(*comm)) {
    *async_error = comm->async != ncclSuccess ? comm->async : ncclInProgress;
    return ncclSuccess;
  }
  if (comm->async == ncclSuccess && comm->in_progress_once) {
    comm->in_progress_once = false;
    *async_error = ncclInProgress;
    return ncclSuccess;
  }
  *async_error = comm->async;
  return ncclSuccess;
}

PREFLIGHT_FAKE_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, std::size_t count,
                                                 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                                 preflight::cuda::CUstream stream) {
  if (comm == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclAllReduce: comm is null");
  if (comm->state != ncclComm::State::Ready)
    return fail(comm, ncclInvalidUsage, "ncclAllReduce: the communicator is not ready");
  if (comm->async != ncclSuccess) return comm->async;
  if (sendbuff == nullptr || recvbuff == nullptr) return fail(comm, ncclInvalidArgument, "ncclAllReduce: null buffer");
  if (op != ncclSum) return fail(comm, ncclInvalidArgument, "ncclAllReduce: the fake reduces with ncclSum only");
  const std::size_t element = element_size(datatype);
  if (element == 0) return fail(comm, ncclInvalidArgument, "ncclAllReduce: unsupported data type");
  if (!comm->cuda.ok()) return fail(comm, ncclUnhandledCudaError, "ncclAllReduce: the fake libcuda.so.1 is not loaded");
  const fake::AllreduceScript& script = scenario().scenario.allreduce;
  using Fault = fake::AllreduceScript::Fault;
  auto o = std::make_unique<Op>();
  o->comm = comm;
  o->seq = comm->seq++;
  o->recv = recvbuff;
  o->count = count;
  o->type = datatype;
  const bool mine = script.applies_to(comm->rank);
  o->never = mine && (script.fault == Fault::Hang || script.fault == Fault::AsyncError);
  o->async_error = mine && script.fault == Fault::AsyncError;
  o->corrupt = mine && script.fault == Fault::Corrupt;
  const std::size_t bytes = count * element;
  if (!o->never) {
    const auto slots = static_cast<std::size_t>(comm->nranks) + 1;
    StepMap& map = comm->map;
    const std::string path = comm->dir + "/data";
    if (map.size < slots * bytes && (map.close(), !map.open(path, slots * bytes))) {
      return fail(comm, ncclSystemError, "ncclAllReduce: cannot map " + path);
    }
    o->map = &map;
    populate(map, static_cast<std::size_t>(comm->rank) * bytes, bytes);  // the slot this rank writes
    const auto src = static_cast<preflight::cuda::CUdeviceptr>(reinterpret_cast<std::uintptr_t>(sendbuff));
    if (bytes > 0 && comm->cuda.dtoh(o->map->base + static_cast<std::size_t>(comm->rank) * bytes, src, bytes) !=
                         preflight::cuda::CUDA_SUCCESS) {
      return fail(comm, ncclUnhandledCudaError, "ncclAllReduce: cuMemcpyDtoH_v2 of the send buffer failed");
    }
    if (count_in(step_file(*comm, o->seq, "in")) < 0) {
      return fail(comm, ncclSystemError, "ncclAllReduce: cannot write to " + comm->dir);
    }
  }
  const double n = comm->nranks;
  const double ms = static_cast<double>(bytes) * 2.0 * (n - 1) / n / (script.busbw_gbps * 1e9) * 1e3;
  comm->cuda.enqueue(stream, ms, &complete_op, o.get());
  comm->ops.push_back(std::move(o));
  if (comm->blocking) return ncclSuccess;
  comm->in_progress_once = true;
  return ncclInProgress;
}

PREFLIGHT_FAKE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclCommFinalize: comm is null");
  if (comm->blocking) return ncclSuccess;
  comm->in_progress_once = true;
  return ncclInProgress;
}

PREFLIGHT_FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  leave(*comm);
  delete comm;
  return ncclSuccess;
}

PREFLIGHT_FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  for (auto& o : comm->ops) {
    o->comm = nullptr;  // never completes now
    graveyard().push_back(std::move(o));
  }
  leave(*comm);
  delete comm;
  return ncclSuccess;
}

#define PREFLIGHT_FAKE_SAME_TYPE(fn) static_assert(std::is_same_v<decltype(&fn), PFN_##fn>, #fn)
PREFLIGHT_FAKE_SAME_TYPE(ncclGetVersion);
PREFLIGHT_FAKE_SAME_TYPE(ncclGetErrorString);
PREFLIGHT_FAKE_SAME_TYPE(ncclGetLastError);
PREFLIGHT_FAKE_SAME_TYPE(ncclGetUniqueId);
PREFLIGHT_FAKE_SAME_TYPE(ncclCommInitRankConfig);
PREFLIGHT_FAKE_SAME_TYPE(ncclCommGetAsyncError);
PREFLIGHT_FAKE_SAME_TYPE(ncclAllReduce);
PREFLIGHT_FAKE_SAME_TYPE(ncclCommFinalize);
PREFLIGHT_FAKE_SAME_TYPE(ncclCommDestroy);
PREFLIGHT_FAKE_SAME_TYPE(ncclCommAbort);
