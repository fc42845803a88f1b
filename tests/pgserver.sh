#!/usr/bin/env bash
# pgserver.sh - a throwaway PostgreSQL server for the tests and benchmarks:
# a fresh cluster in a temporary folder, listening on a free port on
# 127.0.0.1 only, with the durable defaults (fsync on, synchronous_commit
# on), run as an unprivileged user when we are root.
#
#   tests/pgserver.sh start DIR    creates and starts a cluster in DIR (which
#                                  must not exist) and prints its URL, like
#                                  postgres://jobq:PASSWORD@127.0.0.1:PORT/jobq
#   tests/pgserver.sh stop DIR     stops it (fast shutdown) and removes DIR
#   tests/pgserver.sh url DIR      prints the URL again
#   tests/pgserver.sh restart DIR  restarts it (fast shutdown), same port
#   tests/pgserver.sh standby PRIMARY DIR
#                                  makes a streaming standby of the server in
#                                  PRIMARY (pg_basebackup, with a replication
#                                  slot on PRIMARY) in DIR, starts it on a
#                                  free port and prints its URL
#   tests/pgserver.sh rebuild PRIMARY DIR
#                                  makes the stopped (or crashed) server in
#                                  DIR a new standby of PRIMARY, on its port
#   tests/pgserver.sh crash DIR    stops it at once (-m immediate: no
#                                  checkpoint, as if the machine died)
#   tests/pgserver.sh promote DIR  promotes the standby in DIR, and waits
#   tests/pgserver.sh psql DIR ARGS...
#                                  runs psql as the superuser on the server's
#                                  socket, database jobq (for tests: -c SQL)
#
# The server programs come from the Debian postgresql package, which keeps
# them off PATH (/usr/lib/postgresql/VERSION/bin); the newest version there
# is used.  JOBQ_PG_BIN overrides the folder.  The superuser is "jobq" with
# a random password (password authentication on TCP, so URLs carry one);
# the database is "jobq".  JOBQ_PG_LISTEN=ADDRESS/BITS at start also listens
# on ADDRESS (a test network's own, never a public interface) and accepts
# logins and replication from that network; its URL then names ADDRESS.
# JOBQ_PG_MAX_CONNECTIONS (default 200) is its max_connections.
# Exit status 77 means PostgreSQL is not installed, so that callers can
# skip with a reason.
set -euo pipefail

die() { echo "pgserver: $*" >&2; exit 1; }

bindir() {
  if [[ -n ${JOBQ_PG_BIN:-} ]]; then echo "$JOBQ_PG_BIN"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [[ -z $d || ! -x $d/initdb ]]; then
    echo "pgserver: PostgreSQL server programs not found (install the" \
         "Debian package postgresql)" >&2
    exit 77
  fi
  echo "$d"
}

# as_owner CMD...: runs CMD as the cluster's owner.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

start() {
  local dir=$1 bin port password
  bin=$(bindir)
  [[ -e $dir ]] && die "'$dir' exists: expected a new folder"
  mkdir -p "$dir"
  password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  printf '%s\n' "$password" >"$dir/password"
  if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || die "user 'postgres' is missing: install the Debian package postgresql"
    chown postgres: "$dir" "$dir/password"
    chmod 700 "$dir"
  fi
  as_owner "$bin/initdb" -D "$dir/data" -U jobq --pwfile="$dir/password" \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  if [[ -n ${JOBQ_PG_LISTEN:-} ]]; then
    [[ $JOBQ_PG_LISTEN =~ ^[0-9.]+/[0-9]+$ ]] ||
      die "invalid JOBQ_PG_LISTEN '$JOBQ_PG_LISTEN': expected an address and its bits like 10.1.2.1/24"
    echo "$JOBQ_PG_LISTEN" >"$dir/listen"
    printf 'host all all %s scram-sha-256\nhost replication all %s scram-sha-256\n' \
      "$JOBQ_PG_LISTEN" "$JOBQ_PG_LISTEN" >>"$dir/data/pg_hba.conf"
  fi
  serve "$dir" "$bin"
  PGPASSWORD=$password "$bin/psql" -h 127.0.0.1 -p "$(cat "$dir/port")" -U jobq \
    -d postgres -qAt -c "CREATE DATABASE jobq" >/dev/null
  url "$dir"
}

# address DIR: where clients reach the server in DIR: 127.0.0.1, or the
# test network's address it was started with (JOBQ_PG_LISTEN).
address() {
  if [[ -f $1/listen ]]; then
    local a
    a=$(cat "$1/listen")
    echo "${a%/*}"
  else
    echo 127.0.0.1
  fi
}

# options DIR PORT: the server's settings: loopback (and the test network's
# address) only, durable commits.
options() {
  local listen=127.0.0.1
  [[ -f $1/listen ]] && listen="127.0.0.1,$(address "$1")"
  echo "-c listen_addresses=$listen -p $2 -c unix_socket_directories=$1" \
    "-c fsync=on -c synchronous_commit=on -c max_connections=${JOBQ_PG_MAX_CONNECTIONS:-200}" \
    "-c shared_buffers=128MB"
}

# serve DIR BIN [PORT]: starts the cluster in DIR/data on PORT, or on a free
# port (tries a few random ones), and notes it in DIR/port.  A server given
# two addresses starts when it can bind either, so a port taken on one of
# them (another listener, or a connection's own end) shows only in its log:
# it is stopped and another port tried.
serve() {
  local dir=$1 bin=$2 port tries=0 from
  while :; do
    port=${3:-$((20000 + RANDOM % 40000))}
    from=$(stat -c %s "$dir/server.log" 2>/dev/null || echo 0)
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "$(options "$dir" "$port")" start >/dev/null 2>&1; then
      [[ $(tail -c +$((from + 1)) "$dir/server.log") == *"could not bind"* ]] || break
      as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    tries=$((tries + 1))
    if ((tries >= 5)); then
      tail -n 20 "$dir/server.log" >&2 || true
      die "the server did not start"
    fi
  done
  echo "$port" >"$dir/port"
}

restart() {
  local dir=$1 bin port
  bin=$(bindir)
  port=$(cat "$dir/port")
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 \
    -o "$(options "$dir" "$port")" restart >/dev/null
}

# basebackup PRIMARY DIR BIN: copies the server in PRIMARY into DIR/data as
# its streaming standby, through a replication slot made on PRIMARY for it
# (so that PRIMARY keeps the WAL the standby has yet to receive).
basebackup() {
  local primary=$1 dir=$2 bin=$3 slot
  slot=standby_$(basename "$dir" | tr -c 'a-zA-Z0-9_\n' _ | tr 'A-Z' 'a-z')
  psql_on "$primary" -qAt -c "SELECT pg_drop_replication_slot(slot_name) FROM
    pg_replication_slots WHERE slot_name = '$slot' AND NOT active" >/dev/null
  as_owner env PGPASSWORD="$(cat "$primary/password")" "$bin/pg_basebackup" \
    -D "$dir/data" -R -X stream -C -S "$slot" --checkpoint=fast \
    -h "$(address "$primary")" -p "$(cat "$primary/port")" -U jobq \
    >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; die "pg_basebackup failed"; }
}

standby() {
  local primary=$1 dir=$2 bin
  bin=$(bindir)
  [[ -f $primary/port ]] || die "no server in '$primary'"
  [[ -e $dir ]] && die "'$dir' exists: expected a new folder"
  mkdir -p "$dir"
  cp "$primary/password" "$dir/password"
  [[ -f $primary/listen ]] && cp "$primary/listen" "$dir/listen"
  if [[ $(id -u) -eq 0 ]]; then
    chown postgres: "$dir" "$dir/password"
    chmod 700 "$dir"
  fi
  basebackup "$primary" "$dir" "$bin"
  serve "$dir" "$bin"
  url "$dir"
}

rebuild() {
  local primary=$1 dir=$2 bin
  bin=$(bindir)
  [[ -f $primary/port ]] || die "no server in '$primary'"
  [[ -f $dir/port ]] || die "no server in '$dir'"
  if as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    die "the server in '$dir' is running: stop it first"
  fi
  rm -rf "$dir/data"
  basebackup "$primary" "$dir" "$bin"
  serve "$dir" "$bin" "$(cat "$dir/port")"
}

crash() {
  local bin
  bin=$(bindir)
  as_owner "$bin/pg_ctl" -D "$1/data" -m immediate -w stop >/dev/null
}

promote() {
  local bin
  bin=$(bindir)
  as_owner "$bin/pg_ctl" -D "$1/data" -w -t 60 promote >/dev/null
}

# psql_on DIR ARGS...: psql as the superuser on the server's socket.
psql_on() {
  local dir=$1 bin
  shift
  bin=$(bindir)
  [[ -f $dir/port ]] || die "no server in '$dir'"
  "$bin/psql" -X -h "$dir" -p "$(cat "$dir/port")" -U jobq -d jobq "$@"
}

url() {
  local dir=$1
  [[ -f $dir/port ]] || die "no server in '$dir'"
  echo "postgres://jobq:$(cat "$dir/password")@$(address "$dir"):$(cat "$dir/port")/jobq"
}

stop() {
  local dir=$1 bin
  bin=$(bindir)
  if [[ -d $dir/data ]]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case ${1:-} in
  start) start "${2:?usage: pgserver.sh start DIR}" ;;
  stop) stop "${2:?usage: pgserver.sh stop DIR}" ;;
  url) url "${2:?usage: pgserver.sh url DIR}" ;;
  restart) restart "${2:?usage: pgserver.sh restart DIR}" ;;
  standby) standby "${2:?usage: pgserver.sh standby PRIMARY DIR}" "${3:?usage: pgserver.sh standby PRIMARY DIR}" ;;
  rebuild) rebuild "${2:?usage: pgserver.sh rebuild PRIMARY DIR}" "${3:?usage: pgserver.sh rebuild PRIMARY DIR}" ;;
  crash) crash "${2:?usage: pgserver.sh crash DIR}" ;;
  promote) promote "${2:?usage: pgserver.sh promote DIR}" ;;
  psql) d=${2:?usage: pgserver.sh psql DIR ARGS...}; shift 2; psql_on "$d" "$@" ;;
  *) echo "usage: pgserver.sh start|stop|url|restart|crash|promote DIR | psql DIR ARGS..." \
       "| standby|rebuild PRIMARY DIR" >&2; exit 2 ;;
esac
