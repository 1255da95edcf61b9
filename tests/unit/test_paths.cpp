// SPDX-License-Identifier: MIT
#include "test_paths.hpp"

namespace preflight::test_paths {

std::string source_dir() { return PREFLIGHT_SOURCE_DIR; }
std::string fixtures_dir() { return PREFLIGHT_FIXTURES_DIR; }
std::string fake_gpu_scenarios_dir() { return PREFLIGHT_FAKE_GPU_SCENARIOS_DIR; }
std::string fake_gpu_lib_dir() { return PREFLIGHT_FAKE_GPU_LIB_DIR; }
std::string fake_nccl_cuda13_dir() { return PREFLIGHT_FAKE_NCCL_CUDA13_DIR; }
std::string fake_gpu_driver() { return PREFLIGHT_FAKE_GPU_DRIVER; }
std::string fake_helper() { return PREFLIGHT_FAKE_HELPER; }
std::string gpu_helper_dir() { return PREFLIGHT_GPU_HELPER_DIR; }

}  // namespace preflight::test_paths
