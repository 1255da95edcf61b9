#!/usr/bin/env bash
# `preflight merge`: results of separate single-node runs (distinct hosts through --sysroot) and
# per-rank results (a torchrun world through its variables) merge into one report that validates
# against the schema, with the exit code of its verdicts; bad files are refused with exit 2 naming
# the file and the fault.
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}
schema="$PREFLIGHT_SOURCE_DIR/schema/preflight-v1.schema.json"

# A host of its own: a --sysroot tree whose only fact is its hostname.
host_tree() {
  mkdir -p "$work/$1/proc/sys/kernel"
  echo "$1" >"$work/$1/proc/sys/kernel/hostname"
}

validate() {  # validate FILE DESCRIPTION
  if ! "$py" -c 'import jsonschema' 2>/dev/null; then echo "skip: $2 (python3-jsonschema is not installed)"; return; fi
  if "$py" - "$schema" "$1" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
for e in errors[:5]:
    print("  |", "/".join(map(str, e.absolute_path)), e.message[:200], file=sys.stderr)
sys.exit(1 if errors else 0)
PY
  then pass "$2 validates"; else fail "$2 does not validate"; fi
}

# Three single-node runs, each rank 0 of its own world, on hosts node-c, node-a, node-b.
for h in node-c node-a node-b; do
  host_tree "$h"
  "$PREFLIGHT" --sysroot "$work/$h" --json "$work/$h.json" >/dev/null 2>&1
  [ -s "$work/$h.json" ] || fail "no result file from the run on $h"
done
# A fourth run on the live machine, with its own environment.
NCCL_P2P_DISABLE=true "$PREFLIGHT" --json "$work/live.json" >/dev/null 2>&1

rc=0
"$PREFLIGHT" merge --format json --json "$work/merged.json" --junit "$work/merged.xml" --prom "$work/merged.prom" \
  "$work/node-c.json" "$work/node-a.json" "$work/node-b.json" "$work/live.json" >"$work/out" 2>"$work/err" || rc=$?
validate "$work/out" "the merged report"
cmp -s "$work/out" "$work/merged.json" && pass "--json FILE holds what --format json printed" || fail "--json FILE differs from stdout"
expect_eq "$(json_get "d['summary']['exit_code']")" "$rc" "the merge's exit code vs its summary"
expect_eq "$(json_get "d['world']['size'], d['world']['nodes'], d['world']['source']")" "4 4 merge" "world"
expect_eq "$(json_get "[r['host'] for r in d['ranks']][:3]")" "['node-c', 'node-a', 'node-b']" "ranks in file order"
expect_eq "$(json_get "[r['rank'] for r in d['ranks']]")" "[0, 1, 2, 3]" "renumbered ranks"
expect_contains "$(json_get "' | '.join(d['notes'])")" "renumbered in the order the files were given" "the notes"
expect_eq "$(json_get "[c['status'] for c in d['checks'] if c['id']=='launch.ranks']")" "['PASS']" "launch.ranks"
expect_eq "$(json_get "[c['status'] for c in d['checks'] if c['id']=='comm.barrier']")" "['SKIP']" "comm.barrier"
expect_eq "$(json_get "d['job']['missing']")" "[]" "job.missing"
expect_eq "$(json_get "sorted(set(h for c in d['checks'] if c['scope']=='node' for h in c['hosts']))[:3]")" \
  "['node-a', 'node-b', 'node-c']" "hosts of the node-scope results"
grep -q '<testsuite' "$work/merged.xml" && pass "--junit written" || fail "--junit not written"
grep -q '^preflight_check_status{' "$work/merged.prom" && pass "--prom written" || fail "--prom not written"

# Text: the grouped lines, the note.
rc=0
"$PREFLIGHT" merge --color never "$work/node-c.json" "$work/node-a.json" "$work/node-b.json" >"$work/text" 2>&1 || rc=$?
expect_contains "$(cat "$work/text")" "3 ranks on 3 nodes" "the text header"
expect_contains "$(cat "$work/text")" "PASS     launch.ranks" "the text report"
expect_contains "$(cat "$work/text")" "NOTE merged 3 result files" "the text report"
"$PREFLIGHT" merge --format json "$work/node-c.json" "$work/node-a.json" "$work/node-b.json" >"$work/out" 2>/dev/null
expect_eq "$(json_get "d['summary']['exit_code']")" "$rc" "the text merge's exit code"
"$PREFLIGHT" merge --strict --format json "$work/node-a.json" "$work/node-b.json" >"$work/out" 2>/dev/null
expect_eq "$(json_get "d['summary']['strict']")" "True" "--strict in the merged summary"

# Per-rank results of one world (torchrun's variables): ranks kept; a rank without a file is missing.
for r in 0 1 2; do
  host_tree "rank-$r"
  TORCHELASTIC_RUN_ID=merge-test RANK=$r WORLD_SIZE=3 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 \
    "$PREFLIGHT" --sysroot "$work/rank-$r" --json "$work/rank-$r.json" >/dev/null 2>&1
done
"$PREFLIGHT" merge --format json "$work/rank-2.json" "$work/rank-0.json" >"$work/out" 2>/dev/null
validate "$work/out" "a merge with a missing rank"
expect_eq "$(json_get "[r['rank'] for r in d['ranks']], d['world']['size']")" "[0, 2] 3" "per-rank files keep their ranks"
expect_eq "$(json_get "[m['rank'] for m in d['job']['missing']]")" "[1]" "the rank no file holds"
expect_eq "$(json_get "[c['status'] for c in d['checks'] if c['id']=='launch.ranks']")" "['FAIL']" "launch.ranks with a rank missing"
expect_eq "$(json_get "d['summary']['exit_code']")" "1" "exit code with a rank missing"
# A directory stands for its *.json files.
mkdir "$work/ranks" && cp "$work"/rank-?.json "$work/ranks/"
"$PREFLIGHT" merge --format json "$work/ranks" >"$work/out" 2>/dev/null
expect_eq "$(json_get "[r['rank'] for r in d['ranks']], d['job']['missing']")" "[0, 1, 2] []" "a directory of per-rank files"

# A large merge (16 MiB of result files or more) re-executes itself once with glibc's huge-page
# heap tunables (cli/merge_heap.hpp) where the kernel and glibc honour them, keeps the user's other
# tunables, leaves the user's own heap setting alone, and judges exactly as without them.
"$py" - "$work/live.json" "$work/big" 600 <<'PY'
import json, os, sys
sample, out, n = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
os.makedirs(out)
rank0 = sample["ranks"][0]
for r in range(n):
    host = "big-%04d" % (r // 8)
    facts = json.loads(json.dumps(rank0["facts"]))
    facts["identity"].update(hostname=host, pid=10000 + r)
    facts["placement"].update(rank=r, world_size=n, local_rank=r % 8, local_ranks=8)
    checks = [dict(c, hosts=[host], ranks=[r]) for c in sample["checks"] if c["scope"] != "job"]
    doc = dict(sample, world=dict(sample["world"], size=n), checks=checks,
               ranks=[dict(rank0, rank=r, host=host, local_rank=r % 8, facts=facts)])
    # padded to 30 KiB a file, as real per-rank files of a GPU node are
    doc["padding"] = "x" * max(0, 30000 - len(json.dumps(doc)))
    json.dump(doc, open(os.path.join(out, "preflight-rank-%d.json" % r), "w"), separators=(",", ":"))
PY
big_bytes=$(du -sb "$work/big" | cut -f1)
[ "$big_bytes" -ge $((16 << 20)) ] || fail "the large merge's files are $big_bytes bytes, under 16 MiB"
if sanitized_build; then
  # A sanitizer's allocator replaces glibc's, so the heap tunables change nothing there: one large
  # merge, for the sanitizer's view of the reader pool over 600 files (the re-execution and its
  # comparisons run in the plain build, four traced merges that take minutes under a sanitizer).
  "$PREFLIGHT" merge --format json "$work/big" >"$work/out" 2>"$work/err" || true
  expect_eq "$(json_get "d['world']['size'], len(d['ranks'])")" "600 600" "the large merge's world and ranks"
elif command -v strace >/dev/null && strace -f -qq -e trace=none true 2>/dev/null; then
  traced() {  # traced NAME ARGS...: the merge's execve calls (with their environment) in $work/NAME.trace
    local name=$1
    shift
    strace -f -qq -v -s 512 -e trace=execve -e signal=none -o "$work/$name.trace" "$@" >"$work/$name.out" 2>"$work/$name.err" || true
  }
  # the files as a shell glob names them, relative to the working directory
  (cd "$work" && traced tuned "$PREFLIGHT" merge --format json big/preflight-rank-*.json)
  thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
  glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [[ "$thp" =~ \[(always|madvise)\] ]] && [ "$(printf '%s\n2.35\n' "$glibc" | sort -V | head -1)" = 2.35 ]; then
    expect_eq "$(grep -c 'execve(' "$work/tuned.trace")" 2 "execs of a 600-file merge named by relative paths ($((big_bytes >> 20)) MiB; THP '$thp', glibc $glibc)"
    expect_contains "$(grep 'execve("/proc/self/exe"' "$work/tuned.trace")" \
      '"GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864"' "the re-execution"
    expect_contains "$(grep 'execve("/proc/self/exe"' "$work/tuned.trace")" '"merge", "--format", "json",' \
      "the re-execution's arguments"
    traced kept env GLIBC_TUNABLES=glibc.malloc.arena_max=4 "$PREFLIGHT" merge --format json "$work/big"
    expect_contains "$(grep 'execve("/proc/self/exe"' "$work/kept.trace")" \
      '"GLIBC_TUNABLES=glibc.malloc.arena_max=4:glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864"' \
      "the re-execution with the user's own tunables"
  else
    expect_eq "$(grep -c 'execve(' "$work/tuned.trace")" 1 "execs of a large merge without THP for the heap (THP '$thp', glibc $glibc)"
  fi
  traced own env GLIBC_TUNABLES=glibc.malloc.hugetlb=0 "$PREFLIGHT" merge --format json "$work/big"
  expect_eq "$(grep -c 'execve(' "$work/own.trace")" 2 "execs of a large merge with the user's glibc.malloc.hugetlb (env, then preflight)"
  traced small "$PREFLIGHT" merge --format json "$work/ranks"
  expect_eq "$(grep -c 'execve(' "$work/small.trace")" 1 "execs of a small merge"
  same=$("$py" - "$work/tuned.out" "$work/own.out" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for d in (a, b):  # times differ: the run's, and the job-scope checks' (judged again by the merge)
    d.pop("duration_ms", None)
    for c in d["checks"]:
        c.pop("seconds", None)
print("same" if a == b else "different")
PY
)
  expect_eq "$same" same "the large merge's report with and without the heap tunables"
  cp "$work/tuned.out" "$work/out"
  expect_eq "$(json_get "d['world']['size'], len(d['ranks'])")" "600 600" "the large merge's world and ranks"
else
  echo "skip: the large merge's re-execution (strace is not installed or cannot trace here)"
fi

# Bad files: exit 2, the file and the fault named, nothing printed on stdout.
good="$work/node-a.json"
head -c 3000 "$good" >"$work/truncated.json"
printf 'PFLT\001\002\003 not json' >"$work/binary.json"
sed 's|"schema": "preflight/v1"|"schema": "preflight/v9"|' "$good" >"$work/schema.json"
sed 's|"version": "[0-9]*\.|"version": "97.|' "$good" >"$work/major.json"
echo '[]' >"$work/array.json"
truncate -s 65M "$work/huge.json"
bad() {  # bad FILE WHAT
  expect_rc 2 "merge of $(basename "$1")" -- "$PREFLIGHT" merge "$good" "$1"
  expect_contains "$(cat "$work/err")" "$(basename "$1"): $2" "the error"
  [ -s "$work/out" ] && fail "a refused merge printed a report"
}
bad "$work/truncated.json" "truncated"
bad "$work/binary.json" "byte 0: not JSON (expected '{', found a letter)"
bad "$work/schema.json" '"schema" is not "preflight/v1"'
bad "$work/major.json" "written by preflight 97."
bad "$work/array.json" "not a preflight result: the JSON is array"
bad "$work/huge.json" "is 65 MiB, over the 64 MiB a result file may have"
bad "$work/none.json" "cannot read: No such file"
bad "$work/node-a.json" "rank 0 of host node-a is also in"
expect_rc 2 "merge without files" -- "$PREFLIGHT" merge
expect_contains "$(cat "$work/err")" "merge needs at least one result file" "the error"
expect_rc 2 "merge of an empty directory" -- "$PREFLIGHT" merge "$work/node-a"
finish
