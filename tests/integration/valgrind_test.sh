#!/usr/bin/env bash
# valgrind memcheck on the binary itself: a node run with every check (text, JSON, JUnit and
# Prometheus output), the fake GPU node (the helpers run outside valgrind: their own process), and
# a merge. No invalid read or write, no use of uninitialised memory, no definite leak: any error
# exits 99. Skipped in sanitizer builds (valgrind cannot run them) and where valgrind is missing.
source "$(dirname "$0")/lib.sh"
command -v valgrind >/dev/null || skip_all "valgrind is not installed"
if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ] || sanitized_build; then
  skip_all "a sanitizer build: valgrind cannot run it (the sanitizers check this build instead)"
fi
supp="$PREFLIGHT_SOURCE_DIR/tests/sanitizers/valgrind.supp"
vg=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite
    --track-origins=yes --trace-children=no --suppressions="$supp" --log-file="$work/vg.%p.log")

run_vg() {  # run_vg WHAT ARGS...: fails on a valgrind error (99) or a crash; preflight's own code 0-4 is fine
  local what=$1 rc=0
  shift
  "${vg[@]}" "$@" >"$work/out" 2>"$work/err" || rc=$?
  if [ "$rc" -eq 99 ] || [ "$rc" -gt 5 ]; then
    fail "$what: valgrind reported errors (exit $rc)"
    cat "$work"/vg.*.log >&2
  else
    pass "$what is clean under memcheck (exit $rc)"
  fi
  rm -f "$work"/vg.*.log
}

run_vg "node run, text" "$PREFLIGHT" --mpi off --timeout 120 -v
run_vg "node run, JSON + JUnit + Prometheus files" "$PREFLIGHT" --mpi off --timeout 120 --format json \
  --junit "$work/r.xml" --prom "$work/r.prom" --json "$work/r.json"
[ -s "$work/r.xml" ] && [ -s "$work/r.prom" ] || fail "the report files were not written under valgrind"
if [ -d "${PREFLIGHT_FAKE_GPU_LIB_DIR:-}" ]; then
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/h100x8-healthy.json" \
    run_vg "fake 8-GPU node (P2P matrix, all_reduce across the GPUs)" "$PREFLIGHT" --mpi off --timeout 120 --format junit
fi
cp "$work/r.json" "$work/node-a.json"
run_vg "merge" "$PREFLIGHT" merge "$work/node-a.json" "$work/r.json" --format prometheus
finish
