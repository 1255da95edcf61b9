#!/usr/bin/env bash
# What the job loads, through the real binary: site-packages trees of CPU-only, cu121, cu124 and
# cu130 torch whose libtorch_cuda.so is linked here by the real linker (DT_NEEDED libcudart.so.N
# and libnccl.so.2, DT_RPATH or DT_RUNPATH into the nvidia/* wheels), the wheels' libnccl.so.2 being
# the project's fake NCCL (the NCCL probe dlopens it for real), beside a CUDA 13 toolkit tree on the
# loader path, on the fake 8-GPU node of driver 535.104.05 (CUDA 12.2). Then --python: fake
# interpreters that answer, hang or crash, and Debian's real python3-torch where it is installed.
source "$(dirname "$0")/lib.sh"
: "${PREFLIGHT_FAKE_GPU_LIB_DIR:?}" "${PREFLIGHT_FAKE_GPU_SCENARIOS_DIR:?}"
S=$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR
CC=${CC:-cc}
command -v "$CC" >/dev/null || skip_all "no C compiler ($CC) to link the torch library fixtures"

summary_of() { json_get "[c['summary'] for c in d['checks'] if c['id']=='$1'][0]"; }
remedy_of() { json_get "[c['remedy'] for c in d['checks'] if c['id']=='$1'][0]"; }
on_node() {  # on_node SCENARIO PREFLIGHT-ARGS...: the fake GPU node
  local scenario=$1
  shift
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$S/$scenario.json" "$PREFLIGHT" "$@"
}
# on_capture SCENARIO PREFLIGHT-ARGS...: $root as the capture of the fake GPU node SCENARIO (its GPU
# helper's report, and its NCCL helper's report of the wheel's libnccl.so.2 where the tree has one):
# --sysroot never runs a helper on the judging machine.
on_capture() {
  local scenario=$1 nccl=$site/nvidia/nccl/lib/libnccl.so.2
  shift
  [ -f "$root$nccl" ] || nccl=""
  as_capture "$root" "$scenario" "$nccl"
  "$PREFLIGHT" "$@"
}

root=$work/root
site=/venv/lib/python3.11/site-packages
echo 'int stub_symbol(void) { return 0; }' >"$work/stub.c"
echo 'int torch_cuda_symbol(void) { return 0; }' >"$work/torch.c"

# stub_lib DIR SONAME: a shared library named and SONAMEd SONAME.
stub_lib() {
  mkdir -p "$1"
  "$CC" -shared -fPIC -o "$1/$2" -Wl,-soname,"$2" "$work/stub.c"
}

# torch_tree SITE VERSION CUDA rpath|runpath [static-nccl]: a pip torch as the PyPI wheels lay it out.
torch_tree() {
  local s=$root$1 version=$2 cuda=$3 how=$4 static=${5:-}
  local major=${cuda%%.*} rt=nvidia/cuda_runtime/lib dist="nvidia_cuda_runtime_cu${cuda%%.*}"
  [ "$major" = 13 ] && rt=nvidia/cu13/lib dist=nvidia_cuda_runtime
  mkdir -p "$s/torch/lib" "$s/nvidia/nccl/lib" "$s/${dist}-${cuda}.77.dist-info" "$s/nvidia_nccl_cu${major}-2.21.5.dist-info"
  printf "__version__ = '%s'\ncuda: Optional[str] = '%s'\nhip = None\n" "$version" "$cuda" >"$s/torch/version.py"
  stub_lib "$s/$rt" "libcudart.so.$major"
  cp "$PREFLIGHT_FAKE_GPU_LIB_DIR/libnccl.so.2" "$s/nvidia/nccl/lib/libnccl.so.2"
  local tags=--disable-new-dtags
  [ "$how" = runpath ] && tags=--enable-new-dtags
  local libs=("$s/$rt/libcudart.so.$major")
  [ -z "$static" ] && libs+=("$s/nvidia/nccl/lib/libnccl.so.2")
  "$CC" -shared -fPIC -o "$s/torch/lib/libtorch_cuda.so" "$work/torch.c" -Wl,--no-as-needed "${libs[@]}" \
    -Wl,"$tags" -Wl,-rpath,"\$ORIGIN/../../$rt:\$ORIGIN/../../nvidia/nccl/lib:\$ORIGIN"
}

# A CUDA 13.0 toolkit at /usr/local/cuda, its library directory in ld.so.conf.d.
mkdir -p "$root/usr/local/cuda-13.0/lib" "$root/etc/ld.so.conf.d"
printf '{"cuda": {"version": "13.0.2"}, "cuda_cudart": {"version": "13.0.96"}}\n' >"$root/usr/local/cuda-13.0/version.json"
stub_lib "$root/usr/local/cuda-13.0/lib" libcudart.so.13
ln -s /usr/local/cuda-13.0 "$root/usr/local/cuda"
echo 'include /etc/ld.so.conf.d/*.conf' >"$root/etc/ld.so.conf"
echo /usr/local/cuda-13.0/lib >"$root/etc/ld.so.conf.d/zz-cuda-13-0.conf"

# 1. torch 2.5.1+cu124 loads its own libcudart.so.12: the toolkit's CUDA 13 (another soname) never
#    decides a FAIL; one row each; the torch finding is in the summary with its remedy.
torch_tree $site 2.5.1+cu124 12.4 rpath
expect_rc 0 "cu124 beside a CUDA 13 toolkit, driver 535" -- on_capture driver535-cuda122 --sysroot "$root" \
  --site-packages $site --only cuda.runtime,nccl.library,cuda.arch --format json -v
expect_eq "$(check_status cuda.runtime)" WARN "cuda.runtime"
expect_contains "$(summary_of cuda.runtime)" "CUDA 12.4.77 (torch 2.5.1+cu124 (built for CUDA 12.4) loads libcudart.so.12" \
  "cuda.runtime"
expect_contains "$(summary_of cuda.runtime)" "minor-version compatibility" "cuda.runtime"
expect_contains "$(summary_of cuda.runtime)" "the CUDA 13.0 toolkit (/usr/local/cuda/version.json) needs driver ≥ 580.65.06" \
  "cuda.runtime"
expect_contains "$(summary_of cuda.runtime)" "torch 2.5.1+cu124 uses its own CUDA 12.4.77" "cuda.runtime"
expect_eq "$(json_get "len([c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence']['runtimes'])")" 2 \
  "runtimes listed"
expect_eq "$(check_status nccl.library)" WARN "nccl.library (its CUDA 12.4 build on driver 535: minor-version compatibility)"
expect_contains "$(summary_of nccl.library)" "$site/nvidia/nccl/lib/libnccl.so.2" "nccl.library (the wheel's, as the node's helper read it)"
expect_contains "$(summary_of nccl.library)" "which torch 2.5.1+cu124 loads" "nccl.library"

# The same on a driver that runs CUDA 12.4 (the default fake node, 550.54.15): PASS for torch, the
# toolkit still named as a WARN.
expect_rc 0 "cu124 beside a CUDA 13 toolkit, driver 550" -- on_capture h100x8-healthy --sysroot "$root" \
  --site-packages $site --only cuda.runtime --format json
expect_eq "$(check_status cuda.runtime)" WARN "cuda.runtime (driver 550)"
expect_contains "$(summary_of cuda.runtime)" "toolkit" "cuda.runtime (driver 550)"

# 2. With DT_RUNPATH, LD_LIBRARY_PATH comes first: the fake GPU directory's libnccl.so.2 is the one
#    (on the live system: under --sysroot, LD_LIBRARY_PATH names directories of the captured tree).
rm -rf "$root$site"
torch_tree $site 2.5.1+cu124 12.4 runpath
expect_rc 0 "cu124 with DT_RUNPATH" -- on_node driver535-cuda122 --site-packages "$root$site" \
  --only nccl.library --format json
expect_contains "$(summary_of nccl.library)" "$PREFLIGHT_FAKE_GPU_LIB_DIR/libnccl.so.2" "nccl.library (LD_LIBRARY_PATH)"

# 3. cu121 on driver 535 runs (backward compatibility); cu130 does not.
rm -rf "$root$site"
torch_tree $site 2.4.1 12.1 rpath
expect_rc 0 "cu121, driver 535" -- on_capture driver535-cuda122 --sysroot "$root" --site-packages $site \
  --only cuda.runtime --format json
expect_eq "$(check_status cuda.runtime)" WARN "cuda.runtime (cu121: only the toolkit warns)"
expect_contains "$(summary_of cuda.runtime)" "torch 2.4.1 uses its own CUDA 12.1.77" "cuda.runtime (cu121)"
rm -rf "$root$site"
torch_tree $site 2.9.0+cu130 13.0 rpath
expect_rc 1 "cu130, driver 535" -- on_capture driver535-cuda122 --sysroot "$root" --site-packages $site \
  --only cuda.runtime --format json
expect_eq "$(check_status cuda.runtime)" FAIL "cuda.runtime (cu130)"
expect_contains "$(summary_of cuda.runtime)" "CUDA 13.0.77 (torch 2.9.0+cu130" "cuda.runtime (cu130)"

# 4. NCCL linked into torch: the system's libnccl is not what it uses; UNKNOWN, never PASS.
rm -rf "$root$site"
torch_tree $site 2.1.0 12.1 rpath static
expect_rc 3 "cu121 with NCCL linked in" -- on_capture driver535-cuda122 --sysroot "$root" --site-packages $site \
  --only nccl.library --format json
expect_eq "$(check_status nccl.library)" UNKNOWN "nccl.library (static NCCL)"

# 4b. torch's library needs an NCCL function that the libnccl.so.2 it loads does not export (an
#     older NCCL found first): import torch fails with "undefined symbol"; FAIL naming it.
rm -rf "$root$site"
torch_tree $site 2.5.1+cu124 12.4 rpath
cat >"$work/torch_nccl.c" <<'C'
int ncclGetUniqueId(void *id);
int ncclCommRegister(void *comm, void *buf, unsigned long size, void **handle);
int torch_uses_nccl(void) { return ncclGetUniqueId(0) + ncclCommRegister(0, 0, 0, 0); }
C
"$CC" -shared -fPIC -o "$root$site/torch/lib/libtorch_cuda.so" "$work/torch_nccl.c" -Wl,--no-as-needed \
  "$root$site/nvidia/cuda_runtime/lib/libcudart.so.12" "$root$site/nvidia/nccl/lib/libnccl.so.2" \
  -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib:$ORIGIN'
expect_rc 1 "torch needs ncclCommRegister, the wheel's NCCL lacks it" -- on_capture driver535-cuda122 \
  --sysroot "$root" --site-packages $site --only nccl.library --format json
expect_eq "$(check_status nccl.library)" FAIL "nccl.library (a function torch needs is missing)"
expect_contains "$(summary_of nccl.library)" "does not export: ncclCommRegister; import torch fails" \
  "nccl.library (the missing function named)"
expect_contains "$(summary_of nccl.library)" "2 nccl* symbols needed, 1 not exported" "nccl.library (what was compared)"

# 5. A CPU-only torch on a GPU node: FAIL naming the build to install; nccl.library says it has none.
rm -rf "$root$site"
mkdir -p "$root$site/torch"
printf "__version__ = '2.5.1+cpu'\ncuda: Optional[str] = None\nhip: Optional[str] = None\n" >"$root$site/torch/version.py"
expect_rc 1 "CPU-only torch on the GPU node" -- on_capture driver535-cuda122 --sysroot "$root" --site-packages $site \
  --only cuda.runtime,nccl.library --format json
expect_eq "$(check_status cuda.runtime)" FAIL "cuda.runtime (CPU-only)"
expect_contains "$(summary_of cuda.runtime)" "torch 2.5.1+cpu ($site/torch/version.py) is a CPU-only build" "cuda.runtime"
expect_contains "$(remedy_of cuda.runtime)" "https://download.pytorch.org/whl/cu121" "cuda.runtime remedy"
expect_eq "$(check_status nccl.library)" FAIL "nccl.library (CPU-only)"
expect_contains "$(summary_of nccl.library)" "it has no NCCL" "nccl.library (CPU-only)"

# ... and in an image: a FAIL unless the image is declared CPU-only (--target-gpu none).
expect_rc 1 "CPU-only torch in a GPU image" -- "$PREFLIGHT" --profile image --target-driver 535.104.05 \
  --target-gpu 9.0 --sysroot "$root" --site-packages $site --only cuda.runtime,nccl.library --format json
expect_eq "$(check_status cuda.runtime)" FAIL "cuda.runtime (CPU-only torch, GPU image)"
expect_contains "$(remedy_of cuda.runtime)" "--target-gpu none" "cuda.runtime remedy (image)"
expect_rc 0 "CPU-only torch in a CPU-only image" -- "$PREFLIGHT" --profile image --target-driver 535.104.05 \
  --target-gpu none --sysroot "$root" --site-packages $site --only cuda.runtime,nccl.library,cuda.arch --format json
expect_eq "$(check_status nccl.library)" SKIP "nccl.library (CPU-only image)"
expect_eq "$(check_status cuda.arch)" SKIP "cuda.arch (CPU-only image)"
expect_contains "$(summary_of cuda.runtime)" "is a CPU-only build" "cuda.runtime (CPU-only image)"

# 6. --python asks the interpreter: one that answers with the tree's directory, one that hangs (its
#    deadline follows --timeout), one that crashes, one that does not exist (a usage error).
mkdir -p "$work/bin"
cat >"$work/bin/python-answers" <<PY
#!/bin/sh
echo '{"version": "3.11.2", "prefix": "/venv", "path": ["", "/usr/lib/python311.zip", "$root$site"], "site": [], "user_site": ""}'
PY
printf '#!/bin/sh\nexec sleep 60\n' >"$work/bin/python-hangs"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$work/bin/python-crashes"
chmod +x "$work/bin/"python-*
expect_rc 1 "--python that answers" -- on_node driver535-cuda122 --python "$work/bin/python-answers" \
  --only cuda.runtime --format json -v
expect_eq "$(check_status cuda.runtime)" FAIL "cuda.runtime (--python: the CPU-only torch it imports)"
expect_contains "$(summary_of cuda.runtime)" "torch 2.5.1+cpu ($root$site/torch/version.py) is a CPU-only build" \
  "cuda.runtime (--python)"
start=$(date +%s)
expect_rc 3 "--python that hangs" -- on_node driver535-cuda122 --python "$work/bin/python-hangs" --timeout 6 \
  --only cuda.runtime --format json
elapsed=$(($(date +%s) - start))
[ "$elapsed" -lt 15 ] && pass "a hung interpreter ends within the run's budget (${elapsed} s)" || fail "took ${elapsed} s"
expect_eq "$(check_status cuda.runtime)" UNKNOWN "cuda.runtime (hung interpreter)"
expect_contains "$(summary_of cuda.runtime)" "--python $work/bin/python-hangs" "cuda.runtime (hung interpreter)"
expect_rc 3 "--python that crashes" -- on_node driver535-cuda122 --python "$work/bin/python-crashes" \
  --only cuda.runtime --format json
expect_contains "$(summary_of cuda.runtime)" "SIGSEGV" "cuda.runtime (crashed interpreter)"
expect_rc 2 "--python that does not exist" -- "$PREFLIGHT" --python /nonexistent/bin/python3 --only cuda.runtime
expect_contains "$(cat "$work/err")" "--python '/nonexistent/bin/python3'" "usage error"

# 6b. Without --python, python3 on the job's PATH is asked the same way, with the job's
#     environment: the torch it imports first is the one judged; the others are "not loaded".
mkdir -p "$work/pathbin"
cp "$work/bin/python-answers" "$work/pathbin/python3"
expect_rc 1 "python3 on the job's PATH" -- env PATH="$work/pathbin:/usr/bin:/bin" \
  "$(command -v env)" LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$S/driver535-cuda122.json" \
  "$PREFLIGHT" --only cuda.runtime --format json
expect_eq "$(check_status cuda.runtime)" FAIL "cuda.runtime (python3 on PATH: the CPU-only torch it imports)"
expect_eq "$(json_get "[c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence']['python']['source']")" \
  "python3 on the job's PATH" "the interpreter's source"
real_py=$(PATH=/usr/local/bin:/usr/bin:/bin:$PATH command -v python3 || true)
if [ -n "$real_py" ]; then
  xy=$("$real_py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  user_site=$work/home/.local/lib/python$xy/site-packages
  mkdir -p "$user_site/torch" "$work/cpu-site/torch"
  printf "__version__ = '2.5.1+cu124'\ncuda: Optional[str] = '12.4'\nhip = None\n" >"$user_site/torch/version.py"
  printf "__version__ = '2.6.0+cpu'\ncuda: Optional[str] = None\nhip = None\n" >"$work/cpu-site/torch/version.py"
  judged() { json_get "[c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence']['frameworks'][0]['version']"; }
  not_loaded() { json_get "' | '.join([c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence'].get('not_loaded', []))"; }
  with_py() { env -i PATH="$(dirname "$real_py"):/usr/bin:/bin" HOME="$work/home" "$@"; }
  with_py "$PREFLIGHT" --only cuda.runtime --format json >"$work/out" 2>"$work/err" || true
  expect_eq "$(judged)" 2.5.1+cu124 "the user site comes before the system's ($real_py)"
  with_py PYTHONPATH="$work/cpu-site" "$PREFLIGHT" --only cuda.runtime --format json >"$work/out" 2>"$work/err" || true
  expect_eq "$(judged)" 2.6.0+cpu "PYTHONPATH comes first"
  expect_contains "$(not_loaded)" "torch 2.5.1+cu124 (CUDA 12.4) at $user_site: shadowed" "the user site's torch, noted"
  with_py PYTHONNOUSERSITE=1 "$PREFLIGHT" --only cuda.runtime --format json >"$work/out" 2>"$work/err" || true
  expect_contains "$(not_loaded)" "torch 2.5.1+cu124 (CUDA 12.4) at $user_site: not on the sys.path of" \
    "PYTHONNOUSERSITE: the user site's torch is not the job's"
  [ "$(judged 2>/dev/null)" != 2.5.1+cu124 ] && pass "PYTHONNOUSERSITE: not judged on ~/.local" ||
    fail "PYTHONNOUSERSITE: judged on ~/.local's torch"
  # A .pth import line is not run, sitecustomize is not imported: nothing of the environment runs.
  printf 'import os; open("%s/pth-ran", "w")\n%s\n' "$work" "$work/cpu-site" >"$user_site/evil.pth"
  printf 'open("%s/sitecustomize-ran", "w")\n' "$work" >"$work/cpu-site/sitecustomize.py"
  with_py "$PREFLIGHT" --only cuda.runtime --format json >"$work/out" 2>"$work/err" || true
  [ ! -e "$work/pth-ran" ] && [ ! -e "$work/sitecustomize-ran" ] && pass "no .pth import line or sitecustomize ran" ||
    fail "the interpreter ran the environment's code"
  expect_contains "$(json_get "[c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence']['python']['paths']")" \
    "$work/cpu-site" "a .pth path line is on the sys.path"
  rm -f "$user_site/evil.pth" "$work/cpu-site/sitecustomize.py"
  # A venv (without system site-packages) first on the PATH, as `activate` puts it: its torch is the
  # job's; the user site's is not on its sys.path.
  if "$real_py" -m venv --without-pip "$work/venv" >/dev/null 2>&1; then
    venv_site=$("$work/venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    mkdir -p "$venv_site/torch"
    printf "__version__ = '2.7.1+cu126'\ncuda: Optional[str] = '12.6'\nhip = None\n" >"$venv_site/torch/version.py"
    : >"$venv_site/torch/__init__.py"
    env -i PATH="$work/venv/bin:/usr/bin:/bin" HOME="$work/home" "$PREFLIGHT" --only cuda.runtime --format json \
      >"$work/out" 2>"$work/err" || true
    expect_eq "$(judged)" 2.7.1+cu126 "a venv's python3: its own torch"
    expect_contains "$(not_loaded)" "torch 2.5.1+cu124 (CUDA 12.4) at $user_site: not on the sys.path of $work/venv/bin/python3" \
      "a venv's python3: the user site's torch is not the job's"
    expect_eq "$(json_get "[c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence']['python']['torch']")" \
      "$venv_site/torch/__init__.py" "where find_spec locates torch"
  else
    echo "note: $real_py cannot make a venv; the venv case is not run"
  fi
  # python3 on the PATH that does not answer within its deadline: where Python would look is searched
  # (a note says why), never UNKNOWN for preflight's own deadline.
  mkdir -p "$work/slowbin"
  printf '#!/bin/sh\nexec sleep 60\n' >"$work/slowbin/python3"
  chmod +x "$work/slowbin/python3"
  env -i PATH="$work/slowbin:/usr/bin:/bin" HOME="$work/home" "$PREFLIGHT" --only cuda.runtime --format json \
    --timeout 6 >"$work/out" 2>"$work/err" || true
  expect_contains "$(json_get "[c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence']['python_not_run']")" \
    "python3 on the job's PATH ($work/slowbin/python3) did not answer" "a slow interpreter, named"
  expect_eq "$(judged)" 2.5.1+cu124 "a slow interpreter: the search in Python's order instead"
fi
# As root, an interpreter another user could change is not run; where Python looks is searched.
if [ "$(id -u)" -eq 0 ]; then
  mkdir -p "$work/alice/bin"
  printf '#!/bin/sh\ntouch %s/alice-ran\necho {}\n' "$work" >"$work/alice/bin/python3"
  chmod 755 "$work/alice/bin/python3"
  chown -R nobody "$work/alice"
  env -i PATH="$work/alice/bin:/usr/bin:/bin" HOME="$work/home" "$PREFLIGHT" --only cuda.runtime --format json \
    >"$work/out" 2>"$work/err" || true
  [ ! -e "$work/alice/alice-ran" ] && [ ! -e "$work/alice-ran" ] && pass "another user's python3 is not run as root" ||
    fail "root ran another user's python3"
  expect_contains "$(json_get "[c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence']['python_not_run']")" \
    "was not run as root: '$work/alice' is owned by uid" "why it was not run"
  [ -n "${real_py:-}" ] && expect_eq "$(judged)" 2.5.1+cu124 "the search in Python's order instead"
fi

# 7. Debian's python3-torch (a CPU build) through its real interpreter, where it is installed.
py=${PYTHON3:-/usr/bin/python3}
if [ -f /usr/lib/python3/dist-packages/torch/version.py ] && [ -x "$py" ]; then
  expect_rc 1 "--python $py with Debian's torch" -- on_node driver535-cuda122 --python "$py" \
    --only cuda.runtime,nccl.library --format json -v
  expect_eq "$(check_status cuda.runtime)" FAIL "cuda.runtime (Debian's torch)"
  expect_contains "$(summary_of cuda.runtime)" "/usr/lib/python3/dist-packages/torch/version.py) is a CPU-only build" \
    "cuda.runtime (Debian's torch)"
  expect_eq "$(check_status nccl.library)" FAIL "nccl.library (Debian's torch)"
  expect_contains "$(json_get "[c for c in d['checks'] if c['id']=='cuda.runtime'][0]['evidence']['python']['paths']")" \
    "/usr/lib/python3/dist-packages" "the interpreter's own sys.path"
else
  echo "note: python3-torch not installed; the Debian case is not run"
fi

finish
