#!/usr/bin/env bash
# Installs what is missing (Debian 12), configures, builds, then either runs preflight on this
# machine (`run`) or runs the whole test suite (`test`). Extra arguments after `run` go to preflight.
#   scripts/bootstrap.sh run [preflight options]
#   scripts/bootstrap.sh test
# Environment: BUILD_DIR (default build), PREFLIGHT_SANITIZE=1 for an ASan+UBSan build
# (PREFLIGHT_SANITIZE=thread: ThreadSanitizer), CI=true for -Werror, CTEST_ARGS for a subset of the
# suite (e.g. CTEST_ARGS="-L unit").
set -euo pipefail

mode=${1:-run}
shift || true
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$here/build}

# What building and running preflight needs (`run`): the compiler, CMake and the libraries it links.
run_packages=(
  build-essential cmake ninja-build pkg-config ccache
  libboost-program-options-dev nlohmann-json3-dev libsimdjson-dev libxml2-dev
  libhwloc-dev libopenmpi-dev
)
# What the test suite adds (`test`): GoogleTest, the tools the integration tests run (mpirun,
# lstopo, xmllint, promtool, strace, valgrind), the private Slurm cluster and the container builds.
test_packages=(
  libgtest-dev libgmock-dev libxml2-utils hwloc openmpi-bin prometheus
  python3 python3-jsonschema python3-yaml util-linux iproute2 strace valgrind
  slurm-wlm slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge
  buildah podman runc catatonit debootstrap
)
# What .ci/run adds (PREFLIGHT_CI_TOOLS=1): clang for the sanitizer and fuzz build, clang-format.
ci_packages=(clang libclang-rt-14-dev clang-format)

packages=("${run_packages[@]}")
[ "$mode" = test ] && packages+=("${test_packages[@]}")
[ "${PREFLIGHT_CI_TOOLS:-0}" = 1 ] && packages+=("${ci_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "bootstrap: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake_args=(-S "$here" -B "$build_dir" -G Ninja)
# ccache: a rebuild after `git pull`, or of the same sources in another build folder (the
# sanitizer builds, a second clone), compiles only what changed.
# Paths under the source folder are hashed relative to it, so a second clone hits the same entries.
if command -v ccache >/dev/null; then
  cmake_args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$here}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
fi
[ "${CI:-}" = "true" ] && cmake_args+=(-DPREFLIGHT_WERROR=ON)
case "${PREFLIGHT_SANITIZE:-0}" in
  # Line tables only (-g1): the sanitizers' stacks keep their files and lines, and the build takes
  # a quarter less time than with full debug information.
  1) cmake_args+=(-DPREFLIGHT_SANITIZE=ON -DPREFLIGHT_TSAN=OFF -DCMAKE_BUILD_TYPE=Debug
                  "-DCMAKE_C_FLAGS_DEBUG=-O0 -g1" "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1") ;;
  thread) cmake_args+=(-DPREFLIGHT_TSAN=ON -DPREFLIGHT_SANITIZE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
                       "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG") ;;
esac
# Sanitized unit tests run as 8 gtest shards (a sanitized start costs seconds; see tests/CMakeLists.txt).
case "${PREFLIGHT_SANITIZE:-0}" in
  0) cmake_args+=(-DPREFLIGHT_UNIT_TEST_SHARDS=0) ;;
  *) cmake_args+=(-DPREFLIGHT_UNIT_TEST_SHARDS=8) ;;
esac
cmake "${cmake_args[@]}" >/dev/null
# `run` builds what it runs (preflight and its GPU helper); `test` builds everything.
targets=()
[ "$mode" = run ] && targets=(--target preflight preflight-gpu-probe)
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"

case "$mode" in
  run)
    status=0
    "$build_dir/preflight" "$@" || status=$?
    echo "preflight exited $status (0 ok · 1 FAIL · 2 usage · 3 UNKNOWN · 4 deadline · 5 internal)" >&2
    exit "$status"
    ;;
  test)
    cd "$build_dir"
    # shellcheck disable=SC2086  # CTEST_ARGS is a list of ctest arguments
    ctest --output-on-failure -j "$(nproc)" ${CTEST_ARGS:-}
    ;;
  *)
    echo "usage: $0 run|test" >&2
    exit 2
    ;;
esac
