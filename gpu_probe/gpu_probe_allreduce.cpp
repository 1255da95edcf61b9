// SPDX-License-Identifier: MIT
// preflight-gpu-probe `nccl-id` and `nccl-allreduce`: one rank of an NCCL all_reduce, in its own
// contained process. The communicator is non-blocking (config.blocking = 0): init and every
// collective are polled with ncclCommGetAsyncError and cuEventQuery against this helper's own
// deadline, and a communicator that does not finish is aborted (ncclCommAbort), never waited for.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backoff.hpp"
#include "gpu_probe/dynlib.hpp"
#include "gpu_probe/gpu_probe.hpp"
#include "gpu_probe/nvidia/cuda_api.hpp"
#include "gpu_probe/nvidia/nccl_api.hpp"
#include "gpu_probe/protocol.hpp"
#include "gpu_probe/xid_watch.hpp"

namespace preflight::helper {
namespace {

using Clock = std::chrono::steady_clock;

void emit_line(const nlohmann::json& line) {
  const std::string text = line.dump() + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

const char* nccl_code_name(int rc) {
  switch (rc) {
    case nccl::ncclSuccess: return "ncclSuccess";
    case nccl::ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case nccl::ncclSystemError: return "ncclSystemError";
    case nccl::ncclInternalError: return "ncclInternalError";
    case nccl::ncclInvalidArgument: return "ncclInvalidArgument";
    case nccl::ncclInvalidUsage: return "ncclInvalidUsage";
    case nccl::ncclRemoteError: return "ncclRemoteError";
    case nccl::ncclInProgress: return "ncclInProgress";
    case nccl::ncclTimeoutCode: return "ncclTimeout";
    default: return nullptr;
  }
}

std::string hex_of(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}

bool parse_hex(const std::string& text, unsigned char* out, std::size_t n) {
  if (text.size() != n * 2) return false;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const int hi = digit(text[2 * i]), lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

/// libnccl with its error reporting.
struct Nccl {
  DynLib lib;
  nccl::NcclFunctions fn{};  // resolved once from lib when it is opened
  nccl::PFN_ncclGetErrorString error_string = nullptr;
  nccl::PFN_ncclGetLastError last_error = nullptr;
  int version = 0;

  /// "ncclRemoteError (remote process exited or there was a network error): <ncclGetLastError>"
  std::string name(nccl::ncclResult_t rc, nccl::ncclComm_t comm = nullptr) const {
    const char* code = nccl_code_name(rc);
    std::string out = code != nullptr ? code : "ncclResult_t " + std::to_string(static_cast<int>(rc));
    if (error_string != nullptr) {
      if (const char* text = error_string(rc); text != nullptr && *text != '\0') out += std::string(" (") + text + ")";
    }
    if (last_error != nullptr) {
      if (const char* text = last_error(comm); text != nullptr && *text != '\0') out += std::string(": ") + text;
    }
    return out;
  }
};

Nccl open_nccl(const std::string& lib_path) {
  Nccl n{DynLib::open(lib_path.empty() ? std::string(nccl::soname) : lib_path)};
  n.fn = resolve_table<nccl::NcclFunctions>(n.lib);
  n.error_string = n.fn.ncclGetErrorString;
  n.last_error = n.fn.ncclGetLastError;
  if (const auto get_version = n.fn.ncclGetVersion) {
    int code = 0;
    if (get_version(&code) == nccl::ncclSuccess) n.version = code;
  }
  return n;
}

std::string cuda_name(const cuda::CudaFunctions& cuda_fn, cuda::CUresult rc) {
  const auto error_name = cuda_fn.cuGetErrorName;
  const char* text = nullptr;
  if (error_name != nullptr && error_name(rc, &text) == cuda::CUDA_SUCCESS && text != nullptr) {
    return std::string(text) + " (" + std::to_string(static_cast<int>(rc)) + ")";
  }
  return "CUresult " + std::to_string(static_cast<int>(rc));
}

/// NCCL_COMM_ID for the process: the bootstrap root's address. Set before libnccl is loaded.
bool set_root(const std::string& root) {
  if (root.empty()) return std::getenv("NCCL_COMM_ID") != nullptr;
  return ::setenv("NCCL_COMM_ID", root.c_str(), 1) == 0;
}

/// The value rank `rank` contributes at element i, and the exact sum over `nranks` ranks.
/// Element i on rank r is (r+1) * ((i % 1021) + 1); the sum is ((i % 1021) + 1) * N(N+1)/2:
/// every rank's share is distinct, so a rank counted twice or missing changes every element.
constexpr std::int64_t kPeriod = 1021;

std::int64_t contribution(int rank, std::size_t i) {
  return static_cast<std::int64_t>(rank + 1) * (static_cast<std::int64_t>(i % kPeriod) + 1);
}
std::int64_t expected_sum(int nranks, std::size_t i) {
  const std::int64_t n = nranks;
  return (static_cast<std::int64_t>(i % kPeriod) + 1) * (n * (n + 1) / 2);
}

}  // namespace

bool nccl_allreduce_uses_int64(int nranks) {
  // int32 holds 1021 * N(N+1)/2 up to N = 2048.
  return nranks > 2048;
}

int run_nccl_id(const std::string& lib_path, const std::string& root) {
  auto fail = [](const std::string& step, const std::string& error) {
    emit_line({{"event", to_string(gpu_protocol::Event::Error)}, {"step", step}, {"error", error}});
    return 0;
  };
  if (!set_root(root)) {
    return fail("root",
                "no bootstrap root: give --root ADDR:PORT (NCCL_COMM_ID); without it the root would be a "
                "thread of this helper, gone when it exits");
  }
  const Nccl n = open_nccl(lib_path);
  if (!n.lib) return fail("dlopen", n.lib.error());
  const auto get_id = n.fn.ncclGetUniqueId;
  if (get_id == nullptr) return fail("dlsym", "ncclGetUniqueId is not exported by " + n.lib.path());
  nccl::ncclUniqueId id{};
  if (const nccl::ncclResult_t rc = get_id(&id); rc != nccl::ncclSuccess) return fail("ncclGetUniqueId", n.name(rc));
  const char* env_root = std::getenv("NCCL_COMM_ID");
  emit_line({{"event", to_string(gpu_protocol::Event::Id)},
             {"id", hex_of(reinterpret_cast<const unsigned char*>(id.internal), sizeof id.internal)},
             {"lib", n.lib.path()},
             {"version", n.version},
             {"root", env_root != nullptr ? env_root : ""}});
  return 0;
}

int run_nccl_allreduce(const AllreduceArgs& a) {
  using namespace cuda;
  const Clock::time_point begin = Clock::now();
  const Clock::time_point deadline =
      begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.timeout_s));
  auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const bool wide = nccl_allreduce_uses_int64(a.nranks);
  const std::size_t element = wide ? 8 : 4;
  const std::size_t count = static_cast<std::size_t>(a.bytes / element);
  const std::uint64_t bytes = count * element;

  nlohmann::json start = {{"event", to_string(gpu_protocol::Event::Start)},
                          {"rank", a.rank},
                          {"nranks", a.nranks},
                          {"device", a.device},
                          {"bytes", bytes},
                          {"count", count},
                          {"dtype", wide ? "int64" : "int32"},
                          {"repeats", a.repeats},
                          {"timeout_s", a.timeout_s}};
  // XIDs NVML reports on this rank's GPU while the all_reduce runs (init, the collectives, the
  // abort or finalize): one "xid_watch" line before the end, whatever the end.
  DeviceXidWatch xids("all_reduce", "the all_reduce");
  bool xids_reported = false;
  auto report_xids = [&](const std::string& step) {
    if (xids_reported) return;
    xids_reported = true;
    emit_line({{"event", to_string(gpu_protocol::Event::XidWatch)}, {"value", xids.finish(step)}});
  };
  // Failures before a communicator exists: one error line and the end.
  auto fail = [&](const std::string& step, const std::string& error) {
    emit_line({{"event", to_string(gpu_protocol::Event::Error)},
               {"step", step},
               {"error", error},
               {"expired", false},
               {"seconds", since(begin)}});
    report_xids(step);
    emit_line({{"event", to_string(gpu_protocol::Event::End)}});
    return 0;
  };
  if (count == 0) {
    emit_line(start);
    return fail("args", std::to_string(a.bytes) + " bytes is less than one element");
  }
  if (!set_root(a.root)) {
    emit_line(start);
    return fail("root", "no bootstrap root: give --root ADDR:PORT (NCCL_COMM_ID)");
  }
  nccl::ncclUniqueId id{};
  if (!parse_hex(a.id_hex, reinterpret_cast<unsigned char*>(id.internal), sizeof id.internal)) {
    emit_line(start);
    return fail("args", "--id is not " + std::to_string(2 * sizeof id.internal) + " hex digits");
  }
  const DynLib cuda_lib = DynLib::open(cuda::soname);
  const CudaFunctions cuda_fn = resolve_table<CudaFunctions>(cuda_lib);
  const Nccl n = open_nccl(a.lib);
  start["lib"] = n.lib ? n.lib.path() : (a.lib.empty() ? std::string(nccl::soname) : a.lib);
  start["version"] = n.version;
  emit_line(start);
  if (!cuda_lib) return fail("cuda", cuda_lib.error());
  if (!n.lib) return fail("dlopen", n.lib.error());

  const auto init = cuda_fn.cuInit;
  const auto get = cuda_fn.cuDeviceGet;
  const auto retain = cuda_fn.cuDevicePrimaryCtxRetain;
  const auto release = cuda_fn.cuDevicePrimaryCtxRelease_v2;
  const auto set_current = cuda_fn.cuCtxSetCurrent;
  const auto synchronize = cuda_fn.cuCtxSynchronize;
  const auto alloc = cuda_fn.cuMemAlloc_v2;
  const auto mem_free = cuda_fn.cuMemFree_v2;
  const auto memset32 = cuda_fn.cuMemsetD32_v2;
  const auto copy_htod = cuda_fn.cuMemcpyHtoD_v2;
  const auto copy_dtoh = cuda_fn.cuMemcpyDtoH_v2;
  const auto stream_create = cuda_fn.cuStreamCreate;
  const auto stream_destroy = cuda_fn.cuStreamDestroy_v2;
  const auto event_create = cuda_fn.cuEventCreate;
  const auto event_record = cuda_fn.cuEventRecord;
  const auto event_query = cuda_fn.cuEventQuery;
  const auto event_destroy = cuda_fn.cuEventDestroy_v2;
  auto elapsed = cuda_fn.cuEventElapsedTime_v2;
  if (elapsed == nullptr) elapsed = cuda_fn.cuEventElapsedTime;
  if (init == nullptr || get == nullptr || retain == nullptr || release == nullptr || set_current == nullptr ||
      synchronize == nullptr || alloc == nullptr || mem_free == nullptr || memset32 == nullptr ||
      copy_htod == nullptr || copy_dtoh == nullptr || stream_create == nullptr || stream_destroy == nullptr ||
      event_create == nullptr || event_record == nullptr || event_query == nullptr || event_destroy == nullptr ||
      elapsed == nullptr) {
    return fail("cuda", "a driver API entry point of the all_reduce test is not exported by " + cuda_lib.path());
  }
  const auto comm_init = n.fn.ncclCommInitRankConfig;
  const auto async_error = n.fn.ncclCommGetAsyncError;
  const auto all_reduce = n.fn.ncclAllReduce;
  const auto comm_abort = n.fn.ncclCommAbort;
  const auto comm_finalize = n.fn.ncclCommFinalize;
  const auto comm_destroy = n.fn.ncclCommDestroy;
  if (comm_init == nullptr || async_error == nullptr || all_reduce == nullptr || comm_abort == nullptr ||
      comm_destroy == nullptr) {
    return fail("dlsym", n.lib.path() +
                             " lacks ncclCommInitRankConfig, ncclCommGetAsyncError, ncclAllReduce, "
                             "ncclCommAbort or ncclCommDestroy (non-blocking communicators need NCCL >= 2.14)");
  }

  // The device, its primary context (NCCL's CUDA runtime adopts it), buffers, a stream, two events.
  auto cu = [&](const char* call, CUresult rc) { return std::string(call) + ": " + cuda_name(cuda_fn, rc); };
  if (const CUresult rc = init(0); rc != CUDA_SUCCESS) return fail("cuda", cu("cuInit", rc));
  CUdevice dev = 0;
  if (const CUresult rc = get(&dev, a.device); rc != CUDA_SUCCESS) {
    return fail("cuda", cu("cuDeviceGet", rc) + " (device " + std::to_string(a.device) + ")");
  }
  xids.start(cuda_fn, dev, a.device);  // before the work: context, buffers, NCCL's init
  CUcontext ctx = nullptr;
  if (const CUresult rc = retain(&ctx, dev); rc != CUDA_SUCCESS)
    return fail("cuda", cu("cuDevicePrimaryCtxRetain", rc));
  if (const CUresult rc = set_current(ctx); rc != CUDA_SUCCESS) return fail("cuda", cu("cuCtxSetCurrent", rc));
  CUdeviceptr send = 0, recv = 0;
  CUstream stream = nullptr;
  CUevent ev_start = nullptr, ev_end = nullptr;
  if (const CUresult rc = alloc(&send, bytes); rc != CUDA_SUCCESS) return fail("cuda", cu("cuMemAlloc", rc));
  if (const CUresult rc = alloc(&recv, bytes); rc != CUDA_SUCCESS) return fail("cuda", cu("cuMemAlloc", rc));
  if (const CUresult rc = stream_create(&stream, CU_STREAM_DEFAULT); rc != CUDA_SUCCESS) {
    return fail("cuda", cu("cuStreamCreate", rc));
  }
  if (const CUresult rc = event_create(&ev_start, CU_EVENT_DEFAULT); rc != CUDA_SUCCESS) {
    return fail("cuda", cu("cuEventCreate", rc));
  }
  if (const CUresult rc = event_create(&ev_end, CU_EVENT_DEFAULT); rc != CUDA_SUCCESS) {
    return fail("cuda", cu("cuEventCreate", rc));
  }
  // Host staging in slices of kHostStageBytes, one buffer reused: 32 MiB of data does not cost the
  // helper 32 MiB more of resident memory, twice.
  const std::size_t esize = wide ? 8 : 4;
  const std::size_t stage_elements = std::max<std::size_t>(1, kHostStageBytes / esize);
  std::vector<unsigned char> stage(std::min(bytes, stage_elements * esize));
  {
    // This rank's contribution, and a poison in the result buffer so that a collective that
    // writes nothing cannot pass on stale data.
    for (std::size_t i0 = 0; i0 < count; i0 += stage_elements) {
      const std::size_t len = std::min(stage_elements, count - i0);
      for (std::size_t i = 0; i < len; ++i) {
        const std::int64_t v = contribution(a.rank, i0 + i);
        if (wide) {
          std::memcpy(stage.data() + i * 8, &v, 8);
        } else {
          const std::int32_t v32 = static_cast<std::int32_t>(v);
          std::memcpy(stage.data() + i * 4, &v32, 4);
        }
      }
      if (const CUresult rc = copy_htod(send + i0 * esize, stage.data(), len * esize); rc != CUDA_SUCCESS) {
        return fail("cuda", cu("cuMemcpyHtoD", rc));
      }
    }
    if (const CUresult rc = memset32(recv, 0xDEADBEEFu, bytes / 4); rc != CUDA_SUCCESS)
      return fail("cuda", cu("cuMemsetD32", rc));
    if (const CUresult rc = synchronize(); rc != CUDA_SUCCESS) return fail("cuda", cu("cuCtxSynchronize", rc));
  }

  // From here on a communicator may exist: every failure aborts it and ends the helper at once
  // (a communicator in error, or one still running, must not be destroyed or waited for).
  nccl::ncclComm_t comm = nullptr;
  auto fatal = [&](const std::string& step, const std::string& error, bool expired, int code) {
    nlohmann::json line = {{"event", to_string(gpu_protocol::Event::Error)},
                           {"step", step},
                           {"error", error},
                           {"expired", expired},
                           {"seconds", since(begin)}};
    if (code >= 0) {
      line["code"] = code;
      const char* name = nccl_code_name(code);
      line["nccl_error"] = name != nullptr ? name : "";
    }
    emit_line(line);
    if (comm != nullptr) {
      emit_line({{"event", to_string(gpu_protocol::Event::Progress)}, {"step", "abort"}, {"seconds", since(begin)}});
      const Clock::time_point t = Clock::now();
      const nccl::ncclResult_t rc = comm_abort(comm);
      const char* name = nccl_code_name(rc);
      emit_line({{"event", to_string(gpu_protocol::Event::Abort)},
                 {"result", name != nullptr ? name : std::to_string(static_cast<int>(rc))},
                 {"seconds", since(t)}});
    }
    report_xids(step);
    emit_line({{"event", to_string(gpu_protocol::Event::End)}});
    std::fflush(stdout);
    std::_Exit(0);
  };
  auto expired_text = [&](const char* what) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s did not complete within the helper's deadline of %.1f s (ncclCommAbort called)",
                  what, a.timeout_s);
    return std::string(buf);
  };
  // Every wait below polls with a back-off bounded by the deadline (core/backoff.hpp): a completion
  // is seen at most 2 ms late, and the helper does not keep a core busy while NCCL works.
  auto pause = [&](Backoff& b) {
    std::this_thread::sleep_for(b.next(std::chrono::duration_cast<Backoff::Duration>(deadline - Clock::now())));
  };

  // Init: non-blocking, polled.
  emit_line({{"event", to_string(gpu_protocol::Event::Progress)}, {"step", "init"}, {"seconds", since(begin)}});
  nccl::ncclConfig_t config = nccl::config_initializer();
  config.blocking = 0;
  const Clock::time_point init_begin = Clock::now();
  {
    const nccl::ncclResult_t rc = comm_init(&comm, a.nranks, id, a.rank, &config);
    if (rc != nccl::ncclSuccess && rc != nccl::ncclInProgress)
      fatal("init", "ncclCommInitRankConfig: " + n.name(rc, comm), false, rc);
    if (comm == nullptr) fatal("init", "ncclCommInitRankConfig returned no communicator", false, -1);
  }
  for (Backoff b = poll_backoff();;) {
    nccl::ncclResult_t state = nccl::ncclInProgress;
    const nccl::ncclResult_t rc = async_error(comm, &state);
    if (rc != nccl::ncclSuccess) fatal("init", "ncclCommGetAsyncError: " + n.name(rc, comm), false, rc);
    if (state == nccl::ncclSuccess) break;
    if (state != nccl::ncclInProgress) fatal("init", "ncclCommInitRankConfig: " + n.name(state, comm), false, state);
    if (Clock::now() >= deadline) fatal("init", expired_text("ncclCommInitRankConfig"), true, -1);
    pause(b);
  }
  emit_line({{"event", to_string(gpu_protocol::Event::Progress)},
             {"step", "ready"},
             {"seconds", since(begin)},
             {"init_seconds", since(init_begin)}});

  // One all_reduce between two events: enqueue (polling ncclInProgress), then poll the end event
  // and the communicator's asynchronous error together.
  const nccl::ncclDataType_t dtype = wide ? nccl::ncclInt64 : nccl::ncclInt32;
  auto one = [&]() -> double {
    if (const CUresult rc = event_record(ev_start, stream); rc != CUDA_SUCCESS)
      fatal("allreduce", cu("cuEventRecord", rc), false, -1);
    nccl::ncclResult_t rc = all_reduce(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(send)),
                                       reinterpret_cast<void*>(static_cast<std::uintptr_t>(recv)), count, dtype,
                                       nccl::ncclSum, comm, stream);
    if (rc != nccl::ncclSuccess && rc != nccl::ncclInProgress)
      fatal("allreduce", "ncclAllReduce: " + n.name(rc, comm), false, rc);
    for (Backoff b = poll_backoff(); rc == nccl::ncclInProgress;) {
      nccl::ncclResult_t state = nccl::ncclInProgress;
      if (const nccl::ncclResult_t q = async_error(comm, &state); q != nccl::ncclSuccess) {
        fatal("allreduce", "ncclCommGetAsyncError: " + n.name(q, comm), false, q);
      }
      if (state != nccl::ncclSuccess && state != nccl::ncclInProgress) {
        fatal("allreduce", "ncclAllReduce: " + n.name(state, comm), false, state);
      }
      rc = state;
      if (rc == nccl::ncclInProgress) {
        if (Clock::now() >= deadline) fatal("allreduce", expired_text("ncclAllReduce (enqueue)"), true, -1);
        pause(b);
      }
    }
    if (const CUresult r = event_record(ev_end, stream); r != CUDA_SUCCESS)
      fatal("allreduce", cu("cuEventRecord", r), false, -1);
    for (Backoff b = poll_backoff();;) {
      const CUresult q = event_query(ev_end);
      if (q == CUDA_SUCCESS) break;
      if (q != CUDA_ERROR_NOT_READY) fatal("allreduce", cu("cuEventQuery", q), false, -1);
      nccl::ncclResult_t state = nccl::ncclSuccess;
      if (const nccl::ncclResult_t r = async_error(comm, &state); r != nccl::ncclSuccess) {
        fatal("async", "ncclCommGetAsyncError: " + n.name(r, comm), false, r);
      }
      if (state != nccl::ncclSuccess && state != nccl::ncclInProgress) {
        fatal("async", "the communicator reported " + n.name(state, comm) + " during ncclAllReduce", false, state);
      }
      if (Clock::now() >= deadline) fatal("allreduce", expired_text("ncclAllReduce"), true, -1);
      pause(b);
    }
    float ms = 0.0f;
    if (const CUresult r = elapsed(&ms, ev_start, ev_end); r != CUDA_SUCCESS)
      fatal("allreduce", cu("cuEventElapsedTime", r), false, -1);
    return static_cast<double>(ms) / 1000.0;
  };

  emit_line({{"event", to_string(gpu_protocol::Event::Progress)}, {"step", "warmup"}, {"seconds", since(begin)}});
  const double warm = one();
  std::vector<double> times;
  for (int k = 0; k < a.repeats; ++k) {
    times.push_back(one());
    emit_line({{"event", to_string(gpu_protocol::Event::Progress)},
               {"step", "iteration"},
               {"i", k},
               {"time_s", times.back()}});
  }
  const double best = times.empty() ? warm : *std::min_element(times.begin(), times.end());

  // Verify every element of this rank's result, a slice at a time.
  std::size_t wrong = 0, first = 0;
  std::int64_t first_value = 0, first_expected = 0;
  for (std::size_t i0 = 0; i0 < count; i0 += stage_elements) {
    const std::size_t len = std::min(stage_elements, count - i0);
    if (const CUresult rc = copy_dtoh(stage.data(), recv + i0 * esize, len * esize); rc != CUDA_SUCCESS) {
      fatal("verify", cu("cuMemcpyDtoH", rc), false, -1);
    }
    for (std::size_t k = 0; k < len; ++k) {
      std::int64_t got = 0;
      if (wide) {
        std::memcpy(&got, stage.data() + k * 8, 8);
      } else {
        std::int32_t v32 = 0;
        std::memcpy(&v32, stage.data() + k * 4, 4);
        got = v32;
      }
      const std::int64_t want = expected_sum(a.nranks, i0 + k);
      if (got != want) {
        if (wrong == 0) {
          first = i0 + k;
          first_value = got;
          first_expected = want;
        }
        ++wrong;
      }
    }
  }
  const double algbw = best > 0 ? static_cast<double>(bytes) / best / 1e9 : 0.0;
  const double busbw = algbw * 2.0 * (a.nranks - 1) / a.nranks;
  if (wrong != 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "element %zu of %zu (%s) is %lld, expected %lld (%zu of %zu elements wrong)", first,
                  count, wide ? "int64" : "int32", static_cast<long long>(first_value),
                  static_cast<long long>(first_expected), wrong, count);
    emit_line({{"event", to_string(gpu_protocol::Event::Error)},
               {"step", "verify"},
               {"error", buf},
               {"expired", false},
               {"index", first},
               {"value", first_value},
               {"expected", first_expected},
               {"wrong_elements", wrong},
               {"seconds", since(begin)}});
  }
  emit_line({{"event", to_string(gpu_protocol::Event::Done)},
             {"ok", wrong == 0},
             {"rank", a.rank},
             {"nranks", a.nranks},
             {"bytes", bytes},
             {"repeats", static_cast<int>(times.size())},
             {"time_s", best},
             {"warmup_s", warm},
             {"algbw_gbps", algbw},
             {"busbw_gbps", busbw},
             {"seconds", since(begin)}});

  // A healthy communicator is finalized (non-blocking too) and destroyed; one that will not
  // finalize in time is aborted.
  if (comm_finalize != nullptr) {
    nccl::ncclResult_t rc = comm_finalize(comm);
    for (Backoff b = poll_backoff(); rc == nccl::ncclInProgress;) {
      nccl::ncclResult_t state = nccl::ncclInProgress;
      if (async_error(comm, &state) != nccl::ncclSuccess) break;
      rc = state;
      if (rc == nccl::ncclInProgress) {
        if (Clock::now() >= deadline) fatal("finalize", expired_text("ncclCommFinalize"), true, -1);
        pause(b);
      }
    }
    if (rc != nccl::ncclSuccess) fatal("finalize", "ncclCommFinalize: " + n.name(rc, comm), false, rc);
  }
  comm_destroy(comm);
  comm = nullptr;
  event_destroy(ev_start);
  event_destroy(ev_end);
  stream_destroy(stream);
  mem_free(send);
  mem_free(recv);
  set_current(nullptr);
  release(dev);
  report_xids("done");
  emit_line({{"event", to_string(gpu_protocol::Event::End)}});
  return 0;
}

}  // namespace preflight::helper
