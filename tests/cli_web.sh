#!/usr/bin/env bash
# cli_web.sh - `jobq web` and `jobq stats --prometheus`: where it may
# listen, each item of its security (token, login cookie, CSRF, Origin,
# Host, Content-Security-Policy, --read-only) with curl, /metrics through
# tests/web/metrics_check.py (and promtool where installed), and the dashboard in Debian's Chromium driven by
# tests/web/dashboard.mjs (playwright-core, pinned in tests/web's
# package files and installed here with npm ci) on SQLite and on the
# PostgreSQL server of tests/run.sh, with a database role that may only
# read as well; queues in parts held by a live foreman and by one killed
# with SIGKILL, in the API, /metrics and the pages.  The browser's
# screenshots are kept in $JOBQ_WEB_SHOTS (default: build/web-shots) as
# the test's artefacts.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHOTS=${JOBQ_WEB_SHOTS:-$(dirname "$JOBQ")/web-shots}
PG=${JOBQ_TEST_PG_URL:-}
TOKEN=0123456789abcdef0123456789abcdef

# start_web ARGS...: `jobq web --listen 127.0.0.1:0 ARGS` in the
# background; sets $W_PID and $BASE (http://127.0.0.1:PORT).
start_web() {
  W_LOG=$D/web.$RANDOM.log
  JOBQ_DB=${T_DBURL:-sqlite:$DB} "$JOBQ" web --listen 127.0.0.1:0 "$@" </dev/null \
    >"$D/web.out" 2>"$W_LOG" &
  W_PID=$!
  W_PIDS+=("$W_PID")
  BASE=""
  wait_until 20 "grep -qs 'serving' '$W_LOG'" || { fail "jobq web did not start: $(cat "$W_LOG")"; return 1; }
  BASE=$(grep -o 'http://127.0.0.1:[0-9]*' "$W_LOG" | head -n 1)
}

stop_web() {
  kill -TERM "$W_PID" 2>/dev/null
  wait_exit "$W_PID" 10 || fail "jobq web did not stop on SIGTERM"
  [[ $W_RC == 0 ]] || fail "jobq web exited $W_RC on SIGTERM"
}

# http ARGS...: curl; $code gets the status, $body the file with the body,
# $hdrs the file with the headers.
http() {
  body=$D/body.$RANDOM
  hdrs=$D/hdrs.$RANDOM
  code=$(curl -s -o "$body" -D "$hdrs" -w '%{http_code}' "$@")
}

csrf() { curl -s "$@" "$BASE/api/session" | sed -E 's/.*"csrf":"([0-9a-f]+)".*/\1/'; }

paused() {
  JOBQ_DB=${T_DBURL:-sqlite:$DB} "$JOBQ" stats --json | grep -o "\"name\":\"$1\"[^}]*" |
    grep -q '"paused":true'
}

# populate: the jobs the browser test looks at.  mail: done ones, and
# ready ones, some with a key of markup; images: dead after three failed
# attempts, with <script> in payload, key and error; slow: one running
# under a foreman that stays ($W_PID of it in W_PIDS), one held back by
# the queue's limit of one running.
populate() {
  local url=${T_DBURL:-sqlite:$DB} i
  for i in 1 2 3 4 5 6 7 8; do
    JOBQ_DB=$url "$JOBQ" put -q mail "{\"to\":\"user$i@example.com\"}" >/dev/null
  done
  for i in 1 2 3; do
    JOBQ_DB=$url "$JOBQ" put -q images --max-attempts 3 --backoff 10ms \
      --key "<img src=x onerror=\"window.__pwned=2\">$i" \
      '<script>window.__pwned=1</script>' >/dev/null
  done
  JOBQ_DB=$url timeout 60 "$JOBQ" work -q mail -q images --until-empty -c 2 -- sh -c '
    if [ "$JOBQ_QUEUE" = images ]; then
      echo "<script>window.__pwned=3</script> cannot decode image" >&2; exit 1
    fi
    cat; echo " sent"' >/dev/null 2>"$D/populate.log" || fail "the worker failed: $(tail -3 "$D/populate.log")"
  for i in 1 2 3 4; do
    JOBQ_DB=$url "$JOBQ" put -q mail "{\"to\":\"later$i@example.com\"}" >/dev/null
  done
  for i in 1 2; do
    JOBQ_DB=$url "$JOBQ" put -q mail --key "<b>key</b>" "{\"digest\":$i}" >/dev/null
  done
  JOBQ_DB=$url "$JOBQ" put -q slow '{"report":"monthly"}' >/dev/null
  JOBQ_DB=$url "$JOBQ" work -q slow --name reports -c 1 -- sleep 120 </dev/null \
    >"$D/slow.out" 2>"$D/slow.log" &
  W_PIDS+=("$!")
  wait_until 20 "JOBQ_DB='$url' '$JOBQ' stats --json | grep -q '\"running\":1'" ||
    fail "the slow job did not start"
  # A limit that holds the second slow job back.
  JOBQ_DB=$url "$JOBQ" limit slow --running 1 >/dev/null || fail "jobq limit failed"
  JOBQ_DB=$url "$JOBQ" put -q slow '{"report":"weekly"}' >/dev/null
}

# browser MODE: runs tests/web/dashboard.mjs against $BASE; returns 1
# (after skip) when the browser cannot run here.
NPM_DONE=""
browser() {
  if [[ ! -x /usr/bin/chromium ]] || ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    skip "no /usr/bin/chromium or node and npm (scripts/deps.txt installs them)"
    return 1
  fi
  if [[ -z $NPM_DONE ]]; then
    (cd "$ROOT/tests/web" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund \
      --loglevel=error >"$T_ROOT/npm.log" 2>&1) || { fail "npm ci failed: $(tail -5 "$T_ROOT/npm.log")"; return 1; }
    NPM_DONE=1
  fi
  rm -rf "${SHOTS:?}/$2"
  mkdir -p "$SHOTS/$2"
  local out=$D/browser.$1.log
  JOBQ=$JOBQ JOBQ_DB=${T_DBURL:-sqlite:$DB} PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    timeout 180 node "$ROOT/tests/web/dashboard.mjs" "$1" "$BASE" "$SHOTS/$2" >"$out" 2>&1
  local status=$?
  [[ $status == 0 ]] || fail "browser ($1): $(grep -v '^ok ' "$out" | head -c 600)"
  grep -q '^ok ' "$out" || fail "browser ($1) checked nothing"
  [[ -n ${JOBQ_TEST_VERBOSE:-} ]] && cat "$out"
  return 0
}

# ---------------------------------------------------------------- listening

t_listen_needs_token_beyond_loopback() {
  run --help
  [[ $(grep -c '^  web ' "$T_OUT") == 1 ]] || fail "jobq --help lists web $(grep -c '^  web ' "$T_OUT") times"
  run web --listen 0.0.0.0:0
  expect_rc 2
  expect_err_has "refusing to listen on '0.0.0.0:0' without --token-file"
  expect_err_style
  run web --listen '[::]:8080'
  expect_rc 2
  expect_err_has "without --token-file"
  run web --listen 127.0.0.1
  expect_rc 2
  expect_err_has "invalid --listen '127.0.0.1': expected ADDR:PORT"
  run web --listen example.com:80
  expect_rc 2
  expect_err_has "invalid --listen"
  run web --listen 127.0.0.1:99999
  expect_rc 2
  run web --token-file "$D/missing"
  expect_rc 2
  expect_err_has "cannot read --token-file '$D/missing'"
  echo short >"$D/short"
  run web --token-file "$D/short"
  expect_rc 2
  expect_err_has "at least 16"
  run web --allow-host 'bad host'
  expect_rc 2
  expect_err_has "invalid --allow-host"
  [[ ! -e $DB ]] || fail "a refused start touched the database"
}

t_listen_loopback_default_and_stop() {
  run put -q mail hello
  start_web || return
  http "$BASE/api/overview"
  [[ $code == 200 ]] || fail "overview: $code"
  grep -q '"name":"mail"' "$body" || fail "overview lacks the queue: $(head -c 200 "$body")"
  stop_web
  grep -q 'stopping on SIGTERM' "$W_LOG" || fail "no stop message: $(cat "$W_LOG")"
}

# ---------------------------------------------------------------- security

t_token_header_and_login_cookie() {
  run put -q mail hello
  printf '%s\n' "$TOKEN" >"$D/token"
  chmod 600 "$D/token"
  start_web --token-file "$D/token" || return
  http "$BASE/api/overview"
  [[ $code == 401 ]] || fail "no token: $code, expected 401"
  http "$BASE/metrics"
  [[ $code == 401 ]] || fail "/metrics without token: $code, expected 401"
  http -H "Authorization: Bearer wrong-wrong-wrong-wrong" "$BASE/api/overview"
  [[ $code == 401 ]] || fail "wrong token: $code"
  http -H "Authorization: Bearer $TOKEN" "$BASE/api/overview"
  [[ $code == 200 ]] || fail "token header: $code"
  http -H "Authorization: Bearer $TOKEN" "$BASE/metrics"
  [[ $code == 200 ]] || fail "/metrics with the token: $code"
  # The page itself loads, to show its login.
  http "$BASE/"
  [[ $code == 200 ]] || fail "the page: $code"
  http -X POST -d '{"token":"nope-nope-nope-nope"}' "$BASE/login"
  [[ $code == 403 ]] || fail "wrong login: $code"
  grep -qi '^set-cookie' "$hdrs" && fail "a wrong login set a cookie"
  http -X POST -d "{\"token\":\"$TOKEN\"}" "$BASE/login"
  [[ $code == 200 ]] || fail "login: $code"
  local cookie
  cookie=$(grep -i '^set-cookie:' "$hdrs" | sed -E 's/^[^:]*: *([^;]*).*/\1/' | tr -d '\r')
  grep -qi 'set-cookie:.*HttpOnly.*SameSite=Strict' "$hdrs" || fail "cookie flags: $(cat "$hdrs")"
  http -H "Cookie: $cookie" "$BASE/api/overview"
  [[ $code == 200 ]] || fail "login cookie: $code"
  http -H "Cookie: jobq_login=0000" "$BASE/api/overview"
  [[ $code == 401 ]] || fail "forged cookie: $code"
  # Actions with the cookie still need the CSRF token.
  http -X POST -H "Cookie: $cookie" "$BASE/api/pause?queue=mail"
  [[ $code == 403 ]] || fail "cookie without CSRF: $code"
  paused mail && fail "paused without a CSRF token"
  http -X POST -H "Cookie: $cookie" -H "X-CSRF-Token: $(csrf -H "Cookie: $cookie")" \
    "$BASE/api/pause?queue=mail"
  [[ $code == 200 ]] || fail "cookie and CSRF: $code $(cat "$body")"
  paused mail || fail "not paused"
  stop_web
}

t_actions_need_post_csrf_and_origin() {
  run put -q mail hello
  start_web || return
  local token
  token=$(csrf)
  [[ $token =~ ^[0-9a-f]{64}$ ]] || fail "no CSRF token in /api/session"
  http "$BASE/api/pause?queue=mail"
  [[ $code == 404 ]] || fail "GET of an action: $code"
  http -X POST "$BASE/api/pause?queue=mail"
  [[ $code == 403 ]] || fail "POST without CSRF: $code"
  grep -q 'CSRF' "$body" || fail "the refusal does not say why: $(cat "$body")"
  http -X POST -H "X-CSRF-Token: 00$token" "$BASE/api/pause?queue=mail"
  [[ $code == 403 ]] || fail "wrong CSRF: $code"
  http -X POST -H "X-CSRF-Token: $token" -H "Origin: http://evil.example" "$BASE/api/pause?queue=mail"
  [[ $code == 403 ]] || fail "foreign Origin: $code"
  paused mail && fail "a refused action paused the queue"
  http -X POST -H "X-CSRF-Token: $token" -H "Origin: ${BASE}" "$BASE/api/pause?queue=mail"
  [[ $code == 200 ]] || fail "a good action: $code $(cat "$body")"
  paused mail || fail "the good action did not pause"
  http -X POST -H "X-CSRF-Token: $token" "$BASE/api/pause?queue=Bad%20Name"
  [[ $code == 400 ]] || fail "bad queue name: $code"
  grep -q 'invalid queue' "$body" || fail "bad queue: $(cat "$body")"
  http -X PUT "$BASE/api/overview"
  [[ $code == 405 ]] || fail "PUT: $code"
  stop_web
}

t_host_header_checked() {
  start_web || return
  local port=${BASE##*:}
  http -H "Host: evil.example" "$BASE/api/session"
  [[ $code == 421 ]] || fail "foreign Host: $code"
  http -H "Host: evil.example:$port" "$BASE/"
  [[ $code == 421 ]] || fail "foreign Host with the port: $code"
  http -H "Host: 127.0.0.1:1" "$BASE/"
  [[ $code == 421 ]] || fail "another port: $code"
  http -H "Host: localhost:$port" "$BASE/api/session"
  [[ $code == 200 ]] || fail "localhost: $code"
  stop_web
  start_web --allow-host jobq.example.com --allow-host proxy.example:443 || return
  http -H "Host: jobq.example.com:${BASE##*:}" "$BASE/api/session"
  [[ $code == 200 ]] || fail "--allow-host: $code"
  http -H "Host: proxy.example:443" "$BASE/api/session"
  [[ $code == 200 ]] || fail "--allow-host with a port: $code"
  http -H "Host: proxy.example:443:${BASE##*:}" "$BASE/api/session"
  [[ $code == 421 ]] || fail "--allow-host with a port, and another: $code"
  http -H "Host: proxy.example" "$BASE/api/session"
  [[ $code == 421 ]] || fail "--allow-host without its port: $code"
  stop_web
}

t_headers_and_csp() {
  start_web || return
  local path
  for path in / /app.js /app.css /api/session /metrics /nowhere; do
    http "$BASE$path"
    grep -qi "^content-security-policy: default-src 'none'; script-src 'self'; style-src 'self'" "$hdrs" ||
      fail "$path: no strict CSP"
    grep -qi '^x-content-type-options: nosniff' "$hdrs" || fail "$path: no nosniff"
    grep -qi '^x-frame-options: DENY' "$hdrs" || fail "$path: framing allowed"
  done
  http "$BASE/"
  grep -q '<script src="/app.js" defer></script>' "$body" || fail "the page has no script"
  grep -qE '<script>|onclick=|style=' "$body" && fail "the page has inline code"
  grep -E 'https?://' "$body" "$ROOT/web/static/app.js" "$ROOT/web/static/app.css" |
    grep -qv 'www.w3.org/2000/svg' && fail "the page loads something from elsewhere"
  grep -qE '\.(innerHTML|outerHTML)|insertAdjacentHTML|document\.write|eval\(' \
    "$ROOT/web/static/app.js" && fail "the page writes HTML or runs text as code"
  stop_web
}

t_read_only() {
  run put -q mail hello
  start_web --read-only || return
  http "$BASE/api/session"
  grep -q '"read_only":true' "$body" || fail "session: $(cat "$body")"
  http -X POST -H "X-CSRF-Token: $(csrf)" "$BASE/api/pause?queue=mail"
  [[ $code == 403 ]] || fail "read-only action: $code"
  grep -q 'read-only' "$body" || fail "the refusal does not say why: $(cat "$body")"
  paused mail && fail "read-only paused the queue"
  browser readonly sqlite
  stop_web
}

t_escaping_in_api() {
  run put -q esc --key '<script>k</script>' '<script>alert(1)</script>'
  expect_rc 0
  printf '\xff\xfe<script>' >"$D/bin"
  T_STDIN=$D/bin run put -q esc -
  expect_rc 0
  start_web || return
  http "$BASE/api/queue?queue=esc"
  grep -qi '^content-type: application/json' "$hdrs" || fail "the API is not JSON"
  grep -q '"key":"<script>k</script>"' "$body" || fail "the key: $(head -c 300 "$body")"
  local id
  id=$(grep -o '"id":[0-9]*' "$body" | tail -n 1 | cut -d: -f2)
  http "$BASE/api/job?id=$id"
  grep -q '"hex":"fffe3c7363726970743e"' "$body" || fail "bytes that are not UTF-8: $(head -c 300 "$body")"
  http "$BASE/api/job?id=1x"
  [[ $code == 400 ]] || fail "bad id: $code"
  http "$BASE/api/job?id=999999"
  [[ $code == 404 ]] || fail "no such job: $code"
  stop_web
}

# ---------------------------------------------------------------- metrics

# metrics_ok FILE: the exposition parses and follows Prometheus' rules
# (tests/web/metrics_check.py), and promtool agrees where it is installed
# (it comes with Debian's prometheus package, whose server the tests do not
# want on the machine).  What was wrong goes to $D/metrics.log.
metrics_ok() {
  /usr/bin/python3 "$ROOT/tests/web/metrics_check.py" <"$1" >"$D/metrics.log" 2>&1 || return 1
  if command -v promtool >/dev/null; then
    promtool check metrics <"$1" >"$D/metrics.log" 2>&1 || return 1
  fi
  return 0
}

# A rate per key: its gauges in /metrics and its fields in the API.
t_rate_per_key() {
  populate
  JOBQ_DB=${T_DBURL:-sqlite:$DB} "$JOBQ" limit mail --rate-per-key 3/1m >/dev/null ||
    fail "jobq limit failed"
  start_web || return
  http "$BASE/metrics"
  metrics_ok "$body" || fail "/metrics: $(cat "$D/metrics.log")"
  grep -q '^jobq_queue_limit_rate_per_key{queue="mail"} 3$' "$body" ||
    fail "the rate per key: $(grep limit "$body")"
  grep -Eq '^jobq_queue_limit_rate_per_key_period_seconds\{queue="mail"\} 60(\.0+)?$' "$body" ||
    fail "its period: $(grep limit "$body")"
  grep -q '^jobq_queue_limit_rate_period_seconds' "$body" && fail "a queue rate shown where none is set"
  http "$BASE/api/overview"
  /usr/bin/python3 -c '
import json, sys
q = {q["name"]: q for q in json.load(open(sys.argv[1]))["queues"]}
l = q["mail"]["limits"]
assert l["rate_per_key"] == 3 and l["rate_per_key_period_ms"] == 60000 and l["rate"] is None, l
assert l["keys_full_now"] == 0, l' "$body" || fail "limits in /api/overview: $(head -c 600 "$body")"
}

t_metrics_format() {
  populate
  start_web || return
  http "$BASE/metrics"
  [[ $code == 200 ]] || fail "/metrics: $code"
  grep -qi '^content-type: text/plain; version=0.0.4' "$hdrs" || fail "content type: $(cat "$hdrs")"
  metrics_ok "$body" || fail "/metrics: $(cat "$D/metrics.log")"
  grep -q '^jobq_jobs{queue="mail",state="ready"} 5$' "$body" || fail "ready mail jobs: $(grep 'mail' "$body" | head -3)"
  grep -q '^jobq_completions_total{queue="mail"} 8$' "$body" || fail "completions: $(grep completions "$body")"
  grep -q '^jobq_failures_total{queue="images"} 9$' "$body" || fail "failures: $(grep failures_total "$body")"
  grep -q '^jobq_retries_total{queue="images"} 6$' "$body" || fail "retries: $(grep retries "$body")"
  grep -q '^jobq_deaths_total{queue="images"} 3$' "$body" || fail "deaths: $(grep deaths "$body")"
  grep -q '^jobq_pickup_wait_seconds_count{queue="mail"} 8$' "$body" || fail "pickup count"
  grep -q '^jobq_pickup_wait_seconds_bucket{queue="mail",le="+Inf"} 8$' "$body" || fail "pickup +Inf"
  grep -q '^jobq_session_jobs_claimed{session="reports",host="[^"]*",id="[0-9a-f]*"} 1$' "$body" ||
    fail "the foreman's figures: $(grep session_jobs "$body")"
  grep -q '^jobq_sessions 1$' "$body" || fail "live sessions"
  grep -q '^jobq_queue_limit_running{queue="slow"} 1$' "$body" || fail "the limit: $(grep limit "$body")"
  grep -q '^jobq_queue_held_by_limit{queue="slow"} 1$' "$body" || fail "held by its limit: $(grep held "$body")"
  grep -q '^jobq_queue_limit_rate' "$body" && fail "a rate limit shown where none is set"
  http "$BASE/api/overview"
  /usr/bin/python3 -c '
import json, sys
q = {q["name"]: q for q in json.load(open(sys.argv[1]))["queues"]}
l = q["slow"]["limits"]
assert l["running"] == 1 and l["rate"] is None and l["running_now"] == 1 and l["held"] is True, l
assert q["mail"]["limits"] is None, q["mail"]["limits"]' "$body" || fail "limits in /api/overview: $(head -c 600 "$body")"
  # The same from the command line, and again after a restart of the web.
  run stats --prometheus
  expect_rc 0
  metrics_ok "$T_OUT" || fail "stats --prometheus: $(cat "$D/metrics.log")"
  grep -q '^jobq_completions_total{queue="mail"} 8$' "$T_OUT" || fail "stats --prometheus differs"
  stop_web
  start_web || return
  http "$BASE/metrics"
  grep -q '^jobq_completions_total{queue="mail"} 8$' "$body" || fail "a restart lost the counts"
  stop_web
  run stats --prometheus --watch
  expect_rc 2
}

# A database of schema version 1 gains the figures' tables on first use.
t_migrates_version_1() {
  run put -q mail hello
  local current
  current=$(sqlite3 "$DB" "SELECT version FROM jobq_meta")
  sqlite3 "$DB" "DROP TABLE jobq_tally; DROP TABLE jobq_attempts; DROP TABLE jobq_cron;
                 DROP TABLE jobq_key_starts; ALTER TABLE jobq_queues DROP COLUMN key_rate_n;
                 ALTER TABLE jobq_queues DROP COLUMN key_rate_ms;
                 DROP TABLE jobq_starts; ALTER TABLE jobq_queues DROP COLUMN max_running;
                 ALTER TABLE jobq_queues DROP COLUMN max_per_key;
                 ALTER TABLE jobq_queues DROP COLUMN rate_n;
                 ALTER TABLE jobq_queues DROP COLUMN rate_ms;
                 ALTER TABLE jobq_meta DROP COLUMN guard_at;
                 ALTER TABLE jobq_meta DROP COLUMN pruned_before;
                 UPDATE jobq_meta SET version = 1"
  run_work 30 --until-empty -q mail -- cat
  expect_rc 0
  [[ $(sqlite3 "$DB" "SELECT version FROM jobq_meta") == "$current" ]] || fail "not migrated to $current"
  [[ $(sqlite3 "$DB" "SELECT sum(done) FROM jobq_tally WHERE queue = 'mail'") == 1 ]] ||
    fail "the migrated database keeps no figures"
}

# ---------------------------------------------------------------- parts

# unowned QUEUE N: `jobq stats` says N of QUEUE's parts have no live owner.
unowned() {
  JOBQ_DB=sqlite:$DB "$JOBQ" --json stats |
    grep -q "\"name\":\"$1\"[^}]*\"parts_unowned\":$2[,}]"
}

# cli_json FILE ARGS...: `jobq --json ARGS` into FILE, for the API to match.
cli_json() {
  local file=$1
  shift
  JOBQ_DB=sqlite:$DB "$JOBQ" --json "$@" >"$file" || fail "jobq --json $* failed"
}

# owners_match QUEUE OWNER LIVE READY: /api/queue gives QUEUE's parts as
# `jobq parts QUEUE` has them (each part and its ready jobs, READY in
# all; none listed for a queue in one part), each owned by the session
# named OWNER (its id, name and host; "-": none) whose lease holds or not
# (LIVE: live or dead), since a time of this case ($T0 on); and its count
# of parts, and of those without a live owner, as `jobq stats` has them.
owners_match() {
  cli_json "$D/cli-parts.json" parts "$1"
  cli_json "$D/cli-sessions.json" sessions
  cli_json "$D/cli-stats.json" stats
  http "$BASE/api/queue?queue=$1"
  /usr/bin/python3 - "$D"/cli-{parts,sessions,stats}.json "$body" "$2" "$3" "$4" "$T0" <<'PY' ||
import json, sys, time
cli, sess, stats, api = (json.load(open(f)) for f in sys.argv[1:5])
name, live, ready, t0 = sys.argv[5], sys.argv[6] == "live", int(sys.argv[7]), int(sys.argv[8])
q = api["queue"]
st = [x for x in stats["queues"] if x["name"] == q["name"]][0]
assert (q["parts"], q["parts_unowned"]) == (cli["parts"], st["parts_unowned"]), (q, st)
assert [(p["part"], p["ready"]) for p in q["owners"]] == [(o["part"], o["ready"]) for o in cli["owners"]]
assert len(q["owners"]) == (cli["parts"] if cli["parts"] > 1 else 0), q
assert sum(p["ready"] for p in q["owners"]) == ready, q
o = [s for s in sess["sessions"] if s["name"] == name]
want = (o[0]["id"], name, o[0]["host"]) if o else (None, None, None)
for p in q["owners"]:
    assert (p["session"], p["session_name"], p["session_host"], p["live"]) == (*want, live), p
    assert t0 <= p["since_ms"] <= time.time() * 1000 + 1000, p
PY
    fail "the API's parts of $1: $(head -c 800 "$body")"
}

# sessions_match NAME PARTS: /api/sessions gives each session's parts as
# `jobq sessions` does, and those of the session named NAME are PARTS (a
# JSON object).
sessions_match() {
  cli_json "$D/cli-sessions.json" sessions
  http "$BASE/api/sessions"
  /usr/bin/python3 - "$D/cli-sessions.json" "$body" "$1" "$2" <<'PY' ||
import json, sys
cli, api = (json.load(open(f)) for f in sys.argv[1:3])
s = {x["id"]: x["parts"] for x in api["sessions"]}
assert s == {x["id"]: x["parts"] for x in cli["sessions"]}, (s, cli)
named = [x["parts"] for x in api["sessions"] if x["name"] == sys.argv[3]]
assert named == [json.loads(sys.argv[4])], named
PY
    fail "the API's sessions' parts: $(head -c 800 "$body")"
}

# gauges QUEUE PARTS UNOWNED: /metrics has QUEUE's parts and those without
# a live owner.
gauges() {
  grep -qxF "jobq_queue_parts{queue=\"$1\"} $2" "$body" &&
    grep -qxF "jobq_queue_parts_unowned{queue=\"$1\"} $3" "$body" ||
    fail "/metrics lacks $1's $2 parts, $3 unowned: $(grep '^jobq_queue_parts' "$body")"
}

# Queues in parts, as a foreman holds them and after it died: orphan's 3
# parts held by a foreman killed with SIGKILL (its lease runs out and no
# one is left to take them); then split's 4 held by a live foreman (the
# queue paused, so that its jobs stay ready in their parts), and whole in
# one part.  The API and /metrics give each value as `jobq parts`,
# `jobq sessions` and `jobq stats` do, and the dashboard shows them.
t_parts() {
  local T0
  T0=$(date +%s%3N)
  run parts orphan 3
  expect_rc 0
  start_work doomed -q orphan --name doomed --lease 1s -c 1 -- cat
  local doomed=$W_PID
  wait_until 30 "unowned orphan 0" || fail "the foreman did not take orphan's parts"
  run pause orphan
  local k
  for k in 1 2 3 4 5; do run put -q orphan --key "o$k" "$k"; done
  kill -KILL "$doomed"
  wait "$doomed" 2>/dev/null
  wait_until 30 "unowned orphan 3" || fail "the killed foreman's parts still have a live owner"
  start_web || return
  local web=$W_PID
  owners_match orphan doomed dead 5
  sessions_match doomed '{"orphan": [0, 1, 2]}'
  http "$BASE/metrics"
  metrics_ok "$body" || fail "/metrics: $(cat "$D/metrics.log")"
  gauges orphan 3 3
  browser parts-lost parts-lost

  # split: a live foreman holds its parts.  It reaps the dead one when it
  # starts or at a heartbeat: orphan's parts then have no owner at all.
  run parts split 4
  start_work splitter -q split --name splitter -c 1 -- cat
  local splitter=$W_PID
  wait_until 30 "unowned split 0" || fail "the foreman did not take split's parts"
  wait_until 30 "! JOBQ_DB=sqlite:$DB '$JOBQ' sessions | grep -q doomed" ||
    fail "the dead foreman's session was not reaped"
  run pause split
  for k in $(seq 1 12); do run put -q split --key "k$k" "$k"; done
  run put -q whole one
  owners_match split splitter live 12
  owners_match orphan - dead 5
  owners_match whole - live 0
  sessions_match splitter '{"split": [0, 1, 2, 3]}'
  http "$BASE/api/overview"
  /usr/bin/python3 -c '
import json, sys
ov = {x["name"]: (x["parts"], x["parts_unowned"]) for x in json.load(open(sys.argv[1]))["queues"]}
assert ov == {"orphan": (3, 3), "split": (4, 0), "whole": (1, 0)}, ov' "$body" ||
    fail "the overview's parts: $(head -c 800 "$body")"
  # A job's part, as `jobq show` has it; none in a queue of one part.
  local q id
  for q in split whole; do
    id=$(JOBQ_DB=sqlite:$DB "$JOBQ" --json ls -q "$q" | grep -o '"id":[0-9]*' | head -n 1 | cut -d: -f2)
    cli_json "$D/show.json" show "$id"
    http "$BASE/api/job?id=$id"
    /usr/bin/python3 -c '
import json, sys
job, cli = (json.load(open(f)) for f in sys.argv[1:3])
assert job["job"]["part"] == cli["part"] and (cli["part"] is None) == (sys.argv[3] == "whole"), job
' "$body" "$D/show.json" "$q" || fail "job $id's part: $(head -c 600 "$body")"
  done
  http "$BASE/metrics"
  metrics_ok "$body" || fail "/metrics: $(cat "$D/metrics.log")"
  gauges split 4 0
  gauges orphan 3 3
  gauges whole 1 0
  run stats --prometheus
  grep -qxF 'jobq_queue_parts_unowned{queue="orphan"} 3' "$T_OUT" || fail "stats --prometheus differs"
  browser parts parts
  kill -TERM "$splitter"
  wait_exit "$splitter" 30 || fail "the foreman did not stop on SIGTERM"
  W_PID=$web
  stop_web
}

# ---------------------------------------------------------------- browser

t_browser_sqlite() {
  populate
  start_web || return
  browser full sqlite
  stop_web
}

t_browser_postgres() {
  if [[ -z $PG ]]; then
    skip "JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)"
    return
  fi
  local S=jqweb_$$_$RANDOM
  local port=${PG##*@127.0.0.1:}
  port=${port%%/*}
  local pass
  pass=$(sed -E 's|^postgres://[^:]+:([^@]+)@.*|\1|' <<<"$PG")
  T_DBURL="$PG?schema=$S"
  run init
  expect_rc 0
  populate
  start_web || return
  browser full postgres
  stop_web
  # A role that may only read: the page works, the actions say why not.
  run init --print-roles
  expect_rc 0
  local psql=(env PGPASSWORD="$pass" PGOPTIONS="-c client_min_messages=warning" psql -X -q
    -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U jobq -d jobq)
  "${psql[@]}" -f "$T_OUT" >/dev/null || fail "the roles' SQL failed"
  "${psql[@]}" -c "CREATE ROLE r_$S LOGIN PASSWORD 'r-pass' IN ROLE jobq_${S}_reader" ||
    fail "no reader login"
  local admin=$T_DBURL
  T_DBURL="postgres://r_$S:r-pass@127.0.0.1:$port/jobq?schema=$S"
  start_web || return
  browser reader postgres-reader
  stop_web
  T_DBURL=$admin
  paused mail && fail "the reader paused the queue"
  local p
  for p in "${W_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  sleep 1
  "${psql[@]}" -c "DROP OWNED BY r_$S" -c "DROP ROLE r_$S" -c "DROP SCHEMA $S CASCADE" >/dev/null
  for p in reader producer worker admin; do
    "${psql[@]}" -c "DROP OWNED BY jobq_${S}_$p" -c "DROP ROLE jobq_${S}_$p" >/dev/null
  done
}

run_cases
