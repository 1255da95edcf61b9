// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <string>

#include "core/cuda_discovery.hpp"
#include "core/nvidia_require.hpp"

namespace preflight {
namespace core_cuda_discovery_test {
namespace {

TEST(CudaDiscovery, VersionJsonPrefersCudart) {
  const auto v = parse_cuda_version_json(R"J({"cuda": {"name": "CUDA SDK", "version": "12.6.20241114"},
      "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "12.6.77"}})J");
  ASSERT_TRUE(v.ok()) << v.why();
  EXPECT_EQ(*v.value(), "12.6.77");
  EXPECT_EQ(v.source(), "cuda_cudart.version");
}

TEST(CudaDiscovery, VersionJsonFallsBackOnCuda) {
  const auto v = parse_cuda_version_json(R"({"cuda": {"name": "CUDA SDK", "version": "11.5.2"}})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v.value(), "11.5.2");
}

TEST(CudaDiscovery, VersionJsonMalformed) {
  for (const char* text : {"", "{\"cuda_cudart\": {\"version\": ", "[1,2]", "{}", R"({"cuda_cudart": {"version": 12}})",
                           R"({"cuda_cudart": {"version": "twelve"}})", R"({"cuda": "12.4"})"}) {
    const auto v = parse_cuda_version_json(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.error()->code, ProbeErrc::ParseError);
    EXPECT_FALSE(v.error()->detail.empty());
  }
  EXPECT_FALSE(parse_cuda_version_json(std::string("\x7f"
                                                   "ELF\0\0",
                                                   6))
                   .ok());
}

TEST(CudaDiscovery, VersionTxt) {
  auto v = parse_cuda_version_txt("CUDA Version 10.2.89\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v.value(), "10.2.89");
  EXPECT_EQ(*parse_cuda_version_txt("\nCUDA Version 10.0.130").value(), "10.0.130");
  EXPECT_FALSE(parse_cuda_version_txt("").ok());
  EXPECT_FALSE(parse_cuda_version_txt("CUDA Version ten").ok());
  EXPECT_FALSE(parse_cuda_version_txt("cuda 10.2").ok());
}

TEST(CudaDiscovery, TorchVersionPyAnnotated) {
  const auto t = parse_torch_version_py(
      "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
      "__version__ = '2.7.1+cu126'\ndebug = False\ncuda: Optional[str] = '12.6'\n"
      "git_version = 'e2d141dbde55c2a4370fac5165b0561b6af4798b'\nhip: Optional[str] = None\nxpu: Optional[str] = "
      "None\n");
  ASSERT_TRUE(t.ok()) << t.why();
  EXPECT_EQ(t.value()->version, "2.7.1+cu126");
  EXPECT_EQ(t.value()->cuda, "12.6");
  EXPECT_EQ(t.value()->hip, "");
}

TEST(CudaDiscovery, TorchVersionPyPlainAndCpu) {
  auto t = parse_torch_version_py("__version__ = \"2.0.1\"\r\ncuda = \"11.7\"\r\n");
  ASSERT_TRUE(t.ok()) << t.why();
  EXPECT_EQ(t.value()->version, "2.0.1");
  EXPECT_EQ(t.value()->cuda, "11.7");
  t = parse_torch_version_py("__version__ = '2.5.1+cpu'\ncuda = None\nhip = None\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value()->cuda, "");
  t = parse_torch_version_py(
      "__version__ = '2.5.1+rocm6.2'\ncuda: Optional[str] = None\nhip: Optional[str] = '6.2.41133'\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value()->cuda, "");
  EXPECT_EQ(t.value()->hip, "6.2.41133");
}

TEST(CudaDiscovery, TorchVersionPyMalformed) {
  EXPECT_FALSE(parse_torch_version_py(std::string("\x7f"
                                                  "ELF\x02\x01\x00garbage",
                                                  13))
                   .ok());
  EXPECT_FALSE(parse_torch_version_py("").ok());
  EXPECT_FALSE(parse_torch_version_py("__version__ = '2.5.1'\n").ok());  // no cuda line
  EXPECT_FALSE(parse_torch_version_py("cuda = '12.4'\n").ok());          // no __version__
  EXPECT_FALSE(parse_torch_version_py("__version__ = '2.5.1'\ncuda = get()\n").ok());
  EXPECT_FALSE(parse_torch_version_py("__version__ = '2.5.1'\ncuda = 'twelve'\n").ok());
  // cuda_x and comparisons are not the cuda assignment
  EXPECT_FALSE(parse_torch_version_py("__version__ = '2.5.1'\ncuda_x = '12.4'\n").ok());
}

TEST(CudaDiscovery, DistInfoNames) {
  auto d = parse_dist_info_name("nvidia_cuda_runtime_cu12-12.4.127.dist-info");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->project, "nvidia-cuda-runtime-cu12");
  EXPECT_EQ(d->version, "12.4.127");
  d = parse_dist_info_name("nvidia_cuda_runtime-13.0.96.dist-info");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->project, "nvidia-cuda-runtime");
  EXPECT_EQ(d->version, "13.0.96");
  d = parse_dist_info_name("torch-2.5.1+cu124.dist-info");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->project, "torch");
  EXPECT_EQ(d->version, "2.5.1+cu124");
  EXPECT_EQ(parse_dist_info_name("nvidia_nccl_cu12-2.26.2.post1.dist-info")->version, "2.26.2.post1");
  EXPECT_FALSE(parse_dist_info_name("weird.dist-info"));
  EXPECT_FALSE(parse_dist_info_name("torch-2.5.1.egg-info"));
  EXPECT_FALSE(parse_dist_info_name("-1.0.dist-info"));
  EXPECT_FALSE(parse_dist_info_name("name-x.dist-info"));
  EXPECT_EQ(normalize_project_name("Nvidia_CUDA.runtime--cu12"), "nvidia-cuda-runtime-cu12");
}

TEST(CudaDiscovery, MetadataFieldsAndPins) {
  const std::string meta =
      "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\n"
      "Requires-Dist: filelock\n"
      "Requires-Dist: nvidia-cuda-runtime-cu12==12.4.127; platform_system == \"Linux\" and platform_machine == "
      "\"x86_64\"\n"
      "Requires-Dist: nvidia_nccl_cu12 == 2.21.5 ; platform_system == \"Linux\"\n"
      "Requires-Dist: nvidia-cudnn-cu12>=9.1\n"
      "Requires-Dist: sympy==1.13.1\n\n"
      "Requires-Dist: nvidia-fake==1.0\n";
  EXPECT_EQ(metadata_field(meta, "Version"), "2.5.1");
  EXPECT_EQ(metadata_field(meta, "name"), "torch");
  EXPECT_FALSE(metadata_field(meta, "Summary"));
  const auto pins = requires_dist_pins(meta, "nvidia-");
  ASSERT_EQ(pins.size(), 2u);
  EXPECT_EQ(pins[0], "nvidia-cuda-runtime-cu12==12.4.127");
  EXPECT_EQ(pins[1], "nvidia-nccl-cu12==2.21.5");
}

TEST(CudaDiscovery, LibraryFileNames) {
  EXPECT_EQ(soname_version("libcudart.so.12.4.127", "libcudart.so"), "12.4.127");
  EXPECT_EQ(soname_version("libcudart.so.12", "libcudart.so"), "12");
  EXPECT_EQ(soname_version("libcudart.so.11.0", "libcudart.so"), "11.0");
  EXPECT_EQ(soname_version("libnccl.so.2.21.5", "libnccl.so"), "2.21.5");
  EXPECT_FALSE(soname_version("libcudart.so", "libcudart.so"));
  EXPECT_FALSE(soname_version("libcudart.so.", "libcudart.so"));
  EXPECT_FALSE(soname_version("libcudart_static.a", "libcudart.so"));
  EXPECT_FALSE(soname_version("libcudart.so.12.bak", "libcudart.so"));
  EXPECT_FALSE(soname_version("libcudart.so.12.4.127.gdb.py", "libcudart.so"));
  EXPECT_FALSE(soname_version("libcuda.so.1", "libcudart.so"));
}

TEST(CudaDiscovery, LdSoConf) {
  const LdSoConf c = parse_ld_so_conf(
      "# libc default configuration\ninclude /etc/ld.so.conf.d/*.conf\n/usr/local/lib  # local\n"
      "/opt/a:/opt/b,/opt/c/\nhwcap 0 nosegneg\ninclude extra.conf other/*.conf\n\n");
  ASSERT_EQ(c.includes.size(), 3u);
  EXPECT_EQ(c.includes[0], "/etc/ld.so.conf.d/*.conf");
  EXPECT_EQ(c.includes[1], "extra.conf");
  EXPECT_EQ(c.includes[2], "other/*.conf");
  ASSERT_EQ(c.dirs.size(), 4u);
  EXPECT_EQ(c.dirs[0], "/usr/local/lib");
  EXPECT_EQ(c.dirs[1], "/opt/a");
  EXPECT_EQ(c.dirs[2], "/opt/b");
  EXPECT_EQ(c.dirs[3], "/opt/c");
}

TEST(CudaDiscovery, LibraryPathAndPythonNames) {
  const auto dirs = split_library_path("/usr/local/cuda/compat/lib::/usr/local/nvidia/lib64/;$ORIGIN/../lib:/x");
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], "/usr/local/cuda/compat/lib");
  EXPECT_EQ(dirs[1], "/usr/local/nvidia/lib64");
  EXPECT_EQ(dirs[2], "/x");
  EXPECT_EQ(python_version_from_name("python3.12"), "3.12");
  EXPECT_FALSE(python_version_from_name("python3"));
  EXPECT_FALSE(python_version_from_name("python"));
  EXPECT_FALSE(python_version_from_name("python3.12-config"));
  EXPECT_FALSE(python_version_from_name("pip3.12"));
}

// ---- NVIDIA_REQUIRE_CUDA ----

// The shape of a CUDA 12.4 base image's NVIDIA_REQUIRE_CUDA (NVIDIA's CUDA container images): the cuda
// constraint, or one of the brand/driver-branch groups that forward compatibility lets start.
const std::string kBrands[] = {"tesla",      "unknown", "nvidia",    "nvidiartx", "geforce",
                               "geforcertx", "quadro",  "quadrortx", "titan",     "titanrtx"};
std::string long_require(const std::string& cuda, const std::vector<int>& branches) {
  std::string s = "cuda>=" + cuda;
  for (const int b : branches) {
    for (const std::string& brand : kBrands)
      s += " brand=" + brand + ",driver>=" + std::to_string(b) + ",driver<" + std::to_string(b + 1);
  }
  return s;
}

struct RequireCase {
  std::string name;
  std::string text;
  std::string driver;  // "" unknown
  std::string cuda;    // "" unknown
  std::string brand;
  std::string arch;
  RequireStatus want;
  std::string token;  // Malformed
};

std::optional<Version> opt(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return Version::parse(s);
}

TEST(NvidiaRequire, Table) {
  const std::string k124 = long_require("12.4", {470, 525, 535});
  const std::string k128 = long_require("12.8", {470, 525, 535, 550, 560, 565});
  const RequireCase cases[] = {
      {"empty", "", "", "", "", "", RequireStatus::Satisfied, ""},
      {"blank", "   ", "535.104.05", "12.2", "tesla", "", RequireStatus::Satisfied, ""},
      {"cuda holds", "cuda>=12.4", "550.54.14", "12.4", "", "", RequireStatus::Satisfied, ""},
      {"cuda newer", "cuda>=12.4", "560.35.03", "12.6", "", "", RequireStatus::Satisfied, ""},
      {"cuda too old", "cuda>=12.4", "535.104.05", "12.2", "tesla", "", RequireStatus::NotSatisfied, ""},
      {"long: new driver", k124, "550.54.14", "12.4", "tesla", "", RequireStatus::Satisfied, ""},
      {"long: R535 tesla via brand group", k124, "535.104.05", "12.2", "tesla", "", RequireStatus::Satisfied, ""},
      {"long: R535 geforce via brand group", k124, "535.104.05", "12.2", "GeForce", "", RequireStatus::Satisfied, ""},
      {"long: R530 not listed", k124, "530.30.02", "12.1", "tesla", "", RequireStatus::NotSatisfied, ""},
      {"long: R470 unknown brand", k124, "470.82.01", "11.4", "unknown", "", RequireStatus::Satisfied, ""},
      {"long: R470 other brand", k124, "470.82.01", "11.4", "vapps", "", RequireStatus::NotSatisfied, ""},
      {"long: R545 tesla", k124, "545.23.08", "12.3", "tesla", "", RequireStatus::NotSatisfied, ""},
      {"long 12.8: R565", k128, "565.57.01", "12.7", "nvidia", "", RequireStatus::Satisfied, ""},
      {"long 12.8: R570", k128, "570.86.10", "12.8", "tesla", "", RequireStatus::Satisfied, ""},
      {"long 12.8: R555", k128, "555.42.02", "12.5", "tesla", "", RequireStatus::NotSatisfied, ""},
      {"long: brand unknown to us, branch listed", k124, "535.104.05", "12.2", "", "", RequireStatus::Unknown, ""},
      {"long: brand unknown to us, branch not listed", k124, "530.30.02", "12.1", "", "", RequireStatus::NotSatisfied,
       ""},
      {"no driver known", "cuda>=12.4", "", "", "", "", RequireStatus::Unknown, ""},
      {"driver less than", "driver<471", "470.82.01", "11.4", "", "", RequireStatus::Satisfied, ""},
      {"driver greater", "driver>470", "470", "11.4", "", "", RequireStatus::NotSatisfied, ""},
      {"driver equal", "driver=535.104.05", "535.104.05", "12.2", "", "", RequireStatus::Satisfied, ""},
      {"driver not equal", "driver!=535.104.05", "535.104.05", "12.2", "", "", RequireStatus::NotSatisfied, ""},
      {"driver <=", "driver<=535", "535.0", "12.2", "", "", RequireStatus::Satisfied, ""},
      {"arch holds", "cuda>=12.0,arch>=7.5", "550.54.14", "12.4", "", "9.0", RequireStatus::Satisfied, ""},
      {"arch fails", "arch>=7.5", "550.54.14", "12.4", "", "7.0", RequireStatus::NotSatisfied, ""},
      {"arch unknown", "arch>=7.5", "550.54.14", "12.4", "", "", RequireStatus::Unknown, ""},
      {"false beats unknown in a group", "cuda>=12.4,arch>=7.5", "535.104.05", "12.2", "", "",
       RequireStatus::NotSatisfied, ""},
      {"brand not equal", "brand!=geforce,driver>=470", "535.104.05", "12.2", "tesla", "", RequireStatus::Satisfied,
       ""},
      {"unknown constraint", "cuda>=12.4 gpu>=1", "550.54.14", "12.4", "", "", RequireStatus::Malformed, "gpu>=1"},
      {"no operator", "cuda12.4", "550.54.14", "12.4", "", "", RequireStatus::Malformed, "cuda12.4"},
      {"bad version", "cuda>=12.x", "550.54.14", "12.4", "", "", RequireStatus::Malformed, "cuda>=12.x"},
      {"double operator", "driver>>470", "550.54.14", "12.4", "", "", RequireStatus::Malformed, "driver>>470"},
      {"empty value", "cuda>=", "550.54.14", "12.4", "", "", RequireStatus::Malformed, "cuda>="},
      {"empty constraint", "brand=tesla,,driver>=470", "550.54.14", "12.4", "tesla", "", RequireStatus::Malformed,
       "brand=tesla,,driver>=470"},
      {"brand with >=", "brand>=tesla", "550.54.14", "12.4", "tesla", "", RequireStatus::Malformed, "brand>=tesla"},
      {"malformed even after a satisfied group", "cuda>=12.0 cuda>=foo", "550.54.14", "12.4", "", "",
       RequireStatus::Malformed, "cuda>=foo"},
  };
  for (const RequireCase& c : cases) {
    const RequireResult r = evaluate_nvidia_require(c.text, opt(c.driver), opt(c.cuda), c.brand, opt(c.arch));
    EXPECT_EQ(to_string(r.status), std::string(to_string(c.want))) << c.name << ": " << r.detail;
    if (c.want == RequireStatus::Malformed) {
      EXPECT_EQ(r.token, c.token) << c.name;
    }
    EXPECT_FALSE(r.detail.empty()) << c.name;
  }
}

TEST(NvidiaRequire, Details) {
  auto r = evaluate_nvidia_require("cuda>=12.4", Version::parse("535.104.05"), Version::parse("12.2"), "tesla");
  EXPECT_EQ(r.status, RequireStatus::NotSatisfied);
  EXPECT_EQ(r.detail, "cuda>=12.4 does not hold (the driver supports CUDA 12.2)");
  r = evaluate_nvidia_require(long_require("12.4", {470, 525, 535}), Version::parse("535.104.05"),
                              Version::parse("12.2"), "tesla");
  EXPECT_EQ(r.status, RequireStatus::Satisfied);
  EXPECT_EQ(r.group, "brand=tesla,driver>=535,driver<536");
  r = evaluate_nvidia_require("cuda>=13.0 brand=tesla,driver>=580", Version::parse("570.86.10"), Version::parse("12.8"),
                              "tesla");
  EXPECT_EQ(r.status, RequireStatus::NotSatisfied);
  EXPECT_NE(r.detail.find("2 groups"), std::string::npos) << r.detail;
  r = evaluate_nvidia_require("cuda>=12.4", std::nullopt, std::nullopt, "");
  EXPECT_NE(r.detail.find("cuda"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace core_cuda_discovery_test
}  // namespace preflight
