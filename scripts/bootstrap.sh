#!/usr/bin/env bash
# Installs what is missing (Debian 12), configures, builds, then runs preflight on this machine
# (`run`), runs the test suite (`test`), or checks the formatting of the changed lines (`format`).
# Extra arguments after `run` go to preflight.
#   scripts/bootstrap.sh run [preflight options]
#   scripts/bootstrap.sh test
#   scripts/bootstrap.sh format [BASE]    # git clang-format --diff against BASE (see .ci/run)
#   scripts/bootstrap.sh build            # as test, without running the tests
#   scripts/bootstrap.sh deps             # only install what test (and PREFLIGHT_SANITIZE=1) needs
# `run` installs and builds only what preflight needs; `test` adds the test tools and builds
# everything; `test` runs every test but the opt-in labels (slow; tests/README.md).
# Environment: BUILD_DIR (default build), PREFLIGHT_SANITIZE=1 for the clang ASan+UBSan build with
# the fuzz targets (PREFLIGHT_SANITIZE=thread: ThreadSanitizer), CI=true for -Werror, CTEST_ARGS for
# another subset of the suite (e.g. CTEST_ARGS="-L unit"; default "-LE slow"), BUILD_TARGETS to
# build only those targets before testing.
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
# The sanitizer and fuzz build's compiler (PREFLIGHT_SANITIZE=1) and the formatter (`format`).
clang_packages=(clang libclang-rt-14-dev)
format_packages=(clang-format git)

case "$mode" in
  run) packages=("${run_packages[@]}") ;;
  test | build) packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  deps) packages=("${run_packages[@]}" "${test_packages[@]}" "${format_packages[@]}") ;;
  format) packages=("${format_packages[@]}") ;;
  *) echo "usage: $0 run|test|build|deps|format" >&2; exit 2 ;;
esac
[ "${PREFLIGHT_SANITIZE:-0}" = 1 ] && packages+=("${clang_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "bootstrap: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  # Another install on the machine (a second bootstrap) holds the lock for a while: wait for it.
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
fi
[ "$mode" = deps ] && exit 0

if [ "$mode" = format ]; then
  # The lines changed since BASE (default: the last whole-tree formatting, .git-blame-ignore-revs)
  # must be as clang-format (.clang-format) writes them; prints the diff that would fix them.
  cd "$here"
  base=${1:-$(grep -Eo '^[0-9a-f]{40}' .git-blame-ignore-revs | tail -1)}
  if ! git cat-file -e "$base^{commit}" 2>/dev/null; then  # a shallow clone: every file is checked
    echo "format: $base is not in this clone; checking every C++ file" >&2
    git ls-files '*.cpp' '*.hpp' '*.c' '*.h' '*.inc' | grep -v '^tests/fuzz/corpus/' | xargs clang-format --dry-run --Werror
    echo "format: every C++ file is formatted"
    exit 0
  fi
  files=$(git diff --name-only --diff-filter=ACMR "$base" -- '*.cpp' '*.hpp' '*.c' '*.h' '*.inc' | grep -v '^tests/fuzz/corpus/' || true)
  if [ -z "$files" ]; then echo "format: no C++ file changed since ${base:0:12}"; exit 0; fi
  # shellcheck disable=SC2086  # one file name a line, none with spaces
  diff=$(git clang-format --quiet --diff --extensions cpp,hpp,c,h,inc "$base" -- $files || true)
  if [ -n "$diff" ] && [ "$diff" != "no modified files to format" ] && [ "$diff" != "clang-format did not modify any files" ]; then
    echo "$diff"
    echo "format: the lines above are not formatted as .clang-format says (fix: git clang-format --extensions cpp,hpp,c,h,inc $base)" >&2
    exit 1
  fi
  echo "format: the changed lines of $(echo "$files" | wc -l) files since ${base:0:12} are formatted"
  exit 0
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
  # clang, ASan+UBSan, and the libFuzzer targets of tests/fuzz in the same build (its libraries
  # carry the fuzzers' coverage instrumentation, which the tests do not notice): one build for
  # the unit tests, the integration tests and the fuzzing. Line tables only (-g1): the sanitizers'
  # stacks keep their files and lines, and the build takes a quarter less time.
  1) cmake_args+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DPREFLIGHT_FUZZ=ON
                  -DPREFLIGHT_SANITIZE=ON -DPREFLIGHT_TSAN=OFF -DCMAKE_BUILD_TYPE=Debug
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
# `run` builds what it runs (preflight and its GPU helper); `test` builds everything, or BUILD_TARGETS.
targets=()
[ "$mode" = run ] && targets=(--target preflight preflight-gpu-probe)
# shellcheck disable=SC2206  # a list of target names
[ "$mode" != run ] && [ -n "${BUILD_TARGETS:-}" ] && targets=(--target ${BUILD_TARGETS})
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
    ctest --output-on-failure -j "$(nproc)" ${CTEST_ARGS:--LE slow}
    ;;
esac
