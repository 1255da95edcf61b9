#!/usr/bin/env bash
# Report files and stdout never damage what they are written to (cli/output.hpp): in a private
# mount namespace with its own tmpfs, a character device made with mknod (/dev/null's and
# /dev/full's numbers), a FIFO with and without a reader, symlinks, a read-only file, a file of
# another owner, a full file system, descriptors, a directory; each is left as it was or written
# correctly, with the right exit code. Root only (mknod, mount).
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "needs root (mknod, a private mount namespace)"
if [ "${PREFLIGHT_OUTPUTS_NS:-}" != 1 ]; then
  unshare -m true 2>/dev/null || skip_all "unshare -m is not permitted here"
  rc=0
  PREFLIGHT_OUTPUTS_NS=1 unshare -m bash "$0" || rc=$?
  exit "$rc"
fi
mount --make-rprivate / 2>/dev/null || true

t="$work/t"
mkdir -p "$t" "$work/small"
mount -t tmpfs -o size=16m,mode=0755 tmpfs "$t" || skip_all "cannot mount a tmpfs"  # not sticky: see planted_paths_test.sh
mount -t tmpfs -o size=64k tmpfs "$work/small" || skip_all "cannot mount a small tmpfs"
trap 'umount "$t" "$work/small" 2>/dev/null; rm -rf "$work"' EXIT
run=("$PREFLIGHT" --only host.limits --timeout 20)
kind() { stat -c %F "$1"; }
is_json() { "${PYTHON3:-python3}" -c "import json,sys; json.load(open(sys.argv[1]))" "$1" 2>/dev/null; }

# A character device is written in place, never replaced by a regular file.
mknod "$t/null" c 1 3 && chmod 666 "$t/null"
expect_rc 0 "--json to a character device (/dev/null's numbers)" -- "${run[@]}" --json "$t/null"
expect_eq "$(kind "$t/null")" "character special file" "the device after --json"
mknod "$t/full" c 1 7 && chmod 666 "$t/full"
expect_rc 5 "--json to /dev/full's numbers" -- "${run[@]}" --json "$t/full"
expect_contains "$(cat "$work/err")" "No space left on device" "the write error"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "--json to a full device: the error is not one line"
expect_eq "$(kind "$t/full")" "character special file" "the full device after --json"
expect_rc 5 "--prom to /dev/full's numbers" -- "${run[@]}" --prom "$t/full"
expect_eq "$(kind "$t/full")" "character special file" "the full device after --prom"

# stdout that cannot be written is exit 5; a reader that closed the pipe early is not an error.
rc=0; "${run[@]}" >"$t/full" 2>"$work/err" || rc=$?
expect_eq "$rc" 5 "text report to a full stdout"
expect_contains "$(cat "$work/err")" "standard output" "the stdout error"
rc=0; "${run[@]}" --format json >"$t/full" 2>"$work/err" || rc=$?
expect_eq "$rc" 5 "JSON report to a full stdout"
rc=0; "$PREFLIGHT" list >"$t/full" 2>/dev/null || rc=$?
expect_eq "$rc" 5 "list to a full stdout"
"${run[@]}" -v 2>"$work/err" | true
expect_eq "${PIPESTATUS[0]}" 0 "the verdict's exit code behind a reader that closed the pipe (| true)"
[ -s "$work/err" ] && fail "a closed pipe on stdout printed: $(head -c 200 "$work/err")"
"$PREFLIGHT" --help 2>"$work/err" | head -c 10 >/dev/null
expect_eq "${PIPESTATUS[0]}" 0 "--help | head -c 10"

# A FIFO with a reader is written in place; without one the run ends at once (exit 5), no hang.
mkfifo "$t/fifo"
cat "$t/fifo" >"$t/fifo.out" &
reader=$!
expect_rc 0 "--json to a FIFO with a reader" -- timeout 30 "${run[@]}" --json "$t/fifo"
wait "$reader"
is_json "$t/fifo.out" && pass "the FIFO's reader got the JSON report" || fail "the FIFO's reader got: $(head -c 200 "$t/fifo.out")"
expect_eq "$(kind "$t/fifo")" "fifo" "the FIFO after --json"
start=$(date +%s)
expect_rc 5 "--json to a FIFO nobody reads" -- timeout 30 "${run[@]}" --json "$t/fifo"
expect_contains "$(cat "$work/err")" "no process reads the FIFO" "the FIFO error"
[ $(($(date +%s) - start)) -lt 25 ] || fail "--json to a FIFO nobody reads took $(($(date +%s) - start)) s"

# A symlink stays a symlink; its target is written (a dangling one is created).
echo old >"$t/target.json"
ln -s target.json "$t/link.json"
expect_rc 0 "--json through a symlink" -- "${run[@]}" --json "$t/link.json"
expect_eq "$(kind "$t/link.json")" "symbolic link" "the link after --json"
is_json "$t/target.json" && pass "the link's target holds the report" || fail "the link's target: $(head -c 100 "$t/target.json")"
ln -s "$t/new-target.json" "$t/dangling.json"
expect_rc 0 "--json through a dangling symlink" -- "${run[@]}" --json "$t/dangling.json"
is_json "$t/new-target.json" && pass "the dangling link's target was created" || fail "no report at the dangling link's target"
expect_eq "$(kind "$t/dangling.json")" "symbolic link" "the dangling link after --json"

# A regular file keeps its mode and owner; it is replaced whole (a new inode: never half a file).
echo old >"$t/ro.json" && chmod 0444 "$t/ro.json"
expect_rc 0 "--json over a 0444 file (root)" -- "${run[@]}" --json "$t/ro.json"
expect_eq "$(stat -c %a "$t/ro.json")" 444 "the mode of the 0444 file"
is_json "$t/ro.json" && pass "the 0444 file holds the report" || fail "the 0444 file was not written"
echo old >"$t/owned.prom" && chown 4321:4322 "$t/owned.prom" && chmod 0640 "$t/owned.prom"
inode=$(stat -c %i "$t/owned.prom")
expect_rc 0 "--prom over another user's 0640 file" -- "${run[@]}" --prom "$t/owned.prom"
expect_eq "$(stat -c '%a %u:%g' "$t/owned.prom")" "640 4321:4322" "mode and owner of the replaced file"
[ "$(stat -c %i "$t/owned.prom")" != "$inode" ] && pass "replaced by rename" || fail "written in place"
grep -q '^preflight_' "$t/owned.prom" && pass "the file holds the textfile" || fail "the textfile is missing"
ls -a "$t" | grep -q '\.tmp\.' && fail "a temporary file was left behind: $(ls -a "$t")"

# A full file system: exit 5, the old file left as it was, no temporary file left.
echo "old contents" >"$work/small/r.json"
head -c 1M /dev/zero >"$work/small/filler" 2>/dev/null || true
expect_rc 5 "--json on a full file system" -- "${run[@]}" --json "$work/small/r.json"
expect_contains "$(cat "$work/err")" "No space left on device" "the ENOSPC error"
expect_eq "$(cat "$work/small/r.json")" "old contents" "the old file on the full file system"
ls -a "$work/small" | grep -q '\.tmp\.' && fail "a temporary file was left on the full file system"

# Descriptors are written as a shell redirection would: the regular file behind stdout stays one.
"${run[@]}" --json /dev/stdout >"$t/both.txt" 2>/dev/null
expect_eq "$(kind "$t/both.txt")" "regular file" "stdout's file after --json /dev/stdout"
grep -q '^preflight 0\.' "$t/both.txt" && grep -q '"schema": *"preflight/v1"' "$t/both.txt" \
  && pass "--json /dev/stdout: the JSON beside the text report" || fail "--json /dev/stdout: $(head -c 300 "$t/both.txt")"
"${run[@]}" --json /proc/self/fd/1 --format prometheus >"$t/fd.txt" 2>/dev/null
grep -q '"schema"' "$t/fd.txt" && grep -q '^preflight_' "$t/fd.txt" \
  && pass "--json /proc/self/fd/1 beside the textfile" || fail "--json /proc/self/fd/1: $(head -c 300 "$t/fd.txt")"

# Refused before anything is probed (exit 2, naming the option and the path, no report printed).
expect_rc 2 "--json to a directory" -- "${run[@]}" --json "$t"
expect_contains "$(cat "$work/err")" "--json '$t': is a directory" "the directory error"
[ -s "$work/out" ] && fail "--json to a directory printed a report"
expect_rc 2 "--json and --junit naming one file" -- "${run[@]}" --json "$t/same" --junit "$t/same"
expect_contains "$(cat "$work/err")" "name the same file" "the same-file error"
expect_rc 2 "--json /dev/fd/9 (not open)" -- "${run[@]}" --json /dev/fd/9
expect_rc 2 "merge --json to a directory" -- "$PREFLIGHT" merge --json "$t" "$t/target.json"
expect_contains "$(cat "$work/err")" "is a directory" "merge's directory error"
finish
