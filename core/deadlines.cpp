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
    case Helper::GpuDriver: return 0.25;
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
    case Helper::Python: return "the job's interpreter asked for its sys.path (--python)";
  }
  return "the helper";
}

std::string HelperDeadline::describe() const {
  std::string s = "its deadline of " + seconds_text(seconds()) + " (";
  if (cut) {
    s += "what was left of the probe phase, " + percent(PhaseShares::probe) + " of --timeout " +
         timeout_text(timeout_s) + " s; its own share is " + percent(share);
  } else {
    s += percent(share) + " of --timeout " + timeout_text(timeout_s) + " s";
    if (allowance_s > 0) s += ", plus the " + seconds_text(allowance_s) + " cuInit took in the driver helper";
  }
  return s + ")";
}

std::string HelperDeadline::expired(double after_s) const {
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
  milliseconds limit = ms_of(timeout_s * d.share + d.allowance_s);
  if (left != milliseconds::max()) {
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
