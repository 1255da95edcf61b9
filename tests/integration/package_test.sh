#!/usr/bin/env bash
# The Debian package (packaging/Packaging.cmake): CPack builds a .deb from the build directory of
# $PREFLIGHT (no rebuild), into a scratch directory; then
#   - its control data: package name, Depends from dpkg-shlibdeps (hwloc, Open MPI,
#     Boost.Program_options, libxml2), Recommends, Section, Maintainer;
#   - its contents: the binary, the GPU helper in libexec/preflight, the man page, the bash
#     completion, the schema and the matrix data;
#   - extracted with dpkg -x into a scratch root, the installed binary lists the checks, runs node
#     checks, finds its installed helper (driver.loaded FAILs for "no driver" here, not for a missing
#     helper; a copy of the binary without the helper shows the difference), reads
#     --matrix $root/usr/share/preflight/matrix (and refuses a broken copy of it);
#   - the man page renders without a groff warning and names every check id and every option of
#     --help;
#   - the bash completion completes commands, options, option values and check ids.
# Skipped (77) without dpkg-deb, dpkg-shlibdeps or cpack, or when $PREFLIGHT's build directory has no
# CPack configuration.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"

for tool in dpkg-deb dpkg-shlibdeps dpkg; do
  command -v "$tool" >/dev/null 2>&1 || skip_all "$tool is not installed (apt-get install dpkg-dev)"
done
bindir=$(cd "$(dirname "$PREFLIGHT")" && pwd)
cpack=$(command -v cpack || true)
[ -n "$cpack" ] || skip_all "cpack is not installed (it comes with cmake)"
[ -f "$bindir/CPackConfig.cmake" ] || skip_all "$bindir has no CPackConfig.cmake (configured without packaging/Packaging.cmake)"

# 1. Build the package into a scratch directory (cpack runs the install rules of the build dir).
t0=$(date +%s)
if ! (cd "$work" && "$cpack" -G DEB -B "$work/pkg" --config "$bindir/CPackConfig.cmake") >"$work/cpack.log" 2>&1; then
  fail "cpack -G DEB failed"; sed 's/^/  | /' "$work/cpack.log" | tail -30 >&2; finish
fi
deb=$(find "$work/pkg" -maxdepth 1 -name 'preflight_*.deb' | head -n 1)
if [ -z "$deb" ]; then fail "cpack wrote no preflight_*.deb"; sed 's/^/  | /' "$work/cpack.log" >&2; finish; fi
pass "cpack built $(basename "$deb") in $(($(date +%s) - t0)) s"

# 2. Control data.
dpkg-deb -I "$deb" >"$work/info" 2>&1 || fail "dpkg-deb -I failed"
field() { sed -n "s/^ $1: //p" "$work/info"; }
expect_eq "$(field Package)" preflight "Package"
depends=$(field Depends)
for lib in libhwloc libopenmpi libboost-program-options libxml2 libc6; do
  expect_contains "$depends" "$lib" "Depends"
done
expect_contains "$(field Recommends)" "openmpi-bin" "Recommends"
expect_contains "$(field Recommends)" "hwloc" "Recommends"
[ -n "$(field Section)" ] && pass "Section: $(field Section)" || fail "no Section"
[ -n "$(field Maintainer)" ] && pass "Maintainer: $(field Maintainer)" || fail "no Maintainer"
grep -q '^ Description: pre-flight' "$work/info" && pass "Description" || fail "no Description"

dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$work/contents"
for f in /usr/bin/preflight /usr/libexec/preflight/preflight-gpu-probe /usr/share/bash-completion/completions/preflight \
  /usr/share/preflight/preflight-v1.schema.json /usr/share/preflight/junit.xsd /usr/share/preflight/matrix/README.md; do
  grep -qx "$f" "$work/contents" && pass "package has $f" || fail "package lacks $f"
done
for tsv in "$PREFLIGHT_SOURCE_DIR"/matrix/*.tsv; do
  grep -qx "/usr/share/preflight/matrix/$(basename "$tsv")" "$work/contents" || fail "package lacks matrix/$(basename "$tsv")"
done
man_page=$(grep -E '^/usr/share/man/man1/preflight\.1(\.gz)?$' "$work/contents" | head -n 1)
[ -n "$man_page" ] && pass "package has $man_page" || fail "package has no share/man/man1/preflight.1[.gz]"

# 3. Installed into a scratch root.
root=$work/root
dpkg -x "$deb" "$root" || { fail "dpkg -x failed"; finish; }
bin=$root/usr/bin/preflight
expect_rc 0 "installed preflight --version" -- "$bin" --version
"$PREFLIGHT" list >"$work/list.build" 2>/dev/null
expect_rc 0 "installed preflight list" -- "$bin" list
if cmp -s "$work/out" "$work/list.build"; then pass "installed list = built list"; else fail "installed list differs from the built one"; fi
ids=$(awk 'NF {print $1}' "$work/list.build")
"$PREFLIGHT" --help >"$work/help" 2>&1
# help_options: the options --help describes (Boost's "  --name arg" and "  -v [ --verbose ]" rows).
help_options() { grep -oE '^  (-[a-z] \[ )?--[a-z][a-z-]*' "$work/help" | grep -oE -- '--?[a-z][a-z-]*' | sort -u; }
[ "$(wc -w <<<"$ids")" -ge 20 ] || fail "list has fewer than 20 checks"

rc=0
"$bin" --only 'host.*' --format json >"$work/out" 2>"$work/err" || rc=$?
case $rc in 0 | 1 | 3) pass "installed --only 'host.*' ran (exit $rc)" ;; *) fail "installed --only 'host.*': exit $rc"; sed 's/^/  | /' "$work/err" >&2 ;; esac
expect_eq "$(json_get "sorted(c['id'] for c in d['checks'])" 2>&1)" "['host.disk', 'host.limits', 'host.memory']" "installed host.* checks"

# The installed binary finds its installed helper: with no driver here driver.loaded FAILs because
# the NVIDIA libraries are missing, not because the helper could not be started. A copy of the
# binary alone (no helper next to it or in ../libexec/preflight) shows the other reason.
rc=0
"$bin" --only driver.loaded --format json >"$work/out" 2>"$work/err" || rc=$?
expect_eq "$rc" 1 "installed --only driver.loaded exit"
expect_eq "$(check_status driver.loaded)" FAIL "installed driver.loaded"
helper=$(json_get "[c['evidence'].get('helper') for c in d['checks'] if c['id']=='driver.loaded'][0]" 2>&1)
summary=$(json_get "[c['summary'] for c in d['checks'] if c['id']=='driver.loaded'][0]" 2>&1)
expect_contains "$helper" "exited with status 0" "installed driver.loaded evidence.helper (the installed helper ran)"
expect_contains "$summary" "no NVIDIA driver" "installed driver.loaded summary"
mkdir -p "$work/alone/bin" && cp "$bin" "$work/alone/bin/preflight"
"$work/alone/bin/preflight" --only driver.loaded --format json >"$work/out" 2>"$work/err"
helper=$(json_get "[c['evidence'].get('helper') for c in d['checks'] if c['id']=='driver.loaded'][0]" 2>&1)
expect_contains "$helper" "could not start" "a binary without its helper: evidence.helper (control)"

# --matrix with the installed data; a broken copy of it is refused (so the directory is really read).
# (The verdicts depend on the CUDA runtimes installed here; the built-in copy must give the same.)
image=(--profile image --target-driver 535.104.05 --target-gpu 9.0 --only 'cuda.*' --format json)
rc_builtin=0; "$bin" "${image[@]}" >"$work/builtin.json" 2>/dev/null || rc_builtin=$?
rc=0; "$bin" --matrix "$root/usr/share/preflight/matrix" "${image[@]}" >"$work/out" 2>"$work/err" || rc=$?
case $rc in 0 | 1 | 3) pass "installed --matrix $root/usr/share/preflight/matrix (exit $rc)" ;;
  *) fail "installed --matrix $root/usr/share/preflight/matrix: exit $rc"; sed 's/^/  | /' "$work/err" | head >&2 ;; esac
expect_eq "$rc" "$rc_builtin" "exit with the installed matrix = with the built-in one"
statuses="[(c['id'], c['status']) for c in d['checks']]"
expect_eq "$(json_get "$statuses")" "$(cp "$work/builtin.json" "$work/out" && json_get "$statuses")" "verdicts with the installed matrix"
cp -r "$root/usr/share/preflight/matrix" "$work/badmatrix"
first_tsv=$(find "$work/badmatrix" -name '*.tsv' | sort | head -n 1)
printf 'this\tis not\ta row\n' >>"$first_tsv"
expect_rc 2 "installed --matrix with a malformed file" -- \
  "$bin" --matrix "$work/badmatrix" --profile image --target-driver 535.104.05 --target-gpu 9.0 --only 'cuda.*'

# 4. The man page.
page=$root$man_page
case $page in *.gz) gzip -dc "$page" >"$work/preflight.1" ;; *) cp "$page" "$work/preflight.1" ;; esac
if command -v groff >/dev/null 2>&1; then
  groff -man -Tutf8 -ww -z "$work/preflight.1" >"$work/groff.err" 2>&1
  if [ -s "$work/groff.err" ]; then fail "groff warns about the man page"; sed 's/^/  | /' "$work/groff.err" >&2; else
    pass "man page renders without groff warnings"; fi
else
  echo "note: groff is not installed; man page not rendered"
fi
if command -v man >/dev/null 2>&1; then
  MANWIDTH=80 man --warnings -l "$page" 2>"$work/man.err" | sed 's/.\x08//g' >"$work/man.txt"
  [ -s "$work/man.err" ] && { fail "man -l warns"; sed 's/^/  | /' "$work/man.err" >&2; }
  [ -s "$work/man.txt" ] && pass "MANWIDTH=80 man -l renders ($(wc -l <"$work/man.txt") lines)" || fail "man -l rendered nothing"
  for s in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS CHECKS PROFILES "OUTPUT FORMATS" "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
    grep -qx "$s" "$work/man.txt" || fail "man page has no section $s"
  done
  missing=""
  for id in $ids; do grep -qF -- "$id" "$work/man.txt" || missing+=" $id"; done
  [ -z "$missing" ] && pass "man page names every check id" || fail "man page lacks check ids:$missing"
  for c in "preflight capture" "preflight merge" "preflight explain"; do
    grep -qF -- "$c" "$work/man.txt" && pass "man page has $c" || fail "man page lacks the command $c"
  done
  opts=$(help_options)
  [ "$(wc -w <<<"$opts")" -ge 30 ] || fail "found only $(wc -w <<<"$opts") options in --help"
  missing=""
  for o in $opts; do grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" "$work/man.txt" || missing+=" $o"; done
  [ -z "$missing" ] && pass "man page names all $(wc -w <<<"$opts") options of --help" || fail "man page lacks options:$missing"
  for code in 0 1 2 3 4 5; do grep -qE "^ +$code +[A-Z]" "$work/man.txt" || fail "EXIT STATUS lacks $code"; done
else
  echo "note: man is not installed; man -l not checked"
fi

# 5. The bash completion, as bash-completion would load it.
completion=$root/usr/share/bash-completion/completions/preflight
# complete WORD...: the completions of the last word (COMP_WORDS[0] is the installed binary).
complete_words() {
  bash --norc --noprofile -c '
    source "$1" || exit 9
    shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _preflight
    printf "%s\n" "${COMPREPLY[@]}" | sort' complete "$completion" "$bin" "$@" 2>&1
}
expect_eq "$(bash --norc -c 'source "$1" && complete -p preflight' x "$completion" 2>&1)" "complete -F _preflight preflight" "registered completion"
expect_eq "$(complete_words explain sh | tr '\n' ' ')" "shm.capacity " "explain sh<TAB>"
expect_eq "$(complete_words explain '' | wc -l)" "$(wc -w <<<"$ids")" "explain <TAB> offers every check id"
expect_eq "$(complete_words --format '' | tr '\n' ' ')" "json junit prometheus text " "--format <TAB>"
expect_eq "$(complete_words --profile '' | tr '\n' ' ')" "image job node " "--profile <TAB>"
expect_eq "$(complete_words --color '' | tr '\n' ' ')" "always auto never " "--color <TAB>"
expect_eq "$(complete_words --mpi '' | tr '\n' ' ')" "auto off on " "--mpi <TAB>"
expect_eq "$(complete_words --progress '' | tr '\n' ' ')" "always auto never " "--progress <TAB>"
expect_eq "$(complete_words --format = j | tr '\n' ' ')" "json junit " "--format=j<TAB>"
expect_eq "$(complete_words --only host. | tr '\n' ' ')" "host.disk host.limits host.memory " "--only host.<TAB>"
expect_eq "$(complete_words --skip 'env.nccl,sh' | tr '\n' ' ')" "env.nccl,shm.capacity " "--skip env.nccl,sh<TAB>"
expect_eq "$(complete_words '' | tr '\n' ' ')" "capture explain list merge run " "<TAB> (commands)"
expect_eq "$(complete_words --format json l | tr '\n' ' ')" "list " "a command after an option and its value"
mkdir -p "$work/cdir/results.d" && : >"$work/cdir/report.json"
expect_eq "$(complete_words --json "$work/cdir/rep" | tr '\n' ' ')" "$work/cdir/report.json " "--json FILE<TAB> completes files"
expect_eq "$(complete_words --matrix "$work/cdir/" | tr '\n' ' ')" "$work/cdir/results.d " "--matrix DIR<TAB> completes directories"
expect_eq "$(complete_words merge "$work/cdir/rep" | tr '\n' ' ')" "$work/cdir/report.json " "merge FILE<TAB>"
expect_eq "$(complete_words capture "$work/cdir/" | tr '\n' ' ')" "$work/cdir/results.d " "capture DIR<TAB> completes directories"
offered=$(complete_words --)
missing=""
for o in $(help_options | grep -- '^--'); do
  grep -qx -- "$o" <<<"$offered" || missing+=" $o"
done
[ -z "$missing" ] && pass "--<TAB> offers every long option of --help" || fail "--<TAB> lacks:$missing"

finish
