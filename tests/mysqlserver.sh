#!/usr/bin/env bash
# mysqlserver.sh - a throwaway MariaDB server for the tests and benchmarks:
# a fresh data folder (mariadb-install-db), listening on a free port on
# 127.0.0.1 only, with the durable defaults (innodb_flush_log_at_trx_commit
# = 1), no host name lookups, and none of the system's option files; run as
# the unprivileged user "mysql" when we are root.
#
#   tests/mysqlserver.sh start DIR    creates and starts a server in DIR (which
#                                     must not exist) and prints its URL, like
#                                     mysql://jobq:PASSWORD@127.0.0.1:PORT/jobq
#   tests/mysqlserver.sh stop DIR     stops it and removes DIR
#   tests/mysqlserver.sh url DIR      prints the URL again
#   tests/mysqlserver.sh restart DIR  stops the server and starts it again,
#                                     same port
#   tests/mysqlserver.sh sql DIR ARGS...
#                                     runs the mariadb client as root on the
#                                     server's socket (for tests: -e "SQL")
#
# The programs come from the Debian packages mariadb-server and
# mariadb-client.  The user "jobq" has every privilege (with grant option,
# so that tests can try the least-privilege roles) and a random password;
# the database is "jobq".  Exit status 77 means MariaDB is not installed,
# so that callers can skip with a reason.  JOBQ_MYSQLD_OPTIONS adds server
# options (split on spaces), e.g. "--thread-handling=pool-of-threads".
set -euo pipefail

die() { echo "mysqlserver: $*" >&2; exit 1; }

MYSQLD=${JOBQ_MYSQLD:-$(command -v mariadbd || echo /usr/sbin/mariadbd)}
INSTALL_DB=$(command -v mariadb-install-db || echo /usr/bin/mariadb-install-db)
CLIENT=$(command -v mariadb || echo /usr/bin/mariadb)

need_programs() {
  if [[ ! -x $MYSQLD || ! -x $INSTALL_DB || ! -x $CLIENT ]]; then
    echo "mysqlserver: MariaDB server programs not found (install the Debian" \
         "packages mariadb-server and mariadb-client)" >&2
    exit 77
  fi
}

# as_owner CMD...: runs CMD as the server's owner.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u mysql -- "$@"
  else
    "$@"
  fi
}

root_sql() {
  local dir=$1
  shift
  "$CLIENT" --no-defaults -S "$dir/sock" -u root "$@"
}

start() {
  local dir=$1 password
  need_programs
  [[ -e $dir ]] && die "'$dir' exists: expected a new folder"
  mkdir -p "$dir"
  password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  printf '%s\n' "$password" >"$dir/password"
  local user_opt=()
  if [[ $(id -u) -eq 0 ]]; then
    id mysql >/dev/null 2>&1 || die "user 'mysql' is missing: install the Debian package mariadb-server"
    chown mysql: "$dir"
    chmod 700 "$dir"
    user_opt=(--user=mysql)
  fi
  as_owner "$INSTALL_DB" --no-defaults --datadir="$dir/data" "${user_opt[@]}" \
    --auth-root-authentication-method=normal --skip-test-db \
    >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
  serve "$dir"
  root_sql "$dir" -e "
    CREATE USER 'jobq'@'127.0.0.1' IDENTIFIED BY '$password';
    CREATE USER 'jobq'@'localhost' IDENTIFIED BY '$password';
    GRANT ALL PRIVILEGES ON *.* TO 'jobq'@'127.0.0.1' WITH GRANT OPTION;
    GRANT ALL PRIVILEGES ON *.* TO 'jobq'@'localhost' WITH GRANT OPTION;
    CREATE DATABASE jobq;" || die "setting up the jobq user failed"
  url "$dir"
}

# serve DIR [PORT]: starts the server on DIR/data on PORT, or on a free
# port (tries a few random ones; the server stops at once when one is
# taken), waits until it answers, and notes the port in DIR/port.
serve() {
  local dir=$1 fixed=${2:-} port tries=0 pid waited
  while :; do
    port=${fixed:-$((20000 + RANDOM % 40000))}
    : >"$dir/error.log"
    [[ $(id -u) -eq 0 ]] && chown mysql: "$dir/error.log"
    local user_opt=() extra=()
    [[ $(id -u) -eq 0 ]] && user_opt=(--user=mysql)
    read -r -a extra <<<"${JOBQ_MYSQLD_OPTIONS:-}"
    "$MYSQLD" --no-defaults --datadir="$dir/data" "${user_opt[@]}" \
      --bind-address=127.0.0.1 --port="$port" --socket="$dir/sock" \
      --pid-file="$dir/mariadbd.pid" --log-error="$dir/error.log" \
      --skip-name-resolve --innodb-flush-log-at-trx-commit=1 \
      --max-connections=300 --innodb-buffer-pool-size=256M \
      --innodb-log-file-size=256M --max-allowed-packet=64M \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
      "${extra[@]}" </dev/null >/dev/null 2>&1 &
    pid=$!
    echo "$pid" >"$dir/pid"
    waited=0
    while ((waited < 600)); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if root_sql "$dir" -e "SELECT 1" >/dev/null 2>&1; then
        echo "$port" >"$dir/port"
        return 0
      fi
      sleep 0.1
      waited=$((waited + 1))
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if ((tries >= 5)); then
      tail -n 20 "$dir/error.log" >&2 || true
      die "the server did not start"
    fi
  done
}

url() {
  local dir=$1
  [[ -f $dir/port ]] || die "no server in '$dir'"
  echo "mysql://jobq:$(cat "$dir/password")@127.0.0.1:$(cat "$dir/port")/jobq"
}

# halt DIR: stops the server, keeping its files.
halt() {
  local dir=$1 pid waited=0
  if [[ -f $dir/pid ]]; then
    pid=$(cat "$dir/pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      # A clean shutdown flushes InnoDB; give it up to a minute.
      while kill -0 "$pid" 2>/dev/null && ((waited < 600)); do
        sleep 0.1
        waited=$((waited + 1))
      done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
}

restart() {
  local dir=$1
  need_programs
  [[ -f $dir/port ]] || die "no server in '$dir'"
  halt "$dir"
  serve "$dir" "$(cat "$dir/port")"
}

stop() {
  halt "$1"
  rm -rf "$1"
}

case ${1:-} in
  start) start "${2:?usage: mysqlserver.sh start DIR}" ;;
  stop) stop "${2:?usage: mysqlserver.sh stop DIR}" ;;
  url) url "${2:?usage: mysqlserver.sh url DIR}" ;;
  restart) restart "${2:?usage: mysqlserver.sh restart DIR}" ;;
  sql) d=${2:?usage: mysqlserver.sh sql DIR ARGS...}; shift 2; root_sql "$d" "$@" ;;
  *) echo "usage: mysqlserver.sh start|stop|url|restart DIR | sql DIR ARGS..." >&2; exit 2 ;;
esac
