// SPDX-License-Identifier: MIT
#include "checks/gpu_common.hpp"

#include <cctype>
#include <cstdio>

#include "checks/check.hpp"
#include "checks/finding_parts.hpp"
#include "core/pci_topology.hpp"
#include "core/text.hpp"

namespace preflight {

namespace {
bool is_missing(ProbeErrc c) { return c == ProbeErrc::LibraryMissing; }
}  // namespace

std::optional<NoDriver> find_no_driver(const DriverFacts& d) {
  const ProbeError* nvml = d.nvml_driver_version.error();
  const ProbeError* cuda_version = d.cuda_driver_version.error();
  const ProbeError* cuda_devices = d.cuda_devices.error();
  const bool nvml_missing = nvml != nullptr && is_missing(nvml->code);
  const bool cuda_missing = (cuda_version != nullptr && is_missing(cuda_version->code)) ||
                            (cuda_devices != nullptr && is_missing(cuda_devices->code));
  if (!nvml_missing || !cuda_missing) return std::nullopt;
  NoDriver out;
  if (const std::string* km = d.kernel_module_version.value()) out.module = *km;
  out.detail = nvml->detail;
  out.evidence = {{"nvml", d.nvml_driver_version.why()},
                  {"cuda", cuda_version != nullptr && is_missing(cuda_version->code) ? d.cuda_driver_version.why()
                                                                                     : d.cuda_devices.why()},
                  {"kernel_module", d.kernel_module_version.ok() ? nlohmann::json(*d.kernel_module_version.value())
                                                                 : nlohmann::json(d.kernel_module_version.why())}};
  return out;
}

Status GpuShared::status() const {
  switch (kind) {
    case Kind::NotGathered:
    case Kind::NotRead: return Status::Unknown;
    default: return Status::Fail;
  }
}

std::optional<GpuShared> no_driver(const DriverFacts& d, std::string_view consequence) {
  std::optional<NoDriver> none = find_no_driver(d);
  if (!none) return std::nullopt;
  // Another GPU check: it fails because driver.loaded does; the report folds it under that result.
  return GpuShared{
      GpuShared::Kind::NoDriver, {{"consequence", consequence}}, std::move(none->evidence), "driver.loaded"};
}

bool job_meets_it(ProbeErrc code) {
  switch (code) {
    case ProbeErrc::Crashed:
    case ProbeErrc::Timeout:
    case ProbeErrc::LibraryMissing:
    case ProbeErrc::ApiError:
    case ProbeErrc::ParseError: return true;
    default: return false;
  }
}

nlohmann::json gpu_fact_evidence(const ProbeError& err, std::string_view source) {
  nlohmann::json ev = {{"error", to_string(err.code)}, {"detail", err.detail}};
  if (!source.empty()) ev["source"] = source;
  return ev;
}

GpuShared missing_gpu_fact(const ProbeError& err, std::string_view source, std::string_view what,
                           std::string_view consequence) {
  using Kind = GpuShared::Kind;
  GpuShared out;
  out.evidence = gpu_fact_evidence(err, source);
  out.params = {{"what", what},
                {"detail", err.detail},
                {"from", part_if(!source.empty(), "{source}: ")},
                {"consequence", part_if(!consequence.empty(), "; " + std::string(consequence))}};
  if (!source.empty()) out.params["source"] = source;
  // Not gathered because a probe before it hung: a hang of the run, not of the driver.
  if (hung_probe(err)) {
    out.kind = Kind::NotGathered;
    out.params = {{"what", what}, {"detail", err.detail}};
    return out;
  }
  switch (err.code) {
    case ProbeErrc::Crashed: out.kind = Kind::HelperCrashed; break;
    case ProbeErrc::Timeout: out.kind = Kind::HelperHung; break;
    case ProbeErrc::LibraryMissing:
      out.kind = Kind::LibraryMissing;
      out.cause = "driver.loaded";
      break;
    case ProbeErrc::ApiError:
      out.kind = Kind::DriverError;
      out.cause = "driver.loaded";
      break;
    case ProbeErrc::ParseError: out.kind = Kind::HelperGarbage; break;
    default:
      out.kind = Kind::NotRead;
      out.params.erase("consequence");
      break;
  }
  return out;
}

Verdict shared_verdict(const GpuSharedRows& rows, const GpuShared& shared) {
  Verdict v = Verdict::of(rows[static_cast<std::size_t>(shared.kind)], shared.params, shared.evidence);
  v.cause = shared.cause;
  return v;
}

void add_shared(VerdictBuilder& b, const GpuSharedRows& rows, const GpuShared& shared, nlohmann::json extra) {
  nlohmann::json params = shared.params;
  params.update(extra);
  b.add(rows[static_cast<std::size_t>(shared.kind)], std::move(params));
}

nlohmann::json cvd_note_params(const EnvSnapshot& env) {
  const std::optional<std::string> cvd = env.get("CUDA_VISIBLE_DEVICES");
  nlohmann::json p = {{"cvd_note", part_if(cvd.has_value(), " (CUDA_VISIBLE_DEVICES={cvd_value})")}};
  if (cvd) p["cvd_value"] = printable(*cvd);
  return p;
}

std::string cuda_version_text(int v) {
  if (v <= 0) return std::to_string(v);
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string uuid_key(std::string_view uuid) {
  std::string s = to_lower(trim(uuid));
  if (s.starts_with("gpu-")) s.erase(0, 4);
  return s;
}

std::string bus_key(std::string_view bus_id) {
  // The domain has 4 or 8 hex digits depending on who prints it; normalize_bus_id takes both.
  std::string key = normalize_bus_id(bus_id);
  return key.empty() ? to_lower(trim(bus_id)) : key;
}

bool same_gpu(const NvmlGpu& n, const CudaDevice& c) {
  if (!n.uuid.empty() && !c.uuid.empty()) return uuid_key(n.uuid) == uuid_key(c.uuid);
  if (!n.pci_bus_id.empty() && !c.pci_bus_id.empty()) return bus_key(n.pci_bus_id) == bus_key(c.pci_bus_id);
  return false;
}

std::string mib_text(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

std::string nvml_gpu_text(const NvmlGpu& g) {
  const std::string& id = g.pci_bus_id.empty() ? g.uuid : g.pci_bus_id;
  return "GPU " + std::to_string(g.index) + (id.empty() ? std::string() : " (" + id + ")");
}

std::vector<std::string> lost_nvml_gpus(const std::vector<const NvmlGpu*>& gpus) {
  std::vector<std::string> out;
  for (const NvmlGpu* g : gpus) {
    if (!g->lost.empty()) out.push_back(nvml_gpu_text(*g) + ": " + g->lost);
  }
  return out;
}

std::vector<std::string> lost_nvml_gpus(const std::vector<NvmlGpu>& gpus) {
  std::vector<const NvmlGpu*> all;
  for (const NvmlGpu& g : gpus) all.push_back(&g);
  return lost_nvml_gpus(all);
}

}  // namespace preflight
