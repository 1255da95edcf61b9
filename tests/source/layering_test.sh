#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The layers of ARCHITECTURE.md, enforced: every #include "DIR/..." of a source file names a folder
# its own folder may use, and each outside library is included by the one file that owns it.
set -euo pipefail
src=${PREFLIGHT_SOURCE_DIR:?}
cd "$src"

# folder -> the folders its files may include (itself always).
declare -A may=(
  [core]=""
  [sys]="core"
  [probes]="core sys"
  [matrix]="core"
  [checks]="core matrix"
  [report]="core matrix checks"
  [transport]="core matrix checks report"
  [job]="core sys probes matrix checks report transport"
  [cli]="core sys probes matrix checks report transport job"
  [gpu_probe]="core"
  [tools]="core matrix checks report"
)

bad=0
for dir in "${!may[@]}"; do
  [[ -d $dir ]] || { echo "FAIL: layer folder $dir/ is missing"; bad=1; continue; }
  allowed=" $dir ${may[$dir]} "
  while IFS= read -r hit; do
    file=${hit%%:*}
    rest=${hit#*:}
    line=${rest%%:*}
    target=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$rest")
    # The GPU helper's protocol (requests and event names) is shared by the side that starts it.
    if [[ $rest == *'#include "gpu_probe/protocol.hpp"'* && ($dir == probes || $dir == job) ]]; then continue; fi
    if [[ $allowed != *" $target "* ]]; then
      echo "FAIL: $file:$line includes $target/ (a $dir/ file may include: $dir ${may[$dir]})"
      bad=1
    fi
  done < <(grep -rn -E '^#include "[a-z_]+/' --include='*.cpp' --include='*.hpp' "$dir" || true)
done

# Every folder of sources is a known layer (a new one must be added above and to ARCHITECTURE.md).
for dir in */; do
  dir=${dir%/}
  case $dir in build*|tests|bench|cmake|examples|packaging|schema|scripts) continue ;; esac
  if compgen -G "$dir/*.cpp" >/dev/null || compgen -G "$dir/*.hpp" >/dev/null; then
    [[ -n ${may[$dir]+set} ]] || { echo "FAIL: $dir/ holds sources but is no layer of tests/source/layering_test.sh"; bad=1; }
  fi
done

# Outside libraries, each behind one file.
owner() {  # owner HEADER-REGEX FILE...
  local pattern=$1; shift
  local found
  found=$(grep -rl -E "^#include <$pattern" --include='*.cpp' --include='*.hpp' "${!may[@]}" | sort || true)
  local expected
  expected=$(printf '%s\n' "$@" | sort)
  if [[ $found != "$expected" ]]; then
    echo "FAIL: <$pattern> is included by: ${found//$'\n'/ } (only by: $*)"
    bad=1
  fi
}
owner 'mpi\.h>' transport/mpi_transport.cpp
owner 'pmix\.h>' transport/pmix_join.cpp
owner 'boost/' cli/cli.cpp
owner 'hwloc' probes/topology_probe.cpp
owner 'libxml/' report/junit.cpp
owner 'dlfcn\.h>' gpu_probe/dynlib.cpp

if ((bad)); then exit 1; fi
echo "layering: every include follows ARCHITECTURE.md's layers"
