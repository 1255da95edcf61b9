// SPDX-License-Identifier: MIT
#include "core/deadlines.hpp"

#include <algorithm>
#include <cmath>

#include "core/text.hpp"

namespace preflight {
namespace {

using std::chrono::milliseconds;

milliseconds ms_of(double seconds) { return milliseconds(static_cast<long long>(std::llround(seconds * 1000.0))); }

std::string seconds_text(double s) { return fixed(s, 1) + " s"; }

// "60" for 60.0, "7.5" for 7.5: --timeout as the user wrote it, near enough.
std::string timeout_text(double s) { return general(s, 6); }

std::string percent(double share) { return general(share * 100.0, 3) + "%"; }

}  // namespace

double helper_share(Helper helper) {
  switch (helper) {
    case Helper::GpuDriver: return 0.40;
    case Helper::GpuSmoke: return 0.15;
    case Helper::Nccl: return 0.05;
    case Helper::GpuP2p: return 0.15;
    case Helper::GpuHealth: return 0.10;
    case Helper::NameLookup: return 0.10;
    case Helper::Python: return 0.10;
  }
  return 0.05;
}

std::string_view helper_name(Helper helper) {
  switch (helper) {
    case Helper::GpuDriver: return "the GPU driver helper (NVML, cuInit, device query)";
    case Helper::GpuSmoke: return "the GPU smoke test helper (context, allocate, write, read back)";
    case Helper::Nccl: return "the NCCL library probe (dlopen, ncclGetVersion)";
    case Helper::GpuP2p: return "the peer-copy helper";
    case Helper::GpuHealth: return "the GPU health helper (NVML health, load)";
    case Helper::NameLookup: return "the name lookup";
    case Helper::Python: return "the job's interpreter asked for its sys.path (--python, or python3 on the job's PATH)";
  }
  return "the helper";
}

double HelperDeadline::timeout_that_fits() const {
  // The phase ends at probe x T, less the reserve (at least reserve x T) for the probes after it:
  // T x (probe - reserve - share) >= used + allowance.
  const double room = PhaseShares::probe - kHelperReserveShare - share;
  if (room <= 0) return timeout_s;
  return std::max(timeout_s, std::ceil((used_s + allowance_s) / room));
}

std::string HelperDeadline::describe() const {
  const std::string cuinit =
      allowance_s > 0 ? " plus the " + seconds_text(allowance_s) + " cuInit took in the driver helper" : "";
  if (cut) {
    return "what was left of the probe phase, " + seconds_text(seconds()) + " (the phase is " +
           percent(PhaseShares::probe) + " of --timeout " + timeout_text(timeout_s) +
           " s), less than its own deadline of " + seconds_text(own_s) + " (" + percent(share) + " of --timeout" +
           cuinit + ")";
  }
  return "its deadline of " + seconds_text(seconds()) + " (" + percent(share) + " of --timeout " +
         timeout_text(timeout_s) + " s" + (cuinit.empty() ? "" : "," + cuinit) + ")";
}

std::string HelperDeadline::expired(double after_s) const {
  if (cut) {
    // preflight's budget, not the hardware: the helper never had its own deadline.
    return std::string(helper_name(helper)) + " got only " + describe() + ", and was stopped after " +
           seconds_text(after_s) + ": preflight's own budget ran out, which says nothing about the GPU; --timeout " +
           timeout_text(timeout_that_fits()) + " gives it its whole deadline";
  }
  const double longer = std::max(timeout_s * 3, timeout_s + 30);
  const double gives = longer * share + allowance_s;
  return std::string(helper_name(helper)) + " did not finish within " + describe() + " and was killed after " +
         seconds_text(after_s) + ": raise --timeout to give it longer (--timeout " + timeout_text(std::ceil(longer)) +
         " gives it " + seconds_text(gives) + ")";
}

HelperDeadline helper_deadline(Helper helper, double timeout_s, milliseconds left, double allowance_s) {
  HelperDeadline d;
  d.helper = helper;
  d.timeout_s = timeout_s;
  d.share = helper_share(helper);
  d.allowance_s = std::max(0.0, allowance_s);
  d.own_s = timeout_s * d.share + d.allowance_s;
  milliseconds limit = ms_of(d.own_s);
  if (left != milliseconds::max()) {
    d.used_s = std::max(0.0, timeout_s * PhaseShares::probe - std::chrono::duration<double>(left).count());
    const milliseconds reserve = std::max(kHelperReserveMin, ms_of(timeout_s * kHelperReserveShare));
    const milliseconds usable = left - reserve;
    if (usable < limit) {
      limit = usable;
      d.cut = true;
    }
  }
  d.limit = std::max(limit, kHelperMin);
  return d;
}

milliseconds nccl_own_deadline(milliseconds deadline) {
  const milliseconds margin =
      std::max(milliseconds(200), ms_of(std::chrono::duration<double>(deadline).count() * (1.0 - kNcclHelperOwnShare)));
  return std::max(milliseconds(100), deadline - margin);
}

}  // namespace preflight
