// SPDX-License-Identifier: MIT
#include "test_paths.hpp"

namespace preflight::test_paths {

const std::string& source_dir() {
  static const std::string p = PREFLIGHT_SOURCE_DIR;
  return p;
}
const std::string& fixtures_dir() {
  static const std::string p = PREFLIGHT_FIXTURES_DIR;
  return p;
}
const std::string& fake_gpu_scenarios_dir() {
  static const std::string p = PREFLIGHT_FAKE_GPU_SCENARIOS_DIR;
  return p;
}
const std::string& fake_gpu_lib_dir() {
  static const std::string p = PREFLIGHT_FAKE_GPU_LIB_DIR;
  return p;
}
const std::string& fake_nccl_cuda13_dir() {
  static const std::string p = PREFLIGHT_FAKE_NCCL_CUDA13_DIR;
  return p;
}
const std::string& fake_gpu_driver() {
  static const std::string p = PREFLIGHT_FAKE_GPU_DRIVER;
  return p;
}
const std::string& fake_helper() {
  static const std::string p = PREFLIGHT_FAKE_HELPER;
  return p;
}
const std::string& gpu_helper_dir() {
  static const std::string p = PREFLIGHT_GPU_HELPER_DIR;
  return p;
}

}  // namespace preflight::test_paths
