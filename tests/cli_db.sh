#!/usr/bin/env bash
# cli_db.sh - how the real `jobq` binary treats the database it is pointed
# at: an unknown URL scheme is a usage error (2), a directory, a missing
# folder or a file that is not a database are refused with a message naming
# the path and nothing created or changed, passwords never appear in any
# output, --db and JOBQ_DB both choose the file, and the network stores'
# client libraries are loaded only for their own URLs.  The commands that
# only read work on a file their user may not write, in a folder it may
# not write either, and never create or change a file: not a missing
# one, not another application's (which only `jobq init` is let add
# jobq's tables to), not an older jobq database (which a writer
# migrates).
. "$(dirname "${BASH_SOURCE[0]}")/clitest.sh"

t_unknown_scheme() {
  run --db foo:bar stats
  expect_rc 2
  expect_err_has "foo"
  expect_err_style
  T_DBURL=foo:bar run stats
  expect_rc 2
  expect_err_has "foo"
}

t_directory_as_path() {
  mkdir "$D/adir"
  run --db "sqlite:$D/adir" put x
  expect_rc_in 1 2
  expect_err_has "$D/adir"
  [[ -z $(ls -A "$D/adir") ]] || fail "files appeared in the directory"
}

t_missing_folder() {
  run --db "sqlite:$D/nope/q.db" put x
  expect_rc_in 1 2
  expect_err_has "nope"
  [[ -e $D/nope ]] && fail "the missing folder was created"
  return 0
}

t_not_a_database() {
  head -c 4096 /dev/urandom >"$D/junk.db"
  cp "$D/junk.db" "$D/junk.orig"
  run --db "sqlite:$D/junk.db" put x
  expect_rc_in 1 2
  expect_err_has "junk.db"
  cmp -s "$D/junk.db" "$D/junk.orig" || fail "the file was changed"
  run --db "sqlite:$D/junk.db" stats
  expect_rc_in 1 2
}

t_password_never_shown() {
  local url
  for url in 'postgres://u:secret@127.0.0.1:1/db' \
             'mysql://root:secret@127.0.0.1:1/jobs' \
             'postgres://u:secret@127.0.0.1:1,127.0.0.1:2/db' \
             'foo://u:secret@h/db' \
             'postgres://127.0.0.1:1/db?password=secret'; do
    run --db "$url" stats
    [[ $rc != 0 ]] || fail "$url: exit status 0"
    expect_quiet_about secret
    T_DBURL=$url run put x
    [[ $rc != 0 ]] || fail "$url via JOBQ_DB: exit status 0"
    expect_quiet_about secret
  done
}

# A file this user may not open is refused for good: exit status 1 (not
# a usage error, nor a temporary one), and a foreman that gives up at once.
t_file_not_allowed() {
  local as=()
  : >"$D/locked.db"
  chmod 600 "$D/locked.db"
  if [[ $(id -u) -eq 0 ]]; then
    if ! id nobody >/dev/null 2>&1; then
      skip "run as root, and there is no user 'nobody' to be refused"
      return
    fi
    as=(runuser -u nobody --)
  else
    chmod 000 "$D/locked.db"
  fi
  T_OUT=$D/out T_ERR=$D/err
  "${as[@]}" env JOBQ_DB="sqlite:$D/locked.db" "$JOBQ" stats </dev/null >"$T_OUT" 2>"$T_ERR"
  rc=$?
  expect_rc 1
  expect_err_has "locked.db"
  expect_err_has "ermission denied"
  "${as[@]}" env JOBQ_DB="sqlite:$D/locked.db" timeout 30 "$JOBQ" work --until-empty -- cat \
    </dev/null >"$T_OUT" 2>"$T_ERR"
  rc=$?
  expect_rc 1
  expect_err_has "cannot start"
}

# Each option once, and numbers in range.
t_url_options_checked() {
  local opt
  run --db "sqlite:$D/o.db?busy_timeout=1s&busy_timeout=2s" stats
  expect_rc 2
  expect_err_has "'busy_timeout' is given twice"
  for opt in busy_timeout=2d busy_timeout=99999999999999d max_size=5000GiB max_size=1KiB \
             max_payload=0; do
    run --db "sqlite:$D/o.db?$opt" stats
    expect_rc 2
    expect_err_has "${opt%%=*}"
    expect_err_style
  done
  [[ -e $D/o.db ]] && fail "a refused URL made the file"
  run --db "sqlite:$D/o.db?password=s3cr3t-word" stats
  expect_rc 2
  expect_quiet_about "s3cr3t-word"
}

t_db_option_and_env() {
  run --db "sqlite:$D/a.db" put one
  expect_rc 0
  [[ -f $D/a.db ]] || fail "--db did not choose the file"
  [[ $(stat -c %a "$D/a.db") == 600 ]] || fail "a new file is $(stat -c %a "$D/a.db"), not 600"
  T_DBURL=sqlite:$D/b.db run put two
  expect_rc 0
  [[ -f $D/b.db ]] || fail "JOBQ_DB did not choose the file"
  T_DBURL=sqlite:$D/b.db run stats --json
  [[ $(json_sum ready) == 1 ]] || fail "b.db: $(cat "$T_OUT")"
  run --db "sqlite:$D/a.db" stats --json
  [[ $(json_sum ready) == 1 ]] || fail "a.db: $(cat "$T_OUT")"
}

t_exit_codes() {
  run put ok
  expect_rc 0
  run show 999999
  expect_rc 1
  expect_err_has "999999"
  run retry 999999
  expect_rc 1
  run show notanumber
  expect_rc 2
  expect_err_has "'notanumber'"
  run stats --bogus
  expect_rc 2
  expect_err_has "--bogus"
}

# libpq and libmariadb are loaded when a URL needs them: the SQLite store
# runs without them, and a postgres or mysql URL that finds a broken one
# says which library, and why, without trying to connect.
t_client_library_loaded_on_demand() {
  : >"$D/libpq.so.5"
  : >"$D/libmariadb.so.3"
  run_env LD_LIBRARY_PATH="$D" -- put x
  expect_rc 0
  run_env LD_LIBRARY_PATH="$D" -- --db postgres://127.0.0.1:1/x stats
  expect_rc 1
  expect_err_has "cannot load libpq.so.5"
  expect_err_has "file too short"
  expect_err_style
  run_env LD_LIBRARY_PATH="$D" -- --db mysql://127.0.0.1:1/x stats
  expect_rc 1
  expect_err_has "cannot load libmariadb.so.3"
  # with the real library, the same URL gets as far as connecting
  run --db postgres://127.0.0.1:1/x stats
  expect_rc_in 1 75
  expect_err_has "cannot connect"
  if ldd "$JOBQ" | grep -Eq 'libpq|libmariadb'; then
    fail "jobq is linked with a client library: $(ldd "$JOBQ" | grep -E 'libpq|libmariadb')"
  fi
}

# run_as_nobody ARGS...: as run, as the user nobody.
run_as_nobody() {
  T_OUT=$D/out.$RANDOM
  T_ERR=$D/err.$RANDOM
  T_LAST="$*"
  setpriv --reuid=nobody --regid=nogroup --clear-groups env JOBQ_DB="sqlite:$DB" \
    "$JOBQ" "$@" </dev/null >"$T_OUT" 2>"$T_ERR"
  rc=$?
}

# A jobq file that its user may read but not write, in a folder it may
# not write either: with no process on it (and so no shared memory
# file), and beside a writer at work.
t_read_only_file() {
  command -v setpriv >/dev/null || { skip "setpriv (util-linux) is missing"; return; }
  ((EUID == 0)) || { skip "needs root, to read as another user"; return; }
  run put -q ro one
  expect_rc 0
  chmod 711 "$T_ROOT"
  chmod 755 "$D"
  chmod 644 "$DB"
  local before c
  before=$(find "$D" -maxdepth 1 -name 'queue.db*' -printf '%f %s %T@\n')
  for c in stats ls "show 1" sessions epoch doctor; do
    run_as_nobody $c
    expect_rc 0
  done
  run_as_nobody show 1 --json
  expect_out_has '"queue":"ro"'
  run_as_nobody doctor
  expect_out_has "WAL journal"
  [[ $(find "$D" -maxdepth 1 -name 'queue.db*' -printf '%f %s %T@\n') == "$before" ]] ||
    fail "the file changed, or files were added: $(ls -la "$D")"
  # A write says why it cannot.
  run_as_nobody put x
  expect_rc 1
  expect_err_has "read-only to this process"
  # Beside a writer at work, whose shared memory file is there.
  JOBQ_DB="sqlite:$DB" "$JOBQ" work -q elsewhere -- true </dev/null >/dev/null 2>&1 &
  local fm=$!
  local n=0
  while [[ ! -e $DB-shm ]] && ((n++ < 100)); do sleep 0.05; done
  [[ -e $DB-shm ]] || fail "the foreman made no shared memory file"
  run_as_nobody stats --json
  expect_rc 0
  [[ $(json_sum ready) == 1 ]] || fail "not 1 ready job: $(cat "$T_OUT")"
  kill -TERM "$fm"
  wait "$fm"
}

# Another application's file: the commands that read refuse it, so do
# the ones that write, and nothing is written, its journal mode included,
# until jobq init is asked.
t_another_applications_file() {
  sqlite3 "$DB" "CREATE TABLE invoices(id INTEGER PRIMARY KEY, total INTEGER);
                 INSERT INTO invoices(total) VALUES (42)"
  cp "$DB" "$D/orig.db"
  local c
  for c in stats ls "show 1" sessions epoch doctor "put x"; do
    run $c
    expect_rc 2
    expect_err_has "is not a jobq database"
    expect_err_has "jobq init"
    expect_err_style
  done
  cmp -s "$DB" "$D/orig.db" || fail "the file was changed"
  [[ $(sqlite3 "$DB" "PRAGMA journal_mode") == delete ]] || fail "the journal mode was changed"
  run init
  expect_rc 0
  run put x
  expect_rc 0
  [[ $(sqlite3 "$DB" "SELECT total FROM invoices") == 42 ]] || fail "the application's table changed"
}

# A missing file is made by the first writer, never by a reader.
t_missing_file_read() {
  local c
  for c in stats ls "show 1" sessions epoch doctor; do
    run $c
    expect_rc 2
    expect_err_has "there is no jobq database at '$DB'"
  done
  [[ -e $DB ]] && fail "a command that reads made the file"
  : >"$DB"
  run stats
  expect_rc 2
  expect_err_has "no jobq schema"
  [[ -s $DB ]] && fail "a command that reads wrote to an empty file"
  run put x
  expect_rc 0
  run stats
  expect_rc 0
}

# Two first puts into a file that does not exist yet, the second one's
# tables committed while the first is between reading what the file
# holds and reading its version (failpoint schema.read): the first finds
# jobq's tables made, and takes them for no other application's.
t_first_puts_at_once() {
  JOBQ_DB=sqlite:$DB JOBQ_FAILPOINT=schema.read=sleep:1500 "$JOBQ" put -q r first \
    >"$D/first.out" 2>"$D/first.err" &
  local first=$!
  sleep 0.5
  run put -q r second
  expect_rc 0
  wait "$first" || fail "the first put failed: $(cat "$D/first.err")"
  [[ $(sqlite3 "$DB" "SELECT count(*) FROM jobq_jobs") == 2 ]] || fail "not both jobs are in the file"
}

# An older jobq file: a reader asks for jobq init, a writer migrates it.
t_older_file() {
  run put x
  expect_rc 0
  # An archived job with the highest id: the migration that makes the
  # hot table again keeps its sequence, and no id comes twice.
  run put z
  run cancel 2
  expect_rc 0
  local current
  current=$(sqlite3 "$DB" "SELECT version FROM jobq_meta")
  # Back to version 1: without what versions 2 to 10 added (the counters
  # as they were then, with a count to keep).
  sqlite3 "$DB" "DROP TABLE jobq_parts; DROP TABLE jobq_claimers; DROP INDEX jobq_jobs_part;
                 ALTER TABLE jobq_jobs DROP COLUMN part; ALTER TABLE jobq_queues DROP COLUMN parts;
                 DROP TABLE jobq_after; ALTER TABLE jobq_jobs DROP COLUMN parents_left;
                 ALTER TABLE jobq_jobs DROP COLUMN children;
                 DROP TABLE jobq_tally; DROP TABLE jobq_attempts; DROP TABLE jobq_cron;
                 DROP TABLE jobq_key_starts; ALTER TABLE jobq_queues DROP COLUMN key_rate_n;
                 ALTER TABLE jobq_queues DROP COLUMN key_rate_ms;
                 DROP TABLE jobq_starts; ALTER TABLE jobq_queues DROP COLUMN max_running;
                 ALTER TABLE jobq_queues DROP COLUMN max_per_key;
                 ALTER TABLE jobq_queues DROP COLUMN rate_n;
                 ALTER TABLE jobq_queues DROP COLUMN rate_ms;
                 ALTER TABLE jobq_meta DROP COLUMN guard_at;
                 ALTER TABLE jobq_meta DROP COLUMN pruned_before;
                 DROP TABLE jobq_counts;
                 CREATE TABLE jobq_counts (queue TEXT NOT NULL, shard INTEGER NOT NULL,
                   n_done INTEGER NOT NULL DEFAULT 0, n_dead INTEGER NOT NULL DEFAULT 0,
                   n_cancelled INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (queue, shard));
                 INSERT INTO jobq_counts VALUES ('default', 3, 7, 0, 0);
                 UPDATE jobq_meta SET version = 1"
  run stats
  expect_rc 2
  expect_err_has "jobq init"
  run put y
  expect_rc 0
  [[ $(cat "$T_OUT") == 3 ]] || fail "the job put after the migration got id $(cat "$T_OUT"), expected 3"
  [[ $(sqlite3 "$DB" "SELECT version FROM jobq_meta") == "$current" ]] || fail "not migrated"
  run stats --json
  expect_out_has '"done":7'
  run put --after 1 w
  expect_rc 0
  run stats --json
  expect_out_has '"pending":1'
}

run_cases
