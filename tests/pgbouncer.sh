#!/usr/bin/env bash
# pgbouncer.sh - a throwaway PgBouncer in front of a test PostgreSQL server
# (tests/pgserver.sh): a configuration, a user list and its logs in a
# temporary folder, listening on a free port on 127.0.0.1 only, in
# transaction pooling mode with a small pool, run as an unprivileged user
# when we are root (PgBouncer refuses to run as root).
#
#   tests/pgbouncer.sh start DIR URL  starts a pooler in DIR (which must not
#                                     exist) in front of the server of URL
#                                     (postgres://USER:PASSWORD@HOST:PORT/DB,
#                                     as pgserver.sh prints it) and prints
#                                     its URL: the same user, password and
#                                     database, the pooler's port
#   tests/pgbouncer.sh stop DIR       stops it and removes DIR
#   tests/pgbouncer.sh url DIR        prints the URL again
#   tests/pgbouncer.sh show DIR WHAT  runs SHOW WHAT on its admin console
#                                     (POOLS, SERVERS, CLIENTS, ...)
#
# JOBQ_PGBOUNCER_MODE (default transaction) is its pool_mode and
# JOBQ_PGBOUNCER_POOL (default 2) its default_pool_size: the most server
# connections it opens for the database.  JOBQ_PGBOUNCER_LISTEN=ADDRESS at
# start also listens on ADDRESS (a test network's own, never a public
# interface); its URL then names ADDRESS.  Exit status 77 means PgBouncer
# is not installed, so that callers can skip with a reason.
set -euo pipefail

die() { echo "pgbouncer: $*" >&2; exit 1; }

bin() {
  local b
  b=$(command -v pgbouncer || true)
  [[ -z $b && -x /usr/sbin/pgbouncer ]] && b=/usr/sbin/pgbouncer
  if [[ -z $b ]]; then
    echo "pgbouncer: pgbouncer not found (install the Debian package pgbouncer)" >&2
    exit 77
  fi
  echo "$b"
}

# as_owner CMD...: runs CMD as the user PgBouncer runs as.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

start() {
  local dir=$1 url=$2 b user password host port db mine tries=0
  b=$(bin)
  [[ -e $dir ]] && die "'$dir' exists: expected a new folder"
  [[ $url =~ ^postgres(ql)?://([^:@/]+):([^@/]+)@([^:/]+):([0-9]+)/([^?]+) ]] ||
    die "invalid server url: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE"
  user=${BASH_REMATCH[2]} password=${BASH_REMATCH[3]} host=${BASH_REMATCH[4]}
  port=${BASH_REMATCH[5]} db=${BASH_REMATCH[6]}
  mkdir -p "$dir"
  local listen=127.0.0.1
  if [[ -n ${JOBQ_PGBOUNCER_LISTEN:-} ]]; then
    [[ $JOBQ_PGBOUNCER_LISTEN =~ ^[0-9.]+$ ]] ||
      die "invalid JOBQ_PGBOUNCER_LISTEN '$JOBQ_PGBOUNCER_LISTEN': expected an address like 10.1.2.1"
    echo "$JOBQ_PGBOUNCER_LISTEN" >"$dir/listen"
    listen="127.0.0.1,$JOBQ_PGBOUNCER_LISTEN"
  fi
  printf '"%s" "%s"\n' "$user" "$password" >"$dir/userlist.txt"
  printf '%s\n%s\n%s\n' "$user" "$password" "$db" >"$dir/login"
  if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || die "user 'postgres' is missing: install the Debian package postgresql"
    chown -R postgres: "$dir"
    chmod 700 "$dir"
  fi
  while :; do
    mine=$((20000 + RANDOM % 40000))
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
$db = host=$host port=$port dbname=$db

[pgbouncer]
listen_addr = $listen
listen_port = $mine
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $dir/userlist.txt
admin_users = $user
pool_mode = ${JOBQ_PGBOUNCER_MODE:-transaction}
default_pool_size = ${JOBQ_PGBOUNCER_POOL:-2}
max_client_conn = ${JOBQ_PGBOUNCER_CLIENTS:-500}
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
    [[ $(id -u) -eq 0 ]] && chown postgres: "$dir/pgbouncer.ini"
    if as_owner "$b" -d "$dir/pgbouncer.ini" >>"$dir/start.log" 2>&1 && ready "$dir" "$mine"; then
      break
    fi
    kill_it "$dir"
    tries=$((tries + 1))
    if ((tries >= 5)); then
      tail -n 20 "$dir/pgbouncer.log" "$dir/start.log" >&2 2>/dev/null || true
      die "the pooler did not start"
    fi
  done
  echo "$mine" >"$dir/port"
  url "$dir"
}

# ready DIR PORT: whether the pooler in DIR answers on PORT (within 10 s).
ready() {
  local i
  for ((i = 0; i < 100; i++)); do
    if admin "$1" "$2" -c "SHOW VERSION" >/dev/null 2>&1; then return 0; fi
    [[ -f $1/pgbouncer.pid ]] || return 1
    sleep 0.1
  done
  return 1
}

# admin DIR PORT ARGS...: psql on the pooler's admin console.
admin() {
  local dir=$1 port=$2
  shift 2
  local user password
  { read -r user; read -r password; } <"$dir/login"
  PGPASSWORD=$password psql -X -qAt -h 127.0.0.1 -p "$port" -U "$user" -d pgbouncer "$@"
}

kill_it() {
  local dir=$1 pid i
  [[ -f $dir/pgbouncer.pid ]] || return 0
  pid=$(cat "$dir/pgbouncer.pid" 2>/dev/null || true)
  [[ -n $pid ]] || return 0
  kill -INT "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

url() {
  local dir=$1 user password db
  [[ -f $dir/port ]] || die "no pooler in '$dir'"
  { read -r user; read -r password; read -r db; } <"$dir/login"
  local address=127.0.0.1
  [[ -f $dir/listen ]] && address=$(cat "$dir/listen")
  echo "postgres://$user:$password@$address:$(cat "$dir/port")/$db"
}

stop() {
  kill_it "$1"
  rm -rf "$1"
}

case ${1:-} in
  start) start "${2:?usage: pgbouncer.sh start DIR URL}" "${3:?usage: pgbouncer.sh start DIR URL}" ;;
  stop) stop "${2:?usage: pgbouncer.sh stop DIR}" ;;
  url) url "${2:?usage: pgbouncer.sh url DIR}" ;;
  show) d=${2:?usage: pgbouncer.sh show DIR WHAT}; [[ -f $d/port ]] || die "no pooler in '$d'"
        admin "$d" "$(cat "$d/port")" -c "SHOW ${3:?usage: pgbouncer.sh show DIR WHAT}" ;;
  *) echo "usage: pgbouncer.sh start DIR URL | stop|url DIR | show DIR WHAT" >&2; exit 2 ;;
esac
