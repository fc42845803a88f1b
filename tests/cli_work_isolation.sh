#!/usr/bin/env bash
# cli_work_isolation.sh - what a job of `jobq work` can reach besides its
# own payload: not the database password, in whatever form the foreman's
# environment holds it (the URL's, decoded, percent-encoded otherwise,
# PGPASSWORD; against a real PostgreSQL server with a password of
# reserved characters); not the foreman's environment through
# /proc/PPID/environ (a foreman of the same user is non-dumpable); not
# the password through the foreman's arguments (/proc/PPID/cmdline, `ps`);
# --db-file, $JOBQ_DB_FILE and the systemd credential instead of a URL on
# the command line; --user, jobs run as another user by a root foreman;
# and cgroups: a job that daemonizes (setsid and a double fork) is killed
# with it at its timeout, at the end of its run, at a stop and when its
# foreman is killed; jobs and persistent workers start in their cgroups,
# no process is moved there (the kernel's tracing counts the moves);
# under a seccomp filter that refuses clone3 the foreman says so once and
# moves each job's process instead, which still stops its daemons; the
# exec helper moves a job itself where its start is refused, or where
# its cgroup was killed once (the kernel kills a process started there);
# and through the exec helper that starts them there a job gets each signal
# of its foreman's once and one sent to the helper's pid, and ends with
# its own signal or exit status (126 and 127 when it cannot be run).  The
# cases that need root, a writable cgroup v2 hierarchy, the kernel's
# tracing or Python say so when they skip.
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/worktest.sh"

NOBODY=65534

# as_nobody CMD...: CMD as the user nobody (the tests run as root).
as_nobody() {
  setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups -- "$@"
}

# can_switch_users: root with setpriv, or a reason to skip in $WHY.
can_switch_users() {
  if [[ $(id -u) != 0 ]]; then WHY="the tests do not run as root"; return 1; fi
  if ! command -v setpriv >/dev/null; then WHY="setpriv (util-linux) is not installed"; return 1; fi
  return 0
}

# nobody_dir: makes $D reachable and writable by nobody, with the jobq
# binaries copied in ($NB_JOBQ), since the build folder may not be.
nobody_dir() {
  chmod 711 "$T_ROOT"
  chmod 777 "$D"
  mkdir "$D/bin"
  cp "$JOBQ" "$(dirname "$JOBQ")/jobq-exec" "$D/bin/"
  chmod 755 "$D/bin" "$D/bin/jobq" "$D/bin/jobq-exec"
  NB_JOBQ=$D/bin/jobq
}

# The job: what it can learn of its foreman's secrets, in $DIR/peek.
# The foreman is its parent, or its grandparent where the exec helper
# started it in its cgroup and waits for it.
PEEK='exec >"$DIR/peek"
env | sed "s/^/ENV /"
fm=$PPID
[ "$(cat /proc/$fm/comm)" = jobq-exec ] && fm=$(sed -n "s/^PPid:\t//p" /proc/$fm/status)
if cat /proc/$fm/environ >/dev/null 2>&1; then
  echo "ENVIRON READABLE"; tr "\0" "\n" </proc/$fm/environ
else
  echo "ENVIRON DENIED"
fi
echo "CMDLINE $(tr "\0" " " </proc/$fm/cmdline)"
echo "ID $(id -u) $(id -G) HOME=$HOME USER=$USER"'

# expect_peek TEXT: the job saw TEXT; expect_no_peek TEXT [FILE]: it did
# not (in FILE, a part of what it saw).
expect_peek() {
  grep -qaF -- "$1" "$D/peek" 2>/dev/null || fail "the job did not see '$1': $(head -c 300 "$D/peek" 2>/dev/null)"
}
expect_no_peek() {
  local file=${2:-$D/peek}
  if grep -qaF -- "$1" "$file" 2>/dev/null; then
    fail "the job saw '$1': $(grep -aF -- "$1" "$file" | head -c 300)"
  fi
}

t_foreman_environ_is_not_the_jobs() {
  can_switch_users || { skip "$WHY"; return; }
  nobody_dir
  (cd "$D" && as_nobody env JOBQ_DB="sqlite:$DB" "$NB_JOBQ" put hello) >/dev/null || fail "put as nobody"
  # The foreman and its job run as the same user: the job could read the
  # foreman's environment if the foreman were dumpable.
  as_nobody env JOBQ_DB="sqlite:$DB" DIR="$D" PGPASSWORD=hunter2secret \
    "$NB_JOBQ" work --until-empty -- sh -c "$PEEK" </dev/null >"$D/out" 2>"$D/log"
  local st=$?
  [[ $st == 0 ]] || fail "the foreman exited with $st: $(cat "$D/log")"
  expect_peek "ID $NOBODY"
  expect_peek "ENVIRON DENIED"
  expect_no_peek hunter2secret
}

t_password_is_not_in_the_foremans_arguments() {
  # A database that does not answer: the foreman keeps trying, and meanwhile
  # anyone can read its arguments.
  local url='postgres://app:hunter2secret@127.0.0.1:1/db'
  "$JOBQ" --db "$url" work --poll 1s -- true 2>"$D/log" &
  local pid=$!
  W_PIDS+=("$pid")
  wait_until 5 "grep -q 'trying again' '$D/log'" || fail "the foreman did not start: $(cat "$D/log")"
  tr '\0' ' ' <"/proc/$pid/cmdline" >"$D/cmdline"
  grep -q hunter2secret "$D/cmdline" && fail "ps shows the password: $(cat "$D/cmdline")"
  grep -qF 'postgres://app:***@127.0.0.1:1/db' "$D/cmdline" || fail "the URL is not shown redacted: $(cat "$D/cmdline")"
  grep -q hunter2secret "$D/log" && fail "the log shows the password"
  kill -TERM "$pid"
  wait_exit "$pid" 10 || fail "the foreman did not stop"
}

t_db_file_and_credential() {
  echo "sqlite:$D/from-file.db" >"$D/url"
  run --db-file "$D/url" put one
  expect_rc 0
  [[ -e $D/from-file.db ]] || fail "--db-file did not name the database"
  # Without $JOBQ_DB, which comes first.
  (cd "$D" && env -u JOBQ_DB JOBQ_DB_FILE="$D/url" "$JOBQ" put two) >/dev/null ||
    fail "\$JOBQ_DB_FILE was not used"
  mkdir "$D/creds"
  printf 'sqlite:%s/from-file.db\n\n' "$D" >"$D/creds/jobq-db"
  (cd "$D" && env -u JOBQ_DB CREDENTIALS_DIRECTORY="$D/creds" "$JOBQ" stats --json) \
    >"$D/stats" 2>&1 || fail "the credential was not used: $(cat "$D/stats")"
  grep -q '"ready":2' "$D/stats" || fail "the credential named another database: $(cat "$D/stats")"
  (cd "$D" && env -u JOBQ_DB CREDENTIALS_DIRECTORY="$D/creds" timeout 30 "$JOBQ" work \
    --until-empty -- cat) </dev/null >/dev/null 2>"$D/log" || fail "the foreman failed: $(cat "$D/log")"
  run --db-file "$D/url" stats --json
  expect_out_has '"done":2'
  # Bad files, and two names at once: usage errors, nothing opened.
  cd "$D" || return
  run --db-file missing stats
  expect_rc 2
  expect_err_has "cannot read --db-file 'missing': no such file or directory"
  expect_err_style
  : >"$D/empty"
  run --db-file empty stats
  expect_rc 2
  expect_err_has "invalid --db-file 'empty': expected a database URL on its first line"
  env -u JOBQ_DB JOBQ_DB_FILE=missing "$JOBQ" stats 2>"$D/err" >/dev/null
  [[ $? == 2 ]] || fail "a missing \$JOBQ_DB_FILE is not a usage error"
  grep -qF "cannot read \$JOBQ_DB_FILE 'missing': no such file or directory" "$D/err" ||
    fail "message: $(cat "$D/err")"
  run --db "sqlite:$DB" --db-file url stats
  expect_rc 2
  expect_err_has "--db and --db-file both name the database: expected one of them"
  cd - >/dev/null || return
}

t_jobs_run_as_another_user() {
  can_switch_users || { skip "$WHY"; return; }
  run put hello
  chmod 711 "$T_ROOT"
  chmod 777 "$D"
  work_env DIR="$D" PGPASSWORD=hunter2secret
  run_work 30 --user nobody --until-empty -- sh -c "$PEEK"
  expect_rc 0
  expect_counts done=1
  expect_peek "ID $NOBODY $NOBODY HOME=/nonexistent USER=nobody"
  expect_peek "ENVIRON DENIED"
  expect_no_peek hunter2secret
  # Bad users, and a foreman that is not root.
  run work --user no-such-user-jq -- true
  expect_rc 2
  expect_err_has "invalid --user 'no-such-user-jq': no such user: expected a user name or id"
  nobody_dir
  as_nobody "$NB_JOBQ" --db "sqlite:$D/nb.db" work --user root -- true 2>"$D/err" </dev/null
  [[ $? == 2 ]] || fail "a foreman not run as root took --user"
  grep -q "only a foreman run as root can run jobs as another user" "$D/err" || fail "message: $(cat "$D/err")"
}

# As a user met it: a password of reserved characters,
# percent-encoded in the URL, and the same password decoded (or encoded
# another way) in other variables of the foreman's environment.
t_password_in_every_form_is_scrubbed() {
  local pg=${JOBQ_TEST_PG_URL:-}
  [[ -n $pg ]] || { skip "JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)"; return; }
  local pw port role schema
  pw=$(sed -E 's|^postgres://[^:]+:([^@]+)@.*|\1|' <<<"$pg")
  port=$(sed -E 's|.*@127\.0\.0\.1:([0-9]+)/.*|\1|' <<<"$pg")
  role=jqpl_pw_$$_$RANDOM
  schema=jqpl_s_$$_$RANDOM
  psql_as_owner() {
    PGPASSWORD=$pw psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U jobq -d jobq -At "$@"
  }
  psql_as_owner -c "CREATE ROLE $role LOGIN SUPERUSER PASSWORD 'p@ss/w:rd'" ||
    { fail "cannot create a role"; return; }
  local url="postgres://$role:p%40ss%2Fw%3Ard@127.0.0.1:$port/jobq?schema=$schema"
  T_DBURL=$url run init
  expect_rc 0
  T_DBURL=$url run put hello
  expect_rc 0
  env JOBQ_DB="$url" DIR="$D" APP_PW='p@ss/w:rd' \
    APP_URL="postgres://other:p%40ss%2fw%3ard@elsewhere/db" \
    APP_CONN="host=db password='p@ss/w:rd'" KEEP_ME=kept \
    timeout 30 "$JOBQ" work --until-empty -- sh -c "$PEEK" </dev/null >"$D/out" 2>"$D/log"
  [[ $? == 0 ]] || fail "the foreman failed: $(cat "$D/log")"
  expect_peek "ENV KEEP_ME=kept"
  # Its environment, that is: the foreman runs as root here, and root may
  # read any process's /proc/PID/environ (--user is the answer to that).
  grep -a '^ENV ' "$D/peek" >"$D/env"
  local bad
  for bad in 'p@ss/w:rd' 'p%40ss' 'p%40ss%2fw' APP_PW APP_URL APP_CONN; do
    expect_no_peek "$bad" "$D/env"
  done
  grep -qF 'p@ss/w:rd' "$D/log" && fail "the log shows the password"
  psql_as_owner -c "DROP SCHEMA IF EXISTS $schema CASCADE" -c "DROP ROLE $role" >/dev/null 2>&1
}

# ---------------------------------------------------------------- cgroups

# The cgroup v2 folder of this shell, or nothing.
own_cgroup_dir() {
  local path mount
  path=$(sed -n 's/^0:://p' /proc/self/cgroup)
  mount=$(awk '$(NF - 2) == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
  [[ -n $path && -n $mount ]] && echo "$mount${path%/}"
}

# cgroup_parent: a cgroup of the test's own (jqsp-...) for its foremen, in
# $CG; 1 with the reason in $WHY when there is no writable cgroup v2.
cgroup_parent() {
  local own
  own=$(own_cgroup_dir)
  if [[ -z $own ]]; then WHY="no cgroup v2 hierarchy here ($(grep cgroup /proc/self/mountinfo | awk '{ print $5 }' | tr '\n' ' '))"; return 1; fi
  CG=$own/jqsp-$$-$RANDOM
  if ! mkdir "$CG" 2>/dev/null; then WHY="the cgroup $own is not writable here"; return 1; fi
  CG_DIRS+=("$CG")
  return 0
}
CG_DIRS=()

# remove_cgroup DIR: removes the test's cgroup once the processes in it
# (a killed foreman's guard may still be at work) are gone.
remove_cgroup() {
  local i
  for i in $(seq 1 100); do
    grep -q "populated 1" "$1/cgroup.events" 2>/dev/null || break
    sleep 0.05
  done
  find "$1" -depth -type d -exec rmdir {} + 2>/dev/null
}
trap 'for p in "${W_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
      trace_end
      for c in "${CG_DIRS[@]}"; do remove_cgroup "$c"; done
      [[ -z ${JOBQ_TEST_KEEP:-} ]] && rm -rf "$T_ROOT"' EXIT

# in_cgroup NAME ARGS...: `jobq work ARGS` started in the cgroup $CG, in
# the background ($W_PID, $W_LOG as start_work sets them); through the
# command of $WRAP when it is set.
WRAP=()
in_cgroup() {
  local name=$1
  shift
  W_LOG=$D/$name.log
  env JOBQ_DB="sqlite:$DB" DIR="$D" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" \
    "${WRAP[@]}" "$JOBQ" work "$@" </dev/null >"$D/$name.out" 2>"$W_LOG" &
  W_PID=$!
  W_PIDS+=("$W_PID")
}

# A job that leaves a daemon behind (setsid and a double fork), records
# its pid, and hangs.
DAEMONIZE='setsid sh -c "sleep 60 </dev/null >/dev/null 2>&1 & echo \$! >>\"$DIR/daemons\""
echo $$ >>"$DIR/jobs"; exec sleep 60'

# expect_daemons_gone WHAT: every recorded daemon is gone.
expect_daemons_gone() {
  local pid n=0
  for pid in $(cat "$D/daemons" 2>/dev/null); do
    n=$((n + 1))
    wait_until 3 "! alive $pid" || fail "the daemon of a job ($pid) outlived $1"
  done
  ((n > 0)) || fail "no job left a daemon ($1)"
  : >"$D/daemons"
}

t_daemonizing_job_is_stopped_with_its_job() {
  cgroup_parent || { skip "$WHY"; return; }
  run put --max-attempts 1 --timeout 1s hangs
  in_cgroup timeout --until-empty --poll 100ms --kill-after 300ms -- sh -c "$DAEMONIZE"
  wait_exit "$W_PID" 30 || fail "the foreman did not finish"
  grep -q "without a cgroup" "$W_LOG" && fail "jobs ran without cgroups: $(cat "$W_LOG")"
  expect_job 1 dead "timed out after 1s"
  expect_daemons_gone "its job's timeout"
  # The end of a run: the job's first process exits, its daemon goes.
  run put --max-attempts 1 quick
  in_cgroup end --until-empty --poll 100ms -- sh -c "${DAEMONIZE%exec sleep 60}exit 0"
  wait_exit "$W_PID" 30 || fail "the foreman did not finish"
  expect_job 2 done ""
  expect_daemons_gone "the end of its job"
  # A stop once the grace is over, and a foreman killed with SIGKILL.
  run put --max-attempts 1 stopped
  in_cgroup stop --grace 200ms --kill-after 200ms -- sh -c "$DAEMONIZE"
  wait_until 10 "[[ -s '$D/daemons' ]]" || fail "the job did not start"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  expect_daemons_gone "a stop"
  in_cgroup killed -- sh -c "$DAEMONIZE"
  wait_until 10 "[[ -s '$D/daemons' ]]" || fail "the job did not start"
  kill -9 "$W_PID"
  expect_daemons_gone "its foreman killed with SIGKILL"
  # Nothing is left behind: the guard removed the killed foreman's cgroups.
  wait_until 3 "[[ -z \$(ls -d '$CG'/jobq-* 2>/dev/null) ]]" ||
    fail "cgroups were left behind: $(ls -d "$CG"/jobq-* 2>/dev/null)"
  # A job's cgroup is its own, and with --no-cgroups the foreman's.
  run put where
  in_cgroup where --until-empty -- sh -c 'sed -n "s/^0:://p" /proc/self/cgroup >"$DIR/where"'
  wait_exit "$W_PID" 30 || fail "the foreman did not finish"
  [[ $(cat "$D/where") == "${CG#"$(own_cgroup_dir)"}"/jobq-*/[0-9]* ]] ||
    fail "the job ran in $(cat "$D/where"), not a cgroup of its own below ${CG#"$(own_cgroup_dir)"}"
  run put where
  in_cgroup nocg --no-cgroups --until-empty -- sh -c 'sed -n "s/^0:://p" /proc/self/cgroup >"$DIR/where"'
  wait_exit "$W_PID" 30 || fail "the foreman did not finish"
  [[ $(cat "$D/where") == "${CG#"$(own_cgroup_dir)"}" ]] ||
    fail "with --no-cgroups the job ran in $(cat "$D/where")"
}

t_persistent_worker_daemons_go_with_it() {
  cgroup_parent || { skip "$WHY"; return; }
  run put --max-attempts 1 sleep:5000
  cat >"$D/worker.sh" <<'EOF'
#!/bin/sh
setsid sh -c 'sleep 60 </dev/null >/dev/null 2>&1 & echo $! >>"$DIR/daemons"'
echo ready
while read -r verb id rest; do sleep 5; echo "done $id -"; done
EOF
  chmod +x "$D/worker.sh"
  in_cgroup worker --persistent -c 1 --timeout 500ms --kill-after 200ms -- "$D/worker.sh"
  wait_until 10 "JOBQ_DB=sqlite:$DB $JOBQ show 1 --json | grep -q '\"state\":\"dead\"'" ||
    fail "the job did not time out"
  local first
  first=$(head -1 "$D/daemons")
  wait_until 3 "! alive $first" || fail "the daemon of a worker ($first) outlived its job's timeout"
  # The worker started in its place left one too: it goes at the stop.
  wait_until 10 "[[ \$(wc -l <'$D/daemons') -ge 2 ]]" || fail "no new worker started"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  expect_daemons_gone "a stop"
}

# ---------------------------------------------------------------- starting in the cgroup

# trace_moves: from now on, the kernel's tracing (the tracepoint
# cgroup_attach_task, in a tracing instance of the test's own) records
# every process moved into a cgroup below $CG/jobq-*; trace_moved prints
# how many were.  1 with the reason in $WHY when there is no tracing.
# Where tracefs is not mounted, it is mounted in a mount namespace of its
# own, which a sleeping process keeps and /proc/PID/root reaches.
TRACE=
TRACE_PID=
trace_moves() {
  local tr=/sys/kernel/tracing
  if [[ ! -d $tr/events/cgroup ]]; then
    grep -qw tracefs /proc/filesystems || { WHY="the kernel has no tracefs"; return 1; }
    command -v unshare >/dev/null || { WHY="unshare (util-linux) is not installed"; return 1; }
    mkdir -p "$D/tracefs"
    unshare -m --propagation private sh -c 'mount -t tracefs nodev "$1" && echo up && exec sleep 600' \
      sh "$D/tracefs" >"$D/tracefs.up" 2>"$D/tracefs.err" &
    TRACE_PID=$!
    wait_until 5 "[[ -s '$D/tracefs.up' ]]" ||
      { WHY="cannot mount tracefs: $(cat "$D/tracefs.err")"; return 1; }
    tr=/proc/$TRACE_PID/root$D/tracefs
  fi
  [[ -d $tr/events/cgroup/cgroup_attach_task ]] ||
    { WHY="the kernel has no tracepoint cgroup_attach_task"; return 1; }
  TRACE=$tr/instances/jqsp-$$-$RANDOM
  if ! mkdir "$TRACE" 2>"$D/trace.err"; then
    WHY="cannot make a tracing instance: $(cat "$D/trace.err")"
    TRACE=
    return 1
  fi
  echo 64 >"$TRACE/buffer_size_kb"
  echo "dst_path ~ \"*/${CG##*/}/jobq-*\"" >"$TRACE/events/cgroup/cgroup_attach_task/filter" &&
    echo 1 >"$TRACE/events/cgroup/cgroup_attach_task/enable" ||
    { WHY="cannot enable the tracepoint cgroup_attach_task"; return 1; }
}
trace_moved() { grep -c 'cgroup_attach_task:' "$TRACE/trace"; }
trace_end() {
  if [[ -n $TRACE ]]; then
    echo 0 >"$TRACE/events/cgroup/cgroup_attach_task/enable"
    rmdir "$TRACE"
    TRACE=
  fi
  if [[ -n $TRACE_PID ]]; then
    kill "$TRACE_PID" 2>/dev/null
    wait "$TRACE_PID" 2>/dev/null
    TRACE_PID=
  fi
}

# expect_own_cgroups FILE N: FILE has N lines, each a cgroup of its own
# below $CG (as /proc/self/cgroup names them).
expect_own_cgroups() {
  local below=${CG#"$(own_cgroup_dir)"} line
  [[ $(wc -l <"$1") == "$2" ]] || fail "$(wc -l <"$1") of $2 processes said where they ran"
  while read -r line; do
    [[ $line == "$below"/jobq-*/[0-9]* ]] || fail "a job ran in $line, not a cgroup of its own below $below"
  done <"$1"
  [[ $(sort -u "$1" | wc -l) == "$2" ]] || fail "two ran in one cgroup: $(tr '\n' ' ' <"$1")"
}

t_jobs_start_in_their_cgroups() {
  cgroup_parent || { skip "$WHY"; return; }
  trace_moves || { skip "$WHY"; return; }
  run put one
  run put two
  run put three
  # Each job says at once where it runs: in its cgroup from its start.
  in_cgroup fork -c 1 --until-empty --poll 100ms -- \
    sh -c 'sed -n "s/^0:://p" /proc/self/cgroup >>"$DIR/where"'
  wait_exit "$W_PID" 30 || fail "the foreman did not finish"
  expect_counts done=3
  grep -qE "without a cgroup|cannot start in their cgroups" "$W_LOG" && fail "log: $(cat "$W_LOG")"
  # The cgroup of a job that ended alone is the next one's.
  [[ $(wc -l <"$D/where") == 3 ]] || fail "$(wc -l <"$D/where") of 3 jobs said where they ran"
  sort -u "$D/where" >"$D/where.once"
  expect_own_cgroups "$D/where.once" 1
  rm "$D/where"
  cat >"$D/worker.sh" <<'EOF'
#!/bin/sh
sed -n "s/^0:://p" /proc/self/cgroup >>"$DIR/where"
echo ready
while read -r verb id rest; do echo "done $id -"; done
EOF
  chmod +x "$D/worker.sh"
  run put four
  in_cgroup persistent --persistent -c 2 --until-empty --poll 100ms -- "$D/worker.sh"
  wait_exit "$W_PID" 30 || fail "the foreman did not finish"
  expect_counts done=4
  expect_own_cgroups "$D/where" 2
  local moved
  moved=$(trace_moved)
  [[ $moved == 0 ]] ||
    fail "$moved processes were moved into the jobs' cgroups: $(grep -m 3 cgroup_attach_task "$TRACE/trace")"
  trace_end
}

# can_refuse_clone3: writes $D/no_clone3.py, which runs its arguments
# under a seccomp filter that fails clone3 with ENOSYS, as an older
# kernel or a container's filter does; 1 with the reason in $WHY when it
# cannot.
can_refuse_clone3() {
  command -v python3 >/dev/null || { WHY="python3 is not installed"; return 1; }
  cat >"$D/no_clone3.py" <<'EOF'
import ctypes, os, platform, struct, sys
# seccomp_data: the system call's number at 0, the architecture at 4;
# clone3 is 435 on both architectures.
ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}.get(platform.machine())
if ARCH is None:
    sys.exit("no seccomp filter here for the architecture " + platform.machine())
def op(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([
    op(0x20, 0, 0, 4),                # load the architecture
    op(0x15, 0, 3, ARCH),             # another one: allow
    op(0x20, 0, 0, 0),                # load the system call's number
    op(0x15, 0, 1, 435),              # clone3:
    op(0x06, 0, 0, 0x00050000 | 38),  # fail with ENOSYS
    op(0x06, 0, 0, 0x7FFF0000),       # allow
])
buf = ctypes.create_string_buffer(prog, len(prog))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
if (libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or
        libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0):
    sys.exit("cannot install a seccomp filter: " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])
EOF
  if ! python3 "$D/no_clone3.py" true 2>"$D/no_clone3.err"; then
    WHY=$(cat "$D/no_clone3.err")
    return 1
  fi
}

t_refused_clone3_moves_jobs_into_their_cgroups() {
  cgroup_parent || { skip "$WHY"; return; }
  can_refuse_clone3 || { skip "$WHY"; return; }
  trace_moves || { echo "# moves not counted: $WHY"; TRACE=; }
  run put --max-attempts 1 --timeout 1s hangs
  run put --max-attempts 1 where
  run put --max-attempts 1 where
  {
    echo '#!/bin/sh'
    echo 'if [ "$(cat)" = hangs ]; then'
    echo "$DAEMONIZE"
    echo 'fi'
    echo 'sed -n "s/^0:://p" /proc/self/cgroup >>"$DIR/where"'
  } >"$D/job.sh"
  chmod +x "$D/job.sh"
  WRAP=(python3 "$D/no_clone3.py")
  in_cgroup refused -c 1 --until-empty --poll 100ms --kill-after 300ms -- "$D/job.sh"
  WRAP=()
  wait_exit "$W_PID" 30 || fail "the foreman did not finish"
  local said
  said=$(grep -c "jobs cannot start in their cgroups (clone3 with CLONE_INTO_CGROUP: function not implemented): each job's process is moved into its cgroup instead" "$W_LOG")
  [[ $said == 1 ]] || fail "the foreman said $said times that jobs are moved: $(cat "$W_LOG")"
  expect_job 1 dead "timed out after 1s"
  expect_daemons_gone "its job's timeout, moved into its cgroup"
  expect_counts done=2
  [[ $(wc -l <"$D/where") == 2 ]] || fail "$(wc -l <"$D/where") of 2 jobs said where they ran"
  sort -u "$D/where" >"$D/where.once"
  expect_own_cgroups "$D/where.once" "$(wc -l <"$D/where.once")"
  if [[ -n $TRACE ]]; then
    local moved
    moved=$(trace_moved)
    ((moved == 3)) || fail "$moved processes were moved into the jobs' cgroups, expected one a job"
    trace_end
  fi
}

# helper_where ARGS...: runs the exec helper with ARGS before its PPID,
# under the command of $WRAP, with a job that prints its cgroup.
helper_where() {
  "${WRAP[@]}" sh -c 'exec "$0" "$@" "$PPID" /bin/sh sh -c "sed -n s/^0:://p /proc/self/cgroup"' \
    "$(dirname "$JOBQ")/jobq-exec" "$@"
}

t_helper_moves_the_job_where_the_start_is_refused() {
  cgroup_parent || { skip "$WHY"; return; }
  can_refuse_clone3 || { skip "$WHY"; return; }
  # Below a jobq-* directory, where trace_moves counts.
  local in=$CG/jobq-helper below
  below=${in#"$(own_cgroup_dir)"}
  mkdir "$in" "$in/started" "$in/refused" "$in/moved" "$in/killed"
  trace_moves || { echo "# moves not counted: $WHY"; TRACE=; }
  # Started there: no move.
  [[ $(helper_where -g "$in/started") == "$below/started" ]] || fail "-g: the job did not run in its cgroup"
  [[ -z $TRACE || $(trace_moved) == 0 ]] || fail "-g: the job was moved into its cgroup"
  # clone3 refused: the helper moves itself, once.
  WRAP=(python3 "$D/no_clone3.py")
  [[ $(helper_where -g "$in/refused") == "$below/refused" ]] || fail "-g, clone3 refused: the job did not run in its cgroup"
  WRAP=()
  [[ -z $TRACE || $(trace_moved) == 1 ]] || fail "-g, clone3 refused: $(trace_moved) moves, expected 1"
  # -m: moved without a try.
  [[ $(helper_where -m "$in/moved") == "$below/moved" ]] || fail "-m: the job did not run in its cgroup"
  [[ -z $TRACE || $(trace_moved) == 2 ]] || fail "-m: $(trace_moved) moves, expected 2"
  # A cgroup that was killed once, where the kernel kills a process
  # started there at its start: the helper sees it and moves the job.
  echo 1 >"$in/killed/cgroup.kill"
  [[ $(helper_where -g "$in/killed") == "$below/killed" ]] || fail "-g, a killed cgroup: the job did not run in it"
  [[ -z $TRACE || $(trace_moved) == 3 ]] || fail "-g, a killed cgroup: $(trace_moved) moves, expected 3"
  trace_end
}

t_signals_and_ends_through_the_helper() {
  cgroup_parent || { skip "$WHY"; return; }
  cat >"$D/job.sh" <<'EOF'
#!/bin/sh
case $(cat) in
  # Counts its SIGTERMs and goes on: the foreman's, once, then SIGKILL.
  counts) trap 'echo TERM >>"$DIR/terms"' TERM
          while :; do sleep 0.05; done ;;
  usr2) kill -USR2 $$ ;;
  status) exit 9 ;;
esac
EOF
  chmod +x "$D/job.sh"
  run put --max-attempts 1 --timeout 1s counts
  run put --max-attempts 1 usr2
  run put --max-attempts 1 status
  in_cgroup ends -c 1 --until-empty --poll 100ms --kill-after 500ms -- "$D/job.sh"
  wait_exit "$W_PID" 30 || fail "the foreman did not finish"
  expect_job 1 dead "timed out after 1s (killed by SIGKILL)"
  [[ $(cat "$D/terms" 2>/dev/null) == TERM ]] ||
    fail "the job got SIGTERM $(cat "$D/terms" 2>/dev/null | wc -l) times, expected once"
  expect_job 2 dead "killed by SIGUSR2"
  expect_job 3 dead "exit status 9"
  # A command that is gone, then one that may not be run, once the
  # foreman found it at its start: 127 and 126, as without a cgroup.
  in_cgroup gone --poll 100ms -- "$D/job.sh"
  wait_until 10 "grep -qs 'started:' '$W_LOG'" || fail "the foreman did not start: $(cat "$W_LOG")"
  mv "$D/job.sh" "$D/job.sh.away"
  run put --max-attempts 1 status
  wait_until 10 "JOBQ_DB=sqlite:$DB $JOBQ show 4 --json | grep -q '\"state\":\"dead\"'" ||
    fail "the job of a missing command did not end"
  expect_job 4 dead "exit status 127: jobq work: cannot run '$D/job.sh': no such file or directory"
  mv "$D/job.sh.away" "$D/job.sh"
  chmod -x "$D/job.sh"
  run put --max-attempts 1 status
  wait_until 10 "JOBQ_DB=sqlite:$DB $JOBQ show 5 --json | grep -q '\"state\":\"dead\"'" ||
    fail "the job of a command that may not run did not end"
  expect_job 5 dead "exit status 126: jobq work: cannot run '$D/job.sh': permission denied"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  # A signal sent to the pid the foreman logs for a worker (the helper's)
  # reaches the worker, once.
  cat >"$D/worker.sh" <<'EOF'
#!/bin/sh
trap 'echo USR1 >>"$DIR/usr1"' USR1
echo ready
while :; do sleep 0.05; done
EOF
  chmod +x "$D/worker.sh"
  in_cgroup worker -v --persistent -c 1 --kill-after 300ms -- "$D/worker.sh"
  wait_until 10 "grep -qs 'worker 1 (pid [0-9]*) is ready' '$W_LOG'" ||
    fail "the worker did not start: $(cat "$W_LOG")"
  local pid
  pid=$(sed -n 's/.*worker 1 (pid \([0-9]*\)) is ready.*/\1/p' "$W_LOG" | head -1)
  kill -USR1 "$pid"
  wait_until 5 "[[ -s '$D/usr1' ]]" || fail "SIGUSR1 sent to the worker's pid $pid did not reach it"
  sleep 0.2
  [[ $(cat "$D/usr1") == USR1 ]] || fail "the worker got SIGUSR1 $(wc -l <"$D/usr1") times"
  alive "$pid" || fail "the worker (pid $pid) died of SIGUSR1"
  kill -TERM "$W_PID"
  wait_exit "$W_PID" 10 || fail "the foreman did not stop"
  grep -q "worker 1 (pid $pid) ended" "$W_LOG" && fail "the worker ended before the stop: $(cat "$W_LOG")"
}

run_cases
