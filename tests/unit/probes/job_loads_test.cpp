// SPDX-License-Identifier: MIT
// The model of what the job loads, end to end on built trees: the cuda_runtime probe resolves the
// libcudart and libnccl torch's own library needs (DT_NEEDED, DT_RPATH/DT_RUNPATH, LD_LIBRARY_PATH,
// ld.so.conf), and cuda.runtime, cuda.arch and nccl.library judge what it found: a runtime nothing
// of the job loads never decides a FAIL, each runtime is listed once, a CPU-only torch on a GPU node
// is a FAIL naming the build to install.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "checks/check.hpp"
#include "checks/specs.hpp"
#include "elf_fixture.hpp"
#include "gpu_facts_fixture.hpp"
#include "probes/probe.hpp"

namespace preflight {
namespace probes_job_loads_test {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A sysroot built file by file; removed at the end of the test.
class Tree {
 public:
  Tree() {
    std::string tmpl = ::testing::TempDir() + "job_loads.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    m_root = tmpl;
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;
  const std::string& root() const { return m_root; }
  std::string host(const std::string& path) const { return m_root + path; }
  void file(const std::string& path, const std::string& text = "") {
    fs::create_directories(fs::path(host(path)).parent_path());
    std::ofstream(host(path), std::ios::binary) << text;
  }
  void elf(const std::string& path, const elf_fixture::Spec& spec) { file(path, elf_fixture::build(spec)); }
  void link(const std::string& path, const std::string& target) {
    fs::create_directories(fs::path(host(path)).parent_path());
    fs::create_symlink(target, host(path));
  }
  void dir(const std::string& path) { fs::create_directories(host(path)); }

 private:
  std::string m_root;
};

const std::string kSite = "/venv/lib/python3.11/site-packages";

std::string version_py(const std::string& version, const std::string& cuda) {
  return "__version__ = '" + version +
         "'\ndebug = False\ncuda: Optional[str] = " + (cuda.empty() ? std::string("None") : "'" + cuda + "'") +
         "\nhip: Optional[str] = None\n";
}

// A pip torch whose libtorch_cuda.so needs libcudart.so.<major> and libnccl.so.2 from the nvidia
// wheels through DT_RPATH, as the PyPI wheels are built.
void pip_torch(Tree& t, const std::string& site, const std::string& version, const std::string& cuda,
               const std::string& cudart_version, const std::string& nccl_version = "2.21.5") {
  const std::string major = cuda.substr(0, cuda.find('.'));
  const bool cu13 = major == "13";
  const std::string rt_dir = cu13 ? "nvidia/cu13/lib" : "nvidia/cuda_runtime/lib";
  t.file(site + "/torch/version.py", version_py(version, cuda));
  elf_fixture::Spec spec;
  spec.soname = "libtorch_cuda.so";
  spec.needed = {"libc10_cuda.so", "libcudart.so." + major, "libnccl.so.2", "libc.so.6"};
  spec.rpath = "$ORIGIN/../../" + rt_dir + ":$ORIGIN/../../nvidia/nccl/lib:$ORIGIN";
  t.elf(site + "/torch/lib/libtorch_cuda.so", spec);
  t.file(site + "/" + rt_dir + "/libcudart.so." + major);
  t.dir(site + (cu13 ? "/nvidia_cuda_runtime-" : "/nvidia_cuda_runtime_cu" + major + "-") + cudart_version +
        ".dist-info");
  t.file(site + "/nvidia/nccl/lib/libnccl.so.2");
  t.dir(site + "/nvidia_nccl_cu" + major + "-" + nccl_version + ".dist-info");
}

// /usr/local/cuda -> cuda-13.0 with version.json 13.0.96 and lib64 on the loader path (ld.so.conf).
void cuda13_toolkit(Tree& t) {
  t.file("/usr/local/cuda-13.0/version.json", R"J({"cuda": {"name": "CUDA SDK", "version": "13.0.2"},
    "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "13.0.96"}})J");
  t.file("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96");
  t.link("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13", "libcudart.so.13.0.96");
  t.link("/usr/local/cuda-13.0/lib64", "targets/x86_64-linux/lib");
  t.link("/usr/local/cuda", "/usr/local/cuda-13.0");
  t.file("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  t.file("/etc/ld.so.conf.d/988_cuda-13.conf", "/usr/local/cuda-13.0/targets/x86_64-linux/lib\n");
}

RuntimeFacts probe(const Tree& t, std::map<std::string, std::string> env, const Options& o = {}) {
  const FileSystem files(t.root());
  const EnvSnapshot snapshot(std::move(env));
  RankFacts facts;
  probe_cuda_runtime(ProbeContext{files, snapshot, o}, facts);
  return facts.gpu.runtime;
}

std::vector<std::string> rows(const RuntimeFacts& r) {
  std::vector<std::string> out;
  for (const CudaRuntime& c : r.runtimes)
    out.push_back(c.kind + " " + c.version + " " + c.path +
                  (c.loaded_by.empty() ? " [not loaded]" : " [" + c.loaded_by + "]"));
  return out;
}

// Driver 535.104.05 (CUDA 12.2) with 8 H100s.
RankFacts node(const RuntimeFacts& rt, const std::string& driver = "535.104.05", int api = 12020) {
  RankFacts f = gpu_fixture::healthy(8);
  f.gpu.driver.nvml_driver_version = Probed<std::string>::ok(driver, "nvml");
  f.gpu.driver.kernel_module_version = Probed<std::string>::ok(driver, "/proc/driver/nvidia/version");
  f.gpu.driver.cuda_driver_version = Probed<int>::ok(api, "cuDriverGetVersion");
  f.gpu.runtime = rt;
  return f;
}

// torch's compiled architectures come from libtorch_cuda.so's fat binaries: a cu124 wheel's SASS
// list judged on a Blackwell node FAILs (no kernel image), where the PTX assumption only warned.
TEST(JobLoads, TheArchListIsReadFromLibtorchCudasFatbins) {
  Tree t;
  pip_torch(t, kSite, "2.5.1+cu124", "12.4", "12.4.127");
  elf_fixture::Spec spec;
  spec.soname = "libtorch_cuda.so";
  spec.needed = {"libc10_cuda.so", "libcudart.so.12", "libnccl.so.2", "libc.so.6"};
  spec.rpath = "$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib:$ORIGIN";
  std::vector<elf_fixture::FatbinEntry> sass;
  for (std::uint32_t sm : {50u, 60u, 70u, 75u, 80u, 86u, 90u}) sass.push_back({2, sm, 512, 64});
  t.file(kSite + "/torch/lib/libtorch_cuda.so",
         elf_fixture::add_sections(elf_fixture::build(spec),
                                   {{".nv_fatbin", 1, 0x2, elf_fixture::fatbin(sass) + elf_fixture::fatbin(sass)}}));
  const RuntimeFacts rt = probe(t, {{"VIRTUAL_ENV", "/venv"}});
  ASSERT_EQ(rt.frameworks.size(), 1u);
  EXPECT_EQ(rt.frameworks[0].arch_list,
            (std::vector<std::string>{"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"}));
  EXPECT_EQ(rt.frameworks[0].arch_source, "libtorch_cuda.so .nv_fatbin: 14 entries in 2 containers");
  EXPECT_EQ(rt.frameworks[0].cudart_soname, "libcudart.so.12");  // the dynamic section is still read
  RankFacts blackwell = node(rt, "570.124.06", 12080);
  for (NvmlGpu& g : *blackwell.gpu.driver.nvml_gpus.value()) {
    g.name = "NVIDIA B200";
    g.cc_major = 10;
    g.cc_minor = 0;
  }
  const Verdict v = gpu_fixture::judge(kCudaArch, blackwell);
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_EQ(v.finding.code, "cuda.arch/framework-no-kernels");

  // pip_torch's library has a dynamic section and nothing else: said, and never a PTX guess.
  Tree plain;
  pip_torch(plain, kSite, "2.5.1+cu124", "12.4", "12.4.127");
  const RuntimeFacts unread = probe(plain, {{"VIRTUAL_ENV", "/venv"}});
  ASSERT_EQ(unread.frameworks.size(), 1u);
  EXPECT_TRUE(unread.frameworks[0].arch_list.empty());
  EXPECT_EQ(unread.frameworks[0].arch_source, "not read: libtorch_cuda.so: no section headers");
}

TEST(JobLoads, PipCu124BesideACuda13ToolkitWarnsNeverFails) {
  Tree t;
  pip_torch(t, kSite, "2.5.1+cu124", "12.4", "12.4.127");
  cuda13_toolkit(t);
  const RuntimeFacts rt = probe(t, {{"VIRTUAL_ENV", "/venv"}});
  EXPECT_EQ(rows(rt), (std::vector<std::string>{
                          "torch 12.4.127 " + kSite + "/nvidia/cuda_runtime/lib/libcudart.so.12 [torch 2.5.1+cu124]",
                          "toolkit 13.0.96 /usr/local/cuda/version.json [not loaded]",
                      }));  // the toolkit once: its ld.so.conf library is its own row
  EXPECT_TRUE(has(rt.runtimes[1].detail, "on the loader path (ld.so.conf)")) << rt.runtimes[1].detail;
  ASSERT_EQ(rt.frameworks.size(), 1u);
  EXPECT_EQ(rt.frameworks[0].library, kSite + "/torch/lib/libtorch_cuda.so");
  EXPECT_EQ(rt.frameworks[0].cudart_soname, "libcudart.so.12");
  EXPECT_EQ(rt.frameworks[0].cudart_via, "DT_RPATH of libtorch_cuda.so: $ORIGIN/../../nvidia/cuda_runtime/lib");
  EXPECT_EQ(rt.frameworks[0].nccl_path, kSite + "/nvidia/nccl/lib/libnccl.so.2");
  ASSERT_FALSE(rt.nccl_candidates.empty());
  EXPECT_EQ(rt.nccl_candidates[0].path, kSite + "/nvidia/nccl/lib/libnccl.so.2");
  EXPECT_EQ(rt.nccl_candidates[0].source, "wheel nvidia-nccl-cu12 2.21.5");
  EXPECT_EQ(rt.nccl_candidates[0].loaded_by, "torch 2.5.1+cu124");
  EXPECT_TRUE(rt.problems.empty()) << rt.problems.front();

  const Verdict v = gpu_fixture::judge(kCudaRuntime, node(rt));
  EXPECT_EQ(v.status, Status::Warn) << v.summary;  // minor-version compatibility for torch's own 12.4
  EXPECT_TRUE(has(v.summary, "minor-version compatibility")) << v.summary;
  EXPECT_TRUE(has(v.summary, "CUDA 12.4.127 (torch 2.5.1+cu124")) << v.summary;
  EXPECT_TRUE(has(v.summary, "the CUDA 13.0 toolkit (/usr/local/cuda/version.json) needs driver ≥ 580.65.06"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "torch 2.5.1+cu124 uses its own CUDA 12.4.127")) << v.summary;
  EXPECT_FALSE(has(v.summary, "cudaErrorInsufficientDriver")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "It works because")) << v.remedy;
  EXPECT_EQ(v.evidence["runtimes"].size(), 2u);
  EXPECT_EQ(v.evidence["runtimes"][1]["loaded"], false);

  // cuda.arch judges torch's runtime only: CUDA 13 would not matter for an H100, but a V100 (CC 7.0,
  // dropped by CUDA 13) must not FAIL because of a toolkit the job does not load.
  RankFacts volta = node(rt);
  for (NvmlGpu& g : *volta.gpu.driver.nvml_gpus.value()) {
    g.name = "Tesla V100-SXM2-32GB";
    g.cc_major = 7;
  }
  for (CudaDevice& d : *volta.gpu.driver.cuda_devices.value()) d.cc_major = 7;
  const Verdict arch = gpu_fixture::judge(kCudaArch, volta);
  EXPECT_EQ(arch.status, Status::Pass) << arch.summary;
}

TEST(JobLoads, WithoutAFrameworkTheLoaderPathAndToolkitDecide) {
  Tree t;
  cuda13_toolkit(t);
  const RuntimeFacts rt = probe(t, {});
  ASSERT_EQ(rt.runtimes.size(), 1u);  // version.json and the ld.so.conf library: one runtime
  EXPECT_FALSE(rt.runtimes[0].loaded_by.empty());
  const Verdict v = gpu_fixture::judge(kCudaRuntime, node(rt));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "needs driver ≥ 580.65.06")) << v.summary;
}

TEST(JobLoads, RpathBeatsLdLibraryPathButRunpathDoesNot) {
  for (const bool runpath : {false, true}) {
    Tree t;
    t.file(kSite + "/torch/version.py", version_py("2.4.1", "12.1"));
    elf_fixture::Spec spec;
    spec.needed = {"libcudart.so.12", "libnccl.so.2"};
    if (runpath)
      spec.runpath = "$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib";
    else
      spec.rpath = "$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib";
    t.elf(kSite + "/torch/lib/libtorch_cuda.so", spec);
    t.file(kSite + "/nvidia/cuda_runtime/lib/libcudart.so.12");
    t.dir(kSite + "/nvidia_cuda_runtime_cu12-12.1.105.dist-info");
    t.file(kSite + "/nvidia/nccl/lib/libnccl.so.2");
    t.file("/opt/cuda-12.6/lib64/libcudart.so.12.6.77");
    t.link("/opt/cuda-12.6/lib64/libcudart.so.12", "libcudart.so.12.6.77");
    t.file("/opt/nccl/lib/libnccl.so.2");
    const RuntimeFacts rt =
        probe(t, {{"VIRTUAL_ENV", "/venv"}, {"LD_LIBRARY_PATH", "/opt/cuda-12.6/lib64:/opt/nccl/lib"}});
    ASSERT_EQ(rt.frameworks.size(), 1u);
    const CudaRuntime& torch = rt.runtimes.at(0);
    if (!runpath) {
      EXPECT_EQ(torch.version, "12.1.105");
      EXPECT_EQ(torch.path, kSite + "/nvidia/cuda_runtime/lib/libcudart.so.12");
      EXPECT_EQ(rt.nccl_candidates.at(0).path, kSite + "/nvidia/nccl/lib/libnccl.so.2");
    } else {  // DT_RUNPATH comes after LD_LIBRARY_PATH
      EXPECT_EQ(torch.version, "12.6.77");
      EXPECT_EQ(torch.path, "/opt/cuda-12.6/lib64/libcudart.so.12");
      EXPECT_EQ(rt.frameworks[0].cudart_via, "LD_LIBRARY_PATH");
      EXPECT_EQ(rt.nccl_candidates.at(0).path, "/opt/nccl/lib/libnccl.so.2");
      EXPECT_EQ(rt.nccl_candidates.at(0).loaded_by, "torch 2.4.1");
    }
    // The wheel's copy the framework does not load is listed, not loaded.
    bool wheel_listed = false;
    for (const CudaRuntime& r : rt.runtimes) {
      if (r.path == kSite + "/nvidia/cuda_runtime/lib/libcudart.so.12" && r.kind == "wheel") {
        wheel_listed = true;
        EXPECT_TRUE(r.loaded_by.empty());
      }
    }
    EXPECT_EQ(wheel_listed, runpath);
  }
}

TEST(JobLoads, Cu130WheelAndCu121WheelEachJudgedByWhatTorchLoads) {
  Tree t;
  pip_torch(t, kSite, "2.9.0+cu130", "13.0", "13.0.96", "2.28.9");
  t.file(kSite + "/nvidia/cuda_runtime/lib/libcudart.so.12");  // a stale CUDA 12 wheel beside it
  t.dir(kSite + "/nvidia_cuda_runtime_cu12-12.1.105.dist-info");
  const RuntimeFacts rt = probe(t, {{"VIRTUAL_ENV", "/venv"}});
  EXPECT_EQ(rows(rt), (std::vector<std::string>{
                          "torch 13.0.96 " + kSite + "/nvidia/cu13/lib/libcudart.so.13 [torch 2.9.0+cu130]",
                          "wheel 12.1.105 " + kSite + "/nvidia/cuda_runtime/lib/libcudart.so.12 [not loaded]",
                      }));
  const Verdict v = gpu_fixture::judge(kCudaRuntime, node(rt));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;  // torch's own CUDA 13 on a CUDA 12.2 driver
  EXPECT_TRUE(has(v.summary, "CUDA 13.0.96 (torch 2.9.0+cu130")) << v.summary;
  const Verdict ok = gpu_fixture::judge(kCudaRuntime, node(rt, "580.65.06", 13000));
  EXPECT_EQ(ok.status, Status::Pass) << ok.summary;
}

TEST(JobLoads, ALibcudartTheLoaderFindsNowhereFails) {
  Tree t;
  t.file(kSite + "/torch/version.py", version_py("2.5.1+cu124", "12.4"));
  elf_fixture::Spec spec;
  spec.needed = {"libcudart.so.12", "libnccl.so.2"};
  spec.rpath = "$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib";
  t.elf(kSite + "/torch/lib/libtorch_cuda.so", spec);
  const RuntimeFacts rt = probe(t, {{"VIRTUAL_ENV", "/venv"}});
  ASSERT_EQ(rt.frameworks.size(), 1u);
  EXPECT_TRUE(rt.frameworks[0].cudart_path.empty());
  const Verdict v = gpu_fixture::judge(kCudaRuntime, node(rt, "550.54.15", 12040));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "libcudart.so.12: cannot open shared object file")) << v.summary;
  EXPECT_TRUE(has(v.summary, kSite + "/nvidia/cuda_runtime/lib")) << v.summary;  // where it looked
  const Verdict n = gpu_fixture::judge(kNcclLibrary, node(rt, "550.54.15", 12040));
  EXPECT_EQ(n.status, Status::Fail) << n.summary;
  EXPECT_TRUE(has(n.summary, "libnccl.so.2: cannot open shared object file")) << n.summary;
}

TEST(JobLoads, StaticNcclIsUnknownNotTheSystemLibrary) {
  Tree t;
  t.file(kSite + "/torch/version.py", version_py("2.1.0", "12.1"));
  elf_fixture::Spec spec;
  spec.needed = {"libcudart.so.12"};  // NCCL linked in (conda and the old "big" wheels)
  spec.rpath = "$ORIGIN/../../../..";
  t.elf(kSite + "/torch/lib/libtorch_cuda.so", spec);
  t.file("/venv/lib/libcudart.so.12.1.105");
  t.link("/venv/lib/libcudart.so.12", "libcudart.so.12.1.105");
  t.file("/usr/lib/x86_64-linux-gnu/libnccl.so.2");
  const RuntimeFacts rt = probe(t, {{"VIRTUAL_ENV", "/venv"}});
  EXPECT_EQ(rows(rt).at(0), "torch 12.1.105 /venv/lib/libcudart.so.12 [torch 2.1.0]");
  EXPECT_EQ(rt.frameworks.at(0).nccl_via, "linked in (libtorch_cuda.so needs no libnccl)");
  ASSERT_EQ(rt.nccl_candidates.size(), 1u);
  EXPECT_TRUE(rt.nccl_candidates[0].loaded_by.empty());
  const Verdict n = gpu_fixture::judge(kNcclLibrary, node(rt));
  EXPECT_EQ(n.status, Status::Unknown) << n.summary;
  EXPECT_TRUE(has(n.summary, "linked into")) << n.summary;
  EXPECT_TRUE(has(n.remedy, "torch.cuda.nccl.version()")) << n.remedy;
}

TEST(JobLoads, CpuOnlyTorchOnAGpuNodeFailsNamingTheBuildToInstall) {
  Tree t;
  t.file("/usr/lib/python3/dist-packages/torch/version.py", version_py("1.13.1", ""));
  t.file("/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3");
  t.link("/usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.18.3");
  cuda13_toolkit(t);
  const RuntimeFacts rt = probe(t, {});
  ASSERT_EQ(rt.frameworks.size(), 1u);
  EXPECT_EQ(rt.frameworks[0].build, "cpu");
  EXPECT_EQ(rt.frameworks[0].nccl_via, "none");
  ASSERT_EQ(rt.runtimes.size(), 1u);
  EXPECT_TRUE(rt.runtimes[0].loaded_by.empty());  // a CPU build loads no CUDA runtime
  ASSERT_FALSE(rt.nccl_candidates.empty());
  EXPECT_TRUE(rt.nccl_candidates[0].loaded_by.empty());

  const Verdict v = gpu_fixture::judge(kCudaRuntime, node(rt));
  EXPECT_EQ(v.status, Status::Fail) << v.summary;
  EXPECT_TRUE(has(v.summary, "torch 1.13.1 (/usr/lib/python3/dist-packages/torch/version.py) is a CPU-only build"))
      << v.summary;
  EXPECT_TRUE(has(v.summary, "8 GPUs (NVML)")) << v.summary;
  EXPECT_TRUE(has(v.remedy, "https://download.pytorch.org/whl/cu121")) << v.remedy;  // the newest ≤ CUDA 12.2
  EXPECT_TRUE(has(v.remedy, "python3-torch")) << v.remedy;

  const Verdict n = gpu_fixture::judge(kNcclLibrary, node(rt));
  EXPECT_EQ(n.status, Status::Fail) << n.summary;
  EXPECT_TRUE(has(n.summary, "it has no NCCL")) << n.summary;
  EXPECT_TRUE(has(n.summary, "/usr/lib/x86_64-linux-gnu/libnccl.so.2 on the node is not loaded by it")) << n.summary;

  // The same install on a node without GPUs is consistent; a CPU-only image too.
  RankFacts cpu_node = gpu_fixture::no_driver();
  cpu_node.gpu.runtime = rt;
  cpu_node.pcie.functions = Probed<std::vector<PciFunction>>::ok(std::vector<PciFunction>{}, "/sys/bus/pci/devices");
  EXPECT_NE(gpu_fixture::judge(kCudaRuntime, cpu_node).status, Status::Fail);
  EXPECT_EQ(gpu_fixture::judge(kNcclLibrary, cpu_node).status, Status::Skip);
  Options image;
  image.target_driver = "535.104.05";
  image.target_gpus = {"9.0"};
  RankFacts img;
  img.gpu.runtime = rt;
  EXPECT_EQ(gpu_fixture::judge(kCudaRuntime, img, image, Profile::Image).status, Status::Fail);
  EXPECT_EQ(gpu_fixture::judge(kNcclLibrary, img, image, Profile::Image).status, Status::Fail);
  image.target_gpus.clear();
  image.target_cpu_only = true;
  const Verdict cpu_image = gpu_fixture::judge(kCudaRuntime, img, image, Profile::Image);
  EXPECT_NE(cpu_image.status, Status::Fail) << cpu_image.summary;
  EXPECT_EQ(gpu_fixture::judge(kNcclLibrary, img, image, Profile::Image).status, Status::Skip);
  // GPUs that cannot be told apart from none: UNKNOWN, never PASS.
  RankFacts unsure = gpu_fixture::no_driver();
  unsure.gpu.runtime = rt;
  unsure.pcie.functions = Probed<std::vector<PciFunction>>::error(ProbeErrc::PermissionDenied, "no access", "sysfs");
  EXPECT_EQ(gpu_fixture::judge(kNcclLibrary, unsure).status, Status::Unknown);
}

TEST(JobLoads, TheFirstTorchOnTheInterpretersPathShadowsTheOthers) {
  // The interpreter cannot run under --sysroot, so the interpreter path is a live-system matter;
  // here the same rule through two --site-packages of default discovery: both are listed.
  Tree t;
  pip_torch(t, "/a", "2.5.1+cu124", "12.4", "12.4.127");
  t.file("/b/torch/version.py", version_py("2.3.0+cu118", "11.8"));
  Options o;
  o.site_packages = {"/a", "/b"};
  const RuntimeFacts rt = probe(t, {}, o);
  EXPECT_EQ(rt.frameworks.size(), 2u);
}

}  // namespace
}  // namespace probes_job_loads_test
}  // namespace preflight
