// SPDX-License-Identifier: MIT
#include "checks/cuda_compat.hpp"
#include "checks/finding_parts.hpp"

#include "core/text.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace preflight {
namespace {

// Kernel-mode driver branches a cuda-compat package supports (the columns of NVIDIA's forward
// compatibility support matrix): other branches are EOL or New Feature
// Branches and not supported targets.
// Source: https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
constexpr std::array<unsigned, 7> kCompatKernelBranches = {535, 570, 580, 590, 595, 610, 615};

std::string trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::optional<Version> parse_probed_version(const Probed<std::string>& p) {
  if (const std::string* s = p.value()) return Version::parse(trimmed(*s));
  return std::nullopt;
}

struct ArchEntry {
  unsigned major = 0;
  unsigned minor = 0;
  char suffix = 0;  // 0, 'a' or 'f'
  bool sass = false;
  bool ptx = false;
};

// "sm_90", "sm_90a", "sm_100f", "compute_90", "8.6", "9.0+PTX".
std::optional<ArchEntry> parse_arch(std::string_view text) {
  ArchEntry e;
  std::string_view rest;
  if (text.starts_with("sm_")) {
    e.sass = true;
    rest = text.substr(3);
  } else if (text.starts_with("compute_")) {
    e.ptx = true;
    rest = text.substr(8);
  } else {
    std::string_view t = text;
    if (t.ends_with("+PTX")) {
      e.ptx = true;
      t.remove_suffix(4);
    }
    e.sass = true;
    const std::optional<Version> v = Version::parse(t);
    if (!v || v->size() != 2) return std::nullopt;
    e.major = v->major();
    e.minor = v->minor();
    return e;
  }
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    e.suffix = rest.back();
    rest.remove_suffix(1);
  }
  if (rest.size() < 2 || rest.size() > 4 ||
      !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  unsigned n = 0;
  for (char c : rest) n = n * 10 + static_cast<unsigned>(c - '0');
  e.major = n / 10;
  e.minor = n % 10;
  return e;
}

bool serves(const ArchEntry& e, unsigned major, unsigned minor, bool as_ptx) {
  if (e.suffix == 'a') return e.major == major && e.minor == minor;
  if (e.suffix == 'f') return e.major == major && e.minor <= minor;
  if (as_ptx) return e.major < major || (e.major == major && e.minor <= minor);
  return e.major == major && e.minor <= minor;  // SASS runs on later minors of the same major
}

std::string newest_toolkit(const CompatMatrix& m) {
  return m.toolkit_driver.empty() ? std::string("?") : m.toolkit_driver.back().toolkit.truncated(2).str();
}

}  // namespace

std::string DriverView::label() const {
  const std::string cuda_text = cuda ? " (CUDA " + cuda->str() + ")" : std::string();
  if (image) return "the target driver " + (version ? version->str() : std::string("?")) + cuda_text;
  if (version) return "driver " + version->str() + cuda_text;
  return "the driver" + cuda_text;
}

std::string newer_than_matrix_text(const Version& driver, const CompatMatrix& m) {
  const DriverBranchRow* newest = m.newest_branch();
  return "driver " + driver.str() + " is newer than this matrix (newest R" +
         (newest ? std::to_string(newest->branch) : std::string("?")) + "): update the matrix or pass --matrix";
}

std::string DriverView::missing_remedy() const {
  if (newer_than_matrix) {
    return "Use a preflight whose matrix knows this driver's branch, or pass --matrix DIR with a "
           "driver_branch_cuda.tsv that has a row for branch R" +
           (version ? std::to_string(version->major()) : std::string("?")) +
           " (the CUDA it reports, from NVIDIA's release notes); nothing newer than the matrix is guessed.";
  }
  return image ? "Pass --target-driver VERSION (the fleet's driver, e.g. --target-driver 535.104.05)."
               : "Make the NVIDIA driver visible to the job (driver.loaded names what is missing), then rerun.";
}

nlohmann::json DriverView::evidence() const {
  nlohmann::json j = nlohmann::json::object();
  j["from"] = image ? "--target-driver" : "node";
  if (version) j["driver_version"] = version->str();
  if (cuda) j["driver_cuda"] = cuda->str();
  if (!cuda_source.empty()) j["driver_cuda_source"] = cuda_source;
  if (!why.empty()) j["driver_missing"] = missing_detail.empty() ? why : why + ": " + missing_detail;
  if (newer_than_matrix) j["driver_newer_than_matrix"] = true;
  if (!compat_lib.empty()) j["cuda_compat_lib"] = compat_lib;
  if (compat_cuda) j["cuda_compat_cuda"] = compat_cuda->str();
  return j;
}

DriverView driver_view(const CheckContext& ctx, const CompatMatrix& m) {
  DriverView v;
  if (ctx.profile == Profile::Image) {
    v.image = true;
    const std::string& target = ctx.options.target_driver;
    if (target.empty()) {
      v.why = "no --target-driver given (the image profile judges against the fleet's driver)";
      return v;
    }
    v.version = Version::parse(trimmed(target));
    if (!v.version) {
      v.why = "--target-driver '" + target + "' is not a driver version (e.g. 535.104.05)";
      return v;
    }
    v.cuda = m.cuda_reported_by_driver(*v.version);
    if (const DriverBranchRow* row = m.branch_for_driver(*v.version)) {
      v.cuda_source = "matrix: branch R" + std::to_string(row->branch);
    } else if (m.newer_than_matrix(*v.version)) {
      v.newer_than_matrix = true;
      v.why = newer_than_matrix_text(*v.version, m);
    } else {
      v.why = "--target-driver " + v.version->str() + " is older than every driver branch in the matrix";
    }
    return v;
  }

  const DriverFacts& d = ctx.facts.gpu.driver;
  v.version = parse_probed_version(d.nvml_driver_version);
  if (!v.version) v.version = parse_probed_version(d.kernel_module_version);
  std::optional<Version> api;
  if (const int* code = d.cuda_driver_version.value()) api = Version::from_cuda_api(*code);
  for (const std::string& lib : d.loaded_libraries) {
    const std::string base = lib.substr(lib.rfind('/') + 1);
    if (lib.find("/compat/") != std::string::npos && base.starts_with("libcuda.so")) {
      v.compat_lib = lib;
      break;
    }
  }

  const DriverBranchRow* row = v.version ? m.branch_for_driver(*v.version) : nullptr;
  if (!v.compat_lib.empty() && api) {
    // The cuda-compat libcuda reports its own (newer) CUDA; the kernel-mode driver's is its branch's.
    v.compat_cuda = api;
    if (row != nullptr) {
      v.cuda = row->cuda;
      v.cuda_source = "matrix: branch R" + std::to_string(row->branch) + " (a cuda-compat libcuda is loaded)";
    } else if (v.version && m.newer_than_matrix(*v.version)) {
      v.newer_than_matrix = true;
      v.why = "a cuda-compat libcuda (" + v.compat_lib + ") is loaded over kernel-mode " +
              newer_than_matrix_text(*v.version, m);
    } else {
      v.why = "a cuda-compat libcuda (" + v.compat_lib +
              ") is loaded and the kernel-mode driver version could not be read: " + d.nvml_driver_version.why() +
              "; " + d.kernel_module_version.why();
    }
  } else if (api) {
    v.cuda = api;
    v.cuda_source = "cuDriverGetVersion";
  } else if (row != nullptr) {
    v.cuda = row->cuda;
    v.cuda_source = "matrix: branch R" + std::to_string(row->branch);
  } else if (v.version && m.newer_than_matrix(*v.version)) {
    v.newer_than_matrix = true;
    v.why = newer_than_matrix_text(*v.version, m) + " (cuDriverGetVersion: " + d.cuda_driver_version.why() + ")";
  } else {
    v.missing = true;
    v.missing_detail = "cuDriverGetVersion: " + d.cuda_driver_version.why() +
                       "; NVML driver version: " + d.nvml_driver_version.why() +
                       "; kernel module: " + d.kernel_module_version.why();
    v.why = "no driver to judge against (see driver.loaded)";
  }
  return v;
}

GpusView gpu_view(const CheckContext& ctx, const CompatMatrix& m) {
  GpusView g;
  if (ctx.profile == Profile::Image) {
    if (ctx.options.target_cpu_only) {
      g.known = true;
      g.cpu_only = true;
      g.why = "--target-gpu none: a CPU-only image";
      return g;
    }
    if (ctx.options.target_gpus.empty()) {
      g.why = "no --target-gpu given (the image profile judges against the fleet's compute capabilities)";
      return g;
    }
    g.known = true;
    for (const std::string& t : ctx.options.target_gpus) {
      GpuView v;
      v.cc = Version::parse(trimmed(t));
      if (v.cc && v.cc->size() != 2) v.cc.reset();
      if (v.cc) {
        const GpuArchRow* arch = m.arch_for_cc(*v.cc);
        v.label = "target GPU CC " + v.cc->str() + (arch ? " (" + arch->arch + ")" : std::string());
      } else {
        v.label = "target GPU '" + t + "' (not a compute capability such as 9.0)";
      }
      g.gpus.push_back(std::move(v));
    }
    return g;
  }
  const DriverFacts& d = ctx.facts.gpu.driver;
  auto cc_of = [](int major, int minor) -> std::optional<Version> {
    if (major <= 0 || minor < 0) return std::nullopt;
    return Version::of({static_cast<std::uint32_t>(major), static_cast<std::uint32_t>(minor)});
  };
  // GPUs of one model and compute capability are judged alike: one view per model, naming the
  // indices ("GPUs 0–7 (NVIDIA H100 80GB HBM3, CC 9.0)"), so eight GPUs make one line, not eight.
  struct Group {
    std::string name;
    std::optional<Version> cc;
    std::vector<int> indices;
  };
  std::vector<Group> groups;
  auto add = [&groups, &cc_of](int index, const std::string& name, int major, int minor) {
    const std::optional<Version> cc = cc_of(major, minor);
    for (Group& grp : groups) {
      if (grp.name == name && grp.cc == cc) {
        grp.indices.push_back(index);
        return;
      }
    }
    groups.push_back({name, cc, {index}});
  };
  auto views = [&groups, &g](const std::string& noun) {
    for (const Group& grp : groups) {
      GpuView v;
      v.name = grp.name;
      v.cc = grp.cc;
      v.label = noun + (grp.indices.size() > 1 ? "s " : " ") + range_list(grp.indices) + " (" +
                (grp.name.empty() ? std::string() : grp.name + ", ") + "CC " +
                (grp.cc ? grp.cc->str() : std::string("unknown")) + ")";
      g.gpus.push_back(std::move(v));
    }
  };
  if (const std::vector<NvmlGpu>* gpus = d.nvml_gpus.value()) {
    g.known = true;
    for (const NvmlGpu& n : *gpus) {
      if (n.lost.empty()) add(n.index, n.name, n.cc_major, n.cc_minor);  // a lost GPU: named by gpu.count
    }
    views("GPU");
  } else if (const std::vector<CudaDevice>* devs = d.cuda_devices.value()) {
    g.known = true;
    for (const CudaDevice& c : *devs) add(c.ordinal, c.name, c.cc_major, c.cc_minor);
    views("CUDA device");
  } else {
    g.why = "no GPU list (NVML: " + d.nvml_gpus.why() + "; CUDA: " + d.cuda_devices.why() + ")";
  }
  return g;
}

GpuClass gpu_class(std::string_view name) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (n.empty()) return GpuClass::Unsure;
  if (n.find("geforce") != std::string::npos || n.find("titan") != std::string::npos) return GpuClass::Consumer;
  if (n.find("rtx") != std::string::npos || n.find("quadro") != std::string::npos) return GpuClass::Unsure;
  return GpuClass::Datacenter;
}

ArchMatch match_arch(const std::vector<std::string>& arch_list, const Version& cc) {
  bool any = false;
  bool ptx = false;
  for (const std::string& text : arch_list) {
    const std::optional<ArchEntry> e = parse_arch(trimmed(text));
    if (!e) continue;
    any = true;
    if (e->sass && serves(*e, cc.major(), cc.minor(), false)) return ArchMatch::Sass;
    if (e->ptx && serves(*e, cc.major(), cc.minor(), true)) ptx = true;
  }
  if (!any) return ArchMatch::Unreadable;
  return ptx ? ArchMatch::PtxOnly : ArchMatch::None;
}

std::string cc_range_text(const CcRangeRow& row) { return row.min_cc.str() + "–" + row.max_cc.str(); }

namespace {

CudaJudgement judged(const CudaOutcome& outcome, std::string rule, nlohmann::json params) {
  CudaJudgement j;
  j.status = outcome.status;
  j.rule = std::move(rule);
  j.summary = render_template(outcome.message, params);
  j.remedy = render_template(outcome.fix, params);
  j.outcome = &outcome;
  j.params = std::move(params);
  return j;
}

}  // namespace

CudaJudgement judge_cuda_vs_driver(const Version& cuda, std::string_view what_view, const DriverView& driver,
                                   const GpusView& gpus, const CompatMatrix& m, std::string_view build_noun) {
  const std::string what(what_view);
  const std::string noun(build_noun);
  const Version r2 = cuda.truncated(2);
  const std::optional<Version> needs = m.min_driver_for(cuda);
  if (!needs) return judged(kCudaNotInMatrix, "unknown", {{"what", what}, {"newest", newest_toolkit(m)}});
  if (!driver.cuda) {
    return judged(kCudaDriverUnknown, "unknown",
                  {{"what", what}, {"why", driver.why}, {"fix", driver.missing_remedy()}});
  }
  const Version& d = *driver.cuda;
  const std::string label = driver.label();
  nlohmann::json params = {{"what", what}, {"driver", label}};
  if (r2 <= d) return judged(kCudaBackward, "backward", std::move(params));

  const std::optional<Version> same_major_min = m.minor_compat_min_driver(d.major());
  const bool driver_has_minor_compat = same_major_min && driver.version && *driver.version >= *same_major_min;
  params["driver_cuda"] = d.str();
  params["cuda"] = r2.str();
  params["min_driver"] = needs->str();
  params["build"] = noun;
  params["minor_note"] =
      part_if(driver_has_minor_compat,
              " (any CUDA {driver_cuda_major}.x build runs on {driver} through minor-version compatibility)");
  params["driver_cuda_major"] = d.major();
  params["compat_note"] = part_if(false, "");

  // Forward compatibility: a cuda-compat libcuda the loader resolves, on a datacenter GPU.
  if (!driver.compat_lib.empty() && driver.compat_cuda && r2 <= *driver.compat_cuda) {
    params["compat_lib"] = driver.compat_lib;
    params["compat_cuda"] = driver.compat_cuda->str();
    std::vector<std::string> consumer, unsure;
    for (const GpuView& g : gpus.gpus) {
      const GpuClass c = gpu_class(g.name);
      if (c == GpuClass::Consumer) consumer.push_back(g.label);
      if (c == GpuClass::Unsure) unsure.push_back(g.label);
    }
    const unsigned branch = driver.version ? driver.version->major() : 0;
    const bool branch_ok =
        std::find(kCompatKernelBranches.begin(), kCompatKernelBranches.end(), branch) != kCompatKernelBranches.end();
    if (!consumer.empty()) {
      params["compat_note"] =
          template_param("; the " + std::string(kCudaCompatVia) +
                         " does not help: {consumer_gpu} is not a datacenter GPU (forward "
                         "compatibility fails there with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804)");
      params["consumer_gpu"] = consumer.front();
    } else if (!gpus.known || gpus.gpus.empty()) {
      params["gpus_why"] = gpus.why;
      return judged(kCudaForwardGpusUnknown, "forward", std::move(params));
    } else if (!unsure.empty()) {
      params["gpu"] = unsure.front();
      return judged(kCudaForwardRtx, "forward", std::move(params));
    } else if (!branch_ok) {
      params["branch"] = branch;
      return judged(kCudaForwardBranch, "forward", std::move(params));
    } else {
      return judged(kCudaForward, "forward", std::move(params));
    }
  }

  if (r2.major() == d.major() && same_major_min) {
    params["major"] = d.major();
    params["minor_min"] = same_major_min->str();
    if (!driver.version) return judged(kCudaMinorCompatUnknown, "unknown", std::move(params));
    if (driver_has_minor_compat) return judged(kCudaMinorCompat, "minor-version", std::move(params));
  }
  return judged(kCudaTooNew, "too-new", std::move(params));
}

GpuPresence gpu_presence(const CheckContext& ctx) {
  GpuPresence p;
  if (ctx.profile == Profile::Image) {
    if (ctx.options.target_cpu_only) return GpuPresence{false, "--target-gpu none (a CPU-only image)"};
    if (!ctx.options.target_gpus.empty())
      return GpuPresence{true, "--target-gpu " + join(ctx.options.target_gpus, ",")};
    return GpuPresence{true, "an image without --target-gpu none (the image profile assumes GPU nodes)"};
  }
  const DriverFacts& d = ctx.facts.gpu.driver;
  if (const auto* gpus = d.nvml_gpus.value(); gpus != nullptr && !gpus->empty())
    return GpuPresence{true, std::to_string(gpus->size()) + " GPU" + (gpus->size() == 1 ? "" : "s") + " (NVML)"};
  if (const auto* devs = d.cuda_devices.value(); devs != nullptr && !devs->empty())
    return GpuPresence{true, std::to_string(devs->size()) + " CUDA device" + (devs->size() == 1 ? "" : "s")};
  if (const auto* fns = ctx.facts.pcie.functions.value()) {
    std::size_t n = 0;
    for (const PciFunction& f : *fns) {
      if (f.kind == "gpu" && f.vendor_device.starts_with("10de:")) ++n;
    }
    if (n > 0) return GpuPresence{true, std::to_string(n) + " NVIDIA GPU" + (n == 1 ? "" : "s") + " on the PCI bus"};
    if (d.nvml_gpus.value() != nullptr || d.cuda_devices.value() != nullptr)
      return GpuPresence{false, "no GPU (NVML, CUDA and the PCI bus show none)"};
    return GpuPresence{false, "no NVIDIA GPU on the PCI bus"};
  }
  return p;
}

std::vector<const FrameworkBuild*> cuda_frameworks(const RuntimeFacts& rt) {
  std::vector<const FrameworkBuild*> out;
  for (const FrameworkBuild& fw : rt.frameworks) {
    if (!trimmed(fw.cuda).empty()) out.push_back(&fw);
  }
  return out;
}

std::vector<const FrameworkBuild*> cpu_frameworks(const RuntimeFacts& rt) {
  std::vector<const FrameworkBuild*> out;
  for (const FrameworkBuild& fw : rt.frameworks) {
    if (trimmed(fw.cuda).empty() && fw.build != "rocm") out.push_back(&fw);
  }
  return out;
}

}  // namespace preflight
