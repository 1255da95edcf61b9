// SPDX-License-Identifier: MIT
// nccl.library: which libnccl the job loads, its version, the CUDA it was built for vs the driver
// (NCCL's "+cudaX.Y" judged like a CUDA runtime: judge_cuda_vs_driver in checks/cuda_compat.hpp),
// and releases with known problems (matrix/nccl_known_issues.tsv).
#include <algorithm>

#include "checks/check.hpp"
#include "checks/cuda_compat.hpp"
#include "core/text.hpp"

namespace preflight {
namespace {

std::string candidates_text(const RuntimeFacts& rt) {
  std::vector<std::string> items;
  for (const LibraryCandidate& c : rt.nccl_candidates) {
    items.push_back(c.path + (c.source.empty() ? std::string() : " (" + c.source + ")"));
  }
  if (items.empty()) items = rt.searched;
  return items.empty() ? std::string("nothing") : join(items, ", ");
}

constexpr std::string_view kInstallNccl =
    "Install NCCL where the job loads it: the framework's wheel (pip install nvidia-nccl-cu12 / nvidia-nccl-cu13) or "
    "the system package (libnccl2), or name the file with --nccl-lib PATH.";

// NCCL's CUDA_DRIVER_MIN_VERSION (src/misc/cudawrap.cc): below it, NCCL's CUDA init fails.
const Version& nccl_min_driver_cuda() {
  static const Version v = Version::of({11, 3});
  return v;
}

void add_known_issues(const CheckContext& ctx, const Version& version, const std::string& lib_text, const GpusView& gpus,
                      const CompatMatrix& m, VerdictBuilder& b) {
  nlohmann::json seen = nlohmann::json::array();
  for (const NcclIssueRow* row : m.nccl_issues_for(version)) {
    const std::string& cond = row->condition;
    const std::string fix = "Known problem " + row->id + ": " + row->fix + " (" + row->source + ").";
    nlohmann::json ev = {{"id", row->id}, {"condition", cond}, {"problem", row->problem}, {"fix", row->fix}};
    const std::string mitigated = row->mitigated_by([&](const std::string& name) { return ctx.facts.env.get(name); });
    if (!mitigated.empty()) {
      // The advice is followed: the problem is avoided, and nothing tells the user to undo it.
      b.note(lib_text + " has known problem " + row->id + " (" + row->problem + "), mitigated by " + mitigated + " (set here)");
      ev["applies"] = false;
      ev["mitigated_by"] = mitigated;
      seen.push_back(std::move(ev));
      continue;
    }
    if (cond == "-" || cond.empty()) {
      b.add(Status::Warn, lib_text + " has a known problem: " + row->problem, fix);
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
        b.add(Status::Fail, lib_text + " with " + name + "=" + want + " (set here): " + row->problem, fix);
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
        b.add(Status::Warn, lib_text + " on " + hit + ": " + row->problem, fix);
      } else if (!names_known) {
        b.add(Status::Warn, lib_text + " on " + cond.substr(4) + " GPUs (the GPU models are not known here): " + row->problem,
              fix);
      }
    } else if (cond == "gdr") {
      b.add(Status::Warn, lib_text + " with GPUDirect RDMA: " + row->problem, fix);
      ev["applies"] = true;
    } else if (cond == "cuda-graphs") {
      b.add(Status::Warn, lib_text + " with CUDA graphs: " + row->problem, fix);
      ev["applies"] = true;
    } else {
      b.add(Status::Warn, lib_text + " (when " + cond + "): " + row->problem, fix);
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
    const std::string what = "torch " + fw.version + " (" + fw.path + ") is a CPU-only build: it has no NCCL (" + present + ")";
    if (gpus.has_gpus && !*gpus.has_gpus) return Verdict::skip(what + "; the job has " + gpus.text, b.evidence());
    if (!gpus.has_gpus)
      return Verdict::unknown(what + "; whether the job will have GPUs could not be told",
                              "Install a CUDA build of torch (see cuda.runtime), which brings its NCCL.", b.evidence());
    return Verdict::fail(what + "; the job will have " + gpus.text + ": init_process_group(\"nccl\") fails with "
                             "\"Distributed package doesn't have NCCL built in\"",
                         "Install a CUDA build of torch (cuda.runtime names the one for this driver); it brings its "
                         "own NCCL (the nvidia-nccl wheel).",
                         b.evidence());
  }
  for (const FrameworkBuild* fw : cuda_fws) {
    if (fw->library.empty()) continue;  // not read from torch's own library: the candidates decide
    if (fw->nccl_via.starts_with("linked in")) {
      b.evidence()["framework_nccl"] = fw->nccl_via;
      return Verdict::unknown("torch " + fw->version + " has NCCL linked into " + fw->library +
                                  " (it needs no libnccl.so.2): its version cannot be read from files, and " + present,
                              "Read it where the job runs: python -c 'import torch; print(torch.cuda.nccl.version())'; "
                              "or name the library the job loads with --nccl-lib PATH.",
                              b.evidence());
    }
    if (fw->nccl_path.empty()) {
      return Verdict::fail("torch " + fw->version + " needs libnccl.so.2 (" + fw->library + ") and " + fw->nccl_via +
                               ": import torch fails with \"libnccl.so.2: cannot open shared object file\"",
                           "Reinstall torch with its NCCL wheel (pip install --force-reinstall torch, which pulls "
                           "nvidia-nccl-cu" + std::to_string(Version::parse(std::string(trim(fw->cuda)))->major()) +
                               "), or put the directory holding libnccl.so.2 on LD_LIBRARY_PATH.",
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
      case ProbeErrc::NotProbed:
        return Verdict::unknown("the NCCL library was not probed: " + probed.why(),
                                "Rerun preflight; if this persists, report it with the --json output.", b.evidence());
      case ProbeErrc::LibraryMissing:
        return Verdict::fail("libnccl.so.2 not found where the job looks (searched: " + candidates_text(rt) + "): " +
                                 probed.why(),
                             std::string(kInstallNccl), b.evidence());
      case ProbeErrc::Unsupported:
        // --sysroot: a captured node's library is read by the capture's helper, never loaded here.
        return Verdict::unknown("the NCCL library was not read: " + probed.why(),
                                "Capture the node with `preflight capture` (it records the library's version), or "
                                "run preflight on the node.",
                                b.evidence());
      case ProbeErrc::ParseError:
        return Verdict::unknown("the NCCL version could not be read: " + probed.why(),
                                "Check the library named (a broken or stripped build?), or name another with --nccl-lib.",
                                b.evidence());
      default:
        return Verdict::fail("libnccl.so.2 could not be loaded (" + std::string(to_string(err->code)) + "): " + probed.why(),
                             "Fix or replace the library named (the job loads the same file and fails the same way). " +
                                 std::string(kInstallNccl),
                             b.evidence());
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
    return Verdict::unknown("the NCCL version of " + from + " is unreadable (ncclGetVersion gave '" + lib->version + "', code " +
                                std::to_string(lib->version_code) + ")",
                            "Check the library named (a broken build?), or name another with --nccl-lib.", b.evidence());
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
    b.add(Status::Unknown,
          lib_text + ": the CUDA it was built for is unreadable ('" + lib->cuda_build +
              "'; NCCL prints it as \"NCCL version X+cudaA.B\"), so it cannot be judged against " + driver.label(),
          "Check the library named, or use an NVIDIA NCCL build (wheel nvidia-nccl-cu12/cu13 or libnccl2).");
  } else {
    const CudaJudgement j =
        judge_cuda_vs_driver(*build, "its CUDA " + build->str() + " build", driver, gpus, m, "an NCCL build");
    b.add(j.status, lib_text + ": " + j.summary, j.remedy);
    b.evidence()["rule"] = j.rule;
  }
  if (driver.cuda && *driver.cuda < nccl_min_driver_cuda()) {
    b.add(Status::Fail,
          lib_text + ": NCCL needs a driver supporting CUDA ≥ 11.3 (CUDA_DRIVER_MIN_VERSION); " + driver.label() + " is older",
          "Install a driver ≥ " + (m.min_driver_for(nccl_min_driver_cuda()) ? m.min_driver_for(nccl_min_driver_cuda())->str()
                                                                             : std::string("465")) +
              " (CUDA 11.3) or newer.");
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
  NCCL_* variables for variable-specific problems; matrix/nccl_known_issues.tsv.

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
  UNKNOWN  torch has NCCL linked in (no DT_NEEDED libnccl: conda builds, old "big" wheels): its
           version cannot be read from files (torch.cuda.nccl.version() tells it).
  FAIL     a known problem whose trigger is set here (NCCL 2.26.2 with NCCL_CUMEM_ENABLE=0: a
           multi-node send/recv hang).
  WARN     its CUDA build runs through minor-version compatibility (same major, newer minor).
  WARN     a known problem of the release (2.19.x cuMem deadlocks, 2.18.1 on H100, ...): the
           matrix names the condition, the problem and the fix.
  UNKNOWN  the probe did not run, the version or the CUDA build could not be read, or there is no
           driver to judge against (driver.loaded reports it; image profile: --target-driver), or
           the driver is newer than the matrix's newest branch ("driver 700 is newer than this
           matrix (newest R620): update the matrix or pass --matrix").

Fix
  Install an NCCL built for CUDA <= the driver's (or a newer driver), upgrade past releases with
  known problems, or name the right file with --nccl-lib PATH.)EXPLAIN";

}  // namespace

extern const CheckSpec kNcclLibrary = {
    "nccl.library", Scope::Node, "the libnccl the job loads: its version, its CUDA build vs the driver, known-bad releases",
    kExplain, kInAll, "", &run, "cuda_runtime,nccl,gpu_driver,pcie", false, "driver.loaded"};

}  // namespace preflight
