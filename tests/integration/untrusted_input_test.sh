#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Files a root preflight is pointed at may be anyone's (docs/usage.md#files-preflight-reads):
# --config, merge's inputs, --matrix and --topology-xml never have their content quoted, --config
# refuses a FIFO at once, and `merge DIR` does not follow a symlink out of DIR.
source "$(dirname "$0")/lib.sh"

secret='GHP_0123SECRET'
shadow="root:\$6\$SECRETHASH:19000:0:99999:7:::"
printf '%s\n%s\n' "$shadow" "$secret" >"$work/secret"

# never_quoted DESCRIPTION FILE...: neither secret is in $work/out, $work/err or the files.
never_quoted() {
  local what=$1 f
  shift
  for f in "$work/out" "$work/err" "$@"; do
    [ -e "$f" ] || continue
    if grep -aq -e "$secret" -e SECRETHASH "$f"; then fail "$what: $(basename "$f") quotes the file"; return; fi
  done
  pass "$what: nothing quoted"
}

# --config: a FIFO is refused as it opens, not waited on: back within a second. A sanitizer's own
# start (seconds on a loaded machine) is measured with --version and not counted.
mkfifo "$work/fifo.ini"
bound=1000
if sanitized_build; then
  start=$(date +%s%N)
  "$PREFLIGHT" --version >/dev/null 2>&1 || true
  bound=$((bound + ($(date +%s%N) - start) / 1000000))
fi
start=$(date +%s%N)
expect_rc 2 "--config FIFO" -- timeout 5 "$PREFLIGHT" --config "$work/fifo.ini"
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$elapsed_ms" -lt "$bound" ] && pass "--config FIFO returned after ${elapsed_ms} ms (bound $bound ms)" ||
  fail "--config FIFO took ${elapsed_ms} ms (bound $bound ms)"
expect_contains "$(cat "$work/err")" "a FIFO, not a regular file" "--config FIFO"

# --config of a file that is no config file: the line and the kind of token, never the text.
printf '%s\n' "$shadow" >"$work/shadow"
expect_rc 2 "--config shadow-like file" -- "$PREFLIGHT" --config "$work/shadow"
expect_contains "$(cat "$work/err")" "line 1: a line without '='" "--config shadow-like file"
never_quoted "--config shadow-like file"
printf '%s=x\0PATH=/bin\0' "$secret" >"$work/environ"
expect_rc 2 "--config environ-like file" -- "$PREFLIGHT" --config "$work/environ"
expect_contains "$(cat "$work/err")" "line 1: a NUL byte" "--config environ-like file"
never_quoted "--config environ-like file"
printf 'format = %s\n' "$secret" >"$work/value.ini"
expect_rc 2 "--config with a bad value" -- "$PREFLIGHT" --config "$work/value.ini"
expect_contains "$(cat "$work/err")" "line 1: the value of option 'format' is not accepted" "--config bad value"
never_quoted "--config with a bad value"

# merge of a file that is not JSON.
expect_rc 2 "merge of a non-JSON file" -- "$PREFLIGHT" merge "$work/secret"
expect_contains "$(cat "$work/err")" "byte 0: not JSON (expected '{', found a letter)" "merge of a non-JSON file"
never_quoted "merge of a non-JSON file"

# merge DIR: a symlink leaving DIR is refused (exit 2, no report), one that stays inside is read.
mkdir -p "$work/ranks/store"
"$PREFLIGHT" --only host.limits --json "$work/ranks/store/a.json" >/dev/null 2>&1
[ -s "$work/ranks/store/a.json" ] || fail "no result file to merge"
ln -s store/a.json "$work/ranks/a.json"
expect_rc 0 "merge DIR with a symlink inside DIR" -- "$PREFLIGHT" merge --only host.limits --format json "$work/ranks"
expect_eq "$(json_get "d['world']['size']")" 1 "the linked file merged"
ln -s ../secret "$work/ranks/b.json"
expect_rc 2 "merge DIR with a symlink leaving DIR" -- "$PREFLIGHT" merge --format json --json "$work/merged.json" "$work/ranks"
expect_contains "$(cat "$work/err")" "$work/ranks/b.json: a symbolic link" "the refused entry"
[ -e "$work/merged.json" ] && fail "a report was written for a refused input" || pass "no report for a refused input"
never_quoted "merge DIR with a symlink leaving DIR" "$work/merged.json"
rm "$work/ranks/b.json"
ln -s "$work/secret" "$work/ranks/b.json"
expect_rc 2 "merge DIR with an absolute symlink" -- "$PREFLIGHT" merge "$work/ranks"
never_quoted "merge DIR with an absolute symlink"
# A file named on the command line is read as named, through its link.
expect_rc 0 "merge of a link named on the command line" -- "$PREFLIGHT" merge --only host.limits "$work/ranks/a.json"

# --matrix DIR with a file that is no matrix file.
mkdir -p "$work/matrix"
cp "$work/secret" "$work/matrix/cuda_toolkit_driver.tsv"
expect_rc 2 "--matrix with a non-matrix file" -- "$PREFLIGHT" --matrix "$work/matrix" --only host.limits
expect_contains "$(cat "$work/err")" "cuda_toolkit_driver.tsv:1: expected the header" "--matrix"
never_quoted "--matrix with a non-matrix file"

# --topology-xml of a file that is no XML: hwloc's import says nothing of its content.
rc=0
"$PREFLIGHT" --topology-xml "$work/secret" --only 'topo.*' --format json >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" -ne 2 ] && pass "--topology-xml of a non-XML file runs (exit $rc)" || fail "--topology-xml: exit 2"
never_quoted "--topology-xml of a non-XML file"

finish
