#!/usr/bin/env bash
# One redaction rule for every output (core/redact.hpp): preflight run on this machine with secrets
# planted in its environment (tokens, passwords, API keys, Open MPI's transport key, a JWT, and a
# user:password in MASTER_ADDR, NCCL_COMM_ID and TORCH_DISTRIBUTED_INIT) shows none of their values
# anywhere: stdout in every --format, with -v, the --json, --junit, --prom and --json-per-rank
# files, stderr, `merge` of the per-rank file, a capture (its directory and --tar) and the same
# capture judged with --sysroot. The marker stands where a value was; the values of variables that
# are no secret (NCCL_IB_PKEY, NCCL_SOCKET_IFNAME) stay. A capture keeps only the passwd entry of
# the user it runs as, and says so in its manifest.
source "$(dirname "$0")/lib.sh"
py=${PYTHON3:-python3}

secrets=(nccl-api-t0ken-7f3a9c nccl-pa55word-2b8d torch-s3cret-k3y-91e0 0123456789abcdef-fedcba9876543210
  eyJhbGciOiJIUzI1NiJ9.c2lnbmF0dXJl hf_planted0123456789abcdef aws-wJalrXUtnFEMI-K7MDENG
  wandb-0f1e2d3c4b5a69788796 mlflow-pw-6c5d ngc-api-k3y-4f2a m4ster-pw-5e1f c0mm-id-pw-8a2c t0rch-init-pw-3d4e)
planted=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="${HOME:-/root}" "${keep_env[@]}"
  NCCL_API_TOKEN=nccl-api-t0ken-7f3a9c NCCL_PASSWORD=nccl-pa55word-2b8d TORCH_SECRET_KEY=torch-s3cret-k3y-91e0
  OMPI_MCA_orte_precondition_transports=0123456789abcdef-fedcba9876543210
  SLURM_JWT=eyJhbGciOiJIUzI1NiJ9.c2lnbmF0dXJl HF_TOKEN=hf_planted0123456789abcdef
  AWS_SECRET_ACCESS_KEY=aws-wJalrXUtnFEMI-K7MDENG WANDB_API_KEY=wandb-0f1e2d3c4b5a69788796
  MLFLOW_TRACKING_PASSWORD=mlflow-pw-6c5d NGC_API_KEY=ngc-api-k3y-4f2a TORCH_NGC_API_KEY=ngc-api-k3y-4f2a
  MASTER_ADDR=http://admin:m4ster-pw-5e1f@localhost MASTER_PORT=29500
  NCCL_COMM_ID=user:c0mm-id-pw-8a2c@127.0.0.1:29500 TORCH_DISTRIBUTED_INIT=tcp://user:t0rch-init-pw-3d4e@127.0.0.1:23456
  NCCL_IB_PKEY=0x8001 NCCL_SOCKET_IFNAME==lo)
run=("${planted[@]}" "$PREFLIGHT" --timeout 30)

# --- every output of a run ---------------------------------------------------------------------------
for format in text json junit prometheus; do
  "${run[@]}" --format "$format" --color never >"$work/stdout.$format" 2>"$work/stderr.$format" || true
  [ -s "$work/stdout.$format" ] && pass "--format $format printed a report" || fail "--format $format printed nothing"
done
"${run[@]}" -v --color never >"$work/stdout.verbose" 2>"$work/stderr.verbose" || true
mkdir "$work/ranks"
"${run[@]}" --format json --json "$work/report.json" --junit "$work/report.xml" --prom "$work/report.prom" \
  --json-per-rank "$work/ranks" >"$work/stdout.files" 2>"$work/stderr.files" || true
for f in report.json report.xml report.prom; do [ -s "$work/$f" ] && pass "$f written" || fail "$f not written"; done
per_rank=$(find "$work/ranks" -type f | head -1)
[ -n "$per_rank" ] && pass "--json-per-rank wrote a file" || fail "--json-per-rank wrote nothing"
if [ -n "$per_rank" ]; then
  "$PREFLIGHT" merge --format json "$per_rank" >"$work/stdout.merge" 2>"$work/stderr.merge" || true
  [ -s "$work/stdout.merge" ] && pass "merge printed a report" || fail "merge printed nothing"
fi

# --- a capture, and the capture judged ---------------------------------------------------------------
"${planted[@]}" "$PREFLIGHT" capture "$work/capture" --tar "$work/capture.tar" --timeout 30 >"$work/stdout.capture" \
  2>"$work/stderr.capture" || fail "capture: exit $? ($(head -c 300 "$work/stderr.capture"))"
"$PREFLIGHT" --sysroot "$work/capture" --format json >"$work/stdout.sysroot" 2>"$work/stderr.sysroot" || true
[ -s "$work/stdout.sysroot" ] && pass "the capture judged" || fail "the capture judged printed nothing"
# A password and URL credentials in the NCCL configuration file the capture copies (outside $work,
# which is searched below): the copy keeps the file's other lines and shows the markers.
conf_dir=$(mktemp -d)
trap 'rm -rf "$work" "$conf_dir"' EXIT
printf 'NCCL_DEBUG=WARN\nNCCL_PASSWORD = c0nf-pa55-7d1e\nNCCL_COMM_ID=user:c0nf-url-pw-9b3f@127.0.0.1:29500\n' >"$conf_dir/nccl.conf"
secrets+=(c0nf-pa55-7d1e c0nf-url-pw-9b3f)
"${planted[@]}" NCCL_CONF_FILE="$conf_dir/nccl.conf" "$PREFLIGHT" capture "$work/capture-conf" --timeout 30 \
  >/dev/null 2>"$work/stderr.capture-conf" || fail "capture with NCCL_CONF_FILE: exit $?"
captured_conf="$work/capture-conf$conf_dir/nccl.conf"
expect_eq "$(head -1 "$captured_conf" 2>&1)" "NCCL_DEBUG=WARN" "the captured nccl.conf's plain line"
expect_contains "$(cat "$captured_conf" 2>&1)" "NCCL_PASSWORD = <redacted: 14 characters>" "the captured nccl.conf's password"
expect_contains "$(cat "$work/capture-conf/preflight-capture.json")" "nccl.conf" "the manifest lists the filtered nccl.conf"

# --- no secret's value anywhere -------------------------------------------------------------------
found=0
for s in "${secrets[@]}"; do
  if grep -rlaF -e "$s" "$work" >"$work/found" 2>/dev/null; then
    fail "'$s' is in $(tr '\n' ' ' <"$work/found")"
    found=1
  fi
done
# The tar archive is searched as bytes by grep -a above; its members are the capture's files.
[ "$found" -eq 0 ] && pass "no secret's value in any output"
grep -qF '<redacted: ' "$work/stdout.text" && pass "the text report shows the marker" ||
  fail "the text report shows no marker"
for f in stdout.json report.json report.xml stdout.merge; do
  grep -qF 'redacted: ' "$work/$f" 2>/dev/null && pass "$f shows the marker" || fail "$f shows no marker"
done
cp "$work/report.json" "$work/out"
expect_eq "$(json_get "d['ranks'][0]['facts']['env']['NCCL_PASSWORD']")" "<redacted: 18 characters>" \
  "NCCL_PASSWORD in the JSON report"
expect_eq "$(json_get "d['ranks'][0]['facts']['env']['MASTER_ADDR']")" "http://<redacted: 20 characters>@localhost" \
  "MASTER_ADDR in the JSON report"
expect_eq "$(json_get "d['ranks'][0]['facts']['env']['NCCL_IB_PKEY'], d['ranks'][0]['facts']['env']['NCCL_SOCKET_IFNAME']")" \
  "0x8001 =lo" "the variables that are no secret"

# --- the capture keeps one passwd entry -------------------------------------------------------------
uid=$(id -u)
if [ -f "$work/capture/etc/passwd" ]; then
  expect_eq "$(wc -l <"$work/capture/etc/passwd" | tr -d ' ')" 1 "lines of the captured /etc/passwd"
  expect_eq "$(cut -d: -f3 "$work/capture/etc/passwd")" "$uid" "the uid of the captured entry"
  why=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['filtered_files']['/etc/passwd'])" \
    "$work/capture/preflight-capture.json" 2>&1)
  expect_contains "$why" "only the entry of uid $uid" "the manifest's filtered_files"
else
  echo "skip: the capture read no /etc/passwd (NCCL_CONF_FILE or an NCCL >= 2.30 on this machine)"
fi
finish
