#!/usr/bin/env bash
# fresh-check.sh - the first run on a fresh machine, as `make fresh-check`
# runs it: a new Debian 12 root made by debootstrap from Debian's packages
# (the minimal base system and make, none of scripts/deps.txt; the package
# sources of a new installation: bookworm, bookworm-updates and
# bookworm-security), a copy of this working tree in it (the files git
# knows of and the new ones it does not ignore), and the README's two
# commands run there as root, in order:
# `make demo`, then `make check`.  The root is entered with chroot in new
# mount and process namespaces (unshare), with /proc, /sys, /dev and a
# fresh /tmp mounted, so that the mounts and every process started there
# end with it.  It prints which of scripts/deps.txt's packages are missing
# before the first command, how long each step took, and the exit status
# of each command; its exit status is nonzero when one failed.  The root
# is deleted at the end (JOBQ_FRESH_KEEP=1 keeps it and says where).
#
# usage: scripts/fresh-check.sh [LOG]   (also writes everything to LOG)
#   JOBQ_FRESH_DIR       where the root is made (default /var/tmp)
#   JOBQ_FRESH_MIRROR    the Debian mirror (default http://deb.debian.org/debian)
#   JOBQ_FRESH_SECURITY  its security updates (default
#                        http://deb.debian.org/debian-security)
#   JOBQ_FRESH_KEEP      1: keep the root
#   JOBQ_FRESH_COMMANDS  the commands, one a line (default "make demo",
#                        then "make check")
# It needs root (debootstrap, chroot, mounts) and debootstrap
# (scripts/install-deps.sh fresh-check installs it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(dirname "$here")
if [[ -n ${1:-} ]]; then
  exec > >(tee "$1") 2>&1
fi
if [[ $(id -u) != 0 ]]; then
  echo "fresh-check: expected to run as root (debootstrap, chroot and mounts need it)" >&2
  exit 1
fi
if ! command -v debootstrap >/dev/null; then
  echo "fresh-check: debootstrap is missing: run scripts/install-deps.sh fresh-check" >&2
  exit 1
fi

mirror=${JOBQ_FRESH_MIRROR:-http://deb.debian.org/debian}
security=${JOBQ_FRESH_SECURITY:-http://deb.debian.org/debian-security}
work=$(mktemp -d "${JOBQ_FRESH_DIR:-/var/tmp}/jobq-fresh.XXXXXX")
target=$work/root
cleanup() {
  if [[ ${JOBQ_FRESH_KEEP:-} == 1 ]]; then
    echo "fresh-check: the root is kept in $target"
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT

start=$SECONDS
step() { printf '\n== %s (at %ds)\n' "$*" $((SECONDS - start)); }

step "debootstrap: Debian 12 (bookworm), minimal base and make, from $mirror"
debootstrap --variant=minbase --include=make bookworm "$target" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log"
  exit 1
}
echo "done: $(wc -l <"$work/debootstrap.log") lines of log, $(du -sh "$target" | cut -f1)"
# The sources of a new installation, updates and security fixes included.
cat >"$target/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF

step "the working tree, copied to /src/jobq in the root"
mkdir -p "$target/src/jobq"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
  tar --null -T - -cf -) | tar -C "$target/src/jobq" -xf -
echo "$(find "$target/src/jobq" -type f | wc -l) files, at $(git -C "$top" rev-parse --short HEAD)$(
  [[ -n $(git -C "$top" status --porcelain) ]] && echo ' with changes')"
cp /etc/resolv.conf "$target/etc/resolv.conf"
# A machine whose traffic passes a TLS-inspecting proxy trusts its
# certificate through NODE_EXTRA_CA_CERTS: the root trusts it the same
# way (npm fetches the Node client's packages over TLS).
extra_ca=
if [[ -n ${NODE_EXTRA_CA_CERTS:-} && -r $NODE_EXTRA_CA_CERTS ]]; then
  cp "$NODE_EXTRA_CA_CERTS" "$target/etc/jobq-fresh-extra-ca.crt"
  extra_ca=NODE_EXTRA_CA_CERTS=/etc/jobq-fresh-extra-ca.crt
fi

step "the packages of scripts/deps.txt in the root"
missing=()
while read -r pkg; do
  if ! chroot "$target" dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed; then
    missing+=("$pkg")
  fi
done < <(sed -e 's/#.*//' "$here/deps.txt" | awk 'NF == 1 { print $1 }')
echo "missing: ${missing[*]:-none}"

# Runs COMMAND in the root, as root, with a clean environment, in new
# mount and process namespaces.
in_root() {
  unshare --mount --pid --fork --kill-child -- bash -c '
    set -e
    t=$1 ca=$2; shift 2
    # The root its own mount, so that / is a mount point in it, as on a
    # machine ("ip netns exec" makes / a slave mount).
    mount --bind "$t" "$t"
    mount -t proc proc "$t/proc"
    mount -t sysfs sysfs "$t/sys" 2>/dev/null || true
    mount --rbind /dev "$t/dev"
    mount -t tmpfs tmpfs "$t/tmp"
    exec chroot "$t" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb ${ca:+"$ca"} \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      bash -c "cd /src/jobq && $*"' _ "$target" "$extra_ca" "$@"
}

status=0
mapfile -t commands <<<"${JOBQ_FRESH_COMMANDS:-$'make demo\nmake check'}"
for cmd in "${commands[@]}"; do
  step "$cmd"
  t0=$SECONDS
  if in_root "$cmd"; then
    echo "fresh-check: '$cmd' passed in $((SECONDS - t0))s"
  else
    rc=$?
    echo "fresh-check: '$cmd' FAILED with exit status $rc after $((SECONDS - t0))s"
    status=1
    break
  fi
done
step "end"
echo "fresh-check: $([[ $status == 0 ]] && echo passed || echo FAILED) in $((SECONDS - start))s"
exit $status
