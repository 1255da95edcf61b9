// SPDX-License-Identifier: MIT
// job/nccl_allreduce.hpp: the caller's side of the contained NCCL all_reduce.
#include "job/nccl_allreduce.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/deadlines.hpp"
#include "core/text.hpp"
#include "gpu_probe/protocol.hpp"

namespace preflight {
namespace {

constexpr char kHelper[] = "preflight-gpu-probe";

std::string helper_of(const NcclHelperSetup& setup) {
  return setup.helper.empty() ? helper_path(kHelper) : setup.helper;
}

std::string size_text(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (std::uint64_t{1} << 30) && bytes % (std::uint64_t{1} << 30) == 0) {
    std::snprintf(buf, sizeof buf, "%llu GiB", static_cast<unsigned long long>(bytes >> 30));
  } else if (bytes >= (std::uint64_t{1} << 20) && bytes % (std::uint64_t{1} << 20) == 0) {
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(bytes >> 20));
  } else {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

}  // namespace

std::chrono::milliseconds nccl_helper_deadline(std::chrono::milliseconds deadline) {
  return nccl_own_deadline(deadline);
}

Probed<std::string> nccl_local_root() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Probed<std::string>::error(ProbeErrc::ApiError, std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return Probed<std::string>::error(ProbeErrc::ApiError, "bind 127.0.0.1:0: " + why);
  }
  ::close(fd);
  return Probed<std::string>::ok("127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), "bind 127.0.0.1:0");
}

Probed<std::string> nccl_unique_id(const std::string& nccl_lib, std::chrono::milliseconds deadline,
                                   const std::string& root, const NcclHelperSetup& setup) {
  ContainedRequest request;
  request.executable = helper_of(setup);
  namespace proto = gpu_protocol;
  proto::Request args(proto::command::kNcclId);
  args.with(proto::option::kLib, nccl_lib);
  if (!root.empty()) args.with(proto::option::kRoot, root);
  request.args = args.args();
  request.extra_env = setup.extra_env;
  request.deadline = deadline;
  const std::string what = std::string(kHelper) + " nccl-id --lib '" + nccl_lib + "'";
  const ContainedResult result = run_contained(request);
  const ContainedJson parsed = parse_contained_json(result);
  if (!parsed.ok()) {
    ProbeError e = result.clean() ? ProbeError{ProbeErrc::ParseError, parsed.error} : result.to_probe_error();
    e.detail = what + (result.clean() ? ": " : " ") + e.detail;
    return Probed<std::string>::error(std::move(e));
  }
  const nlohmann::json& doc = parsed.value;
  const std::string event = doc.is_object() ? doc.value("event", std::string()) : std::string();
  if (event == to_string(gpu_protocol::Event::Id) && doc.contains("id") && doc.at("id").is_string() &&
      doc.at("id").get<std::string>().size() == 256) {
    return Probed<std::string>::ok(doc.at("id").get<std::string>(),
                                   "ncclGetUniqueId in " + doc.value("lib", std::string("?")));
  }
  if (event == to_string(gpu_protocol::Event::Error)) {
    const std::string step = doc.value("step", std::string("?"));
    const ProbeErrc code = step == "dlopen" ? ProbeErrc::LibraryMissing : ProbeErrc::ApiError;
    return Probed<std::string>::error(code, what + ": " + step + ": " + doc.value("error", std::string()));
  }
  return Probed<std::string>::error(ProbeErrc::ParseError, what + ": not a unique id: " + doc.dump());
}

NcclRankOutcome parse_nccl_rank_outcome(const ContainedResult& result, int rank, int device) {
  NcclRankOutcome o;
  o.rank = rank;
  o.device = device;
  o.elapsed_s = result.elapsed_s;
  o.helper = result.describe();
  bool started = false, done = false, ended = false, have_error = false;
  const EventLines read = for_each_event(result.out, [&](const std::string& event, const nlohmann::json& doc) {
    if (event == to_string(gpu_protocol::Event::Start)) {
      started = true;
      o.lib = doc.value("lib", std::string());
      o.nccl_version = doc.value("version", 0);
      o.bytes = doc.value("bytes", std::uint64_t{0});
    } else if (event == to_string(gpu_protocol::Event::Progress)) {
      o.last_step = doc.value("step", std::string());
    } else if (event == to_string(gpu_protocol::Event::Error)) {
      const std::string step = doc.value("step", std::string("?"));
      if (step == "verify") {
        o.wrong = true;
        o.wrong_index = doc.value("index", std::int64_t{-1});
        o.wrong_value = doc.value("value", std::int64_t{0});
        o.expected_value = doc.value("expected", std::int64_t{0});
        o.wrong_elements = doc.value("wrong_elements", std::uint64_t{0});
      }
      if (!have_error) {  // the first error is the cause
        have_error = true;
        o.step = step;
        o.error = doc.value("error", std::string());
        o.expired = doc.value("expired", false);
        o.nccl_error = doc.value("nccl_error", std::string());
      }
    } else if (event == to_string(gpu_protocol::Event::Abort)) {
      o.aborted = true;
    } else if (event == to_string(gpu_protocol::Event::XidWatch)) {
      try {
        o.xid_watch = doc.at("value").get<NvmlXidWatch>();
      } catch (const std::exception&) {
        o.xid_watch = {};  // unreadable: as if the helper had said nothing of it
      }
    } else if (event == to_string(gpu_protocol::Event::Done)) {
      done = true;
      o.bytes = doc.value("bytes", o.bytes);
      o.repeats = doc.value("repeats", 0);
      o.seconds = doc.value("time_s", 0.0);
      o.algbw_gbps = doc.value("algbw_gbps", 0.0);
      o.busbw_gbps = doc.value("busbw_gbps", 0.0);
      o.ok = doc.value("ok", false) && !have_error;
    } else if (event == to_string(gpu_protocol::Event::End)) {
      ended = true;
    } else {
      return false;
    }
    return true;
  });
  // What the helper could not say itself.
  if (result.outcome == ContainedOutcome::TimedOut && !ended) {
    o.ok = false;
    if (!have_error) {
      o.expired = true;
      o.step = o.last_step.empty() ? (started ? "init" : "start") : o.last_step;
      o.error = "the helper did not finish within " + fixed(result.deadline_s, 1) + " s" + " (killed) during " + o.step;
    } else if (o.step != "verify") {
      o.error += "; then the helper did not exit within " + fixed(result.deadline_s, 1) + " s" + " (killed)";
    }
  } else if (result.outcome == ContainedOutcome::Cancelled && !ended) {
    o.ok = false;
    o.cancelled = true;
    if (!have_error) {
      o.step = o.last_step.empty() ? (started ? "init" : "start") : o.last_step;
      o.error = "stopped after " + fixed(result.elapsed_s, 1) + " s during " + o.step;
    }
  } else if (result.outcome == ContainedOutcome::Signaled && !ended) {
    o.ok = false;
    o.crashed = true;
    if (!have_error) {
      o.step = o.last_step.empty() ? "start" : o.last_step;
      o.error = "the helper died of " + result.signal_name + " during " + o.step;
    }
  } else if (!result.clean()) {
    o.ok = false;
    if (!have_error) {
      o.step = "helper";
      const std::string tail = result.stderr_tail();
      o.error = "the helper " + result.describe() + (tail.empty() ? "" : ": " + tail);
    }
  } else if (!done && !have_error) {
    o.ok = false;
    o.step = "helper";
    o.error = !started ? "nothing from the helper" + std::string(read.bad > 0 ? " but garbage" : "")
                       : "the helper's output ended without a result";
  }
  if (o.wrong || have_error) o.ok = false;
  return o;
}

NcclRankOutcome run_nccl_allreduce(const NcclAllreduceRequest& r) {
  const std::chrono::milliseconds own = nccl_helper_deadline(r.deadline);
  const std::string timeout_text = fixed(std::chrono::duration<double>(own).count(), 3);
  ContainedRequest request;
  request.executable = helper_of(r.setup);
  namespace proto = gpu_protocol;
  proto::Request args(proto::command::kNcclAllreduce);
  args.with(proto::option::kId, r.id_hex)
      .with(proto::option::kRank, std::to_string(r.rank))
      .with(proto::option::kNranks, std::to_string(r.nranks))
      .with(proto::option::kDevice, std::to_string(r.device))
      .with(proto::option::kBytes, std::to_string(r.bytes))
      .with(proto::option::kRepeats, std::to_string(r.repeats))
      .with(proto::option::kTimeout, timeout_text)
      .with(proto::option::kLib, r.nccl_lib);
  if (!r.root.empty()) args.with(proto::option::kRoot, r.root);
  request.args = args.args();
  request.extra_env = r.setup.extra_env;
  request.deadline = r.deadline;
  request.kill_grace = std::min<std::chrono::milliseconds>(request.kill_grace, std::chrono::milliseconds(1000));
  request.cancel_fd = r.cancel_fd;
  return parse_nccl_rank_outcome(run_contained(request), r.rank, r.device);
}

bool never_joined(const NcclRankOutcome& o) {
  // No progress line: the helper never reached its "init" step. "gather": rank 0 could not read
  // the rank's record, which says nothing of how far its helper came.
  return !o.ok && !o.cancelled && o.last_step.empty() && o.step != "gather";
}

CommResult combine_nccl_outcomes(const std::vector<NcclRankOutcome>& outcomes, int nranks, std::uint64_t bytes,
                                 int repeats, double seconds, double deadline_s) {
  CommResult c;
  c.attempted = true;
  c.transport = "nccl";
  c.ranks = nranks;
  c.bytes = bytes;
  c.repeats = repeats;
  c.seconds = seconds;
  c.deadline_s = deadline_s;
  bool all_ok = static_cast<int>(outcomes.size()) == nranks;
  double slowest = 0;
  std::vector<std::string> absent;  // the ranks that never joined, "rank 3 (GPU 3)"
  std::size_t absent_count = 0;
  for (const NcclRankOutcome& o : outcomes) {
    if (!never_joined(o)) continue;
    if (++absent_count <= 4)
      absent.push_back("rank " + std::to_string(o.rank) + " (GPU " + std::to_string(o.device) + ")");
  }
  if (absent_count > absent.size()) absent.push_back("and " + std::to_string(absent_count - absent.size()) + " more");
  std::vector<std::string> waiting;  // the error lines of the ranks that waited: after the causes
  for (const NcclRankOutcome& o : outcomes) {
    if (o.bytes != 0) c.bytes = o.bytes;
    // Waiting for a peer that never joined is not hanging: only the ranks that never joined count.
    const bool waited = !absent.empty() && !never_joined(o) && (o.expired || o.cancelled) && !o.wrong;
    if (o.expired && !waited) {
      c.expired = true;
      c.missing.push_back(o.rank);
    }
    if (o.wrong) c.wrong.push_back(o.rank);
    if (!o.ok) {
      all_ok = false;
      std::string line = "rank " + std::to_string(o.rank) + " (GPU " + std::to_string(o.device) + "): " + o.step +
                         ": " +
                         (waited ? "waited for " + join(absent, ", ") + ", which never joined the communicator; " +
                                       (o.cancelled ? std::string("stopped") : std::string("its deadline passed"))
                                 : o.error);
      if (o.aborted) line += " [communicator aborted]";
      (waited ? waiting : c.errors).push_back(std::move(line));
    } else {
      slowest = std::max(slowest, o.seconds);
      c.repeats = o.repeats;
    }
    if (!o.xid_watch.work.empty()) c.xid_watches.push_back({o.rank, o.xid_watch});
  }
  c.errors.insert(c.errors.end(), waiting.begin(), waiting.end());
  c.completed = all_ok;
  if (all_ok && slowest > 0) {
    c.algbw_gbps = static_cast<double>(c.bytes) / slowest / 1e9;
    c.busbw_gbps = nranks > 0 ? c.algbw_gbps * 2.0 * (nranks - 1) / nranks : 0.0;
  }
  if (c.completed) {
    c.note = std::to_string(nranks) + " rank" + (nranks == 1 ? "" : "s") + ", " + size_text(c.bytes) + ", best of " +
             std::to_string(c.repeats) + ": algbw " + fixed(c.algbw_gbps, 1) + " GB/s, busbw " +
             fixed(c.busbw_gbps, 1) + " GB/s";
  } else if (!c.errors.empty()) {
    c.note = c.errors.front();
    if (c.errors.size() > 1) c.note += " (and " + std::to_string(c.errors.size() - 1) + " more)";
  } else {
    c.note = "no result from " + std::to_string(nranks - static_cast<int>(outcomes.size())) + " of " +
             std::to_string(nranks) + " ranks";
  }
  return c;
}

CommResult nccl_allreduce_local_gpus(int gpus, std::uint64_t bytes, int repeats, const std::string& nccl_lib,
                                     std::chrono::milliseconds deadline, const NcclHelperSetup& setup) {
  using Steady = std::chrono::steady_clock;
  const Steady::time_point begin = Steady::now();
  const double deadline_s = std::chrono::duration<double>(deadline).count();
  CommResult c;
  c.transport = "nccl";
  c.bytes = bytes;
  c.ranks = gpus;
  c.repeats = repeats;
  c.deadline_s = deadline_s;
  if (gpus < 1) {
    c.note = "not run: no GPU visible";
    return c;
  }
  const Probed<std::string> root = nccl_local_root();
  if (!root.ok()) {
    c.note = "not run: no bootstrap port on 127.0.0.1: " + root.why();
    return c;
  }
  // The id takes at most a quarter of the budget (it only loads libnccl).
  const auto id_deadline = std::max(std::chrono::milliseconds(500), deadline / 4);
  const Probed<std::string> id = nccl_unique_id(nccl_lib, id_deadline, *root.value(), setup);
  auto elapsed = [&] { return std::chrono::duration<double>(Steady::now() - begin).count(); };
  if (!id.ok()) {
    c.attempted = true;
    c.seconds = elapsed();
    c.expired = id.error()->code == ProbeErrc::Timeout;
    c.note = "ncclGetUniqueId: " + id.why();
    c.errors.push_back(c.note);
    return c;
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - (Steady::now() - begin));
  const auto rank_deadline = std::max(std::chrono::milliseconds(500), left);
  // A helper that cannot join (it could not start, crashed, could not load NCCL) leaves the others
  // waiting in init until their deadline: a byte on this pipe stops them at once. Without the
  // pipe (no descriptors left) they wait, and the outcome is the same, later.
  struct CancelPipe {
    int fd[2] = {-1, -1};
    CancelPipe() {
      if (::pipe2(fd, O_CLOEXEC | O_NONBLOCK) != 0) fd[0] = fd[1] = -1;
    }
    ~CancelPipe() {
      for (const int f : fd) {
        if (f >= 0) ::close(f);
      }
    }
    void raise() const {
      const char byte = 1;
      if (fd[1] < 0) return;
      [[maybe_unused]] const ssize_t n = ::write(fd[1], &byte, 1);  // full: raised already
    }
  };
  const CancelPipe cancel;
  std::vector<std::future<NcclRankOutcome>> running;
  running.reserve(static_cast<std::size_t>(gpus));
  for (int g = 0; g < gpus; ++g) {
    NcclAllreduceRequest r;
    r.id_hex = *id.value();
    r.root = *root.value();
    r.nccl_lib = nccl_lib;
    r.rank = g;
    r.nranks = gpus;
    r.device = g;
    r.bytes = bytes;
    r.repeats = repeats;
    r.deadline = rank_deadline;
    r.setup = setup;
    r.cancel_fd = cancel.fd[0];
    try {
      running.push_back(std::async(std::launch::async, [r, &cancel] {
        NcclRankOutcome o = run_nccl_allreduce(r);
        if (never_joined(o) && !o.expired) cancel.raise();
        return o;
      }));
    } catch (const std::system_error& e) {  // no thread (a process or memory limit): this GPU cannot join
      NcclRankOutcome o;
      o.rank = g;
      o.device = g;
      o.step = "helper";
      o.error = std::string("no thread to run its helper: ") + e.what();
      std::promise<NcclRankOutcome> failed;
      failed.set_value(std::move(o));
      running.push_back(failed.get_future());
      cancel.raise();
    }
  }
  std::vector<NcclRankOutcome> outcomes;
  for (auto& f : running) outcomes.push_back(f.get());
  return combine_nccl_outcomes(outcomes, gpus, bytes, repeats, elapsed(), deadline_s);
}

PREFLIGHT_JSON_DEFINE(NcclRankOutcome, rank, device, ok, expired, crashed, wrong, aborted, cancelled, step, error,
                      nccl_error, wrong_index, wrong_value, expected_value, wrong_elements, bytes, repeats, seconds,
                      algbw_gbps, busbw_gbps, lib, nccl_version, last_step, elapsed_s, helper, xid_watch)

}  // namespace preflight
