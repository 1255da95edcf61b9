// SPDX-License-Identifier: MIT
// Where the unit tests find the repository's fixtures and the build's helpers and fake NVIDIA
// libraries. The paths are compiled into test_paths.cpp alone: every other test file compiles with
// the same command in every clone of the repository, so a compiler cache (ccache with
// CCACHE_BASEDIR, as scripts/bootstrap.sh sets it) shares their objects between clones.
#pragma once

#include <string>

namespace preflight::test_paths {

std::string source_dir();              // the repository
std::string fixtures_dir();            // tests/fixtures
std::string fake_gpu_scenarios_dir();  // tests/fakes/scenarios
std::string fake_gpu_lib_dir();        // the fake libcuda.so.1, libnvidia-ml.so.1, libnccl.so.2
std::string fake_nccl_cuda13_dir();    // a second fake libnccl.so.2, built for CUDA 13.0
std::string fake_gpu_driver();         // the stand-in helper that calls into a fake in-process
std::string fake_helper();             // the stand-in contained helper (crashes, hangs, floods)
std::string gpu_helper_dir();          // where preflight-gpu-probe is

}  // namespace preflight::test_paths
