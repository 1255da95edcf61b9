# shellcheck shell=bash
# Real container builds and runs (sourced by tests/containers/*_test.sh; needs root, buildah,
# podman, runc and debootstrap, all from Debian 12's archive; skipped with a message otherwise).
#
# Every image lives in a container store of its own under the build folder (never the machine's
# /var/lib/containers), so `rm -rf build` removes it and a test run cannot touch the user's images:
#
#   $store/storage.conf     graphroot/runroot of that store (CONTAINERS_STORAGE_CONF)
#   $store/containers.conf  runc as the OCI runtime and ulimits no higher than this process's own
#                           hard limits (CONTAINERS_CONF; see "Running a container" below)
#
#   container_base               the Debian 12 base image ($base_image), made once per build folder
#                                by debootstrap --variant=minbase from the machine's own Debian mirror
#                                and `podman import`; later tests (and runs) reuse it
#   container_deb DIR            the .deb that `cpack` makes of this build, as DIR/preflight.deb
#   container_train NAME         a training image localhost/preflight-test-train:NAME: the base plus a
#                                framework layout of tests/fixtures/cuda_runtime (cu124: torch for
#                                CUDA 12.4 and its NVIDIA wheels; cu130: for CUDA 13.0; cpu: a
#                                CPU-only torch) at Debian's /usr/local/lib/python3.11/dist-packages,
#                                where pip puts it
#   container_build LOG BUILDAH-BUD-ARGS...
#                                buildah bud (chroot isolation, layer cache) of examples/docker/Dockerfile
#                                on the base image; its output in LOG; returns buildah's status
#   container_gate CTX NAME LOG [ARGS...]
#                                the same, gating training image NAME with preflight from CTX/preflight.deb
#   container_run PODMAN-RUN-ARGS...
#                                podman run --rm with this store's settings
#   container_file IMAGE PATH    prints PATH from IMAGE (mounted, without running it)
#
# Running a container: podman's default runtime here, crun, fails on setrlimit (RLIMIT_NOFILE to
# 1048576 needs CAP_SYS_RESOURCE, which this machine's root does not have) and on the hybrid cgroup
# layout; runc with ulimits that do not exceed the caller's hard limits runs. podman lowers its own
# RLIMIT_NPROC to 32768 before it starts the runtime, so nproc is capped there.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../integration" && pwd)/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "container tests need root (buildah and podman with their own store)"
for tool in buildah podman runc debootstrap; do
  command -v "$tool" >/dev/null || skip_all "$tool is not installed (scripts/bootstrap.sh test installs it)"
done

here_containers=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dockerfile=$PREFLIGHT_SOURCE_DIR/examples/docker/Dockerfile
store=$(cd "$(dirname "$PREFLIGHT")" && pwd)/containers
base_image=localhost/preflight-test-base:12
mkdir -p "$store"
cat >"$store/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$store/storage"
runroot = "$store/run"
EOF
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
[ "$nofile" = unlimited ] && nofile=1048576
cat >"$store/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_STORAGE_CONF=$store/storage.conf CONTAINERS_CONF=$store/containers.conf
export BUILDAH_ISOLATION=chroot
# Working containers of a build that failed or was interrupted, and their mounts, go at exit (the
# store is the tests' own, and one container test runs at a time).
trap 'buildah rm --all >/dev/null 2>&1; rm -rf "$work"' EXIT

# The first Debian mirror this machine's apt uses (deb822 or one-line format), else deb.debian.org.
debian_mirror() {
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v security | head -n1)
  [ -n "$uri" ] || uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\)[[:space:]]\+bookworm[[:space:]].*/\2/p' \
    /etc/apt/sources.list 2>/dev/null | head -n1)
  echo "${PREFLIGHT_DEBIAN_MIRROR:-${uri:-http://deb.debian.org/debian}}"
}

container_base() {
  podman image exists "$base_image" && return 0
  local root="$store/debootstrap" mirror
  mirror=$(debian_mirror)
  rm -rf "$root"
  echo "making $base_image: debootstrap --variant=minbase bookworm from $mirror" >&2
  timeout 600 debootstrap --variant=minbase bookworm "$root" "$mirror" >"$store/debootstrap.log" 2>&1 || {
    tail -n 20 "$store/debootstrap.log" >&2
    return 1
  }
  tar -C "$root" -c . | podman import --quiet - "$base_image" >/dev/null || return 1
  rm -rf "$root"
}

container_deb() {
  local dir=$1 out
  out=$(mktemp -d "$work/cpack.XXXXXX")
  cpack -G DEB -B "$out" --config "$(dirname "$PREFLIGHT")/CPackConfig.cmake" >"$out/cpack.log" 2>&1 || {
    tail -n 20 "$out/cpack.log" >&2
    return 1
  }
  mkdir -p "$dir"
  cp "$out"/preflight_*.deb "$dir/preflight.deb"
}

container_train() {
  local name=$1 ctx F=$PREFLIGHT_FIXTURES_DIR/cuda_runtime nccl
  ctx=$(mktemp -d "$work/train.XXXXXX")
  # A NCCL whose version preflight reads as in the real wheels: an ELF with the embedded string.
  case $name in
    cu124) cp -r "$F/cu124/site" "$ctx/site"
           nccl=$PREFLIGHT_FAKE_GPU_LIB_DIR/libnccl.so.2 ;;
    cu130) cp -r "$F/cu130/home/user/.local/lib/python3.12/site-packages" "$ctx/site"
           nccl=$(ls "$(dirname "$PREFLIGHT_FAKE_GPU_LIB_DIR")"/nccl-*-cuda13*/libnccl.so.2 2>/dev/null | head -n1) ;;
    cpu) cp -r "$F/cpu/site" "$ctx/site" ;;
    *) echo "container_train: no layout $name" >&2; return 1 ;;
  esac
  if [ "$name" != cpu ]; then
    [ -f "$nccl" ] || { echo "container_train: the fake NCCL for $name is not built" >&2; return 1; }
    cp "$nccl" "$ctx/site/nvidia/nccl/lib/libnccl.so.2"
  fi
  buildah bud --quiet --layers --force-rm --build-arg "BASE_IMAGE=$base_image" -f "$here_containers/train.Containerfile" \
    -t "localhost/preflight-test-train:$name" "$ctx" >"$ctx/build.log" 2>&1 || {
    tail -n 20 "$ctx/build.log" >&2
    return 1
  }
}

container_build() {
  local log=$1
  shift
  timeout 900 buildah bud --layers --force-rm --build-arg "BASE_IMAGE=$base_image" -f "$dockerfile" "$@" >"$log" 2>&1
}

container_gate() {  # container_gate CTX NAME LOG [BUILDAH-BUD-ARGS...]
  local ctx=$1 name=$2 log=$3
  shift 3
  container_build "$log" --build-arg PREFLIGHT_FROM=deb --build-arg "TRAIN_IMAGE=localhost/preflight-test-train:$name" \
    "$@" "$ctx"
}

container_run() { timeout 300 podman run --rm --network none "$@"; }

container_file() {
  local ctr mnt rc=0
  ctr=$(buildah from --quiet "$1") || return 1
  mnt=$(buildah mount "$ctr") && cat "$mnt$2" || rc=1
  buildah umount "$ctr" >/dev/null 2>&1
  buildah rm "$ctr" >/dev/null 2>&1
  return "$rc"
}

# validate_report FILE DESCRIPTION: FILE validates against schema/preflight-v1.schema.json.
validate_report() {
  local errors
  if errors=$("${PYTHON3:-python3}" - "$PREFLIGHT_SOURCE_DIR/schema/preflight-v1.schema.json" "$1" <<'PY' 2>&1
import json, sys, jsonschema
schema, doc = (json.load(open(p)) for p in sys.argv[1:3])
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
for e in errors[:5]:
    print(f"{list(e.path)}: {e.message[:200]}")
sys.exit(1 if errors else 0)
PY
  ); then pass "$2 validates against the schema"; else fail "$2 does not validate: $errors"; fi
}
