#!/usr/bin/env bash
# build_abi.sh - what the build promises about the library and the
# programs: libjobq.so exports exactly the functions include/jobq.h
# declares (the list is read from the header, so it cannot drift), each
# marked JOBQ_API and versioned JOBQ_0.1; its soname chain; the programs
# outside lib/ (cli/, foreman/, bench/, common/) use no name of the
# library that jobq.h does not declare; `jobq bench` without jobq-bench
# beside it says so; and `make install` into a staging folder gives a
# library, a header and a jobq.pc that a program builds against, a `jobq
# bench` that finds its jobq-bench and jobq-bench its jobq, all of which
# `make uninstall` takes away again.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(dirname "$JOBQ")
HEADER=$ROOT/include/jobq.h
VERSION=$(sed -n 's/^#define JOBQ_VERSION "\(.*\)"/\1/p' "$HEADER")

# The functions jobq.h declares: every declaration at the start of a line
# (comments and macros left out) whose name starts with jobq_.
header_functions() {
  sed -e 's|/\*.*\*/||g' "$HEADER" | grep -v '^[[:space:]]*\*\|^#\|^typedef' |
    grep -oE '^[A-Za-z].*\bjobq_[a-z0-9_]+\(' | grep -oE 'jobq_[a-z0-9_]+\($' | tr -d '(' |
    sort -u
}

t_exports_are_the_header() {
  local want got
  want=$(header_functions)
  [[ $(wc -l <<<"$want") -gt 40 ]] || fail "read only $(wc -l <<<"$want") functions from jobq.h"
  # Every declaration is marked for export.
  local unmarked
  unmarked=$(grep -E '^[A-Za-z].*\bjobq_[a-z0-9_]+\(' "$HEADER" | grep -v '^JOBQ_API \|^typedef')
  [[ -z $unmarked ]] || fail "declared without JOBQ_API: $unmarked"
  got=$(nm -D --defined-only "$BUILD/libjobq.so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
        sort -u)
  local extra missing
  extra=$(comm -13 <(echo "$want") <(echo "$got"))
  missing=$(comm -23 <(echo "$want") <(echo "$got"))
  [[ -z $extra ]] || fail "exported but not in jobq.h ($(wc -l <<<"$extra")): $(echo $extra | head -c 600)"
  [[ -z $missing ]] || fail "in jobq.h but not exported: $(echo $missing)"
  # Each carries the version node of the version script.
  local unversioned
  unversioned=$(objdump -T "$BUILD/libjobq.so" | awk '/ DF \.text/ && $NF ~ /^jobq_/ && $(NF-1) != "JOBQ_0.1" { print $NF }')
  [[ -z $unversioned ]] || fail "not versioned JOBQ_0.1: $(echo $unversioned)"
}

t_soname_chain() {
  [[ $(readlink "$BUILD/libjobq.so") == libjobq.so.0 ]] ||
    fail "libjobq.so -> $(readlink "$BUILD/libjobq.so"), expected libjobq.so.0"
  [[ $(readlink "$BUILD/libjobq.so.0") == "libjobq.so.$VERSION" ]] ||
    fail "libjobq.so.0 -> $(readlink "$BUILD/libjobq.so.0"), expected libjobq.so.$VERSION"
  [[ -f $BUILD/libjobq.so.$VERSION && ! -L $BUILD/libjobq.so.$VERSION ]] ||
    fail "libjobq.so.$VERSION is not the file"
  readelf -d "$BUILD/libjobq.so.$VERSION" | grep -q 'Library soname: \[libjobq.so.0\]' ||
    fail "soname: $(readelf -d "$BUILD/libjobq.so.$VERSION" | grep -i soname)"
  # The examples link it as a user's program does, and run.
  readelf -d "$BUILD/examples/hello" | grep -q 'NEEDED.*\[libjobq.so.0\]' ||
    fail "the examples do not load libjobq.so.0"
}

t_programs_use_the_api_only() {
  local want used bad=""
  want=$(header_functions)
  local src o
  for src in "$ROOT"/cli/*.c "$ROOT"/foreman/*.c "$ROOT"/bench/*.c "$ROOT"/common/*.c; do
    o=$BUILD/${src#"$ROOT"/}
    o=${o%.c}.o
    [[ -f $o ]] || continue
    used=$(nm -u "$o" | awk '{ print $2 }' | grep '^jobq_' | sort -u)
    [[ -z $used ]] && continue
    local extra
    extra=$(comm -13 <(echo "$want") <(echo "$used"))
    [[ -n $extra ]] && bad="$bad ${o#"$BUILD"/}: $(echo $extra);"
  done
  [[ -z $bad ]] || fail "names outside jobq.h used by:$bad"
  [[ -n $(ls "$BUILD"/cli/*.o "$BUILD"/bench/*.o 2>/dev/null) ]] || fail "no objects in $BUILD"
}

t_bench_helper_missing() {
  cp "$JOBQ" "$D/jobq"
  "$D/jobq" bench --workload enqueue >"$D/out" 2>"$D/err"
  local st=$?
  T_ERR=$D/err
  [[ $st == 1 ]] || fail "exit status $st, expected 1"
  expect_err_has "cannot find jobq-bench beside $D/jobq"
  expect_err_style
}

t_install_uninstall() {
  local stage=$D/stage prefix=/opt/jobq-test
  local mk=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" BUILD="$BUILD"
            PREFIX=$prefix DESTDIR="$stage")
  "${mk[@]}" install >"$D/install.log" 2>&1 || { fail "make install: $(tail -5 "$D/install.log")"; return; }
  local top=$stage$prefix f
  for f in bin/jobq bin/jobq-exec libexec/jobq/jobq-bench include/jobq.h lib/libjobq.a \
           "lib/libjobq.so.$VERSION" lib/pkgconfig/jobq.pc share/man/man1/jobq.1; do
    [[ -f $top/$f ]] || fail "make install did not put $f"
  done
  [[ $(readlink "$top/lib/libjobq.so.0") == "libjobq.so.$VERSION" &&
     $(readlink "$top/lib/libjobq.so") == libjobq.so.0 ]] || fail "the installed soname chain is wrong"
  # A program built from the installed header, library and jobq.pc.
  local flags
  flags=$(PKG_CONFIG_PATH=$top/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage \
          pkg-config --cflags --libs jobq) || fail "pkg-config does not know jobq"
  # Built as the library was: a sanitizer build's library wants its
  # runtime loaded first.
  local san=""
  readelf -d "$top/lib/libjobq.so" | grep -q 'libasan' && san=-fsanitize=address,undefined
  # shellcheck disable=SC2086
  cc $san -o "$D/hello" "$ROOT/examples/hello.c" $flags -Wl,-rpath,"$top/lib" -lsqlite3 \
    2>"$D/cc.err" || fail "cannot build against the installed jobq: $(head -c 400 "$D/cc.err")"
  if [[ -x $D/hello ]]; then
    (cd "$D" && ./hello >"$D/hello.out" 2>&1) || fail "the program built against it failed: $(head -c 300 "$D/hello.out")"
    ldd "$D/hello" | grep -q "$top/lib/libjobq.so.0" || fail "it did not load the installed library"
  fi
  # The installed jobq finds its jobq-bench, and jobq-bench its jobq.
  "$top/bin/jobq" --db "sqlite:$D/b.db" bench --workload drain --jobs 200 >"$D/bench.out" \
    2>"$D/bench.err" || fail "the installed jobq bench failed: $(head -c 400 "$D/bench.err")"
  grep -q "exactly once" "$D/bench.out" || fail "no drain: $(head -c 300 "$D/bench.out")"
  "${mk[@]}" uninstall >"$D/uninstall.log" 2>&1 || fail "make uninstall: $(tail -5 "$D/uninstall.log")"
  local left
  left=$(find "$stage" ! -type d)
  [[ -z $left ]] || fail "make uninstall left: $(echo $left)"
  [[ -e $top/libexec/jobq ]] && fail "make uninstall left libexec/jobq"
}

run_cases
