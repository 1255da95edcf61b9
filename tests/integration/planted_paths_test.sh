#!/usr/bin/env bash
# The attacker's play against a root preflight (sys/safe_path.hpp): as nobody, symlinks, FIFOs,
# files and directories are planted in a sticky world-writable directory (as /tmp) at every path
# the root run will write by name: the report files, the per-rank directory, a capture and its
# archive, a directory on the way; then /dev/shm is filled with links for the allocation test.
# Each root run writes nothing through them, names the refused path and its owner, exits 2; the
# checksums of every victim file are the same before and after. Root only (setpriv, unshare -m).
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "needs root (plants as nobody, a private mount namespace)"
command -v setpriv >/dev/null || skip_all "setpriv (util-linux) is not installed"
nobody=65534
as_nobody() { setpriv --reuid="$nobody" --regid="$nobody" --clear-groups -- "$@"; }

chmod 0711 "$work"
victims="$work/victims"  # root's, 0700: what the attacker wants overwritten or read
mkdir -p "$victims/dir" && chmod 0700 "$victims"
echo "root:x:0:0:root:/root:/bin/bash" >"$victims/passwd"
echo "top secret" >"$victims/secret.txt"
echo "kept" >"$victims/dir/kept.txt"
chmod 0600 "$victims/passwd" "$victims/secret.txt"
sums() { (cd "$victims" && find . -print0 | sort -z | xargs -0 -I{} sh -c 'printf "%s " "{}"; [ -f "{}" ] && sha256sum <"{}" || stat -c "%F %a" "{}"'); }
before=$(sums)

t="$work/tmp"  # as /tmp: root's, sticky, world-writable
mkdir -p "$t" && chmod 1777 "$t"
as_nobody true 2>/dev/null || skip_all "cannot run as uid $nobody here"
as_nobody ln -s "$victims/secret.txt" "$t/evil.json"
as_nobody ln -s "$victims/passwd" "$t/evil.xml"
as_nobody ln -s "$victims/secret.txt" "$t/evil.prom"
as_nobody sh -c "echo planted >'$t/planted.json'"
as_nobody mkfifo "$t/fifo.json"
as_nobody ln -s "$victims/dir" "$t/ranks-link"
as_nobody mkdir "$t/ranks-dir"
as_nobody ln -s "$victims/dir" "$t/capture-link"
as_nobody mkdir "$t/capture-dir"
as_nobody ln -s "$victims/secret.txt" "$t/evil.tar"
as_nobody ln -s "$victims/dir" "$t/via"
as_nobody mkdir "$t/nobodys"

run=("$PREFLIGHT" --only host.limits --timeout 20)
refused() {  # refused WHAT PATH -- COMMAND...: exit 2 within 10 s, the path and its owner named
  local what=$1 path=$2
  shift 3
  expect_rc 2 "$what" -- timeout 10 "$@"
  expect_contains "$(cat "$work/err")" "$path'" "$what: the refusal"
  expect_contains "$(cat "$work/err")" "uid $nobody" "$what: the planted entry's owner"
  [ -s "$work/out" ] && fail "$what printed a report"
}
refused "--json through nobody's symlink" "$t/evil.json" -- "${run[@]}" --json "$t/evil.json"
refused "--junit through nobody's symlink" "$t/evil.xml" -- "${run[@]}" --junit "$t/evil.xml"
refused "--prom through nobody's symlink" "$t/evil.prom" -- "${run[@]}" --prom "$t/evil.prom"
refused "--json over nobody's file" "$t/planted.json" -- "${run[@]}" --json "$t/planted.json"
refused "--json into nobody's FIFO" "$t/fifo.json" -- "${run[@]}" --json "$t/fifo.json"
refused "--json through nobody's directory link" "$t/via" -- "${run[@]}" --json "$t/via/report.json"
refused "--json into nobody's directory" "$t/nobodys" -- "${run[@]}" --json "$t/nobodys/report.json"
refused "--json-per-rank through nobody's symlink" "$t/ranks-link" -- "${run[@]}" --json-per-rank "$t/ranks-link"
refused "--json-per-rank into nobody's directory" "$t/ranks-dir" -- "${run[@]}" --json-per-rank "$t/ranks-dir"
refused "merge --json through nobody's symlink" "$t/evil.json" -- "$PREFLIGHT" merge --json "$t/evil.json" "$t"
refused "capture through nobody's symlink" "$t/capture-link" -- "$PREFLIGHT" capture "$t/capture-link"
refused "capture into nobody's directory" "$t/capture-dir" -- "$PREFLIGHT" capture "$t/capture-dir"
refused "capture --tar into nobody's directory" "$t/nobodys" -- "$PREFLIGHT" capture --tar "$t/nobodys/c.tar"
refused "capture --tar through nobody's symlink" "$t/evil.tar" -- "$PREFLIGHT" capture --tar "$t/evil.tar"
# A rank's own file planted in a per-rank directory that passed the check before the run (root's,
# sticky): the rank writes nothing through it and ends with exit 2; its report is still printed.
as_nobody ln -s "$victims/secret.txt" "$t/preflight-rank-0.json"
expect_rc 2 "--json-per-rank with nobody's link as the rank's file" -- timeout 20 "${run[@]}" --json-per-rank "$t"
expect_contains "$(cat "$work/err")" "$t/preflight-rank-0.json'" "the rank file's refusal"
expect_contains "$(cat "$work/err")" "uid $nobody" "the rank file's owner"
expect_contains "$(cat "$work/out")" "host.limits" "the report beside the refused rank file"

expect_eq "$(sums)" "$before" "the victims' checksums"
expect_eq "$(cat "$t/planted.json")" "planted" "nobody's file"
expect_eq "$(stat -c %F "$t/fifo.json")" "fifo" "nobody's FIFO"
expect_eq "$(find "$t/ranks-dir" "$t/capture-dir" "$t/nobodys" -mindepth 1 | wc -l)" 0 "entries made in nobody's directories"
leftover=$(find "$t" -mindepth 1 -user 0)
[ -z "$leftover" ] && pass "nothing of root's was left in the sticky directory" || fail "left in $t: $leftover"

# What the rule still follows: root's own link in the sticky directory, and any link in a
# directory that is not sticky (the kernel's protected_symlinks rule, whatever the sysctl says).
mkdir -p "$work/own"
ln -s "$work/own/target.json" "$t/mine.json"
rc=0; "${run[@]}" --json "$t/mine.json" >/dev/null 2>"$work/err" || rc=$?
[ "$rc" -ne 2 ] && [ -s "$work/own/target.json" ] && pass "root's own link in the sticky directory is followed" \
  || fail "root's own link: exit $rc, $(cat "$work/err")"
mkdir -p "$work/plain" "$work/theirs" && chmod 0777 "$work/plain" && chown "$nobody:$nobody" "$work/theirs"
as_nobody ln -s "$work/theirs/plain-target.json" "$work/plain/theirs.json"
rc=0; "${run[@]}" --json "$work/plain/theirs.json" >/dev/null 2>"$work/err" || rc=$?
[ "$rc" -ne 2 ] && [ -s "$work/theirs/plain-target.json" ] && pass "nobody's link to nobody's directory is followed" \
  || fail "a link in a non-sticky directory: exit $rc, $(cat "$work/err")"

# Where another user's link leads, only what that user owns is written: nobody's link in a
# directory that is not sticky (the kernel would follow it) still leads root to no file of root's,
# existing or new; nor does one in a sticky directory that only its group may write (1770).
as_nobody ln -s "$victims/passwd" "$work/plain/passwd.json"
as_nobody ln -s "$victims/new.json" "$work/plain/new.json"
as_nobody ln -s "$victims/dir" "$work/plain/ranks"
refused "--json through nobody's link to root's file" "$victims/passwd" -- "${run[@]}" --json "$work/plain/passwd.json"
refused "--json through nobody's link to root's directory" "$victims/new.json" -- "${run[@]}" --json "$work/plain/new.json"
refused "--json-per-rank through nobody's link to root's directory" "$victims/dir" -- "${run[@]}" --json-per-rank "$work/plain/ranks"
mkdir -p "$work/group" && chgrp "$nobody" "$work/group" && chmod 1770 "$work/group"
as_nobody ln -s "$victims/passwd" "$work/group/report.json" 2>/dev/null \
  || setpriv --reuid="$nobody" --regid="$nobody" --groups="$nobody" -- ln -s "$victims/passwd" "$work/group/report.json"
refused "--json through nobody's link in a group-writable sticky directory" "$work/group/report.json" -- \
  "${run[@]}" --json "$work/group/report.json"
expect_eq "$(sums)" "$before" "the victims' checksums after the links outside sticky directories"

# /dev/shm: the allocation test makes a file with no name; nobody's links there are never written
# through. A /dev/shm others may write without the sticky bit is not used for it (UNKNOWN).
unshare -m true 2>/dev/null || { finish; }
shm_run() {  # shm_run MODE: preflight's shm.capacity JSON with a fresh /dev/shm of MODE, links planted
  unshare -m bash -c '
    set -e
    mount --make-rprivate / 2>/dev/null || true
    mount -t tmpfs -o size=2g,mode="$1" tmpfs /dev/shm
    for i in $(seq 1 20); do setpriv --reuid=65534 --regid=65534 --clear-groups -- ln -s "$2/secret.txt" "/dev/shm/preflight-$i" 2>/dev/null || true; done
    rc=0; "$3" --only shm.capacity --format json --timeout 20 >"$4/out" 2>"$4/err" || rc=$?
    find /dev/shm -mindepth 1 ! -type l >"$4/shm-left"
    exit $rc' _ "$1" "$victims" "$PREFLIGHT" "$work"
}
shm_run 1777 || true
expect_eq "$(json_get "d['checks'][0]['evidence'].get('allocation_test_ok')")" True "the allocation test in a sticky /dev/shm"
expect_eq "$(cat "$work/shm-left")" "" "files left in /dev/shm"
shm_run 0777 || true
expect_eq "$(check_status shm.capacity)" UNKNOWN "shm.capacity with a world-writable /dev/shm that is not sticky"
expect_contains "$(json_get "d['checks'][0]['summary']")" "not sticky" "the reason the allocation test did not run"
expect_eq "$(sums)" "$before" "the victims' checksums after the /dev/shm runs"
finish
