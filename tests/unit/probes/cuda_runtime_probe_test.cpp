// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "probes/probe.hpp"
#include "test_paths.hpp"

namespace preflight {
namespace {

const std::string kDir = preflight::test_paths::fixtures_dir() + "/cuda_runtime/";

RuntimeFacts probe(const std::string& fixture, std::map<std::string, std::string> env, Options options = {}) {
  const FileSystem files(kDir + fixture);
  const EnvSnapshot snapshot(std::move(env));
  RankFacts facts;
  probe_cuda_runtime(ProbeContext{files, snapshot, options}, facts);
  return facts.gpu.runtime;
}

// "kind version path", and " [not loaded]" for a runtime nothing of the job loads.
std::vector<std::string> runtimes(const RuntimeFacts& r) {
  std::vector<std::string> out;
  for (const CudaRuntime& c : r.runtimes)
    out.push_back(c.kind + " " + c.version + " " + c.path + (c.loaded_by.empty() ? " [not loaded]" : ""));
  return out;
}

std::vector<std::string> nccl(const RuntimeFacts& r) {
  std::vector<std::string> out;
  for (const LibraryCandidate& c : r.nccl_candidates) out.push_back(c.path + " (" + c.source + ")");
  return out;
}

bool searched(const RuntimeFacts& r, const std::string& dir) {
  for (const std::string& s : r.searched) {
    if (s == dir) return true;
  }
  return false;
}

TEST(CudaRuntimeProbe, Cu118SystemDistPackages) {
  const RuntimeFacts r = probe("cu118", {});
  const std::string site = "/usr/local/lib/python3.10/dist-packages";
  // torch's runtime is the wheel's libcudart.so.11.0 (CUDA 11's SONAME): one row, the wheel's version.
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{
                             "torch 11.8.89 " + site + "/nvidia/cuda_runtime/lib/libcudart.so.11.0",
                         }));
  ASSERT_EQ(r.frameworks.size(), 1u);
  EXPECT_EQ(r.frameworks[0].name, "torch");
  EXPECT_EQ(r.frameworks[0].version, "2.5.1+cu118");
  EXPECT_EQ(r.frameworks[0].cuda, "11.8");
  EXPECT_EQ(
      r.runtimes[0].detail,
      "torch 2.5.1+cu118 (built for CUDA 11.8) loads libcudart.so.11.0 from nvidia-cuda-runtime-cu11 11.8.89 at " +
          site +
          "/nvidia/cuda_runtime/lib/libcudart.so.11.0 (the wheel layout (no torch library readable): "
          "$ORIGIN/../../nvidia/cuda_runtime/lib); requires nvidia-cuda-runtime-cu11==11.8.89, "
          "nvidia-nccl-cu11==2.21.5");
  EXPECT_EQ(r.runtimes[0].loaded_by, "torch 2.5.1+cu118");
  EXPECT_EQ(r.frameworks[0].build, "cuda");
  EXPECT_EQ(r.frameworks[0].cudart_soname, "libcudart.so.11.0");
  EXPECT_TRUE(r.frameworks[0].library.empty());  // no torch/lib in the fixture: the wheel layout stands in
  EXPECT_EQ(nccl(r),
            (std::vector<std::string>{site + "/nvidia/nccl/lib/libnccl.so.2 (wheel nvidia-nccl-cu11 2.21.5)"}));
  EXPECT_TRUE(searched(r, site));
  EXPECT_TRUE(searched(r, "/usr/lib/python3/dist-packages"));
  EXPECT_TRUE(searched(r, "/usr/lib/x86_64-linux-gnu"));
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  EXPECT_TRUE(r.nvidia_require_cuda.empty());
}

TEST(CudaRuntimeProbe, Cu121VirtualEnv) {
  const RuntimeFacts r = probe("cu121", {{"VIRTUAL_ENV", "/opt/venv"}});
  const std::string site = "/opt/venv/lib/python3.11/site-packages";
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{
                             "torch 12.1.105 " + site + "/nvidia/cuda_runtime/lib/libcudart.so.12",
                         }));
  ASSERT_EQ(r.frameworks.size(), 1u);
  EXPECT_EQ(r.frameworks[0].version, "2.4.1");  // the PyPI default build has no +cu121 tag
  EXPECT_EQ(r.frameworks[0].cuda, "12.1");
  EXPECT_EQ(nccl(r),
            (std::vector<std::string>{site + "/nvidia/nccl/lib/libnccl.so.2 (wheel nvidia-nccl-cu12 2.20.5)"}));
  EXPECT_TRUE(r.problems.empty());
}

TEST(CudaRuntimeProbe, Cu124SitePackagesOptionAndNcclLib) {
  Options o;
  o.site_packages = {"/site", "/missing"};
  o.nccl_lib = "/opt/nccl/libnccl.so.2";  // does not exist: still the first candidate
  const RuntimeFacts r = probe("cu124", {}, o);
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{
                             "torch 12.4.127 /site/nvidia/cuda_runtime/lib/libcudart.so.12",
                         }));
  EXPECT_EQ(r.frameworks.at(0).version, "2.5.1+cu124");
  EXPECT_EQ(nccl(r), (std::vector<std::string>{
                         "/opt/nccl/libnccl.so.2 (--nccl-lib)",
                         "/site/nvidia/nccl/lib/libnccl.so.2 (wheel nvidia-nccl-cu12 2.21.5)",
                     }));
  EXPECT_EQ(r.problems, (std::vector<std::string>{"--site-packages /missing: does not exist"}));
  // An explicit --site-packages replaces discovery.
  EXPECT_FALSE(searched(r, "/usr/lib/python3/dist-packages"));
}

TEST(CudaRuntimeProbe, Cu128CondaAndPython) {
  const RuntimeFacts conda = probe("cu128", {{"CONDA_PREFIX", "/opt/conda"}});
  const std::string site = "/opt/conda/lib/python3.12/site-packages";
  const std::vector<std::string> want{
      "torch 12.8.90 " + site + "/nvidia/cuda_runtime/lib/libcudart.so.12",
  };
  EXPECT_EQ(runtimes(conda), want);
  EXPECT_EQ(conda.frameworks.at(0).version, "2.9.1+cu128");

  for (const char* exe : {"/opt/conda/bin/python3.12", "/opt/conda/bin/python3"}) {
    Options o;
    o.python = exe;
    const RuntimeFacts r = probe("cu128", {}, o);
    EXPECT_EQ(runtimes(r), want) << exe;
    EXPECT_EQ(nccl(r),
              (std::vector<std::string>{site + "/nvidia/nccl/lib/libnccl.so.2 (wheel nvidia-nccl-cu12 2.27.5)"}));
    EXPECT_TRUE(r.problems.empty()) << exe;
  }
  Options bad;
  bad.python = "/usr/bin/python3.9";
  const RuntimeFacts r = probe("cu128", {}, bad);
  EXPECT_TRUE(r.runtimes.empty());
  EXPECT_EQ(r.problems,
            (std::vector<std::string>{"--python /usr/bin/python3.9: no /usr/lib/python3.*/{site,dist}-packages"}));
}

TEST(CudaRuntimeProbe, Cu130UserSiteCuda13Layout) {
  const RuntimeFacts r = probe("cu130", {{"HOME", "/home/user"}});
  const std::string site = "/home/user/.local/lib/python3.12/site-packages";
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{
                             "torch 13.0.96 " + site + "/nvidia/cu13/lib/libcudart.so.13",
                         }));
  EXPECT_NE(r.runtimes[0].detail.find("loads libcudart.so.13 from nvidia-cuda-runtime 13.0.96 at"), std::string::npos)
      << r.runtimes[0].detail;
  EXPECT_EQ(r.frameworks.at(0).version, "2.11.0");
  EXPECT_EQ(r.frameworks.at(0).cuda, "13.0");
  EXPECT_EQ(nccl(r),
            (std::vector<std::string>{site + "/nvidia/nccl/lib/libnccl.so.2 (wheel nvidia-nccl-cu13 2.28.9)"}));
  EXPECT_TRUE(r.problems.empty());
}

TEST(CudaRuntimeProbe, ToolkitLoaderPathAndLdSoConf) {
  Options o;
  o.nccl_lib = "/opt/extra/lib/libnccl.so.2";  // also on LD_LIBRARY_PATH: listed once, as --nccl-lib
  o.cuda_runtimes = {"/usr/local/cuda/lib64/libcudart.so.12", "/x/libcudart.so.12"};
  const RuntimeFacts r =
      probe("toolkit",
            {{"LD_LIBRARY_PATH", "/opt/extra/lib:/usr/local/cuda/lib64:"}, {"CUDA_HOME", "/usr/local/cuda-12.6/"}}, o);
  // --cuda-runtime names the toolkit's own library: one row; it decides, the loader path's other
  // libcudart does not.
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{
                             "explicit 12.6.77 /usr/local/cuda/lib64/libcudart.so.12",
                             "loader 12.4.127 /opt/extra/lib/libcudart.so.12.4.127 [not loaded]",
                         }));
  EXPECT_EQ(r.runtimes[0].detail, "--cuda-runtime (the CUDA toolkit at /usr/local/cuda)");
  EXPECT_EQ(r.runtimes[0].loaded_by, "--cuda-runtime");
  EXPECT_EQ(r.runtimes[1].detail, "LD_LIBRARY_PATH");
  EXPECT_EQ(nccl(r), (std::vector<std::string>{
                         "/opt/extra/lib/libnccl.so.2 (--nccl-lib)",
                         "/usr/lib/x86_64-linux-gnu/libnccl.so.2 (ld.so.conf)",
                     }));
  EXPECT_EQ(r.problems, (std::vector<std::string>{"--cuda-runtime /x/libcudart.so.12: does not exist"}));
  EXPECT_TRUE(searched(r, "/usr/local/lib/x86_64-linux-gnu"));  // from the ld.so.conf.d include
  EXPECT_FALSE(searched(r, "/nowhere"));                        // README does not match *.conf
  EXPECT_TRUE(r.frameworks.empty());
}

TEST(CudaRuntimeProbe, ToolkitViaLdSoConfOnly) {
  const RuntimeFacts r = probe("toolkit", {});
  // The toolkit and its library on the loader path are one runtime; without a framework it decides.
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{"toolkit 12.6.77 /usr/local/cuda/version.json"}));
  EXPECT_EQ(
      r.runtimes[0].detail,
      "/usr/local/cuda, version.json cuda_cudart.version; its libcudart.so.12 is on the loader path (ld.so.conf)");
  EXPECT_FALSE(r.runtimes[0].loaded_by.empty());
  EXPECT_EQ(nccl(r), (std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libnccl.so.2 (ld.so.conf)"}));
}

TEST(CudaRuntimeProbe, OldToolkitVersionTxt) {
  // /usr/local/cuda/lib64 is not a default directory: only the toolkit without LD_LIBRARY_PATH.
  EXPECT_EQ(runtimes(probe("toolkit_old", {})),
            (std::vector<std::string>{"toolkit 10.2.89 /usr/local/cuda/version.txt"}));
  EXPECT_EQ(runtimes(probe("toolkit_old", {{"LD_LIBRARY_PATH", "/usr/local/cuda/lib64"}})),
            (std::vector<std::string>{"toolkit 10.2.89 /usr/local/cuda/version.txt"}));
}

const char kNgcRequire[] =
    "cuda>=9.0 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 "
    "brand=nvidia,driver>=470,driver<471 brand=tesla,driver>=535,driver<536 brand=tesla,driver>=550,driver<551";

TEST(CudaRuntimeProbe, NgcContainer) {
  const RuntimeFacts r = probe("ngc", {{"CUDA_VERSION", "12.8.0.038"},
                                       {"NV_CUDA_CUDART_VERSION", "12.8.57-1"},
                                       {"NVIDIA_REQUIRE_CUDA", kNgcRequire},
                                       {"CUDA_DRIVER_VERSION", "570.86.10"},
                                       {"LD_LIBRARY_PATH",
                                        "/usr/local/cuda/compat/lib.real:/usr/local/lib/python3.12/dist-packages/"
                                        "torch/lib:/usr/local/cuda/compat/lib:/usr/local/nvidia/lib:"
                                        "/usr/local/nvidia/lib64:/usr/local/cuda/lib64"}});
  const std::string site = "/usr/local/lib/python3.12/dist-packages";
  // torch loads the image's toolkit runtime (LD_LIBRARY_PATH): the toolkit, its library and
  // CUDA_VERSION are that one runtime.
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{"torch 12.8.57 /usr/local/cuda/lib64/libcudart.so.12"}));
  EXPECT_NE(r.runtimes[0].detail.find("(the CUDA toolkit at /usr/local/cuda); CUDA_VERSION 12.8.0.038"),
            std::string::npos)
      << r.runtimes[0].detail;
  EXPECT_EQ(r.frameworks.at(0).version, "2.6.0a0+ecf3bae40a.nv25.01");
  EXPECT_EQ(r.nvidia_require_cuda, kNgcRequire);
  EXPECT_EQ(nccl(r), (std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libnccl.so.2 (default)"}));
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
}

TEST(CudaRuntimeProbe, GarbageIsReportedNeverThrown) {
  Options o;
  o.site_packages = {"/site"};
  const RuntimeFacts r = probe("garbage", {{"CUDA_VERSION", "twelve"}}, o);
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{"wheel 12 /site/nvidia/cuda_runtime/lib/libcudart.so.12"}));
  ASSERT_EQ(r.problems.size(), 5u);
  EXPECT_EQ(r.problems[0], "/etc/ld.so.conf: binary contents");
  EXPECT_EQ(r.problems[1], "/site/torch/version.py: binary contents, not Python source");
  EXPECT_EQ(r.problems[2],
            "/site/nvidia/cuda_runtime/lib/libcudart.so.12: no nvidia-cuda-runtime 12.x *.dist-info beside it; "
            "version from the file name");
  EXPECT_EQ(r.problems[3], "/usr/local/cuda/version.json: not valid JSON");
  EXPECT_EQ(r.problems[4], "CUDA_VERSION: not a version: \"twelve\"");
  EXPECT_TRUE(r.frameworks.empty());
}

TEST(CudaRuntimeProbe, CpuTorchHasNoRuntime) {
  Options o;
  o.site_packages = {"/site"};
  const RuntimeFacts r = probe("cpu", {}, o);
  EXPECT_TRUE(r.runtimes.empty());
  ASSERT_EQ(r.frameworks.size(), 1u);
  EXPECT_EQ(r.frameworks[0].version, "2.5.1+cpu");
  EXPECT_EQ(r.frameworks[0].cuda, "");
  EXPECT_TRUE(r.problems.empty());
}

TEST(CudaRuntimeProbe, SameSitePackagesTwiceIsScannedOnce) {
  Options o;
  o.site_packages = {"/site", "/site/", "/site/nvidia/.."};
  const RuntimeFacts r = probe("cu124", {}, o);
  EXPECT_EQ(r.runtimes.size(), 1u);
  EXPECT_EQ(r.nccl_candidates.size(), 1u);
  EXPECT_EQ(r.frameworks.size(), 1u);
}

TEST(CudaRuntimeProbe, FactsRoundTripThroughJson) {
  const RuntimeFacts r = probe("cu130", {{"HOME", "/home/user"}});
  const nlohmann::json j = r;
  const RuntimeFacts back = j.get<RuntimeFacts>();
  EXPECT_EQ(runtimes(back), runtimes(r));
  EXPECT_EQ(nccl(back), nccl(r));
}

}  // namespace
}  // namespace preflight

namespace preflight {
namespace {

// A toolkit assembled from the CUDA 13 wheels: no version.json, the wheels' dist-info kept in
// <root>/dist-info; /usr/local/cuda is an absolute link, resolved inside the sysroot.
TEST(CudaRuntimeProbe, ToolkitFromWheelDistInfo) {
  const RuntimeFacts r = probe("toolkit_wheels", {{"LD_LIBRARY_PATH", "/usr/local/cuda/lib64"}});
  EXPECT_EQ(runtimes(r), (std::vector<std::string>{
                             "toolkit 13.0.96 /usr/local/cuda/dist-info/nvidia_cuda_runtime-13.0.96.dist-info",
                         }));
  EXPECT_NE(r.runtimes[0].detail.find("its libcudart.so.13 is on the loader path (LD_LIBRARY_PATH)"), std::string::npos)
      << r.runtimes[0].detail;
  EXPECT_TRUE(r.problems.empty());
}

}  // namespace
}  // namespace preflight

namespace preflight {
namespace {

RuntimeFacts probe_tree(const MemoryTree& tree) {
  const FileSystem files(tree);
  const EnvSnapshot snapshot(std::map<std::string, std::string>{});
  const Options options;
  RankFacts facts;
  probe_cuda_runtime(ProbeContext{files, snapshot, options}, facts);
  return facts.gpu.runtime;
}

// A topology capture (hwloc-gather-topology) holds /sys and /proc only: every place searched is
// absent, which the check tells apart from a root file system with no runtime in it.
TEST(CudaRuntimeProbe, EveryPlaceSearchedIsAbsentInATreeWithoutLibraries) {
  MemoryTree tree;
  tree.dir("/sys/devices/system/node").dir("/proc");
  const RuntimeFacts r = probe_tree(tree);
  EXPECT_TRUE(r.runtimes.empty());
  EXPECT_TRUE(r.problems.empty());
  ASSERT_FALSE(r.searched.empty());
  EXPECT_EQ(r.absent, r.searched);
  EXPECT_TRUE(searched(r, "/usr/lib")) << nlohmann::json(r.searched).dump();
}

TEST(CudaRuntimeProbe, ARootFileSystemWithoutARuntimeHasTheLoaderDirectories) {
  MemoryTree tree;
  tree.dir("/usr/lib/x86_64-linux-gnu").dir("/proc").link("/lib", "usr/lib");
  const RuntimeFacts r = probe_tree(tree);
  EXPECT_TRUE(r.runtimes.empty());
  ASSERT_FALSE(r.searched.empty());
  EXPECT_LT(r.absent.size(), r.searched.size());
  for (const char* present : {"/usr/lib", "/usr/lib/x86_64-linux-gnu", "/lib", "/lib/x86_64-linux-gnu"}) {
    EXPECT_TRUE(searched(r, present)) << present;
    EXPECT_EQ(std::count(r.absent.begin(), r.absent.end(), present), 0) << present;
  }
}

// Without an interpreter to ask, the places in Python's own order, and the first torch is the one
// judged: the others are listed as not loaded by the job.
RuntimeFacts probe_env(const MemoryTree& tree, std::map<std::string, std::string> env) {
  const FileSystem files(tree);
  const EnvSnapshot snapshot(std::move(env));
  const Options options;
  RankFacts facts;
  probe_cuda_runtime(ProbeContext{files, snapshot, options}, facts);
  return facts.gpu.runtime;
}

std::string torch_py(const std::string& version, const std::string& cuda) {
  return "__version__ = '" + version + "'\ncuda: Optional[str] = " + (cuda.empty() ? "None" : "'" + cuda + "'") +
         "\nhip = None\n";
}

struct PythonPlaces {
  MemoryTree tree;
  PythonPlaces() {
    tree.file("/usr/lib/python3/dist-packages/torch/version.py", torch_py("2.6.0", ""));  // Debian's CPU build
    tree.file("/home/u/.local/lib/python3.11/site-packages/torch/version.py", torch_py("2.5.1+cu124", "12.4"));
    tree.file("/work/cu126/torch/version.py", torch_py("2.7.0+cu126", "12.6"));
    tree.file("/venv/lib/python3.11/site-packages/torch/version.py", torch_py("2.8.0+cu128", "12.8"));
    tree.file("/venv/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n");
    tree.file("/sysvenv/lib/python3.11/site-packages/numpy/version.py", "version = '2.0'\n");
    tree.file("/sysvenv/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = True\n");
    tree.file("/ub/lib/python3.11/site-packages/torch/version.py", torch_py("2.4.0+cu121", "12.1"));
  }
};

std::string judged(const RuntimeFacts& r) {
  return r.frameworks.size() == 1 ? r.frameworks[0].version : "frameworks: " + std::to_string(r.frameworks.size());
}

TEST(CudaRuntimeProbe, PythonSearchOrderUserSiteBeforeTheSystem) {
  PythonPlaces p;
  const RuntimeFacts r = probe_env(p.tree, {{"HOME", "/home/u"}});
  EXPECT_EQ(judged(r), "2.5.1+cu124");  // ~/.local comes before dist-packages on sys.path
  ASSERT_EQ(r.not_loaded.size(), 1u);
  EXPECT_EQ(r.not_loaded[0],
            "torch 2.6.0 (CPU-only) at /usr/lib/python3/dist-packages: shadowed by "
            "/home/u/.local/lib/python3.11/site-packages/torch/version.py, which comes first on Python's search "
            "path");
}

TEST(CudaRuntimeProbe, PythonNoUserSiteJudgesTheSystemTorch) {
  PythonPlaces p;
  const RuntimeFacts r = probe_env(p.tree, {{"HOME", "/home/u"}, {"PYTHONNOUSERSITE", "1"}});
  EXPECT_EQ(judged(r), "2.6.0");
  EXPECT_EQ(r.frameworks.at(0).build, "cpu");
  EXPECT_FALSE(searched(r, "/home/u/.local/lib/python3.11/site-packages"));
  // An empty value is unset for Python.
  EXPECT_EQ(judged(probe_env(p.tree, {{"HOME", "/home/u"}, {"PYTHONNOUSERSITE", ""}})), "2.5.1+cu124");
}

TEST(CudaRuntimeProbe, PythonPathComesFirst) {
  PythonPlaces p;
  const RuntimeFacts r = probe_env(p.tree, {{"HOME", "/home/u"}, {"PYTHONPATH", "relative/dir:/work/cu126:"}});
  EXPECT_EQ(judged(r), "2.7.0+cu126");
  EXPECT_EQ(r.not_loaded.size(), 2u);
}

TEST(CudaRuntimeProbe, PythonUserBaseReplacesDotLocal) {
  PythonPlaces p;
  const RuntimeFacts r = probe_env(p.tree, {{"HOME", "/home/u"}, {"PYTHONUSERBASE", "/ub"}});
  EXPECT_EQ(judged(r), "2.4.0+cu121");
  EXPECT_FALSE(searched(r, "/home/u/.local/lib/python3.11/site-packages"));
}

TEST(CudaRuntimeProbe, PythonVenvWithoutSystemSitePackagesIsAlone) {
  PythonPlaces p;
  const RuntimeFacts r = probe_env(p.tree, {{"HOME", "/home/u"}, {"VIRTUAL_ENV", "/venv"}});
  EXPECT_EQ(judged(r), "2.8.0+cu128");
  EXPECT_TRUE(r.not_loaded.empty());  // neither ~/.local nor the system's is on such a venv's path
  EXPECT_FALSE(searched(r, "/usr/lib/python3/dist-packages"));
  // A venv that includes the system's: the venv, the user site, then the system.
  const RuntimeFacts sys = probe_env(p.tree, {{"HOME", "/home/u"}, {"VIRTUAL_ENV", "/sysvenv"}});
  EXPECT_EQ(judged(sys), "2.5.1+cu124");
  EXPECT_TRUE(searched(sys, "/sysvenv/lib/python3.11/site-packages"));
}

TEST(CudaRuntimeProbe, PythonHomeNamesTheInterpretersPrefix) {
  PythonPlaces p;
  p.tree.file("/opt/py/lib/python3.12/site-packages/torch/version.py", torch_py("2.9.0+cu130", "13.0"));
  const RuntimeFacts r = probe_env(p.tree, {{"PYTHONHOME", "/opt/py"}, {"PYTHONNOUSERSITE", "1"}});
  EXPECT_EQ(judged(r), "2.9.0+cu130");
  EXPECT_FALSE(searched(r, "/usr/lib/python3/dist-packages"));  // another prefix's interpreter
}

TEST(CudaRuntimeProbe, PythonCondaPrefixBeforeTheSystem) {
  PythonPlaces p;
  p.tree.file("/opt/conda/lib/python3.12/site-packages/torch/version.py", torch_py("2.9.1+cu128", "12.8"));
  const RuntimeFacts r = probe_env(p.tree, {{"CONDA_PREFIX", "/opt/conda"}});
  EXPECT_EQ(judged(r), "2.9.1+cu128");
  ASSERT_EQ(r.not_loaded.size(), 1u);
  EXPECT_NE(r.not_loaded[0].find("torch 2.6.0 (CPU-only) at /usr/lib/python3/dist-packages: shadowed"),
            std::string::npos);
}

}  // namespace
}  // namespace preflight
