#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for SECONDS (default 10) over a
# copy of its seed corpus (tests/fuzz/corpus/<target>; nothing is written back to the repository).
# Prints one line per target with its executions and exec/s; exits non-zero when any target
# crashes, leaks, runs out of memory or times out (its input is kept in $ARTIFACT_DIR).
#   tests/fuzz/run.sh [SECONDS]
# Environment: BUILD_DIR (default build-fuzz), JOBS (targets run at once, default: the CPU count),
# TARGETS (space-separated names without fuzz_, default: all), ARTIFACT_DIR (default
# $BUILD_DIR/fuzz-artifacts), SKIP_BUILD=1 to use what is built.
set -euo pipefail

if [[ "${1:-}" == "--one" ]]; then  # internal: one target; prints its result line
  name=$2 seconds=$3 work=$4
  here=$(cd "$(dirname "$0")" && pwd)
  corpus="$work/corpus-$name"
  rm -rf "$corpus" && mkdir -p "$corpus"
  if [[ -d "$here/corpus/$name" ]]; then cp -R "$here/corpus/$name/." "$corpus/"; fi
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$ARTIFACT_DIR/$name-")
  if [[ -f "$here/dict/$name.dict" ]]; then args+=(-dict="$here/dict/$name.dict"); fi
  case "$name" in
    cuda_version_json|merge_json|contained_json) args+=(-dict="$here/dict/json.dict") ;;
    env_checks|launch_env) args+=(-dict="$here/dict/env.dict") ;;
    mountinfo|cgroup) args+=(-dict="$here/dict/mountinfo.dict") ;;
    config_file) args+=(-dict="$here/dict/ini.dict") ;;
  esac
  log="$work/$name.log"
  rc=0
  # The inputs that once broke this target (known/NAME-*) replay first, each on its own.
  for known in "$here/known/$name"-*; do
    [[ -f "$known" ]] || continue
    if ! "$BUILD_DIR/fuzz/fuzz_$name" "$known" >"$log" 2>&1; then
      cp "$log" "$ARTIFACT_DIR/$name.log"
      printf '%-22s FAILED on the known input %s: see %s\n' "$name" "${known##*/}" "$ARTIFACT_DIR/$name.log"
      exit 1
    fi
  done
  "$BUILD_DIR/fuzz/fuzz_$name" "${args[@]}" "$corpus" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if [[ $rc -eq 0 ]]; then
    printf '%-22s ok     %10s execs %8s exec/s\n' "$name" "${execs:-?}" "${rate:-?}"
  else
    cp "$log" "$ARTIFACT_DIR/$name.log"
    printf '%-22s FAILED (exit %d) %10s execs: see %s\n' "$name" "$rc" "${execs:-?}" "$ARTIFACT_DIR/$name.log"
    grep -m3 -E '^(==[0-9]+== ?ERROR|SUMMARY|fuzz invariant|.*runtime error)' "$log" | sed 's/^/    /' || true
    exit 1
  fi
  exit 0
fi

seconds=${1:-10}
root=$(cd "$(dirname "$0")/../.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$root/build-fuzz}
export ARTIFACT_DIR=${ARTIFACT_DIR:-$BUILD_DIR/fuzz-artifacts}
jobs=${JOBS:-$(nproc)}
start=$(date +%s)

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  launcher=()
  if command -v ccache >/dev/null; then  # as scripts/bootstrap.sh: a second clone hits the same entries
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
  fi
  cmake -S "$root" -B "$BUILD_DIR" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    "${launcher[@]}" -DPREFLIGHT_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
  cmake --build "$BUILD_DIR" --target preflight_fuzz
fi
built=$(date +%s)

if [[ -n "${TARGETS:-}" ]]; then
  read -r -a names <<<"$TARGETS"
else
  names=()
  for exe in "$BUILD_DIR"/fuzz/fuzz_*; do names+=("$(basename "$exe" | sed 's/^fuzz_//')"); done
fi
mkdir -p "$ARTIFACT_DIR"
work=$(mktemp -d "${TMPDIR:-/tmp}/preflight-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

rc=0
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} "$0" --one {} "$seconds" "$work" || rc=$?
end=$(date +%s)
echo "fuzz: ${#names[@]} targets, ${seconds} s each, $jobs at a time; build $((built - start)) s, runs $((end - built)) s"
if [[ $rc -ne 0 ]]; then
  echo "fuzz: FAILED (crash inputs in $ARTIFACT_DIR)"
  exit 1
fi
