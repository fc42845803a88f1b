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
#   tests/mysqlserver.sh sql DIR ARGS...
#                                     runs the mariadb client as root on the
#                                     server's socket (for tests: -e "SQL")
#   tests/mysqlserver.sh restart DIR  stops it cleanly and starts it again,
#                                     same port and options
#   tests/mysqlserver.sh crash DIR    kills it (SIGKILL, as if the machine
#                                     died)
#   tests/mysqlserver.sh replica PRIMARY DIR
#                                     makes a new server in DIR a replica of
#                                     the one in PRIMARY (global transaction
#                                     ids: CHANGE MASTER TO ...
#                                     MASTER_USE_GTID = slave_pos, from the
#                                     start of PRIMARY's binary log, which
#                                     must have been on from its start) and
#                                     prints its URL
#
# The programs come from the Debian packages mariadb-server and
# mariadb-client.  The user "jobq" has every privilege (with grant option,
# so that tests can try the least-privilege roles) and a random password;
# the database is "jobq".  Exit status 77 means MariaDB is not installed,
# so that callers can skip with a reason.  JOBQ_MYSQLD_OPTIONS adds server
# options (split on spaces), e.g. "--thread-handling=pool-of-threads", for
# this server's life (a restart keeps them).  JOBQ_MYSQL_LISTEN=ADDRESS/BITS
# at start also listens on ADDRESS (a test network's own, never a public
# interface) and lets "jobq" log in from that network; its URL then names
# ADDRESS.
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
  install_db "$dir"
  local net=""
  if [[ -n ${JOBQ_MYSQL_LISTEN:-} ]]; then
    # 10.1.2.1/24 -> '10.1.2.%'
    [[ $JOBQ_MYSQL_LISTEN =~ ^([0-9]+\.[0-9]+\.[0-9]+)\.[0-9]+/24$ ]] ||
      die "invalid JOBQ_MYSQL_LISTEN '$JOBQ_MYSQL_LISTEN': expected an address on a /24 like 10.1.2.1/24"
    net=${BASH_REMATCH[1]}.%
    echo "${JOBQ_MYSQL_LISTEN%/*}" >"$dir/listen"
  fi
  serve "$dir"
  root_sql "$dir" -e "
    CREATE USER 'jobq'@'127.0.0.1' IDENTIFIED BY '$password';
    CREATE USER 'jobq'@'localhost' IDENTIFIED BY '$password';
    GRANT ALL PRIVILEGES ON *.* TO 'jobq'@'127.0.0.1' WITH GRANT OPTION;
    GRANT ALL PRIVILEGES ON *.* TO 'jobq'@'localhost' WITH GRANT OPTION;
    ${net:+CREATE USER 'jobq'@'$net' IDENTIFIED BY '$password';
    GRANT ALL PRIVILEGES ON *.* TO 'jobq'@'$net' WITH GRANT OPTION;}
    CREATE DATABASE jobq;" || die "setting up the jobq user failed"
  url "$dir"
}

# install_db DIR: a new data folder in DIR/data, and the server's options
# (JOBQ_MYSQLD_OPTIONS) kept in DIR/options.
install_db() {
  local dir=$1 user_opt=()
  if [[ $(id -u) -eq 0 ]]; then
    id mysql >/dev/null 2>&1 || die "user 'mysql' is missing: install the Debian package mariadb-server"
    chown mysql: "$dir"
    chmod 700 "$dir"
    user_opt=(--user=mysql)
  fi
  printf '%s\n' "${JOBQ_MYSQLD_OPTIONS:-}" >"$dir/options"
  as_owner "$INSTALL_DB" --no-defaults --datadir="$dir/data" "${user_opt[@]}" \
    --auth-root-authentication-method=normal --skip-test-db \
    >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; die "mariadb-install-db failed"; }
}

replica() {
  local primary=$1 dir=$2 waited=0
  need_programs
  [[ -f $primary/port ]] || die "no server in '$primary'"
  [[ -e $dir ]] && die "'$dir' exists: expected a new folder"
  mkdir -p "$dir"
  cp "$primary/password" "$dir/password"
  [[ -f $primary/listen ]] && cp "$primary/listen" "$dir/listen"
  install_db "$dir"
  serve "$dir"
  root_sql "$dir" -e "
    CHANGE MASTER TO MASTER_HOST = '$(address "$primary")',
      MASTER_PORT = $(cat "$primary/port"), MASTER_USER = 'jobq',
      MASTER_PASSWORD = '$(cat "$primary/password")', MASTER_USE_GTID = slave_pos,
      MASTER_CONNECT_RETRY = 1;
    START SLAVE;" || die "starting the replication failed"
  # Ready once it has the primary's users and database.
  until root_sql "$dir" -N -e "SELECT 1 FROM mysql.user WHERE user = 'jobq' LIMIT 1" 2>/dev/null |
      grep -q 1 && root_sql "$dir" -e "USE jobq" 2>/dev/null; do
    ((waited < 600)) || { root_sql "$dir" -e "SHOW SLAVE STATUS\G" >&2; die "the replica did not catch up"; }
    sleep 0.1
    waited=$((waited + 1))
  done
  url "$dir"
}

# address DIR: where clients reach the server in DIR.
address() {
  if [[ -f $1/listen ]]; then cat "$1/listen"; else echo 127.0.0.1; fi
}

restart() {
  local dir=$1
  need_programs
  [[ -f $dir/port ]] || die "no server in '$dir'"
  halt "$dir"
  serve "$dir" "$(cat "$dir/port")"
}

crash() {
  local pid
  pid=$(cat "$1/pid")
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

# serve DIR [PORT]: starts the server on DIR/data on PORT or on a free port
# (tries a few random ones; the server stops at once when one is taken),
# waits until it answers, and notes the port in DIR/port.
serve() {
  local dir=$1 port tries=0 pid waited bind=127.0.0.1
  [[ -f $dir/listen ]] && bind=127.0.0.1,$(cat "$dir/listen")
  while :; do
    port=${2:-$((20000 + RANDOM % 40000))}
    : >"$dir/error.log"
    [[ $(id -u) -eq 0 ]] && chown mysql: "$dir/error.log"
    local user_opt=() extra=()
    [[ $(id -u) -eq 0 ]] && user_opt=(--user=mysql)
    read -r -a extra <"$dir/options"
    "$MYSQLD" --no-defaults --datadir="$dir/data" "${user_opt[@]}" \
      --bind-address="$bind" --port="$port" --socket="$dir/sock" \
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
  echo "mysql://jobq:$(cat "$dir/password")@$(address "$dir"):$(cat "$dir/port")/jobq"
}

stop() {
  halt "$1"
  rm -rf "$1"
}

# halt DIR: stops the server in DIR (a clean shutdown).
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

case ${1:-} in
  start) start "${2:?usage: mysqlserver.sh start DIR}" ;;
  stop) stop "${2:?usage: mysqlserver.sh stop DIR}" ;;
  url) url "${2:?usage: mysqlserver.sh url DIR}" ;;
  sql) d=${2:?usage: mysqlserver.sh sql DIR ARGS...}; shift 2; root_sql "$d" "$@" ;;
  restart) restart "${2:?usage: mysqlserver.sh restart DIR}" ;;
  crash) crash "${2:?usage: mysqlserver.sh crash DIR}" ;;
  replica) replica "${2:?usage: mysqlserver.sh replica PRIMARY DIR}" "${3:?usage: mysqlserver.sh replica PRIMARY DIR}" ;;
  *) echo "usage: mysqlserver.sh start|stop|url|restart|crash DIR | sql DIR ARGS..." \
       "| replica PRIMARY DIR" >&2; exit 2 ;;
esac
