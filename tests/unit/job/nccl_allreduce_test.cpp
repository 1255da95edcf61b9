// SPDX-License-Identifier: MIT
// The contained NCCL all_reduce without a GPU: the real helper (preflight-gpu-probe nccl-id /
// nccl-allreduce) against the fake libcuda and libnccl, whose ranks really exchange their buffers
// through a rendezvous directory, so exact data, wrong data on one rank, an init or a collective
// that never completes (the helper aborts the communicator at its own deadline), an asynchronous
// NCCL error and a missing library are all real. Plus the parser of the helper's JSON Lines when
// the helper itself was killed or crashed, and the node profile across the 8 fake GPUs.
#include "job/nccl_allreduce.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_paths.hpp"
#include "tests/fakes/scenario.hpp"

namespace preflight {
namespace job_nccl_allreduce_test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// What the hang tests allow past the 3 s deadline for starting the helpers and reaping them: a
// hang runs on forever, and whether the helper aborted the communicator itself is asserted apart
// (`aborted`), so the bound need not be tight; a sanitized build on a busy machine takes seconds.
constexpr double kStartSlackS = 6.0;

const std::string kLibDir = preflight::test_paths::fake_gpu_lib_dir();
const std::string kScenarios = preflight::test_paths::fake_gpu_scenarios_dir();
const std::string kHelper = preflight::test_paths::gpu_helper_dir() + "/preflight-gpu-probe";

std::string scenario(const std::string& name) { return name.empty() ? "" : kScenarios + "/" + name + ".json"; }

/// A private rendezvous directory for the fake libnccl, removed afterwards.
class NcclAllreduce : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "preflight-nccl-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    m_dir = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }

  NcclHelperSetup setup(const std::string& scenario_name = "") const {
    NcclHelperSetup s;
    s.helper = kHelper;
    s.extra_env = {"LD_LIBRARY_PATH=" + kLibDir, "PREFLIGHT_FAKE_GPU=" + scenario(scenario_name),
                   "PREFLIGHT_FAKE_NCCL_DIR=" + m_dir, "CUDA_VISIBLE_DEVICES", "NCCL_COMM_ID"};
    return s;
  }

  /// n ranks on devices 0..n-1, run concurrently; the wall time in `wall_s`.
  std::vector<NcclRankOutcome> ranks(int n, const std::string& scenario_name, std::chrono::milliseconds deadline,
                                     std::uint64_t bytes = std::uint64_t{4} << 20, int repeats = 3,
                                     const std::string& lib = "") {
    const Probed<std::string> root = nccl_local_root();
    EXPECT_TRUE(root.ok()) << root.why();
    const Probed<std::string> id = nccl_unique_id(lib, 10s, root.ok() ? *root.value() : "", setup(scenario_name));
    EXPECT_TRUE(id.ok()) << id.why();
    std::vector<std::future<NcclRankOutcome>> running;
    const Clock::time_point begin = Clock::now();
    for (int r = 0; r < n; ++r) {
      NcclAllreduceRequest q;
      q.id_hex = id.ok() ? *id.value() : std::string(256, '0');
      q.root = root.ok() ? *root.value() : "";
      q.nccl_lib = lib;
      q.rank = r;
      q.nranks = n;
      q.device = r;
      q.bytes = bytes;
      q.repeats = repeats;
      q.deadline = deadline;
      q.setup = setup(scenario_name);
      running.push_back(std::async(std::launch::async, [q] { return run_nccl_allreduce(q); }));
    }
    std::vector<NcclRankOutcome> out;
    for (auto& f : running) out.push_back(f.get());
    wall_s = std::chrono::duration<double>(Clock::now() - begin).count();
    return out;
  }

  bool rendezvous_empty() const { return fs::is_empty(m_dir); }

  std::string m_dir;
  double wall_s = 0;
};

TEST_F(NcclAllreduce, UniqueIdIs128BytesAndNeedsARoot) {
  const Probed<std::string> id = nccl_unique_id("", 10s, "127.0.0.1:29500", setup());
  ASSERT_TRUE(id.ok()) << id.why();
  EXPECT_EQ(id.value()->size(), 256u);
  EXPECT_NE(id.source().find("libnccl.so.2"), std::string::npos) << id.source();
  // Without --root and without NCCL_COMM_ID the id would name a root inside the exiting helper.
  const Probed<std::string> rootless = nccl_unique_id("", 10s, "", setup());
  ASSERT_FALSE(rootless.ok());
  EXPECT_NE(rootless.why().find("no bootstrap root"), std::string::npos) << rootless.why();
}

TEST_F(NcclAllreduce, TwoRanksExactWithBusBandwidth) {
  // 1 MiB: the fake sums every element on the CPU, which a ThreadSanitizer build makes slow; the
  // deadline is only reached when something hangs.
  const std::vector<NcclRankOutcome> out = ranks(2, "", 30s, std::uint64_t{1} << 20);
  ASSERT_EQ(out.size(), 2u);
  for (const NcclRankOutcome& o : out) {
    EXPECT_TRUE(o.ok) << o.rank << ": " << o.step << ": " << o.error << " / " << o.helper;
    EXPECT_FALSE(o.wrong || o.expired || o.crashed || o.aborted);
    EXPECT_EQ(o.bytes, std::uint64_t{1} << 20);
    EXPECT_EQ(o.repeats, 3);
    ASSERT_GT(o.seconds, 0);
    EXPECT_NEAR(o.algbw_gbps, static_cast<double>(o.bytes) / o.seconds / 1e9, 1e-6 * o.algbw_gbps);
    EXPECT_NEAR(o.busbw_gbps, o.algbw_gbps * 2.0 * (2 - 1) / 2, 1e-9);  // n = 2: busbw = algbw
    EXPECT_NEAR(o.busbw_gbps, 100.0, 1.0);                              // the fake's default modelled bus bandwidth
    EXPECT_NE(o.lib.find("libnccl.so.2"), std::string::npos);
    EXPECT_EQ(o.nccl_version, 22105);
  }
  const CommResult c = combine_nccl_outcomes(out, 2, std::uint64_t{1} << 20, 3, wall_s, 30);
  EXPECT_TRUE(c.attempted && c.completed);
  EXPECT_FALSE(c.expired);
  EXPECT_EQ(c.transport, "nccl");
  EXPECT_TRUE(c.missing.empty() && c.wrong.empty() && c.errors.empty());
  EXPECT_NEAR(c.busbw_gbps, 100.0, 1.0);
  EXPECT_NE(c.note.find("2 ranks, 1 MiB, best of 3"), std::string::npos) << c.note;
  EXPECT_TRUE(rendezvous_empty()) << "the last rank removes the rendezvous directory";
}

TEST_F(NcclAllreduce, FourRanksBusBandwidthIsTwoNMinusOneOverN) {
  const std::vector<NcclRankOutcome> out = ranks(4, "allreduce-busbw-40", 30s, std::uint64_t{1} << 20);
  ASSERT_EQ(out.size(), 4u);
  for (const NcclRankOutcome& o : out) {
    ASSERT_TRUE(o.ok) << o.rank << ": " << o.step << ": " << o.error;
    EXPECT_NEAR(o.busbw_gbps, o.algbw_gbps * 2.0 * 3 / 4, 1e-9);
    EXPECT_NEAR(o.busbw_gbps, 40.0, 0.4);
    EXPECT_NEAR(o.algbw_gbps, 40.0 * 4 / 6, 0.4);
  }
  const CommResult c = combine_nccl_outcomes(out, 4, std::uint64_t{1} << 20, 3, wall_s, 30);
  EXPECT_TRUE(c.completed);
  EXPECT_EQ(c.ranks, 4);
  EXPECT_NEAR(c.busbw_gbps, c.algbw_gbps * 1.5, 1e-9);
  EXPECT_TRUE(rendezvous_empty());
}

TEST_F(NcclAllreduce, CorruptResultOnOneRankNamesIndexAndValues) {
  const std::vector<NcclRankOutcome> out = ranks(2, "allreduce-corrupt-rank1", 10s, 1 << 20, 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].ok) << out[0].error;
  const NcclRankOutcome& bad = out[1];
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(bad.wrong);
  EXPECT_FALSE(bad.expired);
  EXPECT_EQ(bad.step, "verify");
  // Element 17 on 2 ranks: (17 % 1021 + 1) * (1 + 2) = 54, arriving bitwise inverted (-55).
  EXPECT_EQ(bad.wrong_index, 17);
  EXPECT_EQ(bad.expected_value, 54);
  EXPECT_EQ(bad.wrong_value, -55);
  EXPECT_EQ(bad.wrong_elements, 1u);
  EXPECT_NE(bad.error.find("element 17 of 262144 (int32) is -55, expected 54"), std::string::npos) << bad.error;
  EXPECT_GT(bad.busbw_gbps, 0) << "the timing of a completed all_reduce is kept";
  const CommResult c = combine_nccl_outcomes(out, 2, 1 << 20, 1, wall_s, 10);
  EXPECT_FALSE(c.completed);
  EXPECT_FALSE(c.expired);
  EXPECT_EQ(c.wrong, std::vector<int>{1});
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_NE(c.errors[0].find("rank 1 (GPU 1): verify: element 17"), std::string::npos) << c.errors[0];
}

TEST_F(NcclAllreduce, InitThatNeverCompletesIsAbortedWithinTheDeadline) {
  const std::vector<NcclRankOutcome> out = ranks(2, "allreduce-hang-init", 3s);
  EXPECT_LE(wall_s, 3.0 + kStartSlackS);
  ASSERT_EQ(out.size(), 2u);
  for (const NcclRankOutcome& o : out) {
    EXPECT_FALSE(o.ok);
    EXPECT_TRUE(o.expired) << o.rank << ": " << o.error;
    EXPECT_EQ(o.step, "init");
    EXPECT_TRUE(o.aborted) << "the helper aborted the non-blocking communicator itself";
    EXPECT_FALSE(o.crashed);
    EXPECT_NE(o.error.find("ncclCommInitRankConfig did not complete"), std::string::npos) << o.error;
  }
  const CommResult c = combine_nccl_outcomes(out, 2, 4 << 20, 3, wall_s, 3);
  EXPECT_TRUE(c.expired);
  EXPECT_FALSE(c.completed);
  EXPECT_EQ(c.missing, (std::vector<int>{0, 1}));
  EXPECT_NE(c.errors[0].find("[communicator aborted]"), std::string::npos);
}

TEST_F(NcclAllreduce, CollectiveThatNeverCompletesIsAbortedWithinTheDeadline) {
  const std::vector<NcclRankOutcome> out = ranks(2, "allreduce-hang", 3s);
  EXPECT_LE(wall_s, 3.0 + kStartSlackS);
  for (const NcclRankOutcome& o : out) {
    EXPECT_FALSE(o.ok);
    EXPECT_TRUE(o.expired);
    EXPECT_EQ(o.step, "allreduce");
    EXPECT_EQ(o.last_step, "abort");
    EXPECT_TRUE(o.aborted);
    EXPECT_NE(o.error.find("ncclAllReduce did not complete within the helper's deadline"), std::string::npos)
        << o.error;
  }
}

TEST_F(NcclAllreduce, AsyncErrorNamesTheNcclError) {
  const std::vector<NcclRankOutcome> out = ranks(2, "allreduce-async-error", 3s);
  EXPECT_LE(wall_s, 3.0 + kStartSlackS);
  ASSERT_EQ(out.size(), 2u);
  const NcclRankOutcome& bad = out[0];
  EXPECT_FALSE(bad.ok);
  EXPECT_FALSE(bad.expired);
  EXPECT_EQ(bad.step, "async");
  EXPECT_EQ(bad.nccl_error, "ncclRemoteError");
  EXPECT_NE(bad.error.find("ncclRemoteError (remote process exited or there was a network error)"), std::string::npos)
      << bad.error;
  EXPECT_NE(bad.error.find("scripted asynchronous error 6"), std::string::npos) << "ncclGetLastError is appended";
  EXPECT_TRUE(bad.aborted);
  // Its peer waits for data that never comes: expired, aborted.
  EXPECT_TRUE(out[1].expired);
  EXPECT_TRUE(out[1].aborted);
  const CommResult c = combine_nccl_outcomes(out, 2, 4 << 20, 3, wall_s, 3);
  EXPECT_FALSE(c.completed);
  EXPECT_EQ(c.missing, std::vector<int>{1});
  EXPECT_NE(c.note.find("rank 0 (GPU 0): async: "), std::string::npos) << c.note;
}

TEST_F(NcclAllreduce, InitErrorIsReportedAtInit) {
  const std::vector<NcclRankOutcome> out = ranks(1, "allreduce-init-error", 5s);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_FALSE(out[0].expired);
  EXPECT_EQ(out[0].step, "init");
  EXPECT_EQ(out[0].nccl_error, "ncclSystemError");
  EXPECT_NE(out[0].error.find("ncclCommInitRankConfig: ncclSystemError"), std::string::npos) << out[0].error;
}

TEST_F(NcclAllreduce, MissingLibncclIsAClearError) {
  const std::string missing = m_dir + "/no-such/libnccl.so.2";
  const Probed<std::string> id = nccl_unique_id(missing, 10s, "127.0.0.1:29500", setup());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error()->code, ProbeErrc::LibraryMissing);
  EXPECT_NE(id.why().find("dlopen: "), std::string::npos) << id.why();
  EXPECT_NE(id.why().find(missing), std::string::npos) << id.why();

  NcclAllreduceRequest q;
  q.id_hex = std::string(256, 'a');
  q.root = "127.0.0.1:29500";
  q.nccl_lib = missing;
  q.deadline = 5s;
  q.bytes = 4096;
  q.setup = setup();
  const NcclRankOutcome o = run_nccl_allreduce(q);
  EXPECT_FALSE(o.ok);
  EXPECT_FALSE(o.expired);
  EXPECT_EQ(o.step, "dlopen");
  EXPECT_NE(o.error.find(missing), std::string::npos) << o.error;
  EXPECT_EQ(o.lib, missing);
}

TEST_F(NcclAllreduce, NodeProfileRunsOneRankPerLocalGpu) {
  const CommResult c = nccl_allreduce_local_gpus(8, std::uint64_t{1} << 20, 2, "", 20s, setup());
  EXPECT_TRUE(c.attempted);
  EXPECT_TRUE(c.completed) << c.note;
  EXPECT_FALSE(c.expired);
  EXPECT_EQ(c.transport, "nccl");
  EXPECT_EQ(c.ranks, 8);
  EXPECT_EQ(c.repeats, 2);
  EXPECT_EQ(c.bytes, std::uint64_t{1} << 20);
  EXPECT_TRUE(c.errors.empty());
  EXPECT_NEAR(c.busbw_gbps, c.algbw_gbps * 2.0 * 7 / 8, 1e-9);
  EXPECT_NEAR(c.busbw_gbps, 100.0, 1.0);
  EXPECT_LT(c.seconds, 20.0);
  EXPECT_TRUE(rendezvous_empty());
}

// One GPU's helper cannot join (here: it exits at once for device 3, as one that could not start,
// crashed in its setup or could not load NCCL would): the other seven would wait in NCCL init until
// their deadline. They are stopped at once, and they are not the ones that hung.
TEST_F(NcclAllreduce, NodeProfileStopsWaitingForAGpuWhoseHelperNeverJoins) {
  const std::string wrapper = m_dir + "-helper.sh";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\ncase \" $* \" in *' --device 3 '*) echo 'cannot set up GPU 3' >&2; exit 1;; esac\n"
      << "exec '" << kHelper << "' \"$@\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all);
  NcclHelperSetup s = setup();
  s.helper = wrapper;
  const CommResult c = nccl_allreduce_local_gpus(8, std::uint64_t{1} << 20, 2, "", 60s, s);
  fs::remove(wrapper);
  EXPECT_TRUE(c.attempted);
  EXPECT_FALSE(c.completed);
  EXPECT_FALSE(c.expired);
  EXPECT_TRUE(c.missing.empty());
  EXPECT_LT(c.seconds, 30.0);  // stopped, not waited out (the deadline is 60 s)
  ASSERT_EQ(c.errors.size(), 8u);
  EXPECT_EQ(c.errors.front(), "rank 3 (GPU 3): helper: the helper exited with status 1: cannot set up GPU 3");
  for (std::size_t i = 1; i < c.errors.size(); ++i) {
    EXPECT_NE(c.errors[i].find(": waited for rank 3 (GPU 3), which never joined the communicator; stopped"),
              std::string::npos)
        << c.errors[i];
  }
  // The other helpers are stopped with SIGKILL: how far they got into the fake's rendezvous before
  // it depends on the machine's load, and a killed process cleans nothing (the fixture removes it).
}

TEST_F(NcclAllreduce, NodeProfileWithoutGpusIsNotAttempted) {
  const CommResult c = nccl_allreduce_local_gpus(0, 1 << 20, 2, "", 5s, setup());
  EXPECT_FALSE(c.attempted);
  EXPECT_EQ(c.note, "not run: no GPU visible");
}

TEST(NcclAllreduceHelper, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"nccl-allreduce", "--rank", "0", "--nranks", "2", "--device", "0", "--bytes", "1M"},  // no --id
           {"nccl-allreduce", "--id", "ab", "--rank", "2", "--nranks", "2", "--device", "0", "--bytes", "1M"},
           {"nccl-allreduce", "--id", "ab", "--rank", "0", "--nranks", "2", "--device", "0", "--bytes", "0"},
           {"nccl-allreduce", "--id", "ab", "--rank", "0", "--nranks", "1", "--device", "0", "--bytes", "1M",
            "--timeout", "-1"}}) {
    ContainedRequest r;
    r.executable = kHelper;
    r.args = args;
    r.deadline = 10s;
    const ContainedResult result = run_contained(r);
    EXPECT_EQ(result.outcome, ContainedOutcome::Exited);
    EXPECT_EQ(result.exit_code, 2) << args[4];
    EXPECT_NE(result.err.find("usage:"), std::string::npos);
  }
}

TEST(NcclAllreduceScenario, AllreduceKeysParseAndMistakesAreNamed) {
  using fake_gpu::parse_scenario;
  const fake_gpu::Scenario s =
      parse_scenario(nlohmann::json::parse(R"({"allreduce": {"fault": "corrupt", "rank": 1, "busbw_gbps": 40}})"));
  EXPECT_EQ(s.allreduce.fault, fake_gpu::AllreduceScript::Fault::Corrupt);
  EXPECT_TRUE(s.allreduce.applies_to(1));
  EXPECT_FALSE(s.allreduce.applies_to(0));
  EXPECT_DOUBLE_EQ(s.allreduce.busbw_gbps, 40);
  EXPECT_FALSE(fake_gpu::default_scenario().allreduce.applies_to(0));
  for (const char* bad : {R"({"allreduce": {"fault": "explode"}})", R"({"allreduce": {"rank": -1}})",
                          R"({"allreduce": {"busbw_gbps": 0}})", R"({"allreduce": {"error_code": 7}})",
                          R"({"allreduce": {"faults": "hang"}})"}) {
    EXPECT_THROW(parse_scenario(nlohmann::json::parse(bad)), std::invalid_argument) << bad;
  }
}

TEST(NcclAllreduceParse, HelperKilledAtOurDeadlineIsExpiredAtItsLastStep) {
  ContainedResult r;
  r.outcome = ContainedOutcome::TimedOut;
  r.deadline_s = 4;
  r.elapsed_s = 4;
  r.out = "{\"event\":\"start\",\"bytes\":4096}\n{\"event\":\"progress\",\"step\":\"warmup\"}\n";
  const NcclRankOutcome o = parse_nccl_rank_outcome(r, 3, 5);
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(o.expired);
  EXPECT_FALSE(o.aborted);
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.device, 5);
  EXPECT_EQ(o.step, "warmup");
  EXPECT_NE(o.error.find("did not finish within 4.0 s"), std::string::npos) << o.error;
}

TEST(NcclAllreduceParse, HelperCrashIsNamed) {
  ContainedResult r;
  r.outcome = ContainedOutcome::Signaled;
  r.signal = 11;
  r.signal_name = "SIGSEGV";
  r.out = "{\"event\":\"start\"}\n{\"event\":\"progress\",\"step\":\"init\"}\n";
  const NcclRankOutcome o = parse_nccl_rank_outcome(r, 0, 0);
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(o.crashed);
  EXPECT_EQ(o.step, "init");
  EXPECT_EQ(o.error, "the helper died of SIGSEGV during init");
}

TEST(NcclAllreduceParse, GarbageOrSilenceIsNeverOk) {
  ContainedResult r;
  r.outcome = ContainedOutcome::Exited;
  r.exit_code = 0;
  r.out = "not json\n";
  NcclRankOutcome o = parse_nccl_rank_outcome(r, 0, 0);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.step, "helper");
  r.out = "{\"event\":\"start\"}\n{\"event\":\"end\"}\n";
  o = parse_nccl_rank_outcome(r, 0, 0);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.error, "the helper's output ended without a result");
}

TEST(NcclAllreduceParse, MissingRanksMakeTheCollectiveIncomplete) {
  NcclRankOutcome ok;
  ok.ok = true;
  ok.seconds = 0.001;
  ok.bytes = 1000000;
  ok.repeats = 2;
  const CommResult c = combine_nccl_outcomes({ok}, 2, 1000000, 2, 1.0, 5);
  EXPECT_FALSE(c.completed);
  EXPECT_EQ(c.busbw_gbps, 0);
}

// A rank that never joined (no progress line: it failed before its NCCL init) is the cause; the
// ranks that then waited in init until their deadline, or were stopped, are not counted as hung.
TEST(NcclAllreduceParse, RanksThatWaitedForOneThatNeverJoinedAreNotTheOnesThatHung) {
  auto outcome = [](int rank, const std::string& last_step, const std::string& step, const std::string& error) {
    NcclRankOutcome o;
    o.rank = o.device = rank;
    o.last_step = last_step;
    o.step = step;
    o.error = error;
    return o;
  };
  NcclRankOutcome cannot_start = outcome(2, "", "helper", "the helper could not start: Too many open files");
  NcclRankOutcome expired = outcome(0, "init", "init", "ncclCommInitRankConfig did not complete");
  expired.expired = expired.aborted = true;
  NcclRankOutcome stopped = outcome(1, "init", "init", "stopped after 0.1 s during init");
  stopped.cancelled = true;
  NcclRankOutcome unread = outcome(3, "", "gather", "its all_reduce record did not parse");
  EXPECT_TRUE(never_joined(cannot_start));
  EXPECT_FALSE(never_joined(expired));
  EXPECT_FALSE(never_joined(stopped));
  EXPECT_FALSE(never_joined(unread));

  CommResult c = combine_nccl_outcomes({expired, stopped, cannot_start}, 3, 1 << 20, 2, 1.0, 10);
  EXPECT_FALSE(c.completed);
  EXPECT_FALSE(c.expired);
  EXPECT_TRUE(c.missing.empty());
  ASSERT_EQ(c.errors.size(), 3u);
  EXPECT_EQ(c.errors[0], "rank 2 (GPU 2): helper: the helper could not start: Too many open files");
  EXPECT_EQ(c.errors[1],
            "rank 0 (GPU 0): init: waited for rank 2 (GPU 2), which never joined the communicator; its "
            "deadline passed [communicator aborted]");
  EXPECT_EQ(c.errors[2],
            "rank 1 (GPU 1): init: waited for rank 2 (GPU 2), which never joined the communicator; stopped");

  // One that hung before it joined (in its CUDA setup) is the one that hung; the rest waited.
  NcclRankOutcome hung_early = outcome(2, "", "start", "the helper did not finish within 4.0 s (killed) during start");
  hung_early.expired = true;
  c = combine_nccl_outcomes({expired, hung_early}, 2, 1 << 20, 2, 1.0, 10);
  EXPECT_TRUE(c.expired);
  EXPECT_EQ(c.missing, std::vector<int>{2});

  // Without a rank that never joined, an expired rank is missing as before.
  c = combine_nccl_outcomes({expired, unread}, 2, 1 << 20, 2, 1.0, 10);
  EXPECT_TRUE(c.expired);
  EXPECT_EQ(c.missing, std::vector<int>{0});
  EXPECT_EQ(c.errors[0], "rank 0 (GPU 0): init: ncclCommInitRankConfig did not complete [communicator aborted]");

  // Many that never joined: four are named.
  std::vector<NcclRankOutcome> many = {expired};
  for (int r = 1; r < 8; ++r)
    many.push_back(outcome(r, "", "helper", "the helper could not start: Too many open files"));
  c = combine_nccl_outcomes(many, 8, 1 << 20, 2, 1.0, 10);
  EXPECT_NE(c.errors.back().find("waited for rank 1 (GPU 1), rank 2 (GPU 2), rank 3 (GPU 3), rank 4 (GPU 4), and 3 "
                                 "more, which never joined"),
            std::string::npos)
      << c.errors.back();
}

TEST(NcclAllreduceParse, ACancelledHelperIsStoppedNotExpired) {
  ContainedResult r;
  r.outcome = ContainedOutcome::Cancelled;
  r.elapsed_s = 0.31;
  r.out = "{\"event\":\"start\"}\n{\"event\":\"progress\",\"step\":\"init\"}\n";
  const NcclRankOutcome o = parse_nccl_rank_outcome(r, 4, 4);
  EXPECT_FALSE(o.ok);
  EXPECT_FALSE(o.expired);
  EXPECT_TRUE(o.cancelled);
  EXPECT_EQ(o.step, "init");
  EXPECT_EQ(o.error, "stopped after 0.3 s during init");
}

TEST(NcclAllreduceParse, HelperDeadlineLeavesRoomForTheAbort) {
  // 80% of the deadline, the rest (at least 0.2 s) for the abort; no fixed cap: 60 s gives 48 s.
  EXPECT_EQ(nccl_helper_deadline(3s), 2400ms);
  EXPECT_EQ(nccl_helper_deadline(60s), 48s);
  EXPECT_EQ(nccl_helper_deadline(300s), 240s);
  EXPECT_EQ(nccl_helper_deadline(400ms), 200ms);
}

}  // namespace
}  // namespace job_nccl_allreduce_test
}  // namespace preflight
