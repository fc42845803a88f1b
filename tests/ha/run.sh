#!/usr/bin/env bash
# run.sh - the long high-availability run (`make ha`): on the test bed of
# tests/ha/bed.sh (foremen and producers on hosts of their own, network
# namespaces on a bridge of the run's own), a PostgreSQL primary and its
# synchronous standby take HA_FAILOVERS failovers (default 10) under the
# chaos load of tests/chaos/chaos.py for HA_SECONDS (default 300), with
# foremen killed, stopped and cut off from the network meanwhile: the
# primary killed with `pg_ctl stop -m immediate`, the standby promoted, the
# old primary made the new standby.  It prints chaos.py's verdict and the
# failovers' figures (failovers, jobs, kills, lost, doubled, stuck, the
# time back to work per foreman) and exits nonzero when a check failed:
# with synchronous replication no acknowledged job may be lost or finish
# twice, none may stay running, and every foreman must be back at work
# within the lease and 5 seconds of every failover.  Root only.
#
#   tests/ha/run.sh BUILD
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tests=$(dirname "$here")
build=${1:?usage: tests/ha/run.sh BUILD}
case $build in /*) ;; *) build=$PWD/$build ;; esac
seconds=${HA_SECONDS:-300}
failovers=${HA_FAILOVERS:-10}
rate=${HA_RATE:-40}
lease=${HA_LEASE:-3}

. "$here/bed.sh"
why=$(ha_bed_check)
if [[ -n $why ]]; then
  echo "ha: cannot run: $why" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/jobq-ha.XXXXXX")
cleanup() {
  ha_pg_down
  ha_bed_down
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ha_bed_up "jqha$((RANDOM % 10000))" 5 || { echo "ha: the network bed could not be made" >&2; exit 1; }
ha_pg_up "$work" sync || { echo "ha: the servers did not start: $(ha_pg_why "$work")" >&2; exit 1; }
mapfile -t hosts < <(ha_hosts_args)
python3 "$tests/chaos/chaos.py" --jobq "$build/jobq" --store postgres --url "$HA_PG_URL" \
  --pg-dir "$HA_PG_P" --standby "$HA_PG_S" --sync --failovers "$failovers" \
  --seconds "$seconds" --rate "$rate" --jobs "$((seconds * rate * 2))" --lease "$lease" \
  --restarts 0 --foremen 3 --producers 2 "${hosts[@]}" ${HA_KEEP:+--keep}
