#!/usr/bin/env bash
# The command-line contract (`preflight --help`, README.md#exit-codes): commands, bad input, config files, exit codes.
source "$(dirname "$0")/lib.sh"

expect_rc 0 "--version" -- "$PREFLIGHT" --version
expect_contains "$(cat "$work/out")" "preflight 0." "--version output"
expect_rc 0 "--help" -- "$PREFLIGHT" --help
for opt in --profile --only --skip --format --json --junit --prom --timeout --strict --expect-gpus \
           --expect-world-size --expect-nodes --min-busbw --allreduce-bytes --target-driver --target-gpu \
           --site-packages --python --cuda-runtime --nccl-lib --model-params --zero-stage --tensor-parallel \
           --pipeline-parallel --ranks-per-node --checkpoint-dir \
           --sysroot --topology-xml --matrix --json-per-rank --config --verbose; do
  grep -q -- "$opt" "$work/out" || fail "--help does not mention $opt"
done

expect_rc 0 "list" -- "$PREFLIGHT" list
cp "$work/out" "$work/list"
for id in launch.env shm.capacity host.memory host.disk host.limits env.nccl; do
  grep -q "^$id " "$work/list" || fail "list is missing $id"
done
for id in $(cut -d' ' -f1 "$work/list"); do
  expect_rc 0 "explain $id" -- "$PREFLIGHT" explain "$id"
  [ "$(wc -l <"$work/out")" -ge 10 ] || fail "explain $id is shorter than 10 lines"
  grep -q "FAIL\|WARN" "$work/out" || fail "explain $id names no failure"
done
# The check table's causes, both ways.
expect_rc 0 "explain cuda.smoke" -- "$PREFLIGHT" explain cuda.smoke
expect_contains "$(cat "$work/out")" "May follow from: driver.loaded" "explain names the cause a check folds under"
expect_rc 0 "explain driver.loaded" -- "$PREFLIGHT" explain driver.loaded
expect_contains "$(cat "$work/out")" "May explain: launch.gpu_binding, cuda.runtime" "explain names what follows from a check"
expect_rc 2 "explain of an unknown id" -- "$PREFLIGHT" explain no.such
expect_contains "$(cat "$work/err")" "no check 'no.such'" "stderr"
expect_rc 2 "explain without an id" -- "$PREFLIGHT" explain

expect_rc 2 "--format bogus" -- "$PREFLIGHT" --format bogus
expect_contains "$(cat "$work/err")" "--format 'bogus'" "stderr"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "--format bogus: error is not one line"
[ -s "$work/out" ] && fail "--format bogus printed a report"
expect_rc 2 "--timeout abc" -- "$PREFLIGHT" --timeout abc
expect_rc 2 "--timeout -1" -- "$PREFLIGHT" --timeout -1
expect_rc 2 "--zero-stage 4" -- "$PREFLIGHT" --zero-stage 4
expect_rc 2 "--ranks-per-node 0" -- "$PREFLIGHT" --ranks-per-node 0
expect_rc 2 "--model-params lots" -- "$PREFLIGHT" --model-params lots
expect_rc 2 "--allreduce-bytes 12Q" -- "$PREFLIGHT" --allreduce-bytes 12Q
# Sizes no transport runs exactly are refused, naming the limit and why (never rounded, never capped).
for size in 3 8 20 100G; do
  expect_rc 2 "--allreduce-bytes $size" -- "$PREFLIGHT" --allreduce-bytes "$size"
  expect_contains "$(cat "$work/err")" "a multiple of 8 bytes from 16 B to 8 GiB" "--allreduce-bytes $size"
done
for args in "--tensor-parallel 0" "--pipeline-parallel -1" "--tensor-parallel 8 --pipeline-parallel 16 --expect-world-size 1000"; do
  # shellcheck disable=SC2086
  expect_rc 2 "$args" -- "$PREFLIGHT" $args --only host.memory
done
expect_contains "$(cat "$work/err")" "= 128 does not divide --expect-world-size 1000" "tp × pp not dividing the world"
expect_rc 2 "--profile cluster" -- "$PREFLIGHT" --profile cluster
expect_rc 2 "an unknown option" -- "$PREFLIGHT" --no-such-option
expect_rc 2 "an unknown command" -- "$PREFLIGHT" frobnicate
expect_rc 2 "--sysroot that does not exist" -- "$PREFLIGHT" --sysroot /nonexistent/root
expect_rc 2 "an unreadable config file" -- "$PREFLIGHT" --config /nonexistent/preflight.ini
expect_contains "$(cat "$work/err")" "cannot read" "stderr"

printf 'timeout = 30\nthis line is not an option\n' >"$work/bad.ini"
expect_rc 2 "a malformed config file" -- "$PREFLIGHT" --config "$work/bad.ini"
printf 'no-such-option = 1\n' >"$work/unknown.ini"
expect_rc 2 "a config file with an unknown option" -- "$PREFLIGHT" --config "$work/unknown.ini"
printf 'format = bogus\n' >"$work/badvalue.ini"
expect_rc 2 "a config file with a bad value" -- "$PREFLIGHT" --config "$work/badvalue.ini"

# The config file supplies options; the command line wins over it.
printf '# site defaults\nformat = json\nonly = host.limits\nstrict = true\n' >"$work/site.ini"
"$PREFLIGHT" --config "$work/site.ini" >"$work/out" 2>"$work/err"
expect_eq "$(json_get "[c['id'] for c in d['checks']]")" "['host.limits']" "checks selected by the config file"
expect_eq "$(json_get "d['summary']['strict']")" True "strict from the config file"
"$PREFLIGHT" --config "$work/site.ini" --only env.nccl >"$work/out" 2>"$work/err"
expect_eq "$(json_get "[c['id'] for c in d['checks']]")" "['env.nccl']" "--only on the command line beats the file"

# --only / --skip globs.
"$PREFLIGHT" --only 'host.*' --format json >"$work/out" 2>/dev/null
expect_eq "$(json_get "sorted(c['id'] for c in d['checks'])")" "['host.disk', 'host.limits', 'host.memory']" "--only host.*"
"$PREFLIGHT" --skip 'host.*,env.*,cuda.*,gpu.*,driver.*,nccl.*,net.*,topo.*,cluster.*,comm.*,launch.gpu*,launch.ranks' --format json >"$work/out" 2>/dev/null
expect_eq "$(json_get "sorted(c['id'] for c in d['checks'])")" "['launch.env', 'shm.capacity']" "--skip host.*,env.*,…"

# A gate that checked nothing never passes: a glob matching no check, an empty selection, a
# selection that leaves nothing, are usage errors with a suggestion.
expect_rc 2 "--only with a typo" -- "$PREFLIGHT" --only shm.capacty
expect_contains "$(cat "$work/err")" "did you mean shm.capacity?" "--only shm.capacty"
[ -s "$work/out" ] && fail "--only shm.capacty printed a report"
expect_rc 2 "--only 'foo*'" -- "$PREFLIGHT" --only 'foo*'
expect_contains "$(cat "$work/err")" "matches no check" "--only foo*"
expect_rc 2 "--only X --skip X" -- "$PREFLIGHT" --only shm.capacity --skip shm.capacity
expect_contains "$(cat "$work/err")" "selects no check" "--only X --skip X"
expect_rc 2 "--only ''" -- "$PREFLIGHT" --only ''
expect_rc 2 "--only ','" -- "$PREFLIGHT" --only ','
expect_rc 2 "--skip with a typo" -- "$PREFLIGHT" --skip 'nett.*'
expect_contains "$(cat "$work/err")" "--skip 'nett.*' matches no check" "--skip nett.*"
expect_rc 2 "merge --only with a typo" -- "$PREFLIGHT" merge --only shm.capacty "$work/none.json"
# Config values: matching quotes are removed, a UTF-8 BOM is accepted, a directory is refused.
printf '\xef\xbb\xbfonly = "host.limits"\nformat = \x27json\x27\n' >"$work/quoted.ini"
expect_rc 0 "a config file with a BOM and quoted values" -- "$PREFLIGHT" --config "$work/quoted.ini"
expect_eq "$(json_get "[c['id'] for c in d['checks']]")" "['host.limits']" "only = \"host.limits\""
printf 'only = "shm.capacty"\n' >"$work/typo.ini"
expect_rc 2 "a config file selecting no check" -- "$PREFLIGHT" --config "$work/typo.ini"
expect_rc 2 "--config DIR" -- "$PREFLIGHT" --config "$work"
expect_contains "$(cat "$work/err")" "is a directory" "--config DIR"
# --timeout has a maximum (an overflowing one no longer turns into a negative deadline).
expect_rc 2 "--timeout 1e12" -- "$PREFLIGHT" --timeout 1e12
expect_contains "$(cat "$work/err")" "up to 86400" "--timeout 1e12"
expect_rc 2 "--timeout 86401" -- "$PREFLIGHT" --timeout 86401
expect_rc 0 "--timeout 86400" -- "$PREFLIGHT" --timeout 86400 --only host.limits
# Expectations given to a single process are judged, not skipped.
expect_rc 1 "--expect-world-size 4 alone" -- "$PREFLIGHT" --expect-world-size 4 --only launch.ranks --format json
expect_eq "$(check_status launch.ranks)" FAIL "launch.ranks with --expect-world-size 4 on one process"
expect_rc 1 "--expect-nodes 2 alone" -- "$PREFLIGHT" --expect-nodes 2 --only launch.ranks --format json
expect_eq "$(check_status launch.ranks)" FAIL "launch.ranks with --expect-nodes 2 on one process"
expect_rc 0 "--expect-world-size 1 alone" -- "$PREFLIGHT" --expect-world-size 1 --expect-nodes 1 --only launch.ranks --format json
expect_eq "$(check_status launch.ranks)" PASS "launch.ranks with --expect-world-size 1 on one process"
# The test faults are not in the binary users run: the variables change nothing there.
if grep -a -q PREFLIGHT_TEST_ "$PREFLIGHT"; then fail "preflight holds the test faults' variable names"; else pass "no test fault in preflight"; fi
start=$(date +%s%N)
expect_rc 0 "PREFLIGHT_TEST_HANG_PROBE in a user's environment" -- \
  env PREFLIGHT_TEST_HANG_PROBE=limits PREFLIGHT_TEST_STOP=0:probe "$PREFLIGHT" --timeout 10 --only host.limits --format json
[ "$(check_status host.limits)" != UNKNOWN ] && pass "host.limits judged with a stray PREFLIGHT_TEST_HANG_PROBE" \
  || fail "host.limits did not run with a stray PREFLIGHT_TEST_HANG_PROBE"
# A hung probe would hold the probe phase for half of --timeout (5 s); a sanitizer build's probes
# alone take about a second.
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 5000 ] || fail "a stray PREFLIGHT_TEST_HANG_PROBE made the run wait"

# --json FILE writes the same document while stdout stays text.
"$PREFLIGHT" --only host.limits --json "$work/report.json" >"$work/out" 2>/dev/null
expect_contains "$(head -1 "$work/out")" "preflight 0." "stdout is the text report"
"${PYTHON3:-python3}" -c "import json; d=json.load(open('$work/report.json')); assert d['schema']=='preflight/v1'" \
  && pass "--json FILE holds the JSON report" || fail "--json FILE is not the JSON report"
expect_rc 2 "--json into a missing directory is refused before anything is probed" -- "$PREFLIGHT" --only host.limits --json /nonexistent/dir/r.json
expect_contains "$(cat "$work/err")" "--json '/nonexistent/dir/r.json'" "stderr names the path"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "--json into a missing directory: error is not one line"

# Colour: never on a pipe, never with NO_COLOR, always with --color always.
"$PREFLIGHT" --only host.limits >"$work/out" 2>/dev/null
grep -q $'\033\[' "$work/out" && fail "colour escape codes on a pipe"
NO_COLOR=1 "$PREFLIGHT" --only host.limits --color auto >"$work/out" 2>/dev/null
grep -q $'\033\[' "$work/out" && fail "colour escape codes with NO_COLOR"
"$PREFLIGHT" --only host.limits --color always >"$work/out" 2>/dev/null
grep -q $'\033\[' "$work/out" || fail "no colour with --color always"

# The character set the locale names: UTF-8 by default, ASCII under LC_ALL=C (or LANG=C with no
# LC_ALL), for the report and for explain.
LANG=C.UTF-8 "$PREFLIGHT" --only host.limits >"$work/out" 2>/dev/null
grep -q '·' "$work/out" && pass "UTF-8 under LANG=C.UTF-8" || fail "no '·' under LANG=C.UTF-8: $(head -2 "$work/out")"
for locale in "LC_ALL=C" "LANG=C" "LC_ALL=en_US.ISO-8859-1 LANG=C.UTF-8"; do
  env -u LC_ALL -u LC_CTYPE -u LANG $locale "$PREFLIGHT" --only host.limits >"$work/out" 2>/dev/null
  env -u LC_ALL -u LC_CTYPE -u LANG $locale "$PREFLIGHT" explain comm.allreduce >>"$work/out" 2>/dev/null
  if LC_ALL=C grep -q -P '[^\x00-\x7F]' "$work/out"; then
    fail "$locale: bytes beyond ASCII: $(LC_ALL=C grep -o -P '.{0,20}[^\x00-\x7F]+' "$work/out" | head -2)"
  else pass "$locale: the report and explain are ASCII"; fi
done

# A probe that hangs: the run ends at --timeout with exit 4 and names the probe. The first probe
# hangs, so the probes before it cannot use up the 0.5 s phase first (they are slower in a
# sanitizer build).
start=$(date +%s%N)
expect_rc 4 "a probe that hangs past --timeout" -- env PREFLIGHT_TEST_HANG_PROBE=identity "$PREFLIGHT_FAULTS" --timeout 1 --format json
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$elapsed_ms" -lt 3000 ] && pass "ended after ${elapsed_ms} ms" || fail "took ${elapsed_ms} ms for --timeout 1"
expect_contains "$(json_get "d['incidents'][0]")" "probe 'identity'" "incident"
expect_eq "$(json_get "d['summary']['exit_code']")" 4 "exit_code in the JSON"
expect_eq "$(check_status host.memory)" UNKNOWN "host.memory without its facts"
# The facts a hung probe left behind are named as a hang with its deadline, not as an unreadable file.
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='host.memory'][0]")" "was not gathered: probe 'identity' hung" "a hang named as a hang"
expect_contains "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='host.memory'][0]")" "of --timeout 1 s" "the hang's deadline"
expect_contains "$(json_get "[c for c in d['checks'] if c['id'] == 'host.memory'][0]['remedy']")" "--timeout" "the hang's remedy"
[[ "$(json_get "[c['summary'] for c in d['checks'] if c['id']=='host.memory'][0]")" == *"not probed"* ]] && fail "a hang reported as 'not probed'" || pass "no 'not probed' for a hang"
finish
