#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a sanitized unit-test shard, and once more only where LeakSanitizer's own tracer crashed at
# the process's exit ("Tracer caught signal 11 …", "LeakSanitizer has encountered a fatal error"):
# the sanitizer runtime failed while it stopped the process's threads to scan them, after every
# test had passed. A leak report, a failed test or any other sanitizer report is never retried.
#   run_once_more.sh COMMAND [ARG...]
set -u
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for attempt in 1 2; do
  rc=0
  "$@" >"$out" 2>&1 || rc=$?
  cat "$out"
  [ "$rc" -eq 0 ] && exit 0
  if [ "$attempt" -eq 1 ] && grep -q "LeakSanitizer has encountered a fatal error" "$out" &&
    grep -q "Tracer caught signal" "$out" && ! grep -q "detected memory leaks" "$out" &&
    grep -q '^\[  PASSED  \]' "$out" && ! grep -q '^\[  FAILED  \]' "$out"; then
    echo "note: LeakSanitizer's tracer crashed at exit after every test passed (the runtime, not a leak): once more"
    continue
  fi
  exit "$rc"
done
