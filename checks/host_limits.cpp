// SPDX-License-Identifier: MIT
// host.limits (rank): the resource limits this rank inherited from its launcher: locked memory (RDMA
// registration), open files (NCCL sockets), core files.
#include <array>

#include <nlohmann/json.hpp>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/text.hpp"

namespace preflight {
namespace host_limits_check {
namespace {

constexpr std::uint64_t kMemlockMin = 1ull << 30;  // below this, NCCL's IB buffers do not fit
constexpr std::uint64_t kNofileWarnBelow = 65536;
constexpr std::uint64_t kNofileFailBelow = 4096;

std::string bytes_or_unlimited(const std::optional<std::uint64_t>& v) { return v ? format_bytes(*v) : "unlimited"; }
std::string count_or_unlimited(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "unlimited"; }

nlohmann::json limit_json(const Probed<Rlimit>& p) {
  const auto side = [](const std::optional<std::uint64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json("unlimited");
  };
  if (const Rlimit* r = p.value()) return {{"soft", side(r->soft)}, {"hard", side(r->hard)}};
  return {{"error", p.why()}};
}

template <typename T>
nlohmann::json fact_json(const Probed<T>& p) {
  if (const T* v = p.value()) return *v;
  return {{"error", p.why()}};
}

#define PREFLIGHT_MEMLOCK_FIX                                                                                    \
  "Raise the locked-memory limit to unlimited for the job: docker run --ulimit memlock=-1 (Kubernetes: the "     \
  "container runtime's default ulimits), `ulimit -l unlimited` in the job script where the hard limit allows, "  \
  "'* - memlock unlimited' in /etc/security/limits.conf, and under Slurm PropagateResourceLimitsExcept=MEMLOCK " \
  "in slurm.conf (srun otherwise copies the login shell's low limit); or grant CAP_IPC_LOCK."

constexpr FindingSpec kLimitUnreadable = {
    "host.limits/limit-unreadable", Status::Unknown, "could not read {limit}: {why}",
    "Check the --sysroot tree's /proc/self/limits (a `preflight capture` holds the captured process's), or run "
    "preflight on the node itself, where getrlimit(2) answers."};
constexpr FindingSpec kMemlockLow = {
    "host.limits/memlock-low", Status::Fail,
    "{memlock} without CAP_IPC_LOCK, and RDMA devices are present ({devices}): NCCL cannot register its IB buffers "
    "(libibverbs: \"couldn't lock memory\"); needs unlimited or >= {min}",
    PREFLIGHT_MEMLOCK_FIX};
constexpr FindingSpec kRdmaDevicesUnreadable = {
    "host.limits/rdma-devices-unreadable", Status::Unknown, "{memlock}; could not list RDMA devices: {why}",
    "Make /sys/class/infiniband readable, or raise the limit anyway: " PREFLIGHT_MEMLOCK_FIX};
constexpr FindingSpec kCapIpcLockUnreadable = {
    "host.limits/cap-ipc-lock-unreadable", Status::Unknown,
    "{memlock} with RDMA devices present, and CAP_IPC_LOCK could not be read: {why}", PREFLIGHT_MEMLOCK_FIX};
#undef PREFLIGHT_MEMLOCK_FIX
#define PREFLIGHT_NOFILE_FIX                                                                                       \
  "Raise the hard open-files limit to at least {warn_below}: docker run --ulimit nofile=1048576:1048576, "         \
  "LimitNOFILE= in the service unit, or 'nofile' in /etc/security/limits.conf (NCCL raises the soft limit to the " \
  "hard limit itself)."
constexpr FindingSpec kNofileTooLow = {"host.limits/nofile-too-low", Status::Fail,
                                       "{nofile}, below {fail_below}: NCCL's sockets and the data loaders run out of "
                                       "descriptors (\"Too many open files\")",
                                       PREFLIGHT_NOFILE_FIX};
constexpr FindingSpec kNofileLow = {"host.limits/nofile-low", Status::Warn,
                                    "{nofile}, below {warn_below}: large jobs run out of sockets",
                                    PREFLIGHT_NOFILE_FIX};
#undef PREFLIGHT_NOFILE_FIX
constexpr FindingSpec kCoreFilesUnbounded = {
    "host.limits/core-files-unbounded", Status::Warn,
    "{core} and cores are written as plain files{pattern}: one GPU process core can be tens of GiB, and every rank "
    "that crashes writes one",
    "Cap the size (`ulimit -c <bytes>` in the job script) or pipe cores to a handler with its own limits "
    "(systemd-coredump: core_pattern '|/lib/systemd/systemd-coredump …')."};

constexpr FindingSpec kFactsUnreadable = {"host.limits/facts-unreadable", Status::Unknown, kUnreadableMessage,
                                          kUnreadableFix};
constexpr FindingSpec kFactsHung = {"host.limits/facts-hung", Status::Unknown, kHungMessage, kHungProbeRemedy};

constexpr std::array kFindings = {
    kFactsUnreadable,      kFactsHung,    kLimitUnreadable, kMemlockLow,        kRdmaDevicesUnreadable,
    kCapIpcLockUnreadable, kNofileTooLow, kNofileLow,       kCoreFilesUnbounded};

void unknown_limit(const Probed<Rlimit>& p, const char* name, VerdictBuilder& b) {
  b.add(kLimitUnreadable, {{"limit", name}, {"why", p.why()}});
}

void check_memlock(const LimitsFacts& f, VerdictBuilder& b) {
  const Rlimit* memlock = f.memlock.value();
  if (memlock == nullptr) return unknown_limit(f.memlock, "RLIMIT_MEMLOCK", b);
  // Verbs registration is charged against the soft limit; nothing in the job raises it.
  const std::string shown =
      "RLIMIT_MEMLOCK is " + bytes_or_unlimited(memlock->soft) + " (hard " + bytes_or_unlimited(memlock->hard) + ")";
  if (!memlock->soft || *memlock->soft >= kMemlockMin) return b.note(shown);
  const bool* cap = f.cap_ipc_lock.value();
  if (cap != nullptr && *cap) return b.note(shown + ", lifted by CAP_IPC_LOCK");
  const auto* devices = f.rdma_devices.value();
  if (devices == nullptr) return b.add(kRdmaDevicesUnreadable, {{"memlock", shown}, {"why", f.rdma_devices.why()}});
  if (devices->empty()) {
    // Only verbs memory registration is charged against this limit (CUDA pins host memory through
    // the driver): without RDMA devices NCCL uses sockets and never reaches it.
    return b.note(shown + ", below " + format_bytes(kMemlockMin) +
                  ", but no RDMA devices are visible: it matters once the job uses IB/RoCE");
  }
  if (cap == nullptr) return b.add(kCapIpcLockUnreadable, {{"memlock", shown}, {"why", f.cap_ipc_lock.why()}});
  b.add(kMemlockLow, {{"memlock", shown}, {"devices", join(*devices, ", ")}, {"min", format_bytes(kMemlockMin)}});
}

void check_nofile(const LimitsFacts& f, VerdictBuilder& b) {
  const Rlimit* nofile = f.nofile.value();
  if (nofile == nullptr) return unknown_limit(f.nofile, "RLIMIT_NOFILE", b);
  // NCCL raises its soft limit to the hard limit itself, so only the hard limit bounds its sockets.
  const std::string shown = "RLIMIT_NOFILE hard limit is " + count_or_unlimited(nofile->hard) + " (soft " +
                            count_or_unlimited(nofile->soft) + ")";
  if (!nofile->hard || *nofile->hard >= kNofileWarnBelow) return b.note(shown);
  const nlohmann::json params = {{"nofile", shown}, {"fail_below", kNofileFailBelow}, {"warn_below", kNofileWarnBelow}};
  b.add(*nofile->hard < kNofileFailBelow ? kNofileTooLow : kNofileLow, params);
}

bool writes_local_file(const std::string& pattern) { return !pattern.empty() && pattern.front() != '|'; }

void check_core(const LimitsFacts& f, VerdictBuilder& b) {
  const Rlimit* core = f.core.value();
  if (core == nullptr) return unknown_limit(f.core, "RLIMIT_CORE", b);
  const std::string* pattern = f.core_pattern.value();
  const std::string pattern_note = pattern ? " (core_pattern '" + printable(*pattern) + "')" : std::string();
  const std::string shown =
      "RLIMIT_CORE is " + bytes_or_unlimited(core->soft) + " (hard " + bytes_or_unlimited(core->hard) + ")";
  b.evidence()["core_dumps_off"] = core->soft && *core->soft == 0;
  if (core->soft && *core->soft == 0) {
    // Many sites turn core dumps off on purpose (disk, secrets in memory): a note, never a WARN that
    // --strict would turn into a failed gate.
    const bool hard_zero = core->hard && *core->hard == 0;
    return b.note(
        shown + ": core dumps are off (often a site's choice; to debug a crash in CUDA or NCCL, " +
        (hard_zero ? std::string("raise the hard limit, e.g. docker run --ulimit core=-1, then ") : std::string()) +
        "`ulimit -c unlimited` in the job script" + pattern_note + ")");
  }
  if (!core->soft && pattern != nullptr && writes_local_file(*pattern)) {
    return b.add(kCoreFilesUnbounded, {{"core", shown},
                                       {"pattern", template_param(" (core_pattern '{core_pattern}')")},
                                       {"core_pattern", printable(*pattern)}});
  }
  b.note(shown);
}

Verdict run(const CheckContext& ctx) {
  const LimitsFacts& f = ctx.facts.limits;
  if (!f.memlock.ok() && !f.nofile.ok() && !f.core.ok()) {
    return unknown_from(f.memlock, "the resource limits (/proc/self/limits)", kFactsUnreadable, kFactsHung);
  }
  VerdictBuilder b;
  nlohmann::json& e = b.evidence();
  e["memlock"] = limit_json(f.memlock);
  e["nofile"] = limit_json(f.nofile);
  e["core"] = limit_json(f.core);
  e["cap_ipc_lock"] = fact_json(f.cap_ipc_lock);
  e["rdma_devices"] = fact_json(f.rdma_devices);
  e["core_pattern"] = fact_json(f.core_pattern);
  e["memlock_min_bytes"] = kMemlockMin;
  e["nofile_hard_warn_below"] = kNofileWarnBelow;
  e["nofile_hard_fail_below"] = kNofileFailBelow;
  check_memlock(f, b);
  check_nofile(f, b);
  check_core(f, b);
  return b.build();
}

}  // namespace

extern const CheckSpec kHostLimits = {
    "host.limits",
    Scope::Rank,
    "locked-memory, open-files and core-file limits of the rank",
    "Reads the limits this rank inherited from its launcher (getrlimit(2)) and whether CAP_IPC_LOCK is in its\n"
    "effective set (capget(2)): calls that open nothing, so a rank that has run out of file descriptors is judged\n"
    "too; under --sysroot the tree's /proc/self/limits and CapEff bit 14 of /proc/self/status instead. Also the\n"
    "RDMA devices (/sys/class/infiniband) and /proc/sys/kernel/core_pattern.\n"
    "FAIL     soft RLIMIT_MEMLOCK below 1 GiB (not unlimited), no CAP_IPC_LOCK, and RDMA devices present:\n"
    "         verbs memory registration fails (libibverbs \"couldn't lock memory\") and NCCL's IB/RoCE transport\n"
    "         with it. Docker's default is 64 KiB without IPC_LOCK; srun copies the submitting shell's limits.\n"
    "         Without RDMA devices the limit passes (noted): sockets and CUDA's pinned memory are not charged.\n"
    "FAIL     hard RLIMIT_NOFILE below 4096\n"
    "WARN     hard RLIMIT_NOFILE below 65536 (NCCL raises its soft limit to the hard limit itself, so the hard\n"
    "         limit bounds its sockets)\n"
    "PASS     soft RLIMIT_CORE 0 is noted (evidence core_dumps_off), not warned about: many sites turn core\n"
    "         dumps off on purpose, and --strict must not fail a gate on a site's choice\n"
    "WARN     unlimited cores written as plain files by core_pattern: GPU process cores are huge, and every\n"
    "         crashing rank writes one\n"
    "UNKNOWN  a --sysroot tree's /proc/self/limits unreadable or not in the kernel's format; CAP_IPC_LOCK or the\n"
    "         RDMA device list unreadable where the verdict depends on it\n"
    "Fix: docker run --ulimit memlock=-1 --ulimit nofile=1048576:1048576; /etc/security/limits.conf;\n"
    "PropagateResourceLimitsExcept=MEMLOCK in slurm.conf; `ulimit -c unlimited` in the job script.",
    kInNode | kInJob,
    "resource limits in an image build are those of the build container; they are checked on the node the job "
    "runs on",
    &run,
    "limits",
    false,
    {},
    {},
    nullptr,
    kFindings,
};

}  // namespace host_limits_check
}  // namespace preflight
