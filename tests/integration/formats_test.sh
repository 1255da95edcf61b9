#!/usr/bin/env bash
# JUnit XML and the Prometheus textfile: valid (the repository's JUnit XSD, promtool) with hostile
# strings in the summaries, the right counts, files written atomically next to stdout's format; the
# terminal's view: the progress line, colour and NO_COLOR, the "what to fix first" list.
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}
hostile=$'<tag attr="x">&amp; ]]> \x01\x1b[31m \xff\xfe \xed\xa0\x80 \xc0\xaf "quoted" \\ back'
xsd="$PREFLIGHT_SOURCE_DIR/schema/junit.xsd"

# JUnit on stdout: well-formed, one testcase per check, statuses mapped.
checks=$("$PREFLIGHT" list | wc -l)
# The hostile value lands in net.socket_ifname's summary (FAIL: it matches no interface).
NCCL_P2P_DISABLE=true NCCL_SOCKET_IFNAM=x NCCL_SOCKET_IFNAME="$hostile" "$PREFLIGHT" --format junit >"$work/out" 2>"$work/err"
grep -q 'NCCL_SOCKET_IFNAME=&lt;tag attr=&quot;x&quot;&gt;&amp;amp; \]\]&gt;' "$work/out" \
  && pass "the hostile value is in a summary, escaped" || fail "the hostile value is not in the JUnit output"
command -v xmllint >/dev/null || { fail "xmllint (libxml2-utils) is missing"; }
xmllint --noout --schema "$xsd" "$work/out" 2>"$work/xmlerr" && pass "JUnit with hostile strings validates against schema/junit.xsd" \
  || { fail "JUnit does not validate"; head -5 "$work/xmlerr" >&2; }
NCCL_SOCKET_IFNAME="$hostile" "$PREFLIGHT" --format junit --strict --only 'net.*,host.*' >"$work/strict.xml" 2>/dev/null
xmllint --noout --schema "$xsd" "$work/strict.xml" 2>"$work/xmlerr" && pass "--strict JUnit validates" \
  || { fail "--strict JUnit does not validate"; head -5 "$work/xmlerr" >&2; }
"$py" - "$work/out" "$checks" <<'PY' && pass "JUnit structure" || fail "JUnit structure"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == 1 and suites[0].get("name") == "preflight.node"
cases = suites[0].findall("testcase")
assert len(cases) == int(sys.argv[2]), (len(cases), sys.argv[2])
env = [c for c in cases if c.get("name").startswith("env.nccl@")][0]
assert env.get("classname") == "env"
failure = env.find("failure")
assert failure is not None and failure.get("type") in ("FAIL", "UNKNOWN"), ET.tostring(env)
assert int(suites[0].get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
assert int(suites[0].get("skipped")) == sum(1 for c in cases if c.find("skipped") is not None)
# Real timings: the contained GPU helper and the hwloc load take measurable time.
times = {c.get("name").split("@")[0]: float(c.get("time")) for c in cases}
assert times["driver.loaded"] > 0 and times["net.gpu_nic_affinity"] > 0, times
assert all(t <= float(suites[0].get("time")) + 0.001 for t in times.values()), times
PY

# --junit FILE / --prom FILE alongside JSON on stdout.
"$PREFLIGHT" --only 'host.*' --format json --junit "$work/r.xml" --prom "$work/r.prom" >"$work/out" 2>/dev/null
json_get "d['schema']" >/dev/null && pass "stdout stays JSON" || fail "stdout is not JSON"
[ -s "$work/r.xml" ] && pass "--junit FILE written" || fail "--junit FILE missing"
[ -s "$work/r.prom" ] && pass "--prom FILE written" || fail "--prom FILE missing"
ls "$work" | grep -q '\.tmp\.' && fail "a temporary file was left behind"

# Prometheus: exposition format, one series per status, exactly one 1 per check and host.
NCCL_SOCKET_IFNAM="$hostile" "$PREFLIGHT" --format prometheus >"$work/out" 2>/dev/null
if command -v promtool >/dev/null; then
  promtool check metrics <"$work/out" >"$work/promerr" 2>&1 && pass "promtool check metrics" \
    || { fail "promtool rejects the textfile"; head -5 "$work/promerr" >&2; }
else
  echo "note: promtool (Debian's prometheus package) is not installed: the exposition format is checked below only"
fi
grep -q '^preflight_shm_bytes{host="[^"]*",kind="total"} [0-9]' "$work/out" && pass "/dev/shm bytes exported" \
  || fail "preflight_shm_bytes is missing"
grep -q '^preflight_check_duration_seconds{check="shm.capacity"' "$work/out" && pass "check durations exported" \
  || fail "preflight_check_duration_seconds is missing"
"$py" - "$work/out" "$checks" <<'PY' && pass "Prometheus exposition format" || fail "Prometheus exposition format"
import re, sys, collections
line_re = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\\n])*",?)*\})? [-+]?([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?|Inf|NaN)$')
ones = collections.Counter()
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        continue
    assert line_re.match(line), line
    if line.startswith("preflight_check_status{"):
        check = re.search(r'check="([^"]*)"', line).group(1)
        ones[check] += int(line.rsplit(" ", 1)[1])
assert len(ones) == int(sys.argv[2]) and all(v == 1 for v in ones.values()), ones
PY

# The node profile's all_reduce across the fake GPUs: its bandwidth is a metric.
if [ -n "${PREFLIGHT_FAKE_GPU_LIB_DIR:-}" ] && [ -d "${PREFLIGHT_FAKE_GPU_LIB_DIR:-}" ]; then
  LD_LIBRARY_PATH="$PREFLIGHT_FAKE_GPU_LIB_DIR" PREFLIGHT_FAKE_GPU="$PREFLIGHT_FAKE_GPU_SCENARIOS_DIR/h100x8-healthy.json" \
    "$PREFLIGHT" --only comm.allreduce --allreduce-bytes 1M --format prometheus >"$work/gpu.prom" 2>/dev/null
  grep -q '^preflight_allreduce_busbw_gbps{host="[^"]*",transport="nccl"} [0-9]' "$work/gpu.prom" \
    && pass "all_reduce busbw exported" || { fail "preflight_allreduce_busbw_gbps missing"; cat "$work/gpu.prom" >&2; }
  if command -v promtool >/dev/null; then
    promtool check metrics <"$work/gpu.prom" >/dev/null 2>&1 && pass "promtool accepts the bandwidth metrics" \
      || fail "promtool rejects the bandwidth metrics"
  fi
fi

# On a terminal (a real pty from script(1)): the progress line for a phase longer than a second,
# cleared before the report; colour unless NO_COLOR; the "what to fix first" list.
if command -v script >/dev/null; then
  in_tty() { script -qfec "$1" /dev/null >"$2" 2>&1 </dev/null; }
  # The first probe (identity) hangs: the probe phase lasts until its deadline (half of --timeout).
  in_tty "PREFLIGHT_TEST_HANG_PROBE=identity '$PREFLIGHT_FAULTS' --timeout 4 --only 'host.*,env.*'" "$work/tty"
  grep -q $'\r\e\[Kpreflight: probe (probe identity) · [0-9.]* s' "$work/tty" && pass "progress line names the phase and probe" \
    || { fail "no progress line on the terminal"; cat -v "$work/tty" | head -20 >&2; }
  # The line is cleared (\r ESC[K) before the report's first line.
  "$PYTHON3" - "$work/tty" <<'PY' && pass "progress line cleared before the report" || fail "the report is mixed with the progress line"
import sys
data = open(sys.argv[1], "rb").read()
last_progress = data.rfind(b"preflight: probe")
clear = data.rfind(b"\r\x1b[K")
header = data.find(b" \xc2\xb7 profile ")  # the report's first line
assert last_progress < clear < header, (last_progress, clear, header)
PY
  grep -q $'\e\[' "$work/tty" && pass "colour on a terminal" || fail "no colour on a terminal"
  in_tty "NO_COLOR=1 '$PREFLIGHT' --only 'host.*,env.*' --progress never" "$work/tty2"
  grep -q $'\e\[' "$work/tty2" && fail "NO_COLOR still painted the report" || pass "NO_COLOR: no escape sequences"
  # no-color.org: an empty NO_COLOR is as if it were not set
  in_tty "NO_COLOR= '$PREFLIGHT' --only 'host.*,env.*' --progress never" "$work/tty-empty"
  grep -q $'\e\[' "$work/tty-empty" && pass "an empty NO_COLOR: colour as without it" || fail "an empty NO_COLOR turned colour off"
  in_tty "NCCL_SOCKET_IFNAME=doesnotexist '$PREFLIGHT' --only 'net.socket_ifname,host.*' --color never" "$work/tty3"
  grep -A2 'WHAT TO FIX FIRST' "$work/tty3" | grep -q '1\. FAIL net.socket_ifname' && pass "what to fix first: the FAIL first" \
    || { fail "no fix-first list"; cat "$work/tty3" >&2; }
else
  echo "note: script(1) is missing: the terminal checks were not run"
fi
# Not a terminal: no progress line at all (CI logs stay clean).
PREFLIGHT_TEST_HANG_PROBE=identity "$PREFLIGHT_FAULTS" --timeout 3 --only 'host.*' >/dev/null 2>"$work/err"
grep -q 'preflight: probe (' "$work/err" && fail "progress line without a terminal" || pass "no progress line without a terminal"
PREFLIGHT_TEST_HANG_PROBE=identity "$PREFLIGHT_FAULTS" --timeout 3 --only 'host.*' --progress always >/dev/null 2>"$work/err"
grep -q 'preflight: probe (probe identity)' "$work/err" && pass "--progress always draws without a terminal" \
  || fail "--progress always drew nothing"
finish
