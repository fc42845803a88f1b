#!/usr/bin/env bash
# install-deps.sh - installs the Debian packages jobq needs that are not yet
# installed.  The list is scripts/deps.txt, one package a line.  Checks each
# with dpkg-query; when something is missing, runs `apt-get update` once and
# `apt-get install` for the missing ones only, without questions, through
# sudo unless already root; waits up to ten minutes for another apt or dpkg
# run to let go of its lock.  Installs nothing when everything is there, so
# `make deps` is cheap to run before every build.  Debian 12 is the system
# it is written for.
#
# usage: scripts/install-deps.sh [TARGET]
#   Without TARGET: the packages of the build and the tests.  A package
#   whose line names a make target after it (debootstrap fresh-check) is
#   for that target alone: scripts/install-deps.sh TARGET installs those.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
list=${JOBQ_DEPS_FILE:-$here/deps.txt}

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: dpkg-query not found: this script installs Debian packages;" \
       "install the packages in $list with your system's package manager" >&2
  exit 1
fi

target=${1:-}

# The package names: the first word of each line whose second word is
# the target asked for (none: no second word), comments and blank lines
# left out.
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/^[[:space:]]*//' "$list" |
                      awk -v t="$target" 'NF && $2 == t { print $1 }')

# What the installed packages provide counts as installed too (NodeSource's
# nodejs provides npm, and conflicts with Debian's).
provided=" $(dpkg-query -W -f='${db:Status-Status} ${Provides}\n' 2>/dev/null |
  awk '$1 == "installed" { $1 = ""; print }' | tr ',' '\n' |
  sed -E 's/\(.*\)//; s/^ +| +$//g' | tr '\n' ' ') "

missing=()
for pkg in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  if [[ $status != installed && $provided != *" $pkg "* ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#wanted[@]} packages are installed"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: missing packages: ${missing[*]}; run this script as root" \
       "or install sudo" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q \
  -o DPkg::Lock::Timeout=600
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
  -o DPkg::Lock::Timeout=600 \
  --no-install-recommends "${missing[@]}"
