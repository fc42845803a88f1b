#!/usr/bin/env bash
# cli_bench.sh - `jobq bench`: every workload in a small run on SQLite
# whose JSON is checked field by field (each workload present, rates above
# zero, the drains verified exactly once, the foreman's memory and idle
# CPU in range), a short soak (paced at its rate, claim percentiles and
# table sizes present), the CSV and SVG files it writes,
# a bare run on a temporary database that leaves the working folder alone,
# nothing left behind after a run or an interrupt, the usage errors, and
# the skew workload and scale in parts,
# small runs and soaks on PostgreSQL and MariaDB with the bare-SQL ceiling (when
# tests/run.sh gives their URLs; skipped otherwise).
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

# check_json FILE STORE: the document of a --workload all run on STORE.
check_json() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
store = sys.argv[2]
errors = []
if doc.get("store") != store:
    errors.append("store is %r, expected %r" % (doc.get("store"), store))
# What it ran on: this machine's facts, the store's server as `jobq
# doctor` names it, and a disk flush measured in a folder of its own,
# back to back and after a pause.
m = doc.get("machine", {})
server = {"sqlite": "SQLite ", "postgres": "PostgreSQL ", "mysql": "Maria"}[store]
if not (m.get("cores", 0) >= 1 and m.get("memory_bytes", 0) > 2**20 and
        m.get("system", "").startswith("Linux ") and server in m.get("server", "") and
        m.get("durability") and m.get("flush_dir", "").startswith("/") and
        0 < (m.get("flush_ms") or 0) < 1000 and 0 < (m.get("flush_idle_ms") or 0) < 1000):
    errors.append("machine %s" % m)
names = [w["name"] for w in doc["workloads"]]
want = ["enqueue", "drain", "latency", "scale", "backlog", "keys", "failures", "ceiling", "foreman"]
if names != want:
    errors.append("workloads %s, expected %s" % (names, want))
for w in doc["workloads"]:
    if w["status"] != "ok":
        errors.append("%s: status %s: %s" % (w["name"], w["status"], w["error"]))
        continue
    if not w["results"]:
        errors.append("%s: no results" % w["name"])
    for r in w["results"]:
        for k in ("variant", "metric", "value", "unit"):
            if k not in r:
                errors.append("%s: a result without %s" % (w["name"], k))
        if r["unit"] == "jobs/s" and not r["value"] > 0:
            errors.append("%s %s: rate %s" % (w["name"], r["variant"], r["value"]))
        if r["unit"] == "ms" and not r["value"] >= 0:
            errors.append("%s %s: latency %s" % (w["name"], r["variant"], r["value"]))
def variants(name, unit="jobs/s"):
    w = [x for x in doc["workloads"] if x["name"] == name][0]
    return [r["variant"] for r in w["results"] if r["unit"] == unit]
drain = [x for x in doc["workloads"] if x["name"] == "drain"][0]
if drain.get("verified") is not True:
    errors.append("drain not verified: %s" % drain)
for v in ("library", "persistent", "fork"):
    if v not in variants("drain"):
        errors.append("drain has no %s throughput" % v)
if sorted(set(variants("latency", "ms"))) != ["fork", "persistent"]:
    errors.append("latency variants %s" % variants("latency", "ms"))
if len(variants("scale")) < 2:
    errors.append("scale levels %s" % variants("scale"))
scale = [x for x in doc["workloads"] if x["name"] == "scale"][0]
for v in variants("scale"):
    metrics = sorted(r["metric"] for r in scale["results"] if r["variant"] == v)
    want = ["archived ceiling", "ceiling", "empty claims", "share of archived ceiling",
            "share of ceiling", "throughput"]
    if metrics != want:
        errors.append("scale %s: metrics %s, expected %s" % (v, metrics, want))
    got = {r["metric"]: r["value"] for r in scale["results"] if r["variant"] == v}
    for share, ceiling in (("share of ceiling", "ceiling"),
                           ("share of archived ceiling", "archived ceiling")):
        if abs(got[share] - 100 * got["throughput"] / got[ceiling]) > 0.01 * got[share]:
            errors.append("scale %s: %s %s is not throughput over %s" % (v, share, got[share], ceiling))
backlog = [x for x in doc["workloads"] if x["name"] == "backlog"][0]
phases = sorted(set(variants("backlog")))
if len(phases) != 3:
    errors.append("backlog phases %s" % phases)
for v in phases:
    got = {r["metric"]: r["value"] for r in backlog["results"] if r["variant"] == v}
    if not 0 < got.get("slowest round", 0) <= got.get("throughput", 0):
        errors.append("backlog %s: the slowest round is not under the median: %s" % (v, got))
    if ("ratio" in got) == (v == "1000 ready"):
        errors.append("backlog %s: metrics %s" % (v, sorted(got)))
keys = [x for x in doc["workloads"] if x["name"] == "keys"][0]
if keys.get("verified") is not True:
    errors.append("keys not verified: %s" % keys)
got = {r["metric"]: r["value"] for r in keys["results"] if r["variant"] == "200 on one key"}
acked = {r["metric"]: r["value"] for r in keys["results"]
         if r["variant"] == "200 on one key, acked with the next claim"}
each = {r["metric"]: r["value"] for r in keys["results"] if r["variant"] == "200, a key each"}
if [r["variant"] for r in keys["results"]] != ["200 on one key"] * 5 \
        + ["200 on one key, acked with the next claim"] * 2 + ["200, a key each"] * 2 \
        or sorted(got) != ["drain", "drain, first tenth", "drain, last tenth", "first tenth / last", "put"] \
        or sorted(acked) != ["drain", "first tenth / last"] or min(acked.values()) <= 0 \
        or sorted(each) != ["drain, library", "put"] or min(each.values()) <= 0:
    errors.append("keys results %s" % keys["results"])
elif abs(got["first tenth / last"] - got["drain, first tenth"] / got["drain, last tenth"]) > 1e-6 * got["first tenth / last"]:
    errors.append("keys: the ratio is not first tenth over last: %s" % got)
if variants("failures") != ["run again later", "dead", "retried from dead", "dead, a key each",
                            "given back at close", "sent back, worker lost"]:
    errors.append("failures results %s" % variants("failures"))
# The bare bulk INSERT beside enqueue: on the servers only.
want_ceiling = ["bare sql", "fenced sql", "archived sql"]
if doc["store"] != "sqlite":
    want_ceiling.append("bare insert")
if variants("ceiling") != want_ceiling:
    errors.append("ceiling results %s" % variants("ceiling"))
shares = sorted(r["metric"] for r in drain["results"] if r["unit"] == "%")
if shares != ["of archived ceiling", "of ceiling", "of fenced ceiling"]:
    errors.append("drain library as a share of the ceilings: %s" % shares)
# The latency floor: PostgreSQL and SQLite (MariaDB has no wake-ups to measure).
ceiling = [x for x in doc["workloads"] if x["name"] == "ceiling"][0]
floor = {r["metric"]: r["value"] for r in ceiling["results"] if r["variant"] == "latency floor"}
latency = [x for x in doc["workloads"] if x["name"] == "latency"][0]
over = [r["value"] for r in latency["results"] if r["metric"] == "p50 over floor"]
if store in ("postgres", "sqlite"):
    if not 0 < floor.get("p50", 0) <= floor.get("p99", 0) <= floor.get("max", 0):
        errors.append("latency floor %s" % floor)
    if len(over) != 1 or not over[0] > 0:
        errors.append("latency p50 over the floor: %s" % over)
elif floor or over:
    errors.append("a latency floor on %s: %s %s" % (store, floor, over))
foreman = [x for x in doc["workloads"] if x["name"] == "foreman"][0]
if foreman.get("verified") is not True:
    errors.append("foreman drains not verified: %s" % foreman)
got = {(r["variant"], r["metric"]): r["value"] for r in foreman["results"]}
for v in ("fork -c 64", "persistent -c 64"):
    if not 1 < got.get((v, "peak RSS"), 0) < 1024:
        errors.append("foreman %s: peak RSS %s MiB" % (v, got.get((v, "peak RSS"))))
    if not 0 < got.get((v, "peak private"), 0) <= got.get((v, "peak RSS"), 0):
        errors.append("foreman %s: peak private %s MiB" % (v, got.get((v, "peak private"))))
if not 0 <= got.get(("idle -c 4", "CPU"), -1) < 50:
    errors.append("foreman idle CPU %s %%" % got.get(("idle -c 4", "CPU")))
if not 0 <= got.get(("idle -c 4", "wakeups"), -1) < 10000:
    errors.append("foreman idle wakeups %s/s" % got.get(("idle -c 4", "wakeups")))
for e in errors:
    print("FAIL: json: " + e)
sys.exit(1 if errors else 0)
EOF
}

# check_soak FILE RATE: the document of a --workload soak run.
check_soak() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
rate = float(sys.argv[2])
errors = []
ws = doc["workloads"]
if [w["name"] for w in ws] != ["soak"]:
    errors.append("workloads %s, expected soak alone" % [w["name"] for w in ws])
else:
    w = ws[0]
    if w["status"] != "ok":
        errors.append("status %s: %s" % (w["status"], w["error"]))
    got = {(r["variant"], r["metric"]): r["value"] for r in w["results"]}
    v = "%d jobs/s" % rate
    put, done = got.get((v, "put"), 0), got.get((v, "done"), 0)
    # Paced: about the rate asked for, and none put before the run's
    # clock starts or after it ends.
    if not rate * 0.5 < put <= rate:
        errors.append("put %s jobs/s at --rate %s" % (put, rate))
    if not 0 < done <= put:
        errors.append("done %s jobs/s of %s put" % (done, put))
    if not 0 <= got.get((v, "left ready"), -1) <= put * 3:
        errors.append("left ready %s" % got.get((v, "left ready")))
    for k in ("first", "last"):
        p50 = got.get(("claim, %s 1 s" % k, "p50"), 0)
        p99 = got.get(("claim, %s 1 s" % k, "p99"), 0)
        if not 0 < p50 <= p99:
            errors.append("claim %s window: p50 %s, p99 %s ms" % (k, p50, p99))
    if not got.get(("claim p99", "last / first"), 0) > 0:
        errors.append("no p99 ratio")
    spread = [got.get(("claim p99", k), 0) for k in ("least window", "median window", "most window")]
    firstlast = [got.get(("claim, %s 1 s" % k, "p99"), 0) for k in ("first", "last")]
    if not 0 < spread[0] <= spread[1] <= spread[2] \
            or not all(spread[0] <= x <= spread[2] for x in firstlast):
        errors.append("the windows' p99 %s do not hold the first and last %s" % (spread, firstlast))
    for what in ("hot table", "its indexes"):
        for when in ("after the first window", "most, first half", "most, second half",
                     "at the end"):
            if not got.get((what, when), -1) >= 0:
                errors.append("no size of the %s %s" % (what, when))
        if not got.get((what, "second half / first"), 0) > 0:
            errors.append("no growth ratio of the %s" % what)
    # Every window's series: three windows of a second, each marked.
    series = [r for r in w["results"] if r.get("series")]
    if sorted({r["variant"] for r in series}) != ["window to %d s" % i for i in (1, 2, 3)]:
        errors.append("series windows %s" % sorted({r["variant"] for r in series}))
    if any(r["variant"].startswith("window to") for r in w["results"] if not r.get("series")):
        errors.append("a window's point not marked as a series")
    claims = 0
    for i in (1, 2, 3):
        v = "window to %d s" % i
        claims += got.get((v, "claims"), 0)
        if not 0 < got.get((v, "claim p50"), 0) <= got.get((v, "claim p99"), 0):
            errors.append("%s: p50 %s, p99 %s" % (v, got.get((v, "claim p50")),
                                                  got.get((v, "claim p99"))))
        for what in ("hot table", "its indexes"):
            if not got.get((v, what), -1) >= 0:
                errors.append("%s: no size of the %s" % (v, what))
    if got.get(("window to 3 s", "claim p99")) != got.get(("claim, last 1 s", "p99")):
        errors.append("the last window's p99 is not the last window's")
    if claims <= 0:
        errors.append("no claims in the windows")
for e in errors:
    print("FAIL: soak json: " + e)
sys.exit(1 if errors else 0)
EOF
}

t_all_sqlite_json_csv_plot() {
  run bench --workload all --jobs 300 --backlog 3000 --seconds 2 --json --csv "$D/b.csv" \
    --plot "$D/b.svg"
  expect_rc 0
  expect_err_has "using the database sqlite:$DB"
  expect_err_has "machine: $(nproc) cores"
  expect_err_has "server: SQLite "
  expect_err_has "disk: a 4 KiB write and its flush take"
  expect_err_has "ms after 20 ms asleep (median of 30)"
  expect_err_has "in '$(dirname "$DB")'"
  grep -q 'disk flush [0-9.]* ms, [0-9.]* after a pause' "$D/b.svg" ||
    fail "the drawing does not say what it ran on"
  check_json "$T_OUT" sqlite || fail "the JSON document is not right: $(head -c 300 "$T_OUT")"
  # The CSV: a header and one row of five fields per measurement.
  head -n 1 "$D/b.csv" | grep -qx 'workload,variant,metric,value,unit' ||
    fail "csv header: $(head -n 1 "$D/b.csv")"
  python3 - "$D/b.csv" "$T_OUT" <<'EOF' || fail "the csv does not match the json"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
doc = json.load(open(sys.argv[2]))
n = sum(len(w["results"]) for w in doc["workloads"])
assert len(rows) == n, (len(rows), n)
for r in rows:
    float(r["value"])
    assert r["workload"] and r["metric"] and r["unit"], r
assert any(r["workload"] == "drain" and r["variant"] == "fork" for r in rows)
EOF
  # The SVG parses and has bars for the throughputs and the latencies.
  python3 - "$D/b.svg" <<'EOF' || fail "the svg is not well formed or has no bars"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
rects = root.findall("{http://www.w3.org/2000/svg}rect")
texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
assert len(rects) > 10, len(rects)
assert "Throughput" in texts and "Latency" in texts and "p99" in texts, texts
EOF
  # Nothing is left of the run's jobs, nor of the ceiling's tables.
  expect_no_jobs
  local left
  left=$(python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(
    "SELECT count(*) FROM sqlite_schema WHERE name LIKE ?", ("jobq_bench%",)).fetchone()[0])' "$DB")
  [[ $left == 0 ]] || fail "the ceiling left $left tables or indexes behind"
  run ls --json
  expect_rc 0
  grep -q '"id"' "$T_OUT" && fail "jobs were left: $(head -c 300 "$T_OUT")"
  # The steady load, only when named.
  run bench --workload soak --seconds 3 --rate 300 --json
  expect_rc 0
  check_soak "$T_OUT" 300 || fail "the soak document is not right: $(head -c 300 "$T_OUT")"
  expect_no_jobs
  # The table sums the windows up; their series is in the CSV, and drawn
  # as lines in the chart.
  run bench --workload soak --seconds 3 --rate 300 --csv "$D/soak.csv" --plot "$D/soak.svg"
  expect_rc 0
  expect_out_has "median window"
  grep -q "window to" "$T_OUT" && fail "the table shows the series: $(cat "$T_OUT")"
  [[ $(grep -c '^soak,window to [123] s,' "$D/soak.csv") -ge 12 ]] ||
    fail "the csv lacks the windows' series: $(cat "$D/soak.csv")"
  python3 - "$D/soak.svg" <<'EOF' || fail "the soak's chart has no lines of its windows"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
assert "Claim time, every window" in texts and "Sizes at the end" in texts, texts
lines = [p.get("points").split() for p in root.iter(ns + "polyline")
         if p.get("stroke") != "#999"]
# claim p50 and p99, the hot table and its indexes: three windows each.
assert len(lines) == 4 and all(len(l) == 3 for l in lines), lines
height = float(root.get("height"))
assert all(0 <= float(pt.split(",")[1]) <= height for l in lines for pt in l), lines
EOF
  # The table, for people.
  run bench --workload enqueue,ceiling --jobs 200
  expect_rc 0
  expect_out_has "WORKLOAD"
  expect_out_has "batched (1000)"
  expect_out_has "archived sql"
}

# The skew workload: one hot key at half the jobs, drained with the
# queue whole and in parts (a part per claimer), each drain checked
# exactly once; and the scale workload in parts.
t_skew_and_parts() {
  run bench --workload skew,scale --jobs 400 --concurrency 4 --parts 1 --json
  expect_rc 0
  python3 - "$T_OUT" <<'EOF2' || fail "the skew document is not right: $(head -c 600 "$T_OUT")"
import json, sys
doc = json.load(open(sys.argv[1]))
w = {x["name"]: x for x in doc["workloads"]}
errors = []
for name in ("skew", "scale"):
    if w.get(name, {}).get("status") != "ok":
        errors.append("%s: %s" % (name, w.get(name)))
if w["skew"].get("verified") is not True:
    errors.append("skew not verified exactly once: %s" % w["skew"])
got = {(r["variant"], r["metric"]): r["value"] for r in w["skew"]["results"]}
for variant in ("4 claimers, 1 part", "4 claimers, 4 parts"):
    for metric in ("throughput", "hot key: rate"):
        if not got.get((variant, metric), 0) > 0:
            errors.append("%s %s: %s" % (variant, metric, got.get((variant, metric))))
    if not got.get((variant, "hot key: last claimed"), -1) >= 0:
        errors.append("%s: no last claim of the hot key" % variant)
if ("4 claimers, 4 parts", "hot part's others: last claimed") not in got:
    errors.append("no figure for the hot part's other keys: %s" % sorted(got))
if ("4 claimers, 4 parts", "other parts: last claimed") not in got:
    errors.append("no figure for the other parts: %s" % sorted(got))
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
EOF2
  run stats --json
  grep -qE '"parts": *([02-9]|1[0-9])' "$T_OUT" &&
    fail "a bench queue in parts was left: $(head -c 300 "$T_OUT")"
  expect_no_jobs_url
}

t_temporary_database() {
  # No --db and no JOBQ_DB: a temporary file, not ./jobq.db.
  (cd "$D" && env -u JOBQ_DB "$JOBQ" bench --workload drain --jobs 200 >"$D/out" 2>"$D/err")
  local st=$?
  T_ERR=$D/err
  [[ $st == 0 ]] || fail "exit status $st"
  expect_err_has "using a temporary SQLite database"
  [[ -e $D/jobq.db ]] && fail "a bare jobq bench created ./jobq.db"
  local tmp
  tmp=$(sed -nE 's/.*database, (.*)\/bench\.db, deleted.*/\1/p' "$D/err")
  [[ -n $tmp ]] || fail "the temporary database is not named"
  [[ -n $tmp && -e $tmp ]] && fail "the temporary folder $tmp was left behind"
  grep -q "exactly once" "$D/out" || fail "no drain result: $(cat "$D/out")"
  # --db given: that database, and `jobq work` gets it.
  "$JOBQ" --db "sqlite:$D/given.db" bench --workload drain --jobs 200 >/dev/null 2>"$D/err2" ||
    fail "bench with --db failed: $(cat "$D/err2")"
  [[ -e $D/given.db ]] || fail "--db was not used"
}

t_interrupt_cleans_up() {
  JOBQ_DB=sqlite:$DB "$JOBQ" bench --workload drain --jobs 100000 >"$D/out" 2>"$D/err" &
  local pid=$! i
  # Interrupt once the drain is under way.
  for i in $(seq 1 100); do
    sleep 0.1
    [[ -e $DB ]] && JOBQ_DB=sqlite:$DB "$JOBQ" sessions 2>/dev/null | grep -q bench && break
  done
  kill -INT "$pid"
  wait "$pid"
  local st=$?
  T_ERR=$D/err
  [[ $st == 130 ]] || fail "exit status $st after SIGINT, expected 130"
  expect_err_has "interrupted"
  grep -q interrupted "$D/out" || fail "the table does not say interrupted: $(cat "$D/out")"
  expect_no_jobs
  run sessions --json
  grep -q '"id"' "$T_OUT" && fail "sessions were left: $(head -c 300 "$T_OUT")"
}

t_usage_errors() {
  run bench --workload bogus
  expect_rc 2
  expect_err_has "invalid --workload 'bogus'"
  expect_err_style
  run bench --workload drain,draim
  expect_rc 2
  expect_err_has "did you mean 'drain'?"
  run bench --jobs 0
  expect_rc 2
  expect_err_has "invalid --jobs '0'"
  run bench --jobs abc
  expect_rc 2
  expect_err_has "invalid --jobs 'abc'"
  run bench --concurrency 0
  expect_rc 2
  expect_err_has "invalid --concurrency '0'"
  run bench --batch 1001
  expect_rc 2
  expect_err_has "invalid --batch '1001'"
  run bench --backlog -5
  expect_rc 2
  expect_err_has "invalid --backlog '-5'"
  run bench --seconds 1s
  expect_rc 2
  expect_err_has "invalid --seconds '1s'"
  run bench --workload soak --rate 0
  expect_rc 2
  expect_err_has "invalid --rate '0'"
  run bench --limit often
  expect_rc 2
  expect_err_has "invalid --limit 'often': expected none, running, per-key, rate or rate-per-key"
  run bench --plot "$D/chart.png"
  expect_rc 2
  expect_err_has "invalid --plot '$D/chart.png': expected a file name ending in .svg"
  run bench --csv "$D/no/such/dir/b.csv" --workload enqueue --jobs 100
  expect_rc 1
  expect_err_has "cannot write --csv"
  run bench extra
  expect_rc 2
  expect_err_has "unexpected argument 'extra'"
  # Nothing was opened by a usage error.
  [[ -e $DB ]] && fail "a usage error created the database"
  # The hidden worker modes are not in the help.
  run bench --help
  expect_rc 0
  expect_out_has "--workload"
  grep -q internal "$T_OUT" && fail "--help lists the internal modes"
  run --help
  expect_out_has "bench"
}

t_postgres() {
  local PG=${JOBQ_TEST_PG_URL:-}
  if [[ -z $PG ]]; then
    skip "JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)"
    return
  fi
  local password port S
  password=$(sed -E 's|^postgres://[^:]+:([^@]+)@.*|\1|' <<<"$PG")
  port=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$PG")
  S=b$$_$RANDOM
  T_DBURL="$PG?schema=$S"
  # No schema yet: one error that says so, before any workload.
  run bench --workload drain,enqueue --jobs 100
  expect_rc 2
  expect_err_has "no jobq schema yet: run 'jobq init'"
  [[ $(grep -c "schema" "$T_ERR") == 1 ]] || fail "more than one error: $(cat "$T_ERR")"
  grep -q "drain" "$T_OUT" "$T_ERR" && fail "a workload ran: $(cat "$T_OUT" "$T_ERR")"
  run init
  expect_rc 0
  run bench --workload all --jobs 300 --backlog 2000 --concurrency 4 --seconds 2 --json
  expect_rc 0
  expect_quiet_about "$password"
  check_json "$T_OUT" postgres || fail "the JSON document is not right: $(head -c 300 "$T_OUT")"
  run bench --workload soak --seconds 3 --rate 300 --json
  expect_rc 0
  check_soak "$T_OUT" 300 || fail "the soak document is not right: $(head -c 300 "$T_OUT")"
  expect_no_jobs_url
  local tables
  tables=$(PGPASSWORD=$password psql -X -h 127.0.0.1 -p "$port" -U jobq -d jobq -At \
    -c "SELECT count(*) FROM pg_tables WHERE schemaname = '$S' AND tablename LIKE 'jobq_bench%'")
  [[ $tables == 0 ]] || fail "the ceiling table was left ($tables)"
  PGOPTIONS="-c client_min_messages=warning" PGPASSWORD=$password psql -X -q -h 127.0.0.1 \
    -p "$port" -U jobq -d jobq -c "DROP SCHEMA $S CASCADE"
}

t_mysql() {
  local MY=${JOBQ_TEST_MYSQL_URL:-}
  if [[ -z $MY ]]; then
    skip "JOBQ_TEST_MYSQL_URL is not set (tests/run.sh starts a server)"
    return
  fi
  local password port S
  password=$(sed -E 's|^[a-z]+://[^:]+:([^@]+)@.*|\1|' <<<"$MY")
  port=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$MY")
  S=b$$_$RANDOM
  my() { MYSQL_PWD=$password mariadb --no-defaults -h 127.0.0.1 -P "$port" -u jobq -N -B "$@"; }
  my -e "CREATE DATABASE $S"
  T_DBURL="${MY%/*}/$S"
  run init
  expect_rc 0
  run bench --workload all --jobs 300 --backlog 2000 --concurrency 4 --seconds 2 --json
  expect_rc 0
  expect_quiet_about "$password"
  check_json "$T_OUT" mysql || fail "the JSON document is not right: $(head -c 300 "$T_OUT")"
  run bench --workload soak --seconds 3 --rate 300 --json
  expect_rc 0
  check_soak "$T_OUT" 300 || fail "the soak document is not right: $(head -c 300 "$T_OUT")"
  expect_no_jobs_url
  local tables
  tables=$(my -e "SELECT count(*) FROM information_schema.tables WHERE table_schema = '$S' AND table_name LIKE 'jobq_bench%'")
  [[ $tables == 0 ]] || fail "the ceiling table was left ($tables)"
  my -e "DROP DATABASE $S"
}

# expect_no_jobs for the server in $T_DBURL: stats count no job.
expect_no_jobs_url() {
  run stats --json
  if [[ $rc != 0 ]]; then
    fail "jobq stats --json failed with $rc"
  elif grep -oE '"(ready|scheduled|waiting|running|done|dead|cancelled)": *[0-9]+' "$T_OUT" |
      grep -qvE ': *0$'; then
    fail "jobs were left: $(head -c 300 "$T_OUT")"
  fi
}

run_cases
