#!/usr/bin/env bash
# run.sh - the long chaos run (`make chaos`): chaos.py on SQLite, then on a
# throwaway PostgreSQL server and a throwaway MariaDB server that it starts
# (tests/pgserver.sh, tests/mysqlserver.sh) and stops at the end.  Each
# store gets CHAOS_SECONDS of faults (default 900) at CHAOS_RATE jobs a
# second (default 60), and on PostgreSQL CHAOS_RESTARTS server restarts and
# as many stalls (default 5).  With CHAOS_PARTS=P (default 16; 0: none)
# each store runs a second time with the queue in P parts, every job
# keyed, and foremen leaving and joining (chaos.py --parts).  One verdict
# line per run; the exit status is nonzero when any run's checks failed.
#
#   tests/chaos/run.sh BUILD [STORE...]    (stores: sqlite postgres mysql)
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tests=$(dirname "$here")
build=${1:?usage: tests/chaos/run.sh BUILD [STORE...]}
shift
stores=${*:-sqlite postgres mysql}
seconds=${CHAOS_SECONDS:-900}
rate=${CHAOS_RATE:-60}
restarts=${CHAOS_RESTARTS:-5}
parts=${CHAOS_PARTS:-16}
jobs=$(python3 -c "print(int($seconds * $rate * 1.2))")

work=$(mktemp -d "${TMPDIR:-/tmp}/jobq-chaos-run.XXXXXX")
# The foremen's state file (jobq work --state), away from the machine's own.
export XDG_STATE_HOME=$work/state
pgdir="" mydir=""
cleanup() {
  [[ -n $pgdir ]] && "$tests/pgserver.sh" stop "$pgdir"
  [[ -n $mydir ]] && "$tests/mysqlserver.sh" stop "$mydir"
  rm -rf "$work"
}
trap cleanup EXIT

failed=0
chaos() {
  python3 "$here/chaos.py" --jobq "$build/jobq" --seconds "$seconds" --rate "$rate" \
    --jobs "$jobs" "$@" || failed=1
}

for store in $stores; do
  case $store in
    sqlite)
      chaos --store sqlite --url "sqlite:$work/chaos.db"
      ((parts > 0)) && chaos --store sqlite --url "sqlite:$work/parts.db" --parts "$parts"
      ;;
    postgres)
      # Beside $work, not in it: the server runs as another user when we
      # are root, and $work is ours alone.
      pgdir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-chaos-pg.XXXXXX")
      url=$("$tests/pgserver.sh" start "$pgdir") || { echo "chaos postgres: no server"; failed=1; continue; }
      chaos --store postgres --url "$url" --pg-dir "$pgdir" --restarts "$restarts"
      ((parts > 0)) && chaos --store postgres --url "$url?schema=parts" --pg-dir "$pgdir" \
        --restarts "$restarts" --parts "$parts"
      ;;
    mysql)
      mydir=$(mktemp -u "${TMPDIR:-/tmp}/jobq-chaos-my.XXXXXX")
      url=$("$tests/mysqlserver.sh" start "$mydir") || { echo "chaos mysql: no server"; failed=1; continue; }
      chaos --store mysql --url "$url" --mysql-dir "$mydir"
      if ((parts > 0)); then
        "$tests/mysqlserver.sh" sql "$mydir" -e "CREATE DATABASE parts; GRANT ALL ON parts.* TO 'jobq'@'127.0.0.1'" &&
          chaos --store mysql --url "${url%/*}/parts" --mysql-dir "$mydir" --parts "$parts"
      fi
      ;;
    *)
      echo "usage: tests/chaos/run.sh BUILD [sqlite|postgres|mysql...]" >&2
      exit 2
      ;;
  esac
done
exit $failed
