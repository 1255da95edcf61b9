// SPDX-License-Identifier: MIT
// gpu.xid with the XIDs NVML reported while preflight's own GPU work ran (NvmlXidWatch), on
// hand-built facts: fatal and application events, the kernel log unreadable with full, partial or
// no NVML coverage, a driver without the event functions, the same Xid from both sources counted
// once, and the facts' JSON round trip (captures and `preflight merge` carry them).
#include <gtest/gtest.h>

#include <map>

#include "checks/specs.hpp"
#include "gpu_facts_fixture.hpp"
#include "job/job_report.hpp"

namespace preflight {
KernelLogFacts kernel_log_facts(std::string_view text, std::string source);
namespace job_gpu_xid_events_test {
namespace {
using namespace gpu_fixture;

constexpr char kDenied[] =
    "/dev/kmsg: Operation not permitted (reading the kernel log needs CAP_SYSLOG (or kernel.dmesg_restrict=0); in a "
    "container --cap-add syslog, or run preflight on the host)";

/// A window over `n` GPUs (the fixture's bus ids), every registration taken but those in `refused`.
NvmlXidWatch window(const std::string& work, int n, const std::vector<int>& refused = {}) {
  NvmlXidWatch w;
  w.work = work;
  w.collected = true;
  w.start_s = 0.31;
  w.end_s = 0.52;
  for (int i = 0; i < n; ++i) {
    NvmlXidGpu g;
    g.index = i;
    g.pci_bus_id = nvml_bus(i);
    g.registered = std::find(refused.begin(), refused.end(), i) == refused.end();
    if (!g.registered) g.why = "XID events not supported on this GPU (supported event types 0x7)";
    w.gpus.push_back(g);
  }
  return w;
}

NvmlXidEvent event(int gpu, std::uint64_t xid, double seconds = 0.4) {
  NvmlXidEvent e;
  e.gpu = gpu;
  e.pci_bus_id = nvml_bus(gpu);
  e.xid = xid;
  e.seconds = seconds;
  return e;
}

/// The fixture's healthy node with the health run's window and a kernel log (text, or unreadable).
RankFacts node(const NvmlXidWatch& health_window, const std::optional<std::string>& kmsg) {
  RankFacts f = healthy(8);
  GpuHealthFacts h;
  h.driver_version = "550.54.15";
  h.loaded = true;
  h.xid_watch = health_window;
  f.gpu.driver.health = Probed<GpuHealthFacts>::ok(h, "preflight-gpu-probe health");
  if (kmsg)
    f.gpu.driver.kernel_log = Probed<KernelLogFacts>::ok(kernel_log_facts(*kmsg, "/dev/kmsg"), "/dev/kmsg");
  else
    f.gpu.driver.kernel_log = Probed<KernelLogFacts>::error(ProbeErrc::PermissionDenied, kDenied, "/dev/kmsg");
  return f;
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(GpuXidEvents, FatalXidRaisedWhilePreflightRanFailsNamingGpuXidAndAction) {
  NvmlXidWatch w = window("health load", 8);
  w.events.push_back(event(3, 79));
  const Verdict v = judge(kGpuXid, node(w, std::string("6,1,100,-;Linux version 6.1.0\n")));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "fatal GPU errors: GPU 3 (00000000:1B:00.0): Xid 79 raised while "
                  "preflight ran (NVML event during the health load: GPU has fallen off the bus: reboot"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "Drain the node")) << v.remedy;
  EXPECT_TRUE(has(v.remedy, "GPU has fallen off the bus: reboot the node")) << v.remedy;
  EXPECT_EQ(v.evidence.at("nvml").at("events").size(), 1u);
  EXPECT_EQ(v.evidence.at("nvml").at("events")[0].at("xid"), 79);
}

TEST(GpuXidEvents, ApplicationXidRaisedWhilePreflightRanWarns) {
  NvmlXidWatch w = window("health load", 8);
  w.events.push_back(event(1, 13));
  const Verdict v = judge(kGpuXid, node(w, std::string("6,1,100,-;Linux version 6.1.0\n")));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "application Xids: GPU 1 (00000000:19:00.0): Xid 13 raised while preflight ran"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "run it again")) << v.remedy;
}

TEST(GpuXidEvents, AnXidNvmlCannotNameWarns) {
  NvmlXidWatch w = window("health load", 8);
  w.events.push_back(event(2, 999));
  const Verdict v = judge(kGpuXid, node(w, std::nullopt));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_TRUE(has(v.summary, "Xid 999 raised while preflight ran")) << v.summary;
  EXPECT_TRUE(has(v.summary, "could not name")) << v.summary;
}

TEST(GpuXidEvents, UnreadableLogWithEventsOnEveryGpuAndNoneFiredPassesSayingItsScope) {
  const Verdict v = judge(kGpuXid, node(window("health load", 8), std::nullopt));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_EQ(v.summary,
            std::string("no XID during preflight's own GPU work on 8 GPUs (NVML events); this boot's earlier "
                        "kernel log was not readable: ") +
                kDenied);
  EXPECT_TRUE(has(v.summary, "CAP_SYSLOG") && has(v.summary, "kernel.dmesg_restrict")) << v.summary;
  EXPECT_EQ(v.evidence.at("kernel_log").at("error"), "permission_denied");
  EXPECT_EQ(v.evidence.at("nvml").at("covered").size(), 8u);
}

TEST(GpuXidEvents, UnreadableLogWithEventsUnsupportedOnOneGpuIsUnknownNamingIt) {
  const Verdict v = judge(kGpuXid, node(window("health load", 8, {7}), std::nullopt));
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "the kernel log is not readable")) << v.summary;
  EXPECT_TRUE(has(v.summary, "CAP_SYSLOG")) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "NVML events covered preflight's own GPU work on 7 GPUs only, not GPU 7 "
                  "(00000000:1F:00.0): XID events not supported on this GPU"))
      << v.summary;
  EXPECT_TRUE(has(v.remedy, "--cap-add syslog")) << v.remedy;
}

TEST(GpuXidEvents, UnreadableLogAndADriverWithoutEventsIsUnknownNamingBoth) {
  NvmlXidWatch w;
  w.work = "health load";
  w.unavailable = "driver 418.67 has no nvmlEventSetCreate";
  const Verdict v = judge(kGpuXid, node(w, std::nullopt));
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "CAP_SYSLOG")) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "no NVML XID events were collected on the 8 GPUs (driver 418.67 has no nvmlEventSetCreate, "
                  "in the health load)"))
      << v.summary;
}

TEST(GpuXidEvents, DriverWithoutEventsStillJudgesTheKernelLog) {
  NvmlXidWatch w;
  w.work = "health load";
  w.unavailable = "driver 418.67 has no nvmlEventSetCreate";
  const Verdict clean = judge(kGpuXid, node(w, std::string("6,1,100,-;Linux version 6.1.0\n")));
  EXPECT_EQ(clean.status, Status::Pass) << clean.summary;
  EXPECT_EQ(clean.summary,
            "no Xid, SXid or fallen-off-the-bus line in this boot's kernel log (1 records of /dev/kmsg)");
  const Verdict fatal =
      judge(kGpuXid, node(w, std::string("4,2001,3600000000,-;NVRM: Xid (PCI:0000:18:00): 79, "
                                         "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")));
  EXPECT_EQ(fatal.status, Status::Fail) << fatal.summary;
  EXPECT_TRUE(has(fatal.summary, "fatal GPU errors in this boot's kernel log: GPU 0 (0000:18:00.0): Xid 79"))
      << fatal.summary;
}

TEST(GpuXidEvents, ReadableLogAndEventsSayBothInThePass) {
  const Verdict v = judge(kGpuXid, node(window("health load", 8), std::string("6,1,100,-;Linux version 6.1.0\n")));
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "this boot's kernel log (1 records of /dev/kmsg)")) << v.summary;
  EXPECT_TRUE(has(v.summary, "none raised during preflight's own GPU work on 8 GPUs (NVML events)")) << v.summary;
}

TEST(GpuXidEvents, TheSameXidInTheKernelLogAndTheEventsIsCountedOnceNamingBoth) {
  NvmlXidWatch w = window("health load", 8);
  w.events.push_back(event(0, 79));
  const Verdict v =
      judge(kGpuXid, node(w, std::string("4,2001,3600000000,-;NVRM: Xid (PCI:0000:18:00): 79, "
                                         "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(count(v.summary, "Xid 79"), 1u) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "GPU 0 (00000000:18:00.0): Xid 79 raised while preflight ran (NVML event during the "
                  "health load, and in this boot's kernel log 1h00m after boot: GPU has fallen off the bus"))
      << v.summary;
  EXPECT_FALSE(has(v.summary, "fatal GPU errors in this boot's kernel log")) << v.summary;
  EXPECT_EQ(v.evidence.at("nvml").at("events")[0].at("in_kernel_log"), true);
  EXPECT_EQ(v.evidence.at("events").size(), 1u);  // the kernel log's own record stays in the evidence
}

TEST(GpuXidEvents, FallenOffTheBusInTheLogAndXid79FromNvmlAreOne) {
  NvmlXidWatch w = window("health load", 8);
  w.events.push_back(event(1, 79));
  RankFacts f = node(w, std::string("3,1,7200000000,-;NVRM: The NVIDIA GPU 0000:19:00.0\n"
                                    "3,2,7200000001,c;NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                                    "3,3,7200000002,c;NVRM: fallen off the bus and is not responding to commands.\n"));
  const Verdict v = judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_FALSE(has(v.summary, "fallen off the bus (2h00m after boot)")) << v.summary;
  EXPECT_TRUE(has(v.summary,
                  "GPU 1 (00000000:19:00.0): Xid 79 raised while preflight ran (NVML event during the "
                  "health load, and in this boot's kernel log 2h00m after boot"))
      << v.summary;
}

TEST(GpuXidEvents, AnXidOnAnotherGpuOrCodeIsNotMerged) {
  NvmlXidWatch w = window("health load", 8);
  w.events.push_back(event(1, 79));
  const Verdict v =
      judge(kGpuXid, node(w, std::string("4,2001,3600000000,-;NVRM: Xid (PCI:0000:18:00): 79, "
                                         "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "GPU 1 (00000000:19:00.0): Xid 79 raised while preflight ran")) << v.summary;
  EXPECT_TRUE(has(v.summary, "fatal GPU errors in this boot's kernel log: GPU 0 (0000:18:00.0): Xid 79")) << v.summary;
}

TEST(GpuXidEvents, TheSameXidInTwoWindowsIsOneFinding) {
  NvmlXidWatch w = window("health load", 8);
  w.events.push_back(event(0, 13));
  w.events.push_back(event(0, 13, 0.45));
  RankFacts f = node(w, std::nullopt);
  NvmlXidWatch smoke = window("cuda.smoke", 1);
  smoke.events.push_back(event(0, 13, 0.1));
  f.gpu.driver.smoke.value()->xid_watch = smoke;
  const Verdict v = judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Warn) << v.summary;
  EXPECT_EQ(count(v.summary, "Xid 13"), 1u) << v.summary;
  EXPECT_TRUE(has(v.summary, "NVML event during the health load and cuda.smoke, 3 times")) << v.summary;
}

TEST(GpuXidEvents, TheSmokeWindowAloneCoversOnlyItsGpu) {
  RankFacts f = node(NvmlXidWatch{}, std::nullopt);  // no health window (not run)
  f.gpu.driver.health =
      Probed<GpuHealthFacts>::error(ProbeErrc::Unsupported, "not run: no check that reads it is selected");
  f.gpu.driver.smoke.value()->xid_watch = window("cuda.smoke", 1);
  const Verdict v = judge(kGpuXid, f);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "on 1 GPU only, not GPU 1 (00000000:19:00.0), GPU 2 (00000000:1A:00.0)")) << v.summary;
}

TEST(GpuXidEvents, EveryRankOfTheNodeAddsItsSmokeWindow) {
  // Two ranks on a 2-GPU node judged together (node_view): each rank's smoke window covers its GPU.
  RankFacts a = healthy(2), b = healthy(2);
  a.placement.rank = 0;
  b.placement.rank = 1;
  b.placement.local_rank = 1;
  for (RankFacts* f : {&a, &b}) {
    f->gpu.driver.kernel_log = Probed<KernelLogFacts>::error(ProbeErrc::PermissionDenied, kDenied, "/dev/kmsg");
    f->gpu.driver.health =
        Probed<GpuHealthFacts>::error(ProbeErrc::Unsupported, "not run: no check that reads it is selected");
  }
  NvmlXidWatch wa = window("cuda.smoke", 1), wb = window("cuda.smoke", 2);
  wb.gpus.erase(wb.gpus.begin());  // rank 1's window: GPU 1 alone
  a.gpu.driver.smoke.value()->xid_watch = wa;
  b.gpu.driver.smoke.value()->xid_watch = wb;
  const std::vector<const RankFacts*> ranks = {&a, &b};
  const Options o;
  const Verdict v = run_check(kGpuXid, CheckContext{a, o, Profile::Job, nullptr, nullptr, &ranks});
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
  EXPECT_TRUE(has(v.summary, "no XID during preflight's own GPU work on 2 GPUs (NVML events)")) << v.summary;
  // Rank 0's view alone covers GPU 0 only.
  EXPECT_EQ(judge(kGpuXid, a, o, Profile::Job).status, Status::Unknown);
}

TEST(GpuXidEvents, AWindowCutShortKeepsItsEventsButCoversNothing) {
  NvmlXidWatch w = window("health load", 8);
  w.collected = false;
  w.unavailable = "nvmlEventSetWait_v2: NVML_ERROR_GPU_IS_LOST (GPU is lost)";
  w.events.push_back(event(4, 48));
  const Verdict v = judge(kGpuXid, node(w, std::nullopt));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "GPU 4 (00000000:1C:00.0): Xid 48 raised while preflight ran")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "CAP_SYSLOG")) << v.remedy;  // and the coverage is not claimed
}

TEST(GpuXidEvents, FactsRoundTripThroughJson) {
  NvmlXidWatch w = window("health load", 8, {7});
  NvmlXidEvent e = event(3, 79, 0.42);
  e.gpu_instance = 1;
  w.events.push_back(e);
  w.truncated = true;
  RankFacts f = node(w, std::nullopt);
  f.gpu.driver.smoke.value()->xid_watch = window("cuda.smoke", 1);
  f.gpu.driver.gpu_pairs = Probed<std::vector<GpuPair>>::error(ProbeErrc::Unsupported, "not probed");
  f.gpu.driver.peer_copies = Probed<std::vector<PeerCopy>>::error(ProbeErrc::Unsupported, "not probed");
  // The GPU facts as a capture records them (facts/gpu.json) and a result file carries them.
  const nlohmann::json doc = f.gpu.driver;
  RankFacts back = f;
  back.gpu.driver = doc.get<DriverFacts>();
  EXPECT_EQ(nlohmann::json(back.gpu.driver), doc);
  const NvmlXidWatch& b = back.gpu.driver.health.value()->xid_watch;
  EXPECT_TRUE(b.collected);
  EXPECT_EQ(b.work, "health load");
  EXPECT_DOUBLE_EQ(b.start_s, 0.31);
  EXPECT_DOUBLE_EQ(b.end_s, 0.52);
  ASSERT_EQ(b.gpus.size(), 8u);
  EXPECT_FALSE(b.gpus[7].registered);
  EXPECT_EQ(b.gpus[7].why, "XID events not supported on this GPU (supported event types 0x7)");
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].gpu, 3);
  EXPECT_EQ(b.events[0].pci_bus_id, "00000000:1B:00.0");
  EXPECT_EQ(b.events[0].xid, 79u);
  EXPECT_EQ(b.events[0].gpu_instance, 1u);
  EXPECT_FALSE(b.events[0].compute_instance);
  EXPECT_TRUE(b.truncated);
  EXPECT_EQ(back.gpu.driver.smoke.value()->xid_watch.work, "cuda.smoke");
  // The judgement is the same on the facts read back (what --sysroot and merge judge).
  EXPECT_EQ(judge(kGpuXid, back).summary, judge(kGpuXid, f).summary);
}

TEST(GpuXidEvents, FactsWithoutAWatchReadAsNotAttempted) {
  // A capture or a result file written before the events existed: no xid_watch keys at all.
  RankFacts back = node(window("health load", 8), std::nullopt);
  back.gpu.driver.gpu_pairs = Probed<std::vector<GpuPair>>::error(ProbeErrc::Unsupported, "not probed");
  back.gpu.driver.peer_copies = Probed<std::vector<PeerCopy>>::error(ProbeErrc::Unsupported, "not probed");
  nlohmann::json doc = back.gpu.driver;
  doc["health"]["value"].erase("xid_watch");
  doc["smoke"]["value"].erase("xid_watch");
  back.gpu.driver = doc.get<DriverFacts>();
  EXPECT_TRUE(back.gpu.driver.health.value()->xid_watch.work.empty());
  const Verdict v = judge(kGpuXid, back);
  EXPECT_EQ(v.status, Status::Unknown) << v.summary;
  EXPECT_TRUE(has(v.summary, "the kernel log is not readable")) << v.summary;
}

/// The node's facts as one rank of a job whose all_reduce recorded `windows` (rank, window).
struct AllreduceJob {
  JobFacts job;
  Options options;
  Verdict judge() const {
    const std::vector<const RankFacts*> host{&job.ranks.front()};
    return run_check(kGpuXid, CheckContext{job.ranks.front(), options, Profile::Node, nullptr, &job, &host});
  }
};

AllreduceJob allreduce_job(std::vector<RankXidWatch> windows) {
  AllreduceJob j;
  RankFacts f = node(window("health load", 8), std::string("6,1,100,-;Linux version 6.1.0\n"));
  f.placement.rank = 2;
  j.job = single_rank_job(f);
  j.job.allreduce.xid_watches = std::move(windows);
  return j;
}

TEST(GpuXidEvents, AnXidDuringTheAllreduceOnThisNodesRankFailsNamingTheAllreduce) {
  NvmlXidWatch mine = window("all_reduce", 8);
  mine.events.push_back(event(5, 74));
  NvmlXidWatch elsewhere = window("all_reduce", 8);  // another host's rank: not this node's
  elsewhere.events.push_back(event(6, 79));
  const Verdict v = allreduce_job({{2, mine}, {7, elsewhere}}).judge();
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "GPU 5 (" + nvml_bus(5) +
                                 "): Xid 74 raised while preflight ran (NVML event during the NCCL "
                                 "all_reduce"))
      << v.summary;
  EXPECT_FALSE(has(v.summary, "Xid 79")) << v.summary;
}

TEST(GpuXidEvents, EveryAllreduceRoundCountsAndTheSameXidIsSaidOnce) {
  NvmlXidWatch first = window("all_reduce", 8), second = window("all_reduce", 8);
  first.events.push_back(event(5, 74));
  second.events.push_back(event(5, 74));
  const Verdict v = allreduce_job({{2, first}, {2, second}}).judge();
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(count(v.summary, "Xid 74"), 1u) << v.summary;
}

TEST(GpuXidEvents, AnAllreduceWithoutXidsLeavesTheNodeAsItWas) {
  const Verdict v = allreduce_job({{2, window("all_reduce", 8)}}).judge();
  EXPECT_EQ(v.status, Status::Pass) << v.summary;
}

TEST(GpuXidEvents, RankZeroJudgesEveryHostAgainAfterAnAllreduceThatRecordedWindows) {
  // Two hosts of one rank each: gpu.xid was judged by each before the all_reduce (PASS); the
  // all_reduce then saw Xid 74 on host b's GPU 5. The report's gpu.xid for b is the FAIL.
  RankFacts a = node(window("health load", 8), std::string("6,1,100,-;Linux version 6.1.0\n"));
  a.identity.hostname = "a";
  a.identity.boot_id = "boot-a";
  a.placement.rank = 0;
  RankFacts b = a;
  b.identity.hostname = "b";
  b.identity.boot_id = "boot-b";
  b.placement.rank = 1;
  const Options options;
  std::vector<CheckResult> per_rank = judge_rank(options, Profile::Job, a, true, nullptr);
  for (CheckResult& r : judge_rank(options, Profile::Job, b, true, nullptr)) per_rank.push_back(std::move(r));
  JobFacts job;
  job.source = "mpi";
  job.world_size = 2;
  job.ranks = {a, b};
  NvmlXidWatch w = window("all_reduce", 8);
  w.events.push_back(event(5, 74));
  job.allreduce.attempted = job.allreduce.completed = true;
  job.allreduce.xid_watches = {{0, window("all_reduce", 8)}, {1, w}};
  const Report report = assemble_report(options, Profile::Job, job, per_rank, nullptr);
  std::map<std::string, Status> by_host;
  for (const CheckResult& r : report.results) {
    if (r.id != "gpu.xid") continue;
    ASSERT_EQ(r.hosts.size(), 1u);
    by_host[r.hosts.front()] = r.verdict.status;
  }
  ASSERT_EQ(by_host.size(), 2u);
  EXPECT_EQ(by_host["a"], Status::Pass);
  EXPECT_EQ(by_host["b"], Status::Fail);
}

}  // namespace
}  // namespace job_gpu_xid_events_test
}  // namespace preflight
