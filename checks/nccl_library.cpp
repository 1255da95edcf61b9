// SPDX-License-Identifier: MIT
// nccl.library: which libnccl the job loads, its version, the CUDA it was built for vs the driver
// (NCCL's "+cudaX.Y" judged like a CUDA runtime: judge_cuda_vs_driver in checks/cuda_compat.hpp),
// and releases with known problems (matrix/nccl_known_issues.tsv).
#include <algorithm>
#include <array>

#include "checks/check.hpp"
#include "checks/cuda_compat.hpp"
#include "core/text.hpp"

namespace preflight {
namespace nccl_library_check {
namespace {

std::string candidates_text(const RuntimeFacts& rt) {
  std::vector<std::string> items;
  for (const LibraryCandidate& c : rt.nccl_candidates) {
    items.push_back(c.path + (c.source.empty() ? std::string() : " (" + c.source + ")"));
  }
  if (items.empty()) items = rt.searched;
  return items.empty() ? std::string("nothing") : join(items, ", ");
}

#define PREFLIGHT_INSTALL_NCCL                                                                                       \
  "Install NCCL where the job loads it: the framework's wheel (pip install nvidia-nccl-cu12 / nvidia-nccl-cu13) or " \
  "the system package (libnccl2), or name the file with --nccl-lib PATH."
// A CPU-only torch: {present} says what of NCCL is on the node.
#define PREFLIGHT_CPU_TORCH "torch {torch} ({torch_file}) is a CPU-only build: it has no NCCL ({present})"
// A known problem of the release (matrix/nccl_known_issues.tsv), fixed as the matrix says.
#define PREFLIGHT_ISSUE_FIX "Known problem {issue}: {issue_fix} ({issue_source})."

constexpr FindingSpec kCpuTorchNoGpus = {"nccl.library/cpu-torch-no-gpus", Status::Skip,
                                         PREFLIGHT_CPU_TORCH "; the job has {gpus}", ""};
constexpr FindingSpec kCpuTorchGpusUnknown = {
    "nccl.library/cpu-torch-gpus-unknown", Status::Unknown,
    PREFLIGHT_CPU_TORCH "; whether the job will have GPUs could not be told",
    "Install a CUDA build of torch (see cuda.runtime), which brings its NCCL."};
constexpr FindingSpec kCpuTorch = {
    "nccl.library/cpu-torch", Status::Fail,
    PREFLIGHT_CPU_TORCH
    "; the job will have {gpus}: init_process_group(\"nccl\") fails with \"Distributed package "
    "doesn't have NCCL built in\"",
    "Install a CUDA build of torch (cuda.runtime names the one for this driver); it brings its own NCCL (the "
    "nvidia-nccl wheel)."};
constexpr FindingSpec kLinkedIn = {
    "nccl.library/linked-in", Status::Unknown,
    "torch {torch} has NCCL linked into {torch_library} (it needs no libnccl.so.2): its version cannot be read from "
    "files, and {present}",
    "Read it where the job runs: python -c 'import torch; print(torch.cuda.nccl.version())'; or name the library the "
    "job loads with --nccl-lib PATH."};
constexpr FindingSpec kTorchNcclMissing = {
    "nccl.library/torch-nccl-missing", Status::Fail,
    "torch {torch} needs libnccl.so.2 ({torch_library}) and {nccl_via}: import torch fails with \"libnccl.so.2: cannot "
    "open shared object file\"",
    "Reinstall torch with its NCCL wheel (pip install --force-reinstall torch, which pulls "
    "nvidia-nccl-cu{cuda_major}), or put the directory holding libnccl.so.2 on LD_LIBRARY_PATH."};
constexpr FindingSpec kMissingSymbols = {
    "nccl.library/missing-symbols", Status::Fail,
    "torch {torch} ({torch_library}) needs {missing_count} NCCL {function_noun} that the libnccl.so.2 it loads "
    "({nccl_path}) does not export: {missing}; import torch fails with \"undefined symbol: {first_missing}\" "
    "({compared})",
    "Load the NCCL torch {torch} was built for: reinstall its wheel (pip install --force-reinstall "
    "nvidia-nccl-cu{cuda_major}), and take the older libnccl.so.2 at {nccl_path} off the loader's path (it is found "
    "through {nccl_via})."};
constexpr FindingSpec kNotProbed = {"nccl.library/not-probed", Status::Unknown,
                                    "the NCCL library was not probed: {why}",
                                    "Rerun preflight; if this persists, report it with the --json output."};
constexpr FindingSpec kNotFound = {"nccl.library/not-found", Status::Fail,
                                   "libnccl.so.2 not found where the job looks (searched: {searched}): {why}",
                                   PREFLIGHT_INSTALL_NCCL};
constexpr FindingSpec kOutOfBudget = {
    "nccl.library/out-of-budget", Status::Unknown, "the NCCL library was not probed in time: {why}",
    "preflight's own budget ended the probe, not NCCL: give the run the --timeout the message names."};
constexpr FindingSpec kNotRead = {
    "nccl.library/not-read", Status::Unknown, "the NCCL library was not read: {why}",
    "Capture the node with `preflight capture` (it records the library's version), or run preflight on the node."};
constexpr FindingSpec kVersionNotRead = {
    "nccl.library/version-not-read", Status::Unknown, "the NCCL version could not be read: {why}",
    "Check the library named (a broken or stripped build?), or name another with --nccl-lib."};
constexpr FindingSpec kLoadFailed = {
    "nccl.library/load-failed", Status::Fail, "libnccl.so.2 could not be loaded ({error}): {why}",
    "Fix or replace the library named (the job loads the same file and fails the same way). " PREFLIGHT_INSTALL_NCCL};
constexpr FindingSpec kVersionUnreadable = {
    "nccl.library/version-unreadable", Status::Unknown,
    "the NCCL version of {file} is unreadable (ncclGetVersion gave '{version}', code {version_code})",
    "Check the library named (a broken build?), or name another with --nccl-lib."};
constexpr FindingSpec kCudaBuildUnreadable = {
    "nccl.library/cuda-build-unreadable", Status::Unknown,
    "{library}: the CUDA it was built for is unreadable ('{cuda_build}'; NCCL prints it as \"NCCL version "
    "X+cudaA.B\"), so it cannot be judged against {driver}",
    "Check the library named, or use an NVIDIA NCCL build (wheel nvidia-nccl-cu12/cu13 or libnccl2)."};
// Its CUDA build vs the driver, judged as cuda.runtime judges a runtime (judge_cuda_vs_driver):
// {judgement} and {fix} are that rule's.
constexpr FindingSpec kCudaBuildTooNew = {"nccl.library/cuda-build-too-new", Status::Fail, "{library}: {judgement}",
                                          "{fix}"};
constexpr FindingSpec kCudaBuildMinorCompat = {"nccl.library/cuda-build-minor-compat", Status::Warn,
                                               "{library}: {judgement}", "{fix}"};
constexpr FindingSpec kCudaBuildForwardCompat = {"nccl.library/cuda-build-forward-compat", Status::Warn,
                                                 "{library}: {judgement}", "{fix}"};
constexpr FindingSpec kCudaBuildUnjudged = {"nccl.library/cuda-build-unjudged", Status::Unknown,
                                            "{library}: {judgement}", "{fix}"};
constexpr FindingSpec kCudaBuildRuns = {"nccl.library/cuda-build-runs", Status::Pass, "{library}: {judgement}", ""};
constexpr FindingSpec kDriverTooOld = {
    "nccl.library/driver-too-old", Status::Fail,
    "{library}: NCCL needs a driver supporting CUDA ≥ 11.3 (CUDA_DRIVER_MIN_VERSION); {driver} is older",
    "Install a driver ≥ {min_driver} (CUDA 11.3) or newer."};
constexpr FindingSpec kKnownIssue = {"nccl.library/known-issue", Status::Warn,
                                     "{library} has a known problem: {problem}", PREFLIGHT_ISSUE_FIX};
constexpr FindingSpec kKnownIssueEnv = {"nccl.library/known-issue-env", Status::Fail,
                                        "{library} with {variable}={value} (set here): {problem}", PREFLIGHT_ISSUE_FIX};
constexpr FindingSpec kKnownIssueGpu = {"nccl.library/known-issue-gpu", Status::Warn, "{library} on {gpu}: {problem}",
                                        PREFLIGHT_ISSUE_FIX};
constexpr FindingSpec kKnownIssueGpuUnknown = {
    "nccl.library/known-issue-gpu-unknown", Status::Warn,
    "{library} on {gpu_model} GPUs (the GPU models are not known here): {problem}", PREFLIGHT_ISSUE_FIX};
constexpr FindingSpec kKnownIssueGdr = {"nccl.library/known-issue-gdr", Status::Warn,
                                        "{library} with GPUDirect RDMA: {problem}", PREFLIGHT_ISSUE_FIX};
constexpr FindingSpec kKnownIssueWhen = {"nccl.library/known-issue-when", Status::Warn,
                                         "{library} (when {condition}): {problem}", PREFLIGHT_ISSUE_FIX};
#undef PREFLIGHT_ISSUE_FIX
#undef PREFLIGHT_CPU_TORCH
#undef PREFLIGHT_INSTALL_NCCL

constexpr std::array kFindings = {kCpuTorchNoGpus,
                                  kCpuTorchGpusUnknown,
                                  kCpuTorch,
                                  kLinkedIn,
                                  kTorchNcclMissing,
                                  kMissingSymbols,
                                  kNotProbed,
                                  kOutOfBudget,
                                  kNotFound,
                                  kNotRead,
                                  kVersionNotRead,
                                  kLoadFailed,
                                  kVersionUnreadable,
                                  kCudaBuildUnreadable,
                                  kCudaBuildTooNew,
                                  kCudaBuildMinorCompat,
                                  kCudaBuildForwardCompat,
                                  kCudaBuildUnjudged,
                                  kCudaBuildRuns,
                                  kDriverTooOld,
                                  kKnownIssue,
                                  kKnownIssueEnv,
                                  kKnownIssueGpu,
                                  kKnownIssueGpuUnknown,
                                  kKnownIssueGdr,
                                  kKnownIssueWhen};

/// The row of the table for a judgement of the CUDA build against the driver.
const FindingSpec& cuda_build_finding(const CudaJudgement& j) {
  switch (j.status) {
    case Status::Fail: return kCudaBuildTooNew;
    case Status::Warn: return j.rule == "minor-version" ? kCudaBuildMinorCompat : kCudaBuildForwardCompat;
    case Status::Pass: return kCudaBuildRuns;
    default: return kCudaBuildUnjudged;
  }
}

// NCCL's CUDA_DRIVER_MIN_VERSION (src/misc/cudawrap.cc): below it, NCCL's CUDA init fails.
const Version& nccl_min_driver_cuda() {
  static const Version v = Version::of({11, 3});
  return v;
}

void add_known_issues(const CheckContext& ctx, const Version& version, const std::string& lib_text,
                      const GpusView& gpus, const CompatMatrix& m, VerdictBuilder& b) {
  nlohmann::json seen = nlohmann::json::array();
  for (const NcclIssueRow* row : m.nccl_issues_for(version)) {
    const std::string& cond = row->condition;
    const auto issue = [&](nlohmann::json more = nlohmann::json::object()) {
      nlohmann::json p = {{"library", lib_text},
                          {"problem", row->problem},
                          {"issue", row->id},
                          {"issue_fix", row->fix},
                          {"issue_source", row->source}};
      p.update(more);
      return p;
    };
    nlohmann::json ev = {{"id", row->id}, {"condition", cond}, {"problem", row->problem}, {"fix", row->fix}};
    const std::string mitigated = row->mitigated_by([&](const std::string& name) { return ctx.facts.env.get(name); });
    if (!mitigated.empty()) {
      // The advice is followed: the problem is avoided, and nothing tells the user to undo it.
      b.note(lib_text + " has known problem " + row->id + " (" + row->problem + "), mitigated by " + mitigated +
             " (set here)");
      ev["applies"] = false;
      ev["mitigated_by"] = mitigated;
      seen.push_back(std::move(ev));
      continue;
    }
    // NCCL's problems bite where it runs on GPUs: on a node or image known to have none (a CPU-only
    // node, --target-gpu none), a row about GPUs or about every use is a note, never a WARN.
    const bool needs_gpus = cond == "-" || cond.empty() || cond.starts_with("gpu:") || cond == "gdr";
    if (needs_gpus && gpus.known && gpus.gpus.empty()) {
      b.note(lib_text + " has known problem " + row->id + " where GPUs run it (" + row->problem +
             "); the job has no GPU here");
      ev["applies"] = false;
    } else if (cond == "-" || cond.empty()) {
      b.add(kKnownIssue, issue());
      ev["applies"] = true;
    } else if (cond.starts_with("env:")) {
      const std::string spec = cond.substr(4);
      const std::size_t eq = spec.find('=');
      const std::string name = spec.substr(0, eq);
      const std::string want = eq == std::string::npos ? std::string() : spec.substr(eq + 1);
      const std::optional<std::string> have = ctx.facts.env.get(name);
      const bool applies = have && std::string(trim(*have)) == want;
      ev["applies"] = applies;
      if (applies) {
        b.add(kKnownIssueEnv, issue({{"variable", name}, {"value", want}}));
      }
    } else if (cond.starts_with("gpu:")) {
      const std::string gpu = to_lower(cond.substr(4));
      bool names_known = !gpus.gpus.empty();
      std::string hit;
      for (const GpuView& g : gpus.gpus) {
        if (g.name.empty()) names_known = false;
        if (!g.name.empty() && to_lower(g.name).find(gpu) != std::string::npos && hit.empty()) hit = g.label;
      }
      ev["applies"] = !hit.empty() || !names_known;
      if (!hit.empty()) {
        b.add(kKnownIssueGpu, issue({{"gpu", hit}}));
      } else if (!names_known) {
        b.add(kKnownIssueGpuUnknown, issue({{"gpu_model", cond.substr(4)}}));
      }
    } else if (cond == "gdr") {
      // GPUDirect RDMA is nvidia_peermem (or nv_peer_mem) loaded: a WARN where it is, nothing where
      // it is not, and a note where that is not known (an image, a capture).
      const bool* gdr = ctx.facts.net.gpudirect_rdma.value();
      ev["applies"] = gdr != nullptr ? nlohmann::json(*gdr) : nlohmann::json("not known");
      if (gdr != nullptr && *gdr) {
        b.add(kKnownIssueGdr, issue());
      } else if (gdr == nullptr) {
        b.note(lib_text + " has known problem " + row->id +
               " with GPUDirect RDMA, if the job's nodes use it: " + row->problem + " (" + row->fix + ")");
      }
    } else if (cond == "cuda-graphs") {
      // Whether the job captures CUDA graphs (torch.compile's reduce-overhead mode, CUDA graph trees,
      // Megatron's --enable-cuda-graph) is no fact preflight can read: a note where GPUs run the job,
      // nothing where none does. Never a WARN (under --strict, a FAIL) on an assumption.
      ev["applies"] = gpus.gpus.empty() ? nlohmann::json(false) : nlohmann::json("if the job captures CUDA graphs");
      if (!gpus.gpus.empty()) {
        b.note(lib_text + " has known problem " + row->id + " if the job captures CUDA graphs: " + row->problem + " (" +
               row->fix + ")");
      }
    } else {
      b.add(kKnownIssueWhen, issue({{"condition", cond}}));
      ev["applies"] = true;
    }
    seen.push_back(std::move(ev));
  }
  if (!seen.empty()) b.evidence()["known_issues"] = std::move(seen);
}

Verdict run(const CheckContext& ctx) {
  const CompatMatrix& m = compat_matrix(ctx);
  const RuntimeFacts& rt = ctx.facts.gpu.runtime;
  const Probed<NcclLibrary>& probed = ctx.facts.gpu.nccl;

  VerdictBuilder b;
  b.evidence()["candidates"] = rt.nccl_candidates;

  // What the job's framework loads decides which library is judged (the same model as cuda.runtime).
  const std::vector<const FrameworkBuild*> cuda_fws = cuda_frameworks(rt);
  const std::vector<const FrameworkBuild*> cpu_fws = cpu_frameworks(rt);
  const LibraryCandidate* front = rt.nccl_candidates.empty() ? nullptr : &rt.nccl_candidates.front();
  const std::string present = front == nullptr ? std::string("no libnccl.so.2 was found either")
                                               : "the " + front->path + " on the node is not loaded by it";
  if (cuda_fws.empty() && !cpu_fws.empty() && (front == nullptr || front->loaded_by.empty())) {
    const FrameworkBuild& fw = *cpu_fws.front();
    const GpuPresence gpus = gpu_presence(ctx);
    const nlohmann::json what = {{"torch", fw.version}, {"torch_file", fw.path}, {"present", present}};
    if (!gpus.has_gpus) return Verdict::of(kCpuTorchGpusUnknown, what, b.evidence());
    nlohmann::json params = what;
    params["gpus"] = gpus.text;
    return Verdict::of(*gpus.has_gpus ? kCpuTorch : kCpuTorchNoGpus, std::move(params), b.evidence());
  }
  for (const FrameworkBuild* fw : cuda_fws) {
    if (fw->library.empty()) continue;  // not read from torch's own library: the candidates decide
    if (fw->nccl_via.starts_with("linked in")) {
      b.evidence()["framework_nccl"] = fw->nccl_via;
      return Verdict::of(kLinkedIn, {{"torch", fw->version}, {"torch_library", fw->library}, {"present", present}},
                         b.evidence());
    }
    if (!fw->nccl_symbols.empty()) b.evidence()["framework_nccl_symbols"] = fw->nccl_symbols;
    if (!fw->nccl_missing.empty()) {
      b.evidence()["missing_symbols"] = fw->nccl_missing;
      return Verdict::of(kMissingSymbols,
                         {{"torch", fw->version},
                          {"torch_library", fw->library},
                          {"missing_count", fw->nccl_missing.size()},
                          {"function_noun", fw->nccl_missing.size() == 1 ? "function" : "functions"},
                          {"nccl_path", fw->nccl_path},
                          {"missing", join(fw->nccl_missing, ", ")},
                          {"first_missing", fw->nccl_missing.front()},
                          {"compared", fw->nccl_symbols},
                          {"nccl_via", fw->nccl_via},
                          {"cuda_major", Version::parse(std::string(trim(fw->cuda)))->major()}},
                         b.evidence());
    }
    if (fw->nccl_path.empty()) {
      return Verdict::of(kTorchNcclMissing,
                         {{"torch", fw->version},
                          {"torch_library", fw->library},
                          {"nccl_via", fw->nccl_via},
                          {"cuda_major", Version::parse(std::string(trim(fw->cuda)))->major()}},
                         b.evidence());
    }
  }
  if (front != nullptr) b.evidence()["loaded_by"] = front->loaded_by;

  const NcclLibrary* lib = probed.value();
  if (lib == nullptr) {
    const ProbeError* err = probed.error();
    b.evidence()["error"] = to_string(err->code);
    b.evidence()["detail"] = probed.why();
    switch (err->code) {
      case ProbeErrc::NotProbed: return Verdict::of(kNotProbed, {{"why", probed.why()}}, b.evidence());
      case ProbeErrc::LibraryMissing:
        return Verdict::of(kNotFound, {{"searched", candidates_text(rt)}, {"why", probed.why()}}, b.evidence());
      case ProbeErrc::Unsupported:
        // --sysroot: a captured node's library is read by the capture's helper, never loaded here.
        return Verdict::of(kNotRead, {{"why", probed.why()}}, b.evidence());
      case ProbeErrc::ParseError: return Verdict::of(kVersionNotRead, {{"why", probed.why()}}, b.evidence());
      case ProbeErrc::OutOfBudget: return Verdict::of(kOutOfBudget, {{"why", probed.why()}}, b.evidence());
      default: return Verdict::of(kLoadFailed, {{"error", to_string(err->code)}, {"why", probed.why()}}, b.evidence());
    }
  }

  b.evidence()["path"] = lib->path;
  b.evidence()["source"] = lib->source;
  b.evidence()["version"] = lib->version;
  b.evidence()["version_code"] = lib->version_code;
  b.evidence()["cuda_build"] = lib->cuda_build;

  std::optional<Version> version = Version::parse(trim(lib->version));
  if (!version && lib->version_code > 0) version = Version::from_nccl_code(lib->version_code);
  const std::string where = lib->path.empty() ? std::string("an unnamed file") : lib->path;
  const std::string from = where + (lib->source.empty() ? std::string() : " (" + lib->source + ")");
  if (!version) {
    return Verdict::of(kVersionUnreadable,
                       {{"file", from}, {"version", lib->version}, {"version_code", lib->version_code}}, b.evidence());
  }
  std::string lib_text = "NCCL " + version->str() + " from " + from;
  if (front != nullptr && !front->loaded_by.empty() && front->loaded_by != "--nccl-lib" &&
      front->loaded_by.find("no framework") == std::string::npos)
    lib_text += ", which " + front->loaded_by + " loads";

  const DriverView driver = driver_view(ctx, m);
  const GpusView gpus = gpu_view(ctx, m);
  b.evidence()["driver"] = driver.evidence();

  const std::optional<Version> build = Version::parse(trim(lib->cuda_build));
  if (!build) {
    b.add(kCudaBuildUnreadable, {{"library", lib_text}, {"cuda_build", lib->cuda_build}, {"driver", driver.label()}});
  } else {
    const CudaJudgement j =
        judge_cuda_vs_driver(*build, "its CUDA " + build->str() + " build", driver, gpus, m, "an NCCL build");
    b.add(cuda_build_finding(j), {{"library", lib_text}, {"judgement", j.summary}, {"fix", j.remedy}});
    b.evidence()["rule"] = j.rule;
  }
  if (driver.cuda && *driver.cuda < nccl_min_driver_cuda()) {
    const std::optional<Version> min_driver = m.min_driver_for(nccl_min_driver_cuda());
    b.add(kDriverTooOld, {{"library", lib_text},
                          {"driver", driver.label()},
                          {"min_driver", min_driver ? min_driver->str() : std::string("465")}});
  }

  add_known_issues(ctx, *version, lib_text, gpus, m, b);
  Verdict v = b.build();
  if (driver.missing && v.status == Status::Unknown) v.cause = "driver.loaded";
  return v;
}

constexpr std::string_view kExplain = R"EXPLAIN(What it reads
  The libnccl.so.2 the job will load, from the same model as cuda.runtime: --nccl-lib, else the
  one torch's own library needs (DT_NEEDED libnccl.so.2 of torch/lib/libtorch_cuda.so, resolved as
  ld.so does from its DT_RPATH/DT_RUNPATH, LD_LIBRARY_PATH, ld.so.conf; the nvidia-nccl wheel),
  else, without a framework, the loader path. The NCCL probe loads it in a contained helper: its
  real path, ncclGetVersion, and the CUDA it was built for ("NCCL version 2.28.9+cuda12.9"). Against it: the driver's CUDA (cuDriverGetVersion) and
  version, or --target-driver in the image profile; the GPUs' names for GPU-specific problems;
  NCCL_* variables for variable-specific problems; matrix/nccl_known_issues.tsv. The nccl*
  symbols torch's library leaves undefined (.dynsym) against those the loaded libnccl.so.2 exports.

Failures
  FAIL     libnccl.so.2 not found where the job looks (the searched candidates are named).
  FAIL     it could not be loaded: dlopen error, a crash or hang in ncclGetVersion, an API error.
  UNKNOWN  --sysroot: the tree holds no report of the library (only `preflight capture` records
           one; a captured node's library is never loaded on the machine that judges it).
  FAIL     its CUDA build is newer than the driver beyond minor-version compatibility (the same
           rules as cuda.runtime: "NCCL 2.28.9 ... its CUDA 13.0 build needs driver >= 580.65.06;
           driver 535.104.05 (CUDA 12.2) supports CUDA <= 12.2").
  FAIL     the driver's CUDA is below 11.3, NCCL's CUDA_DRIVER_MIN_VERSION.
  FAIL     the framework is a CPU-only torch where the job will have GPUs: it has no NCCL
           (init_process_group("nccl") fails); a system libnccl is not loaded by it. SKIP where
           the job has no GPUs (a CPU-only node, --target-gpu none), UNKNOWN where that cannot
           be told.
  FAIL     torch's library needs libnccl.so.2 and the loader finds it nowhere: import torch fails.
  FAIL     the libnccl.so.2 torch loads does not export every nccl* function torch's library
           needs (its undefined dynamic symbols against the library's exported ones, both read
           from .dynsym): Python loads extensions with RTLD_NOW, so import torch fails with
           "undefined symbol: ncclCommRegister" (an older NCCL wheel or a system libnccl found
           first). The missing functions are named.
  UNKNOWN  torch has NCCL linked in (no DT_NEEDED libnccl: conda builds, old "big" wheels): its
           version cannot be read from files (torch.cuda.nccl.version() tells it).
  FAIL     a known problem whose trigger is set here (NCCL 2.26.2 with NCCL_CUMEM_ENABLE=0: a
           multi-node send/recv hang).
  WARN     its CUDA build runs through minor-version compatibility (same major, newer minor).
  WARN     a known problem of the release (2.19.x cuMem deadlocks, 2.18.1 on H100, ...): the
           matrix names the condition, the problem and the fix. A condition is judged on facts: on
           the GPU models present, with GPUDirect RDMA where nvidia_peermem is loaded (nothing
           where it is not, a note where that is unknown); "with CUDA graphs" is a note where GPUs
           run the job, never a WARN (whether the job captures graphs is not a fact preflight has).
  UNKNOWN  the probe did not run, the version or the CUDA build could not be read, or there is no
           driver to judge against (driver.loaded reports it; image profile: --target-driver), or
           the driver is newer than the matrix's newest branch ("driver 700 is newer than this
           matrix (newest R620): update the matrix or pass --matrix").

Fix
  Install an NCCL built for CUDA <= the driver's (or a newer driver), upgrade past releases with
  known problems, or name the right file with --nccl-lib PATH.)EXPLAIN";

}  // namespace

extern const CheckSpec kNcclLibrary = {
    "nccl.library",
    Scope::Node,
    "the libnccl the job loads: its version, its CUDA build vs the driver, known-bad releases",
    kExplain,
    kInAll,
    "",
    &run,
    "cuda_runtime,nccl,gpu_driver,pcie",
    false,
    "driver.loaded",
    {},
    nullptr,
    kFindings};

}  // namespace nccl_library_check
}  // namespace preflight
