// SPDX-License-Identifier: MIT
// Where facts come from: the probes (probes/registry.cpp runs them) and the phases of a job run
// (job/job_run.cpp). A check declares the sources it judges (CheckSpec::reads), a source the
// sources it reads itself (kFactSources below), and a run gathers only what its selected checks
// need (`--only host.limits` runs the limits probe, not the GPU helper). Names are checked when
// the program is compiled: a check that reads "shmm" does not build.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace preflight {

enum class FactSource : std::uint8_t {
  // probes, in the order they run
  Identity,
  Placement,
  Shm,
  CudaRuntime,
  GpuDriver,
  Nccl,
  GpuP2p,
  GpuHealth,
  KernelLog,
  Topology,
  Pcie,
  Affinity,
  Net,
  Memory,
  Limits,
  NcclConf,
  NcclNames,
  Disk,
  // phases of a job run, in order
  Reach,
  Gather,
  Barrier,
  Allreduce,
};

/// A set of sources (a bit each).
class FactSources {
 public:
  constexpr FactSources() = default;
  constexpr FactSources(std::initializer_list<FactSource> sources) {
    for (FactSource s : sources) m_bits |= bit(s);
  }
  /// "kernel_log,gpu_driver,allreduce": the names of kFactSources, comma-separated. In a constant
  /// expression (a check's row) an unknown name does not compile.
  consteval FactSources(const char* list) : FactSources(parse(list)) {}
  static constexpr FactSources parse(std::string_view list);

  constexpr bool contains(FactSource s) const { return (m_bits & bit(s)) != 0; }
  constexpr bool empty() const { return m_bits == 0; }
  constexpr FactSources operator|(FactSources o) const { return from_bits(m_bits | o.m_bits); }
  constexpr FactSources& operator|=(FactSources o) {
    m_bits |= o.m_bits;
    return *this;
  }
  constexpr bool operator==(const FactSources&) const = default;
  constexpr std::uint32_t bits() const { return m_bits; }

 private:
  static constexpr std::uint32_t bit(FactSource s) { return std::uint32_t{1} << static_cast<unsigned>(s); }
  static constexpr FactSources from_bits(std::uint32_t b) {
    FactSources f;
    f.m_bits = b;
    return f;
  }
  std::uint32_t m_bits = 0;
};

enum class SourceKind : std::uint8_t { Probe, Phase };

struct FactSourceSpec {
  FactSource source;
  std::string_view name;  // as checks name it in `reads`, and as the JUnit timings and probe_seconds do
  SourceKind kind;
  /// The sources whose facts this one reads (they run first). Identity and placement always run.
  FactSources needs;
};

inline constexpr auto kFactSources = std::to_array<FactSourceSpec>({
    {FactSource::Identity, "identity", SourceKind::Probe, {}},
    {FactSource::Placement, "placement", SourceKind::Probe, {}},
    {FactSource::Shm, "shm", SourceKind::Probe, {FactSource::Placement}},
    {FactSource::CudaRuntime, "cuda_runtime", SourceKind::Probe, {}},
    {FactSource::GpuDriver, "gpu_driver", SourceKind::Probe, {FactSource::Placement}},
    {FactSource::Nccl, "nccl", SourceKind::Probe, {FactSource::CudaRuntime}},
    {FactSource::GpuP2p, "gpu_p2p", SourceKind::Probe, {FactSource::GpuDriver, FactSource::Placement}},
    {FactSource::GpuHealth, "gpu_health", SourceKind::Probe, {FactSource::GpuDriver, FactSource::Placement}},
    {FactSource::KernelLog, "kernel_log", SourceKind::Probe, {FactSource::GpuDriver, FactSource::Placement}},
    {FactSource::Topology, "topology", SourceKind::Probe, {}},
    {FactSource::Pcie, "pcie", SourceKind::Probe, {}},
    {FactSource::Affinity, "affinity", SourceKind::Probe, {}},
    {FactSource::Net, "net", SourceKind::Probe, {FactSource::Identity}},
    {FactSource::Memory, "memory", SourceKind::Probe, {}},
    {FactSource::Limits, "limits", SourceKind::Probe, {}},
    {FactSource::NcclConf, "nccl_conf", SourceKind::Probe, {FactSource::Nccl}},
    {FactSource::NcclNames,
     "nccl_names",
     SourceKind::Probe,
     {FactSource::Nccl, FactSource::CudaRuntime, FactSource::NcclConf}},
    {FactSource::Disk, "disk", SourceKind::Probe, {}},
    // The reach phase offers rank 0's NCCL bootstrap address (net); the all_reduce is planned from
    // the GPUs, the CUDA runtime and the NCCL library the ranks found, and NCCL's root listens on
    // that bootstrap address.
    {FactSource::Reach, "reach", SourceKind::Phase, {FactSource::Net}},
    {FactSource::Gather, "gather", SourceKind::Phase, {}},
    {FactSource::Barrier, "barrier", SourceKind::Phase, {}},
    {FactSource::Allreduce,
     "allreduce",
     SourceKind::Phase,
     {FactSource::GpuDriver, FactSource::CudaRuntime, FactSource::Nccl, FactSource::Net, FactSource::NcclConf}},
});

constexpr bool fact_sources_in_order() {
  for (std::size_t i = 0; i < kFactSources.size(); ++i) {
    if (static_cast<std::size_t>(kFactSources[i].source) != i) return false;  // one row per enumerator, in order
    for (std::size_t j = i; j < kFactSources.size(); ++j) {
      if (kFactSources[i].needs.contains(kFactSources[j].source)) return false;  // a need must come first
    }
  }
  return static_cast<std::size_t>(FactSource::Allreduce) + 1 == kFactSources.size();  // the last enumerator has a row
}
static_assert(fact_sources_in_order(),
              "kFactSources: one row per FactSource, in enum order, needing only earlier rows");

constexpr const FactSourceSpec& spec_of(FactSource s) { return kFactSources[static_cast<std::size_t>(s)]; }
constexpr std::string_view to_string(FactSource s) { return spec_of(s).name; }

constexpr FactSources FactSources::parse(std::string_view list) {
  FactSources out;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    bool found = false;
    for (const FactSourceSpec& s : kFactSources) {
      if (s.name == name) {
        out |= FactSources{s.source};
        found = true;
      }
    }
    if (!found) throw "FactSources: a name that is no probe and no phase of kFactSources";
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return out;
}

/// `wanted` with everything it reads, transitively, and identity and placement (every report names
/// the rank and its host).
constexpr FactSources with_needs(FactSources wanted) {
  wanted |= FactSources{FactSource::Identity, FactSource::Placement};
  // Needs point to earlier sources only, so one pass from the last to the first closes the set.
  for (std::size_t i = kFactSources.size(); i-- > 0;) {
    const FactSourceSpec& s = kFactSources[i];
    if (!wanted.contains(s.source)) continue;
    wanted |= s.needs;
  }
  return wanted;
}

/// Every source.
constexpr FactSources all_fact_sources() {
  FactSources all;
  for (const FactSourceSpec& s : kFactSources) all |= FactSources{s.source};
  return all;
}

/// The names of `set`, in table order, joined by `separator`.
inline std::string names_of(FactSources set, std::string_view separator = ",") {
  std::string out;
  for (const FactSourceSpec& s : kFactSources) {
    if (set.contains(s.source)) out += (out.empty() ? "" : std::string(separator)) + std::string(s.name);
  }
  return out;
}

}  // namespace preflight
