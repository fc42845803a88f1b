# worktest.sh - what the foreman's test scripts (tests/cli_work*.sh) share,
# on top of clitest.sh: running `jobq work` in the foreground with a time
# limit or in the background, waiting for conditions and for processes,
# and checks of job counts, single jobs, sessions and processes.  Every
# background foreman is killed when the script ends, whatever happened.

W_ENV=()
W_PIDS=()
trap 'for p in "${W_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
      [[ -z ${JOBQ_TEST_KEEP:-} ]] && rm -rf "$T_ROOT"' EXIT

# work_env VAR=VALUE...: more environment for the next run_work/start_work.
work_env() { W_ENV=("$@"); }

# run_work SECONDS ARGS...: `jobq work ARGS` in the foreground, killed after
# SECONDS; sets $rc, and $W_LOG (= $T_ERR) to its stderr.
run_work() {
  local limit=$1
  shift
  W_LOG=$D/work.$RANDOM.log
  T_ERR=$W_LOG
  T_OUT=$D/work.out
  T_LAST="work $*"
  env JOBQ_DB="sqlite:$DB" "${W_ENV[@]}" timeout -k 5 "$limit" "$JOBQ" work "$@" \
    </dev/null >"$T_OUT" 2>"$W_LOG"
  rc=$?
  W_ENV=()
}

# start_work NAME ARGS...: `jobq work ARGS` in the background; sets $W_PID,
# and $W_LOG to its stderr ($D/NAME.log).
start_work() {
  local name=$1
  shift
  W_LOG=$D/$name.log
  env JOBQ_DB="sqlite:$DB" "${W_ENV[@]}" "$JOBQ" work "$@" </dev/null \
    >"$D/$name.out" 2>"$W_LOG" &
  W_PID=$!
  W_PIDS+=("$W_PID")
  W_ENV=()
}

# start_foreman URL ARGS...: `jobq work ARGS` on the database URL in the
# background, once it has said it started ($W_PID, $W_LOG).
start_foreman() {
  work_env JOBQ_DB="$1"
  shift
  start_work fm "$@"
  wait_until 10 'grep -q "started:" "$W_LOG"' || fail "the foreman did not start: $(cat "$W_LOG")"
}

# claims_made LOG: the claims that a stopped foreman's last line counts.
claims_made() {
  grep -o '[0-9]* claims, [0-9]* empty' "$1" | sed -E 's/ claims.*//'
}

# claims_empty LOG: of those, the claims that found nothing.
claims_empty() {
  grep -o '[0-9]* claims, [0-9]* empty' "$1" | sed -E 's/.*, ([0-9]*) empty/\1/'
}

# alive PID: the process exists and is not a zombie.
alive() {
  local state
  state=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}

# wait_until SECONDS 'CONDITION': evaluates CONDITION every 50 ms until it
# holds (0) or SECONDS pass (1).
wait_until() {
  local end=$((SECONDS + $1))
  while ((SECONDS <= end)); do
    eval "$2" && return 0
    sleep 0.05
  done
  return 1
}

# wait_exit PID SECONDS: waits for a background foreman to exit and sets
# $W_RC to its status; 1 (after SIGKILL) when it did not in time.
wait_exit() {
  if ! wait_until "$2" "! alive $1"; then
    kill -9 "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    W_RC=killed
    return 1
  fi
  wait "$1"
  W_RC=$?
  return 0
}

# expect_gone PID WHAT: the process is gone, or goes within 2 seconds.
expect_gone() {
  [[ -n $1 ]] || { fail "no pid recorded for $2"; return; }
  wait_until 2 "! alive $1" || fail "$2 (pid $1) is still running"
}

# expect_counts STATE=N...: jobq stats adds up to these over the queues.
expect_counts() {
  local pair
  run stats --json
  for pair in "$@"; do
    local got
    got=$(json_sum "${pair%%=*}")
    [[ $got == "${pair#*=}" ]] || fail "${pair%%=*}: $got, expected ${pair#*=} ($(cat "$T_OUT"))"
  done
}

# expect_job ID STATE ERROR: the job's state, and its last error contains
# ERROR (when not empty).
expect_job() {
  run show "$1" --json
  grep -qF "\"state\":\"$2\"" "$T_OUT" || fail "job $1: not $2: $(head -c 400 "$T_OUT")"
  if [[ -n $3 ]]; then
    grep -qF -- "$3" "$T_OUT" || fail "job $1: last error lacks '$3': $(head -c 400 "$T_OUT")"
  fi
}

expect_no_sessions() {
  run sessions --json
  grep -qF '"sessions":[]' "$T_OUT" || fail "sessions are left: $(cat "$T_OUT")"
}

# json_ms FIELD < JSON: the time value of FIELD in Unix ms.
json_ms() {
  local t
  t=$(grep -o "\"$1\": *\"[^\"]*\"" | head -1 | cut -d'"' -f4)
  [[ -n $t ]] && date -d "$t" +%s%3N
}

# cpu_ticks PID: user + system CPU time of the process, in clock ticks.
cpu_ticks() {
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# conn_worker: $D/w.sh, a persistent worker that appends each job's id to
# $D/ran and answers done.
conn_worker() {
  cat >"$D/w.sh" <<EOF
#!/usr/bin/env bash
echo ready
while read -r _ id _; do echo "\$id" >>"$D/ran"; echo "done \$id -"; done
EOF
  chmod +x "$D/w.sh"
  : >"$D/ran"
}

# put_many URL QUEUE N: N jobs on QUEUE of the database URL, in one put.
put_many() {
  seq 1 "$3" | sed "s/.*/{\"queue\":\"$2\",\"payload\":\"x\"}/" >"$D/jobs.ndjson"
  T_DBURL=$1 T_STDIN=$D/jobs.ndjson run put --ndjson -
  expect_rc 0
}

# drain_once URL N CONNS: N jobs worked by a foreman with --connections
# CONNS until the queue is empty: each ran exactly once.
drain_once() {
  local url=$1 n=$2 conns=$3 ran uniq
  conn_worker
  put_many "$url" c "$n"
  work_env JOBQ_DB="$url"
  run_work 120 --until-empty -q c --connections "$conns" --persistent -c 4 -- "$D/w.sh"
  expect_rc 0
  ran=$(wc -l <"$D/ran")
  uniq=$(sort -u "$D/ran" | wc -l)
  [[ $ran == "$n" && $uniq == "$n" ]] ||
    fail "--connections $conns: $ran runs of $uniq jobs, expected $n of $n: $(tail -3 "$W_LOG")"
  T_DBURL=$url run stats --json
  [[ $(json_sum done) -ge $n ]] || fail "--connections $conns: $(json_sum done) done, expected $n"
}

# idle_owner URL: two foremen on a queue of 2 parts at URL, one holding
# each; 30 jobs of one key put one at a time (each its own commit and
# wake-up) all land in the second one's part.  The first, whose part
# stays empty, must not claim for each of them: it looks at its own
# parts first (jobq_session_next_due).  Fails the case otherwise.
idle_owner() {
  local url=$1 i
  T_DBURL=$url
  run parts halves 2
  expect_rc 0
  work_env JOBQ_DB="$url"
  start_work idle -q halves --name idle -c 1 -- true
  local idle=$W_PID idle_log=$W_LOG
  work_env JOBQ_DB="$url"
  start_work busy -q halves --name busy -c 1 -- true
  local busy=$W_PID
  wait_until 15 'run --json sessions; python3 -c "import json,sys
s = [x for x in json.load(open(sys.argv[1]))[\"sessions\"] if not x[\"expired\"]]
sys.exit(0 if sorted(len(x[\"parts\"].get(\"halves\", [])) for x in s) == [1, 1] else 1)" "$T_OUT"' ||
    fail "the two foremen did not hold a part each: $(cat "$T_OUT")"
  # A key in the busy one's part: FNV-1a (32 bits) of the key, modulo 2.
  local key
  key=$(python3 -c 'import json,sys
part = [x for x in json.load(open(sys.argv[1]))["sessions"] if x["name"] == "busy"][0]["parts"]["halves"][0]
def fnv(s):
    h = 2166136261
    for b in s.encode():
        h = ((h ^ b) * 16777619) & 0xffffffff
    return h
print(next(k for k in ("k%d" % i for i in range(100)) if fnv(k) % 2 == part))' "$T_OUT")
  for i in $(seq 1 30); do
    run put -q halves --key "$key" "$i"
    expect_rc 0
  done
  wait_until 30 'run stats --json; [[ $(json_sum done) == 30 ]]' ||
    fail "the 30 jobs were not done: $(cat "$T_OUT")"
  kill -TERM "$idle" "$busy"
  wait_exit "$idle" 10 || fail "the idle foreman did not stop"
  wait_exit "$busy" 10 || fail "the busy foreman did not stop"
  local claims
  claims=$(claims_made "$idle_log")
  [[ -n $claims ]] || fail "no claims counted: $(tail -1 "$idle_log")"
  # Its first claim and a poll or two; a claim a wake-up would be up to
  # 30 more.
  ((${claims:-99} <= 5)) || fail "the foreman of the empty part made $claims claims for 30 jobs of the other's"
}
