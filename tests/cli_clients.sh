#!/usr/bin/env bash
# cli_clients.sh - the Python and Node clients (clients/python,
# clients/node) over this build's libjobq: each package's own test suite
# (Python's unittest, Node's test runner) on SQLite and on the PostgreSQL
# server that tests/run.sh started, counted test by test; the Node package's
# pinned dependencies installed by `npm ci` from its own package-lock.json;
# `pip install` of the Python package with no index at all; and the
# examples of docs/clients/python.md and docs/clients/node.md run as they
# are written.
#
# JOBQ_TEST_CASE picks one of: python_suite, node_suite, pip_install,
# python_doc, node_doc.  Python is Debian's /usr/bin/python3 when there is
# one (scripts/deps.txt installs psycopg2 for it), else python3 on PATH, or
# $JOBQ_TEST_PYTHON.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=$(cd "$(dirname "$JOBQ")" && pwd)
export JOBQ JOBQ_LIBRARY=$BUILD_DIR/libjobq.so
PYTHON=${JOBQ_TEST_PYTHON:-}
if [[ -z $PYTHON ]]; then
  if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
NODE_PKG=$ROOT/clients/node

san_env "$JOBQ_LIBRARY"

# wanted CASE: JOBQ_TEST_CASE picks it, or picks nothing.
wanted() {
  [[ -z ${JOBQ_TEST_CASE:-} || $JOBQ_TEST_CASE == "$1" ]]
}

# suite NAME COMMAND...: runs a test suite that prints "ok NAME", "not ok
# NAME" (then "#" lines), "skip NAME: REASON" and "RESULT: ...", and adds
# its counts to this script's.
suite() {
  local name=$1 out=$T_ROOT/$1.out rc line p f s
  shift
  wanted "$name" || return 0
  env "${SAN_ENV[@]}" "$@" >"$out" 2>&1
  rc=$?
  grep -v '^RESULT: ' "$out"
  line=$(grep -E '^RESULT: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
  p=$(sed -E 's/^RESULT: ([0-9]+) passed.*/\1/' <<<"$line")
  f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
  s=$(sed -nE 's/.* ([0-9]+) skipped.*/\1/p' <<<"$line")
  p=${p:-0} f=${f:-0} s=${s:-0}
  if [[ -z $line ]] || ((rc != 0 && f == 0)); then
    echo "not ok $name: exit status $rc"
    tail -n 30 "$out" | sed 's/^/# /'
    f=$((f + 1))
  fi
  T_PASS=$((T_PASS + p)) T_FAIL=$((T_FAIL + f)) T_SKIP=$((T_SKIP + s))
}

# node_modules: npm ci from the package's own lock file, once per run.
NPM_STATUS=""
npm_ci() {
  [[ -n $NPM_STATUS ]] && return
  if ! command -v npm >/dev/null; then
    NPM_STATUS="npm is not installed (scripts/deps.txt lists it)"
    return
  fi
  if (cd "$NODE_PKG" && npm ci --ignore-scripts --no-audit --no-fund) >"$T_ROOT/npm.out" 2>&1; then
    NPM_STATUS=ok
  else
    NPM_STATUS="npm ci failed: $(tail -n 5 "$T_ROOT/npm.out" | tr '\n' ' ')"
  fi
}

suite python_suite "$PYTHON" "$ROOT/clients/python/tests/run.py"

if wanted node_suite; then
  if ! command -v node >/dev/null; then
    echo "skip node_suite: node is not installed (scripts/deps.txt lists nodejs)"
    T_SKIP=$((T_SKIP + 1))
  else
    npm_ci
    if [[ $NPM_STATUS == ok ]]; then
      suite node_suite bash -c "cd '$NODE_PKG' && exec node --test \
        --test-reporter=./test/reporter.mjs test/*.test.js"
    else
      echo "not ok node_suite: $NPM_STATUS"
      T_FAIL=$((T_FAIL + 1))
    fi
  fi
fi

# run_doc DOC: runs the examples of a page of docs/clients/ in order, in
# one fresh folder: ```python and ```js blocks whose first line names a
# file ("# tasks.py", "// app.js") are written to it; the other ```python,
# ```js and ```sh blocks run; a block right after a "<!-- not run: WHY -->"
# line, and blocks of other kinds (```console, ```ini), are only shown.
run_doc() {
  local doc=$ROOT/docs/clients/$1 dir=$D/doc block kind first name
  mkdir -p "$dir/blocks" "$dir/bin"
  ln -s "$JOBQ" "$dir/bin/jobq"
  ln -s "$(command -v "$PYTHON")" "$dir/bin/python3"
  awk -v out="$dir/blocks" '
    /^```/ && !inside {
      inside = 1; n++; kind = substr($0, 4)
      if (prev ~ /^<!-- not run/) kind = "shown"
      file = sprintf("%s/%03d.%s", out, n, kind == "" ? "text" : kind)
      printf "" > file; next
    }
    /^```/ && inside { inside = 0; close(file); next }
    inside { print > file }
    { prev = $0 }' "$doc"
  for block in "$dir"/blocks/*; do
    kind=${block##*.}
    first=$(head -n 1 "$block")
    case $kind in
      python|js)
        if [[ $first =~ ^(#|//)\ ([A-Za-z0-9_.-]+\.(py|js|mjs))$ ]]; then
          cp "$block" "$dir/${BASH_REMATCH[2]}"
          continue
        fi
        name=$(basename "$block").$([[ $kind == python ]] && echo py || echo js) ;;
      sh) name=$(basename "$block") ;;
      *) continue ;;
    esac
    cp "$block" "$dir/$name"
    local cmd=(bash -e "$name")
    [[ $kind == python ]] && cmd=(python3 "$name")
    [[ $kind == js ]] && cmd=(node "$name")
    if ! (cd "$dir" && env "${SAN_ENV[@]}" PATH="$dir/bin:$PATH" \
          PYTHONPATH="$ROOT/clients/python" timeout 120 "${cmd[@]}") \
          >"$D/block.out" 2>&1; then
      fail "$1: the example in $(basename "$block") failed: $(tail -n 15 "$D/block.out" | tr '\n' ' ')"
      return
    fi
  done
  ls "$dir"/blocks/*.sh >/dev/null 2>&1 || fail "$1: no runnable sh example found"
}

t_python_doc() {
  run_doc python.md
}

t_node_doc() {
  if ! command -v node >/dev/null; then
    skip "node is not installed (scripts/deps.txt lists nodejs)"
    return
  fi
  npm_ci
  if [[ $NPM_STATUS != ok ]]; then
    fail "$NPM_STATUS"
    return
  fi
  mkdir -p "$D/doc/node_modules"
  ln -s "$NODE_PKG" "$D/doc/node_modules/jobq"
  run_doc node.md
}

# pip installs the package with no package index at all, into a fresh
# virtual environment; what it installed works, persistent worker included.
t_pip_install() {
  if ! "$PYTHON" -m venv --help >/dev/null 2>&1; then
    skip "$PYTHON has no venv module (scripts/deps.txt lists python3-venv)"
    return
  fi
  "$PYTHON" -m venv "$D/venv" >"$D/venv.out" 2>&1 || { fail "venv: $(cat "$D/venv.out")"; return; }
  if ! "$D/venv/bin/pip" install --no-index --no-cache-dir "$ROOT/clients/python" \
      >"$D/pip.out" 2>&1; then
    fail "pip install --no-index failed: $(tail -n 10 "$D/pip.out" | tr '\n' ' ')"
    return
  fi
  cat >"$D/tasks.py" <<'EOF'
import jobq

@jobq.handler("email")
def send(job):
    return "sent to " + job.text
EOF
  (cd "$D" && env "${SAN_ENV[@]}" "$D/venv/bin/python" -c '
import sys, jobq
assert jobq.__file__.startswith(sys.prefix), jobq.__file__
q = jobq.connect("sqlite:queue.db")
q.put("email", "ada")
') >"$D/use.out" 2>&1 || { fail "the installed package: $(cat "$D/use.out")"; return; }
  T_DBURL=sqlite:$D/queue.db
  pushd "$D" >/dev/null || return
  run work --persistent --until-empty -- "$D/venv/bin/python" -m jobq.worker tasks
  popd >/dev/null || return
  expect_rc 0
  run show 1 --json
  expect_out_has '"result":"sent to ada"'
}

run_cases
