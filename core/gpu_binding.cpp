// SPDX-License-Identifier: MIT
#include "core/gpu_binding.hpp"

#include <algorithm>
#include <set>

#include "core/pci_topology.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

std::string bus_of(std::string_view bus) {
  std::string key = normalize_bus_id(bus);
  return key.empty() ? to_lower(trim(bus)) : key;
}

}  // namespace

std::string BoundGpu::key() const {
  if (uuid.empty()) return "bus:" + bus_of(bus);
  std::string s = to_lower(trim(uuid));
  if (s.starts_with("gpu-")) s.erase(0, 4);
  return s;
}

std::string BoundGpu::text() const {
  if (uuid.empty()) return "bus " + bus;
  return uuid + (bus.empty() ? std::string() : " (bus " + bus + ")");
}

bool cvd_hides_all(std::string_view cvd) {
  const std::string v = to_lower(trim(cvd));
  return v.empty() || v == "none" || v == "nodevfiles" || v == "void";
}

bool no_device_error(const ProbeError& err) {
  return err.code == ProbeErrc::ApiError &&
         (err.detail.find("NO_DEVICE") != std::string::npos || err.detail.find("(100)") != std::string::npos);
}

CvdParse apply_cvd(std::string_view cvd, const std::vector<NvmlGpu>& nvml) {
  CvdParse out;
  if (cvd_hides_all(cvd)) {
    out.no_gpu = true;
    return out;
  }
  std::size_t pos = 0;
  for (std::string_view raw : split(cvd, ',')) {
    ++pos;
    const std::string_view entry = trim(raw);
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::size_t chosen = kNone;
    std::string why;
    if (entry.starts_with("MIG-")) {
      out.unverifiable = true;
      return out;
    }
    if (entry.size() > 4 && entry.starts_with("GPU-")) {
      const std::string want = to_lower(entry);
      int matches = 0;
      for (std::size_t i = 0; i < nvml.size(); ++i) {
        if (to_lower(nvml[i].uuid).starts_with(want)) {
          chosen = i;
          ++matches;
        }
      }
      if (matches == 0) why = "no GPU has that UUID";
      if (matches > 1) {
        chosen = kNone;
        why = "the UUID prefix matches " + std::to_string(matches) + " GPUs";
      }
    } else if (const auto n = parse_int(entry); n && *n >= 0) {
      if (static_cast<std::uint64_t>(*n) < nvml.size()) {
        chosen = static_cast<std::size_t>(*n);
      } else {
        why = "the node has " + std::to_string(nvml.size()) + " GPUs (0.." +
              std::to_string(static_cast<long>(nvml.size()) - 1) + ")";
      }
    } else {
      why = "not an index or a GPU-/MIG- UUID";
    }
    if (chosen != kNone && std::find(out.visible.begin(), out.visible.end(), chosen) != out.visible.end()) {
      chosen = kNone;
      why = "it repeats an earlier entry";
    }
    if (chosen == kNone) {
      out.invalid = "'" + printable(entry) + "' (" + why + ")";
      out.position = pos;
      return out;
    }
    out.visible.push_back(chosen);
  }
  return out;
}

std::optional<BoundGpu> RankGpus::gpu() const {
  if (!ordinal || !visible || *ordinal < 0 || static_cast<std::size_t>(*ordinal) >= visible->size()) {
    return std::nullopt;
  }
  return (*visible)[static_cast<std::size_t>(*ordinal)];
}

RankGpus rank_gpus(const RankFacts& f) {
  RankGpus v;
  const DriverFacts& d = f.gpu.driver;
  v.cvd = f.env.get("CUDA_VISIBLE_DEVICES");
  const std::vector<NvmlGpu>* nvml = d.nvml_gpus.value();
  if (v.cvd && nvml != nullptr) v.parsed = apply_cvd(*v.cvd, *nvml);

  if (const std::vector<CudaDevice>* cuda = d.cuda_devices.value()) {
    std::vector<BoundGpu> list;
    for (const CudaDevice& c : *cuda) list.push_back(BoundGpu{c.uuid, c.pci_bus_id});
    v.visible = std::move(list);
    v.source = d.cuda_devices.source().empty() ? "CUDA" : d.cuda_devices.source();
  } else if (const ProbeError* err = d.cuda_devices.error(); err != nullptr && no_device_error(*err)) {
    v.visible = std::vector<BoundGpu>{};
    v.source = "CUDA: " + err->detail;
  } else if (v.cvd && cvd_hides_all(*v.cvd)) {
    v.visible = std::vector<BoundGpu>{};
    v.source = "CUDA_VISIBLE_DEVICES";
  } else if (nvml != nullptr && (!v.parsed || !v.parsed->unverifiable)) {
    std::vector<BoundGpu> list;
    if (v.parsed) {
      for (std::size_t i : v.parsed->visible) list.push_back(BoundGpu{(*nvml)[i].uuid, (*nvml)[i].pci_bus_id});
    } else {
      for (const NvmlGpu& g : *nvml) list.push_back(BoundGpu{g.uuid, g.pci_bus_id});
    }
    v.visible = std::move(list);
    v.source = v.cvd ? "NVML + CUDA_VISIBLE_DEVICES" : "NVML";
  }

  v.index = f.placement.local_rank;
  v.index_text = "local rank " + std::to_string(v.index);
  if (const auto lr = f.env.get("LOCAL_RANK")) {
    if (const auto n = parse_int(*lr); n && *n >= 0 && *n <= 1'000'000) {
      v.index = static_cast<int>(*n);
      v.index_text = "LOCAL_RANK=" + std::to_string(v.index);
    } else {
      v.bad_local_rank = *lr;
    }
  }
  if (!v.visible) return v;
  const std::size_t n = v.visible->size();
  if (n == 0) {
    v.why_none = "it sees no GPU";
  } else if (n == 1) {
    v.ordinal = 0;
    v.choice = "the only GPU it sees";
  } else if (!v.bad_local_rank && static_cast<std::size_t>(v.index) < n) {
    v.ordinal = v.index;
    v.choice = v.index_text + " of " + std::to_string(n) + " visible";
  } else if (!v.bad_local_rank) {
    v.why_none = v.index_text + " but it sees " + std::to_string(n) + " GPUs";
  } else {
    v.why_none = "LOCAL_RANK='" + printable(*v.bad_local_rank) + "' is not a device index";
  }
  return v;
}

std::string host_key(const RankFacts& f) { return f.identity.hostname + "\n" + f.identity.boot_id; }

std::vector<const RankFacts*> same_host(const RankFacts& f, const std::vector<const RankFacts*>& all) {
  std::vector<const RankFacts*> out;
  const std::string key = host_key(f);
  for (const RankFacts* r : all) {
    if (r != nullptr && host_key(*r) == key) out.push_back(r);
  }
  if (out.empty()) out.push_back(&f);
  std::sort(out.begin(), out.end(),
            [](const RankFacts* a, const RankFacts* b) { return a->placement.rank < b->placement.rank; });
  return out;
}

std::optional<std::vector<BoundGpu>> union_visible(const std::vector<const RankFacts*>& ranks) {
  std::vector<BoundGpu> out;
  std::set<std::string> seen;
  for (const RankFacts* f : ranks) {
    const RankGpus v = rank_gpus(*f);
    if (!v.visible) return std::nullopt;
    for (const BoundGpu& g : *v.visible) {
      if (seen.insert(g.key()).second) out.push_back(g);
    }
  }
  return out;
}

std::optional<std::string> union_cvd(const std::vector<std::optional<std::string>>& values,
                                     const std::vector<NvmlGpu>& nvml) {
  std::vector<std::size_t> chosen;
  for (const std::optional<std::string>& v : values) {
    if (!v) return std::nullopt;
    const CvdParse p = apply_cvd(*v, nvml);
    if (p.unverifiable) return std::nullopt;
    for (std::size_t i : p.visible) {
      if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
    }
  }
  std::sort(chosen.begin(), chosen.end());
  std::vector<std::string> uuids;
  for (std::size_t i : chosen) {
    if (nvml[i].uuid.empty()) return std::nullopt;
    uuids.push_back(nvml[i].uuid);
  }
  return join(uuids, ",");
}

}  // namespace preflight
