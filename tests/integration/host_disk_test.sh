#!/usr/bin/env bash
# host.disk end to end: the real binary on real directories (the current directory, one not made
# yet, a file in the way, a capture judged with --sysroot) and, as root, on real mounts of a chosen
# size, inode count and mode in a private mount namespace (unshare -m), named with --checkpoint-dir
# (FAIL) or as the current directory where none is named (information: WARN at most).
# Env: PREFLIGHT (binary), PYTHON3. Exit 0 pass, 1 fail, 77 skip.
source "$(dirname "$0")/lib.sh"
"${PYTHON3:-python3}" -c '' 2>/dev/null || skip_all "python3 is needed to read the JSON report"

disk() { "$PREFLIGHT" --only host.disk --format json "$@"; }
dir_ev() { json_get "d['checks'][0]['evidence']['dirs'][${2:-0}]['$1']"; }
summary() { json_get "d['checks'][0]['summary']"; }
here=$(cd "$work" && pwd -P)

# The default: the current directory, named as such, and information only: never a FAIL (exit 1).
rc=0
(cd "$here" && disk) >"$work/out" 2>"$work/err" || rc=$?
case $rc in 0) pass "the current directory judged (exit $rc)" ;; *) fail "the current directory: exit $rc" ;; esac
expect_eq "$(dir_ev defaulted)" True "no --checkpoint-dir: defaulted"
expect_eq "$(dir_ev path)" "$here" "no --checkpoint-dir: the current directory"
expect_contains "$(summary)" "the current directory $here (no --checkpoint-dir given)" "summary"
case $(check_status host.disk) in PASS | WARN) pass "the current directory: PASS or WARN" ;;
  *) fail "the current directory: $(check_status host.disk)" ;; esac
# A directory this user cannot write, as the current directory: a WARN that says how to name one;
# named, a FAIL. (root may write anywhere: checked as another user only.)
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$here/locked" && chmod 555 "$here/locked"
  expect_rc 0 "an unwritable current directory is a WARN" -- bash -c 'cd "$0" && exec "$1" --only host.disk --format json' \
    "$here/locked" "$PREFLIGHT"
  expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/cwd-not-writable "finding code"
  expect_contains "$(json_get "d['checks'][0]['remedy']")" "--checkpoint-dir DIR" "remedy: how to name one"
  expect_rc 1 "the same directory named is a FAIL" -- disk --checkpoint-dir "$here/locked"
  chmod 755 "$here/locked"
fi

# A relative directory not made yet: shown as given and absolute, judged by the parent that will hold it.
(cd "$here" && disk --checkpoint-dir ckpt/run1) >"$work/out" 2>"$work/err" || true
expect_eq "$(dir_ev path)" "$here/ckpt/run1" "relative path made absolute"
expect_eq "$(dir_ev exists)" False "not made yet"
expect_eq "$(dir_ev holder)" "$here" "its parent holds it"
expect_contains "$(summary)" "ckpt/run1 ($here/ckpt/run1, not created yet: $here will hold it)" "summary"

# Repeatable, and a file in the way.
echo x >"$here/a-file"
expect_rc 1 "a file where the directory should be" -- disk --checkpoint-dir "$here" --checkpoint-dir "$here/a-file/ckpt"
expect_eq "$(json_get "len(d['checks'][0]['evidence']['dirs'])")" 2 "two directories judged"
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/not-a-directory "finding code"
expect_contains "$(summary)" "cannot be created: $here/a-file on its path is a file" "summary"

expect_rc 0 "the image profile skips" -- disk --profile image --checkpoint-dir "$here/a-file/ckpt"
expect_eq "$(check_status host.disk)" SKIP "status"

# A capture records the directories; --sysroot judges them as they were, never this machine's disk.
mkdir -p "$here/ckpt"
if "$PREFLIGHT" capture "$work/cap" --checkpoint-dir "$here/ckpt" --timeout 30 >/dev/null 2>"$work/cap.err"; then
  [ -s "$work/cap/facts/disk.json" ] && pass "the capture holds facts/disk.json" || fail "the capture has no facts/disk.json"
  disk --sysroot "$work/cap" >"$work/out" 2>"$work/err" || true
  expect_eq "$(dir_ev path)" "$here/ckpt" "the captured directory"
  expect_contains "$(summary)" "$here/ckpt" "judged from the capture"
  expect_rc 3 "a directory the capture does not hold" -- disk --sysroot "$work/cap" --checkpoint-dir /elsewhere
  expect_contains "$(summary)" "not in the capture" "summary"
else
  fail "preflight capture failed"; sed 's/^/  | /' "$work/cap.err" >&2
fi

# Real mounts, as root, in a private mount namespace.
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
  echo "note: the mounted cases need root and unshare -m; not run"
  finish
fi
mkdir -p "$here/mnt"
# on_mount OPTIONS PREFLIGHT-ARGS...: a tmpfs mounted with OPTIONS on $here/mnt while preflight runs.
on_mount() {
  local opts=$1
  shift
  unshare -m bash -c '
    set -e
    mount --make-rprivate / 2>/dev/null || true
    mount -t tmpfs -o "$0" tmpfs "$MNT"
    exec "$PREFLIGHT" --only host.disk --format json "$@"' "$opts" "$@"
}
export MNT="$here/mnt" PREFLIGHT

expect_rc 1 "512 MiB tmpfs, no checkpoint size: full" -- on_mount size=512m --checkpoint-dir "$here/mnt"
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/full "finding code"
expect_contains "$(summary)" "$here/mnt is full: 512 MiB free of 512 MiB on $here/mnt (tmpfs)" "summary"
expect_contains "$(summary)" "also WARN: $here/mnt is on $here/mnt (tmpfs): a checkpoint there lives in RAM" "summary"
expect_contains "$(json_get "d['checks'][0]['remedy']")" "--model-params N" "remedy"

expect_rc 0 "a 10M-parameter checkpoint on a 512 MiB tmpfs: in RAM" -- \
  on_mount size=512m --checkpoint-dir "$here/mnt/run1" --model-params 10M
expect_eq "$(check_status host.disk)" WARN "status"
expect_eq "$(dir_ev in_memory)" True "in_memory"
expect_eq "$(dir_ev need_bytes)" 140000000 "need_bytes"   # 10e6 × (2 + 12) B

expect_rc 1 "a 50M-parameter checkpoint on a 512 MiB tmpfs: too small" -- \
  on_mount size=512m --checkpoint-dir "$here/mnt" --model-params 50M
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/too-small "finding code"
expect_contains "$(summary)" "is ≈ 667.6 MiB" "summary"

expect_rc 1 "read-only mount" -- on_mount size=8g,ro --checkpoint-dir "$here/mnt" --model-params 10M
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/read-only "finding code"
expect_contains "$(json_get "d['checks'][0]['remedy']")" "mount -o remount,rw $here/mnt" "remedy"

expect_rc 1 "no free inodes" -- on_mount size=8g,nr_inodes=1 --checkpoint-dir "$here/mnt" --model-params 10M
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/no-inodes "finding code"

expect_rc 0 "few free inodes" -- on_mount size=8g,nr_inodes=100 --checkpoint-dir "$here/mnt" --model-params 10M
expect_contains "$(summary)" "free inodes of 100" "summary"

# The current directory, where no directory is named: a Kubernetes init container with
# readOnlyRootFilesystem (its current directory / is read-only), a Slurm prolog on a stateless node
# (its root a small tmpfs). Information, a WARN: never a FAIL that drains the node.
in_mount() {
  local opts=$1
  shift
  unshare -m bash -c '
    set -e
    mount --make-rprivate / 2>/dev/null || true
    mount -t tmpfs -o "$0" tmpfs "$MNT"
    cd "$MNT"
    exec "$PREFLIGHT" --only host.disk --format json "$@"' "$opts" "$@"
}
expect_rc 0 "the current directory on a read-only mount: a WARN" -- in_mount size=8g,ro
expect_eq "$(check_status host.disk)" WARN "status"
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/cwd-read-only "finding code"
expect_contains "$(summary)" "no checkpoint directory was named, so this is information, not a failure" "summary"
expect_contains "$(json_get "d['checks'][0]['remedy']")" "--checkpoint-dir DIR" "remedy: how to name one"
expect_rc 0 "the current directory on a small tmpfs: a WARN" -- in_mount size=256m
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/cwd-full "finding code"
expect_rc 1 "the same read-only mount named: a FAIL" -- in_mount size=8g,ro --checkpoint-dir .
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/read-only "finding code"
printf 'checkpoint-dir = .\n' >"$work/ckpt.ini"
expect_rc 1 "the same read-only mount named in the --config file: a FAIL" -- in_mount size=8g,ro --config "$work/ckpt.ini"
expect_eq "$(json_get "d['checks'][0]['finding']['code']")" host.disk/read-only "finding code"
finish
