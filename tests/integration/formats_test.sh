#!/usr/bin/env bash
# JUnit XML and the Prometheus textfile: well-formed with hostile strings, the right counts, files
# written atomically next to stdout's format.
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}
hostile=$'<tag attr="x">&amp; \x01\x1b[31m \xff\xfe "quoted" \\ back'

# JUnit on stdout: well-formed, one testcase per check, statuses mapped.
checks=$("$PREFLIGHT" list | wc -l)
NCCL_P2P_DISABLE=true NCCL_SOCKET_IFNAM="$hostile" "$PREFLIGHT" --format junit >"$work/out" 2>"$work/err"
if command -v xmllint >/dev/null; then
  xmllint --noout "$work/out" 2>"$work/xmlerr" && pass "JUnit with hostile strings is well-formed XML" \
    || { fail "JUnit is not well-formed"; head -5 "$work/xmlerr" >&2; }
fi
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
assert int(suites[0].get("failures")) >= 1
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
fi
"$py" - "$work/out" "$checks" <<'PY' && pass "Prometheus exposition format" || fail "Prometheus exposition format"
import re, sys, collections
line_re = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\\n])*",?)*\})? -?[0-9.e+]+$')
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
finish
