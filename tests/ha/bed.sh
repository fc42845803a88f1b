# bed.sh - the network of the high-availability tests, sourced by
# tests/cli_ha.sh and tests/ha/run.sh: a bridge of the test's own with an
# address for the database servers, and "hosts" that are network
# namespaces, each joined to the bridge by a veth pair and given an address
# of its own, so that a foreman or a producer in one reaches the servers
# over the veth as another machine would, and can be cut off from them
# (its veth set down) without being stopped.  Nothing is routed anywhere
# else: the namespaces have no default route, and the bridge has no port
# but the hosts'.
#
#   ha_bed_check                 says why the bed cannot be made here (not
#                                root, no `ip`, no namespaces), or nothing
#   ha_bed_up NAME NHOSTS        makes the bridge and NHOSTS hosts; sets
#                                HA_ADDR (the servers' address on the
#                                bridge), HA_CIDR (ADDR/24), HA_NS[i] (the
#                                hosts' namespaces) and HA_LINK[i] (the
#                                bridge's end of their veth, to cut)
#   ha_bed_down                  ends whatever still runs in the hosts and
#                                removes them and the bridge
#   ha_on HOST CMD...            runs CMD on host HOST (an index)
#   ha_cut HOST / ha_heal HOST   cuts host HOST off (its link down) / back
#
# NAME starts with the prefix of this test bed's machine-wide names, "jqha",
# and is short (interface names have at most 15 characters).  The subnet
# 10.213.N.0/24 is chosen from NAME's number, the next free one when
# another bed has it.

ha_bed_check() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "not root: network namespaces need root (CI runs the tests as root)"
  elif ! command -v ip >/dev/null 2>&1; then
    echo "no 'ip' command (install the Debian package iproute2)"
  elif ! ip netns add jqhaprobe$$ 2>/dev/null; then
    echo "'ip netns add' is refused here: no network namespaces"
  else
    ip netns del jqhaprobe$$
  fi
}

ha_bed_up() {
  local name=$1 n=$2 i net ns link
  HA_NAME=$name
  net=$(( $(tr -dc 0-9 <<<"$name" | sed 's/^0*//;s/^$/0/') % 250 + 1 ))
  # Another bed's subnet is taken: the next one.
  while [[ -n $(ip -4 route show "10.213.$net.0/24") ]]; do net=$((net % 250 + 1)); done
  HA_ADDR=10.213.$net.1
  HA_CIDR=$HA_ADDR/24
  HA_NS=()
  HA_LINK=()
  ip link add "${name}br" type bridge || return 1
  ip addr add "$HA_CIDR" dev "${name}br" || return 1
  ip link set "${name}br" up || return 1
  for ((i = 0; i < n; i++)); do
    ns=$name-h$i
    link=${name}h$i
    ip netns add "$ns" || return 1
    ip link add "$link" type veth peer name eth0 netns "$ns" || return 1
    ip link set "$link" master "${name}br" up || return 1
    ip -n "$ns" link set lo up || return 1
    ip -n "$ns" addr add "10.213.$net.$((10 + i))/24" dev eth0 || return 1
    ip -n "$ns" link set eth0 up || return 1
    HA_NS+=("$ns")
    HA_LINK+=("$link")
  done
  # The bridge forwards at once (no STP delay) once its ports are up.
  local waited=0
  while ((waited < 50)); do
    ip netns exec "${HA_NS[0]}" bash -c "exec 3<>/dev/tcp/$HA_ADDR/9" 2>&1 |
      grep -q "refused" && break
    sleep 0.1
    waited=$((waited + 1))
  done
}

ha_bed_down() {
  local ns pid
  [[ -n ${HA_NAME:-} ]] || return 0
  for ns in "${HA_NS[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null
    done
    ip netns del "$ns" 2>/dev/null
  done
  ip link del "${HA_NAME}br" 2>/dev/null
  HA_NAME=""
  return 0
}

ha_on() {
  local host=$1
  shift
  ip netns exec "${HA_NS[$host]}" "$@"
}

ha_cut() { ip link set "${HA_LINK[$1]}" down; }
ha_heal() { ip link set "${HA_LINK[$1]}" up; }

# ha_pg_up DIR SYNC: a PostgreSQL primary in DIR/primary and its streaming
# standby in DIR/standby (tests/pgserver.sh), listening on the bridge's
# address; synchronous replication when SYNC is "sync"
# (synchronous_standby_names = '*', commits wait for the standby's flush),
# no standby when it is "alone".
# Sets HA_PG_P, HA_PG_S (their folders) and HA_PG_URL, the URL that lists
# both with target_session_attrs=read-write.  DIR is the caller's and is
# made readable to the server's user.  What went wrong is in DIR/servers.err,
# which ha_pg_why prints on one line.
ha_pg_up() {
  local dir=$1
  ha_pg_start "$@" 2>"$dir/servers.err"
}

ha_pg_why() { tail -n 5 "$1/servers.err" 2>/dev/null | tr '\n' ' '; }

ha_pg_start() {
  local dir=$1 sync=$2 pgs=${HA_PGSERVER:-$(dirname "${BASH_SOURCE[0]}")/../pgserver.sh}
  HA_PG_P=$dir/primary
  HA_PG_S=$dir/standby
  chmod 755 "$dir"
  JOBQ_PG_LISTEN=$HA_CIDR "$pgs" start "$HA_PG_P" >/dev/null || return 1
  if [[ $sync == sync ]]; then
    "$pgs" psql "$HA_PG_P" -qAt -c "ALTER SYSTEM SET synchronous_standby_names = '*'" \
      -c "SELECT pg_reload_conf()" >/dev/null || return 1
  fi
  if [[ $sync == alone ]]; then
    HA_PG_S=""
    HA_PG_URL="postgres://jobq:$(cat "$HA_PG_P/password")@$HA_ADDR:$(cat "$HA_PG_P/port")/jobq"
    return
  fi
  "$pgs" standby "$HA_PG_P" "$HA_PG_S" >/dev/null || return 1
  HA_PG_URL="postgres://jobq:$(cat "$HA_PG_P/password")@$HA_ADDR:$(cat "$HA_PG_P/port"),$HA_ADDR:$(cat "$HA_PG_S/port")/jobq?target_session_attrs=read-write"
}

# ha_pg_down: stops both servers (whichever is the primary now).
ha_pg_down() {
  local pgs=${HA_PGSERVER:-$(dirname "${BASH_SOURCE[0]}")/../pgserver.sh}
  [[ -n ${HA_PG_P:-} ]] && "$pgs" stop "$HA_PG_P"
  [[ -n ${HA_PG_S:-} ]] && "$pgs" stop "$HA_PG_S"
  HA_PG_P="" HA_PG_S=""
  return 0
}

# ha_hosts_args: chaos.py's --host arguments, one per host of the bed.
ha_hosts_args() {
  local i
  for i in "${!HA_NS[@]}"; do
    printf -- '--host\n%s:%s\n' "${HA_NS[$i]}" "${HA_LINK[$i]}"
  done
}
