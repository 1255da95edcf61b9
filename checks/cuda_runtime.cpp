// SPDX-License-Identifier: MIT
// cuda.runtime: every CUDA runtime the job will load vs the driver (judge_cuda_vs_driver in
// checks/cuda_compat.hpp), and
// NVIDIA_REQUIRE_CUDA as the NVIDIA container runtime evaluates it.
#include <algorithm>
#include <array>
#include <set>

#include "checks/check.hpp"
#include "checks/cuda_compat.hpp"
#include "checks/finding_parts.hpp"
#include "core/nvidia_require.hpp"
#include "core/text.hpp"

namespace preflight {
namespace cuda_runtime_check {
namespace {

std::string trim_copy(std::string_view s) { return std::string(trim(s)); }

std::string join_list(const std::vector<std::string>& items, std::string_view sep = ", ") { return join(items, sep); }

// A runtime the job loads vs the driver: a finding for each conclusion of judge_cuda_vs_driver that is not
// PASS, with its texts.
constexpr FindingSpec kNotInMatrix = cuda_finding("cuda.runtime/not-in-matrix", kCudaNotInMatrix);
constexpr FindingSpec kForwardGpusUnknown =
    cuda_finding("cuda.runtime/forward-compat-gpus-unknown", kCudaForwardGpusUnknown);
constexpr FindingSpec kForwardRtx = cuda_finding("cuda.runtime/forward-compat-rtx", kCudaForwardRtx);
constexpr FindingSpec kForwardBranch = cuda_finding("cuda.runtime/forward-compat-branch", kCudaForwardBranch);
constexpr FindingSpec kMinorCompatUnknown =
    cuda_finding("cuda.runtime/minor-compat-driver-unknown", kCudaMinorCompatUnknown);
constexpr FindingSpec kMinorCompat = cuda_finding("cuda.runtime/minor-compat", kCudaMinorCompat);
constexpr FindingSpec kTooNew = cuda_finding("cuda.runtime/too-new", kCudaTooNew);
// No driver's CUDA to judge the runtimes against: {what} names them, {why} and {fix} are the driver's.
constexpr FindingSpec kDriverUnknown = cuda_finding("cuda.runtime/driver-unknown", kCudaDriverUnknown);
constexpr FindingSpec kTargetDriverUnknown = cuda_finding("cuda.runtime/target-driver-unknown", kCudaDriverUnknown);
constexpr FindingSpec kDriverNewerThanMatrix =
    cuda_finding("cuda.runtime/driver-newer-than-matrix", kCudaDriverUnknown);

constexpr FindingSpec kMinorCompatNoSass = {
    "cuda.runtime/minor-compat-no-sass", Status::Fail,
    "{framework} (CUDA {framework_cuda}) has no {sm} SASS for {gpu} (arch list: {arch_list}): its kernels need PTX "
    "JIT, which minor-version compatibility with {driver} does not provide (cudaErrorUnsupportedPtxVersion, 222)",
    "Install driver ≥ {min_driver} (CUDA {cuda}), or use a framework build for CUDA ≤ {driver_cuda}, or one compiled "
    "for {sm}."};
#define PREFLIGHT_REQUIRE "NVIDIA_REQUIRE_CUDA=\"{require}\""
constexpr FindingSpec kRequireNotMet = {
    "cuda.runtime/require-not-met", Status::Fail,
    PREFLIGHT_REQUIRE
    " is not met by {driver}{on}: the NVIDIA container runtime refuses to start the container "
    "({detail})",
    "Run the image on a driver that meets it, or build the image from a base for an older CUDA (its "
    "NVIDIA_REQUIRE_CUDA follows the base image's CUDA)."};
constexpr FindingSpec kRequireUnknown = {"cuda.runtime/require-unknown", Status::Unknown,
                                         PREFLIGHT_REQUIRE " could not be evaluated against {driver}{on}: {detail}",
                                         "Make the driver version and GPUs readable (driver.loaded), then rerun."};
constexpr FindingSpec kRequireUnknownTarget = {
    "cuda.runtime/require-unknown-target", Status::Unknown,
    PREFLIGHT_REQUIRE " could not be evaluated against {driver}{on}: {detail}",
    "Pass --target-driver and --target-gpu so every constraint can be evaluated."};
constexpr FindingSpec kRequireMalformed = {
    "cuda.runtime/require-malformed", Status::Fail,
    PREFLIGHT_REQUIRE " is malformed at '{token}': the NVIDIA container runtime rejects it ({detail})",
    "Fix NVIDIA_REQUIRE_CUDA in the image (e.g. \"cuda>=12.4 brand=tesla,driver>=535,driver<536\")."};
#undef PREFLIGHT_REQUIRE
constexpr FindingSpec kUnloadedTooNew = {
    "cuda.runtime/unloaded-too-new", Status::Warn,
    "{what} needs driver ≥ {min_driver}, newer than {driver}: what is built with it (nvcc, torch.utils.cpp_extension, "
    "Triton/JIT extensions) will fail; {uses}",
    "Build extensions with a toolkit for CUDA ≤ {driver_cuda} (or install driver ≥ {min_driver}); nothing needs to "
    "change for the framework itself."};
// A CPU-only torch: {install} is how to get a CUDA build for the driver, {image_note} the image
// profile's way out.
#define PREFLIGHT_CPU_TORCH "torch {torch} ({path}) is a CPU-only build (torch.version.cuda = None)"
#define PREFLIGHT_CPU_TORCH_FIX \
  "{install}; a distribution's torch package may be a CPU build (Debian's python3-torch is).{image_note}"
constexpr FindingSpec kCpuTorch = {
    "cuda.runtime/cpu-torch", Status::Fail,
    PREFLIGHT_CPU_TORCH
    ": the job cannot use {gpus} (torch.cuda.is_available() is False) nor the NCCL backend "
    "(\"Distributed package doesn't have NCCL built in\")",
    PREFLIGHT_CPU_TORCH_FIX};
constexpr FindingSpec kCpuTorchGpusUnknown = {"cuda.runtime/cpu-torch-gpus-unknown", Status::Unknown,
                                              PREFLIGHT_CPU_TORCH "; whether the job will have GPUs could not be told",
                                              PREFLIGHT_CPU_TORCH_FIX};
#undef PREFLIGHT_CPU_TORCH_FIX
#undef PREFLIGHT_CPU_TORCH
constexpr FindingSpec kPythonUnreadable = {
    "cuda.runtime/python-unreadable", Status::Unknown,
    "the job's interpreter could not be asked where it imports from: {error}",
    "Check that {python} runs ({python} -c 'import sys; print(sys.path)'), or name the environment with "
    "--site-packages DIR."};
constexpr FindingSpec kCudartMissing = {
    "cuda.runtime/cudart-missing", Status::Fail,
    "torch {torch} needs {soname} ({library}) and the loader finds it nowhere ({searched}): import torch fails with "
    "\"{soname}: cannot open shared object file\"",
    "Reinstall the framework with its CUDA wheels (pip install --force-reinstall torch, which pulls "
    "nvidia-cuda-runtime-cu{cuda_major}), or put the directory holding {soname} on LD_LIBRARY_PATH."};
constexpr FindingSpec kSearchIncomplete = {
    "cuda.runtime/search-incomplete", Status::Unknown,
    "no CUDA runtime found, but some files could not be read ({problems}); searched: {searched}",
    "Make the named files readable to this user, or name the runtime with --cuda-runtime LIB."};
constexpr FindingSpec kNoRuntime = {
    "cuda.runtime/no-runtime", Status::Warn, "no CUDA runtime found where the job will look (searched: {searched})",
    "Install the framework's CUDA build (e.g. a torch cuXXX wheel) or a CUDA toolkit where the job runs, or point "
    "preflight at it: --site-packages DIR, --python EXE or --cuda-runtime LIB."};
constexpr FindingSpec kNowhereToSearch = {
    "cuda.runtime/nowhere-to-search", Status::Unknown,
    "none of the places the job looks for a CUDA runtime exists here ({searched}): a tree without the node's "
    "libraries (a topology capture?) cannot tell which runtime the job loads",
    "Judge a `preflight capture` of the node or a copy of its root file system (--sysroot DIR), or run preflight on "
    "the node."};
constexpr FindingSpec kNothingLoadedNoDriver = {
    "cuda.runtime/nothing-loaded-no-driver", Status::Skip,
    "the job loads no CUDA runtime ({uses}) and there is no driver to judge the others against: {why}", ""};
constexpr FindingSpec kVersionUnreadable = {
    "cuda.runtime/version-unreadable", Status::Unknown,
    "the CUDA runtime version '{version}' read from {path} ({kind}) is not a version",
    "Check that file (a broken install?), or name the runtime with --cuda-runtime LIB."};

constexpr std::array kFindings = {kPythonUnreadable,
                                  kCpuTorch,
                                  kCpuTorchGpusUnknown,
                                  kCudartMissing,
                                  kSearchIncomplete,
                                  kNowhereToSearch,
                                  kNoRuntime,
                                  kNothingLoadedNoDriver,
                                  kDriverUnknown,
                                  kTargetDriverUnknown,
                                  kDriverNewerThanMatrix,
                                  kVersionUnreadable,
                                  kNotInMatrix,
                                  kForwardGpusUnknown,
                                  kForwardRtx,
                                  kForwardBranch,
                                  kMinorCompatUnknown,
                                  kMinorCompat,
                                  kTooNew,
                                  kMinorCompatNoSass,
                                  kUnloadedTooNew,
                                  kRequireNotMet,
                                  kRequireUnknown,
                                  kRequireUnknownTarget,
                                  kRequireMalformed};

/// This check's finding for a conclusion of judge_cuda_vs_driver; nullptr for a PASS (noted as text) and for
/// one it never reaches.
const FindingSpec* judgement_finding(const CudaJudgement& j) {
  static constexpr std::array<std::pair<const CudaOutcome*, const FindingSpec*>, 7> kByOutcome = {{
      {&kCudaNotInMatrix, &kNotInMatrix},
      {&kCudaForwardGpusUnknown, &kForwardGpusUnknown},
      {&kCudaForwardRtx, &kForwardRtx},
      {&kCudaForwardBranch, &kForwardBranch},
      {&kCudaMinorCompatUnknown, &kMinorCompatUnknown},
      {&kCudaMinorCompat, &kMinorCompat},
      {&kCudaTooNew, &kTooNew},
  }};
  for (const auto& [outcome, spec] : kByOutcome) {
    if (outcome == j.outcome) return spec;
  }
  return nullptr;
}

std::string runtime_label(const CudaRuntime& r) {
  std::string s = "CUDA " + r.version + " (" + (r.detail.empty() ? r.kind : r.detail);
  if (!r.path.empty() && s.find(r.path) == std::string::npos) s += " at " + r.path;
  return s + ")";
}

// Minor-version compatibility has no PTX JIT: a framework of this CUDA must carry SASS for every GPU.
void check_sass_under_minor_compat(const Version& cuda, const DriverView& driver, const GpusView& gpus,
                                   const RuntimeFacts& rt, const CompatMatrix& m, std::set<std::string>& done,
                                   VerdictBuilder& b) {
  for (const FrameworkBuild& fw : rt.frameworks) {
    const std::optional<Version> fw_cuda = Version::parse(trim_copy(fw.cuda));
    if (!fw_cuda || fw_cuda->truncated(2) != cuda.truncated(2) || fw.arch_list.empty()) continue;
    if (!done.insert(fw.path + "|" + fw.version).second) continue;
    for (const GpuView& g : gpus.gpus) {
      if (!g.cc) continue;
      const ArchMatch match = match_arch(fw.arch_list, *g.cc);
      if (match == ArchMatch::Sass || match == ArchMatch::Unreadable) continue;
      const std::string sm = "sm_" + std::to_string(g.cc->major()) + std::to_string(g.cc->minor());
      b.add(kMinorCompatNoSass, {{"framework", fw.name + " " + fw.version},
                                 {"framework_cuda", fw_cuda->str()},
                                 {"sm", sm},
                                 {"gpu", g.label},
                                 {"arch_list", join_list(fw.arch_list, " ")},
                                 {"driver", driver.label()},
                                 {"min_driver", m.min_driver_for(cuda)->str()},
                                 {"cuda", cuda.truncated(2).str()},
                                 {"driver_cuda", driver.cuda->str()}});
    }
  }
}

void check_nvidia_require(const CheckContext& ctx, const DriverView& driver, const GpusView& gpus, VerdictBuilder& b) {
  const std::string& text = ctx.facts.gpu.runtime.nvidia_require_cuda;
  if (trim_copy(text).empty()) return;
  b.evidence()["nvidia_require_cuda"] = text;
  if (const std::optional<std::string> off = ctx.facts.env.get("NVIDIA_DISABLE_REQUIRE")) {
    const std::string v = trim_copy(*off);
    if (!v.empty() && v != "0" && v != "false") {
      b.evidence()["nvidia_disable_require"] = v;
      return;
    }
  }
  // One evaluation per distinct compute capability (the container runtime checks every GPU given
  // to the container); without GPUs, arch constraints stay unknown.
  std::vector<std::optional<Version>> archs;
  for (const GpuView& g : gpus.gpus) {
    if (g.cc && std::find(archs.begin(), archs.end(), g.cc) == archs.end()) archs.push_back(g.cc);
  }
  if (archs.empty()) archs.push_back(std::nullopt);
  std::string brand;
  if (!gpus.gpus.empty() && !driver.image) {
    const GpuClass c = gpu_class(gpus.gpus.front().name);
    if (c == GpuClass::Consumer) brand = "geforce";
  }
  const std::string what = "NVIDIA_REQUIRE_CUDA=\"" + text + "\"";
  for (const std::optional<Version>& arch : archs) {
    const RequireResult r = evaluate_nvidia_require(text, driver.version, driver.cuda, brand, arch);
    const std::string on = arch ? " on CC " + arch->str() : std::string();
    nlohmann::json params = {{"require", text},
                             {"driver", driver.label()},
                             {"on", part_if(arch.has_value(), " on CC {cc}")},
                             {"detail", r.detail}};
    if (arch) params["cc"] = arch->str();
    switch (r.status) {
      case RequireStatus::Satisfied:
        b.note(what + " holds for " + driver.label() + on + (r.group.empty() ? "" : " (" + r.group + ")"));
        break;
      case RequireStatus::NotSatisfied: b.add(kRequireNotMet, params); break;
      case RequireStatus::Unknown: b.add(driver.image ? kRequireUnknownTarget : kRequireUnknown, params); break;
      case RequireStatus::Malformed: {
        nlohmann::json malformed = params;
        malformed["token"] = r.token;
        b.add(kRequireMalformed, malformed);
        break;
      }
    }
    if (r.status != RequireStatus::Satisfied) break;
  }
}

// "torch 2.5.1+cu124 uses its own CUDA 12.4.127": what the job loads instead, for the finding
// about a runtime nothing of the job loads.
std::string what_the_job_uses(const RuntimeFacts& rt) {
  std::vector<std::string> parts;
  for (const CudaRuntime& r : rt.runtimes) {
    if (!job_loads(r)) continue;
    if (r.kind == "torch")
      parts.push_back(r.loaded_by + " uses its own CUDA " + r.version);
    else if (r.kind == "explicit")
      parts.push_back("the job loads CUDA " + r.version + " (--cuda-runtime " + r.path + ")");
  }
  if (parts.empty()) {
    for (const FrameworkBuild* fw : cpu_frameworks(rt))
      parts.push_back("torch " + fw->version + " is a CPU-only build");
  }
  return parts.empty() ? std::string("nothing of the job loads it") : join(parts, "; ");
}

// A runtime on the node that nothing of the job loads: reported, WARN at most.
void judge_unloaded(const CudaRuntime& r, const Version& v, const DriverView& driver, const GpusView& gpus,
                    const RuntimeFacts& rt, const CompatMatrix& m, VerdictBuilder& b, nlohmann::json& row) {
  const CudaJudgement j = judge_cuda_vs_driver(v, runtime_label(r), driver, gpus, m);
  row["status"] = to_string(j.status == Status::Fail ? Status::Warn : Status::Pass);
  row["rule"] = j.rule;
  row["loaded"] = false;
  const std::string uses = what_the_job_uses(rt);
  if (j.status != Status::Fail) {
    b.note(runtime_label(r) + " is not loaded by the job (" + uses + ")");
    return;
  }
  // A FAIL is "too new" (kCudaTooNew): its parameters name the driver it needs and the driver's CUDA.
  const std::string what =
      r.kind == "toolkit" ? "the CUDA " + v.truncated(2).str() + " toolkit (" + r.path + ")" : runtime_label(r);
  b.add(kUnloadedTooNew, {{"what", what},
                          {"min_driver", j.params.at("min_driver")},
                          {"driver", j.params.at("driver")},
                          {"driver_cuda", j.params.at("driver_cuda")},
                          {"uses", uses}});
}

// A CPU-only framework where the job will have GPUs: it cannot use them nor the NCCL backend.
void judge_cpu_frameworks(const CheckContext& ctx, const RuntimeFacts& rt, const DriverView& driver,
                          const CompatMatrix& m, VerdictBuilder& b) {
  const std::vector<const FrameworkBuild*> cpu = cpu_frameworks(rt);
  if (cpu.empty() || !cuda_frameworks(rt).empty()) return;
  const GpuPresence gpus = gpu_presence(ctx);
  for (const FrameworkBuild* fw : cpu) {
    const std::string label =
        "torch " + fw->version + " (" + fw->path + ") is a CPU-only build (torch.version.cuda = None)";
    if (gpus.has_gpus && !*gpus.has_gpus) {
      b.note(label + ", and the job has " + gpus.text + ": consistent");
      continue;
    }
    std::string install;
    const TorchBuildRow* build = driver.cuda ? m.torch_build_for(*driver.cuda) : nullptr;
    if (build != nullptr) {
      install = "Install a CUDA build of torch for " + driver.label() +
                " in the job's environment: pip install torch "
                "--index-url " +
                build->index_url + " (CUDA " + build->cuda.str() + " ≤ the driver's " + driver.cuda->str() + ")";
    } else if (driver.cuda) {
      install = "No PyTorch CUDA build in the matrix runs on " + driver.label() +
                ": upgrade the driver, then install a CUDA build of torch (https://pytorch.org/get-started/locally/)";
    } else {
      install =
          "Install a CUDA build of torch matching the driver (pip install torch --index-url "
          "https://download.pytorch.org/whl/cuXYZ, XYZ ≤ the driver's CUDA; "
          "https://pytorch.org/get-started/locally/)";
    }
    nlohmann::json params = {
        {"torch", fw->version},
        {"path", fw->path},
        {"install", install},
        {"image_note", part_if(ctx.profile == Profile::Image,
                               " If the image is meant to run without GPUs, say so with --target-gpu none.")}};
    if (!gpus.has_gpus) {
      b.add(kCpuTorchGpusUnknown, std::move(params));
      continue;
    }
    params["gpus"] = gpus.text;
    b.add(kCpuTorch, std::move(params));
  }
}

Verdict run(const CheckContext& ctx) {
  const CompatMatrix& m = compat_matrix(ctx);
  const RuntimeFacts& rt = ctx.facts.gpu.runtime;
  const DriverView driver = driver_view(ctx, m);
  const GpusView gpus = gpu_view(ctx, m);

  VerdictBuilder b;
  b.evidence()["driver"] = driver.evidence();
  b.evidence()["searched"] = rt.searched;
  if (!rt.problems.empty()) b.evidence()["problems"] = rt.problems;
  if (!rt.absent.empty()) b.evidence()["absent"] = rt.absent;
  if (rt.python) b.evidence()["python"] = *rt.python;
  if (!rt.frameworks.empty()) b.evidence()["frameworks"] = rt.frameworks;
  if (!rt.not_loaded.empty()) b.evidence()["not_loaded"] = rt.not_loaded;
  if (!rt.python_not_run.empty()) {
    b.evidence()["python_not_run"] = rt.python_not_run;
    b.note(rt.python_not_run + "; the framework was looked for where Python would look (name it with --python EXE)");
  }
  for (const std::string& other : rt.not_loaded) b.note(other + ": not loaded by the job");

  if (rt.python && !rt.python->error.empty()) {
    b.add(kPythonUnreadable, {{"error", rt.python->error}, {"python", rt.python->exe}});
  }
  judge_cpu_frameworks(ctx, rt, driver, m, b);

  // A CUDA build of the framework whose own libcudart the loader cannot find: `import torch` fails.
  for (const FrameworkBuild* fw : cuda_frameworks(rt)) {
    if (fw->library.empty() || !fw->cudart_path.empty() || fw->cudart_soname.empty()) continue;
    b.add(kCudartMissing, {{"torch", fw->version},
                           {"soname", fw->cudart_soname},
                           {"library", fw->library},
                           {"searched", join_list(fw->searched)},
                           {"cuda_major", Version::parse(trim_copy(fw->cuda))->major()}});
  }

  const bool cpu_only_reported = !cpu_frameworks(rt).empty() && cuda_frameworks(rt).empty();
  if (rt.runtimes.empty()) {
    const std::string searched = rt.searched.empty() ? std::string("nothing") : join_list(rt.searched);
    if (!rt.problems.empty()) {
      b.add(kSearchIncomplete, {{"problems", join_list(rt.problems, "; ")}, {"searched", searched}});
    } else if (!rt.searched.empty() && rt.absent.size() >= rt.searched.size()) {
      b.add(kNowhereToSearch, {{"searched", searched}});
    } else if (!cpu_only_reported) {
      b.add(kNoRuntime, {{"searched", searched}});
    }
  } else if (!driver.cuda) {
    std::vector<std::string> names;
    for (const CudaRuntime& r : rt.runtimes) {
      if (job_loads(r)) names.push_back(runtime_label(r));
    }
    b.evidence()["runtimes"] = rt.runtimes;
    if (names.empty() && b.status() == Status::Pass) {
      b.add(kNothingLoadedNoDriver, {{"uses", what_the_job_uses(rt)}, {"why", driver.why}});
    } else if (!names.empty()) {
      const FindingSpec& spec = driver.newer_than_matrix ? kDriverNewerThanMatrix
                                : driver.image           ? kTargetDriverUnknown
                                                         : kDriverUnknown;
      b.add(spec, {{"what", join_list(names, ", ")}, {"why", driver.why}, {"fix", driver.missing_remedy()}});
    }
    Verdict v = b.build();
    if (driver.missing) v.cause = "driver.loaded";
    return v;
  }

  nlohmann::json judged = nlohmann::json::array();
  std::set<std::string> sass_checked;
  for (const CudaRuntime& r : rt.runtimes) {
    nlohmann::json row = r;
    const std::optional<Version> v = Version::parse(trim_copy(r.version));
    if (!v) {
      const Status s = job_loads(r) ? Status::Unknown : Status::Pass;
      const nlohmann::json params = {{"version", r.version}, {"path", r.path}, {"kind", r.kind}};
      if (job_loads(r)) {
        b.add(kVersionUnreadable, params);
      } else {
        b.note(render_template(kVersionUnreadable.message, params));  // a runtime the job does not load: noted
      }
      row["status"] = to_string(s);
      judged.push_back(std::move(row));
      continue;
    }
    if (!job_loads(r)) {
      judge_unloaded(r, *v, driver, gpus, rt, m, b, row);
      judged.push_back(std::move(row));
      continue;
    }
    const CudaJudgement j = judge_cuda_vs_driver(*v, runtime_label(r), driver, gpus, m);
    if (const FindingSpec* spec = judgement_finding(j)) {
      b.add(*spec, j.params);
    } else {
      b.add(j.status, j.summary, j.remedy);
    }
    if (j.rule == "minor-version") check_sass_under_minor_compat(*v, driver, gpus, rt, m, sass_checked, b);
    row["status"] = to_string(j.status);
    row["rule"] = j.rule;
    row["loaded"] = true;
    if (const std::optional<Version> need = m.min_driver_for(*v)) row["min_driver"] = need->str();
    judged.push_back(std::move(row));
  }
  b.evidence()["runtimes"] = std::move(judged);

  check_nvidia_require(ctx, driver, gpus, b);
  return b.build();
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  What the job loads, found without importing the framework: torch/version.py in the job's
  environment. --site-packages DIR names it; else the job's interpreter is asked (--python EXE,
  else python3 on the job's PATH), in a contained child with a deadline and the job's environment:
  `python3 -B -S` builds the sys.path `site` would (PYTHONPATH, PYTHONHOME, PYTHONNOUSERSITE,
  PYTHONUSERBASE, a venv's pyvenv.cfg, the path lines of .pth files) without running any .pth
  import line, sitecustomize or the framework, and importlib.util.find_spec says where
  `import torch` comes from. The first torch on that path is the one judged; the others found
  (a CUDA torch in ~/.local beside the CPU one imported) are noted as not loaded by the job. As
  root, an interpreter, PYTHONHOME or PYTHONPATH directory that another user could change is not
  run (noted). Without an interpreter (an image under --sysroot, a capture, or one not run) the
  places are searched in Python's order: PYTHONPATH, the virtualenv (and, when its pyvenv.cfg
  includes them, the rest), the user site unless PYTHONNOUSERSITE, PYTHONHOME or conda's prefix,
  /usr/local and Debian/Ubuntu dist-packages; the first torch is the one judged. Then the libcudart torch's own library needs (torch/lib/libtorch_cuda.so: its
  DT_NEEDED libcudart.so.N, resolved as ld.so does from its DT_RPATH/DT_RUNPATH, LD_LIBRARY_PATH,
  ld.so.conf and the default directories; the nvidia-cuda-runtime wheel's version where that is
  the file). --cuda-runtime LIB names a runtime the job loads. Only when neither exists does the
  loader path (libcudart.so.* on LD_LIBRARY_PATH and ld.so.conf) and the CUDA toolkit
  (/usr/local/cuda version.json, CUDA_HOME, the container's CUDA_VERSION) stand for what the job
  loads. Every other runtime on the node (a toolkit beside a framework with its own runtime, a
  wheel of another soname) is reported and WARNs at most. Each runtime is listed once: a toolkit's
  library on the loader path is the toolkit's row. Against it: the driver's CUDA (cuDriverGetVersion:
  12020 = 12.2) and the driver version (NVML, else /proc/driver/nvidia/version); in the image
  profile, --target-driver and the CUDA its branch reports (matrix/driver_branch_cuda.tsv). Minimum
  drivers come from matrix/cuda_toolkit_driver.tsv and matrix/cuda_minor_compat.tsv; the CUDA builds
  of PyTorch from matrix/torch_cuda_builds.tsv. Also NVIDIA_REQUIRE_CUDA, evaluated as the NVIDIA
  container runtime does (unless NVIDIA_DISABLE_REQUIRE is set).

Rules (runtime R, driver's CUDA D)
  PASS     R <= D (backward compatibility).
  PASS     R > D but a cuda-compat libcuda (a .../compat/libcuda.so.* the driver probe loaded)
           reports >= R, the GPUs are datacenter GPUs and the kernel branch is a supported
           cuda-compat target (R535, R570, R580 and later production branches).
  WARN     the same, where the GPU class or the branch cannot be confirmed.
  WARN     R > D, same major, driver >= the family's minor-version minimum (11.x 450.80.02, 12.x
           525.60.13, 13.x 580): minor-version compatibility. It runs, but without PTX JIT
           (kernels without SASS for the GPU fail with cudaErrorUnsupportedPtxVersion, 222), and
           newer APIs return cudaErrorCallRequiresNewerDriver (36).

Failures
  FAIL     R > D beyond minor-version compatibility ("CUDA 13.0 (torch 2.9.0+cu130) needs driver
           >= 580.65.06; driver 535.104.05 (CUDA 12.2) supports CUDA <= 12.2"). The job dies with
           cudaErrorInsufficientDriver (35) / "The NVIDIA driver on your system is too old".
  FAIL     under minor-version compatibility, a framework whose arch list has no SASS for a GPU
           (it would need PTX JIT).
  FAIL     NVIDIA_REQUIRE_CUDA is not met by the driver, or is malformed: the container will not
           start.
  FAIL     a CPU-only torch (torch.version.cuda = None; Debian's python3-torch is one) where the
           job will have GPUs (NVML, CUDA or the PCI bus show them; in the image profile unless
           --target-gpu none): the job cannot use them nor the NCCL backend. The fix names the
           PyTorch CUDA build for the driver (pip install torch --index-url .../cu121 on CUDA 12.2).
  FAIL     torch's library needs libcudart.so.N and the loader finds it nowhere (the directories
           searched are named): import torch fails.
  WARN     a runtime nothing of the job loads is newer than the driver (the CUDA 13.0 toolkit in
           /usr/local/cuda beside a torch with its own 12.4): what is built with it (extensions,
           JIT) will fail; never a FAIL.
  WARN     no CUDA runtime found where the job will look (the searched places are named). A job
           with no runtime cannot use the GPU; a CPU-only image is the one case where this is fine.
  UNKNOWN  the job's interpreter (--python EXE, or python3 on its PATH) could not be asked (it
           crashed, hung past its deadline, or answered something else): named, never a guess at
           another environment.
  UNKNOWN  a CPU-only torch where it cannot be told whether the job will have GPUs.
  SKIP     the job loads no CUDA runtime (a CPU-only torch on a node without GPUs) and there is no
           driver to judge the others against.
  UNKNOWN  no driver to judge against in the node/job profiles (driver.loaded reports the driver
           itself), or no --target-driver in the image profile.
  UNKNOWN  a --target-driver (or a node's driver whose cuDriverGetVersion is unreadable) newer
           than the matrix's newest branch: "driver 700 is newer than this matrix (newest R620):
           update the matrix or pass --matrix". A driver of the newest branch itself (620.x) is
           judged; a newer one is never extrapolated to PASS.
  UNKNOWN  a runtime version that is not a version, or one the matrix does not know (newer than
           the table, or no such release): never PASS.
  UNKNOWN  no runtime found while some files on the way could not be read.
  UNKNOWN  none of the places searched exists (no /usr/lib, no /lib, no site-packages): a --sysroot
           tree without the node's libraries, such as an hwloc topology capture, cannot tell which
           runtime the job loads; never the WARN of a node without one.
  UNKNOWN  the driver version is unreadable where minor-version compatibility decides.

Under --sysroot
  A `preflight capture` holds what discovery found on the node (no library is copied) and the
  driver as the node's helper reported it: judged as on the node. Any other tree is searched file
  by file, and its driver is "not in the capture" (UNKNOWN): no helper runs on the judging machine.

Fix
  Either side can move: install a driver >= the runtime's minimum (named), or use a framework build
  for CUDA <= the driver's CUDA (e.g. pip install torch --index-url
  https://download.pytorch.org/whl/cu121 on a CUDA 12.2 driver). Forward compatibility
  (cuda-compat-X-Y on LD_LIBRARY_PATH) is an option on datacenter GPUs only.)EXPLAIN";

}  // namespace

extern const CheckSpec kCudaRuntime = {
    "cuda.runtime",
    Scope::Node,
    "every CUDA runtime the job loads is supported by the driver (or --target-driver)",
    kExplain,
    kInAll,
    "",
    &run,
    "cuda_runtime,gpu_driver,pcie",
    false,
    "driver.loaded",
    {},
    nullptr,
    kFindings};

}  // namespace cuda_runtime_check
}  // namespace preflight
