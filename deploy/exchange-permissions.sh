#!/usr/bin/env bash
# Make nbgrader's exchange usable by everyone and safe from everyone: mode 1777, like /tmp.
#
#   exchange-permissions.sh [EXCHANGE]     (default: $NBGRADER_EXCHANGE_ROOT, else /srv/nbgrader/exchange)
#
# Every user creates entries in the exchange (the instructor the course's folder, nbgrader
# the rest), so it must be writable by all; and only an entry's owner may remove or rename it
# (the sticky bit), or a student could move the instructor's course folder aside and put a
# folder of their own, with their own "released" notebooks, in its place.
#
# On Kubernetes the exchange is a fresh network volume, and nothing else sets its mode: the
# user image (deploy/singleuser.Dockerfile) runs this script at every start of a user's server,
# as root, before the image's start script switches to the user (docker-stacks'
# before-notebook.d hooks). It changes nothing when the mode is already right, and fails with
# the reason, stopping the server's start, when it cannot make it right: a server must never
# run with an exchange that others can tamper with. It never creates the folder: a missing
# one means the exchange volume is not mounted, and a folder inside one pod is no exchange.
# Any other machine: run it once as root (or as the folder's owner) after creating the folder.
set -euo pipefail

exchange="${1:-${NBGRADER_EXCHANGE_ROOT:-/srv/nbgrader/exchange}}"

fail() {
    echo "exchange-permissions: $*" >&2
    exit 1
}

[ -d "$exchange" ] || fail "$exchange is not a folder: is the exchange volume mounted there? (deploy/README.md, Kubernetes)"

# World-writable with the sticky bit (other bits, such as setgid, may be there too).
usable() {
    [ $(( 0$(stat -c %a "$exchange") & 01777 )) -eq $(( 01777 )) ]
}

if usable; then
    exit 0
fi
before="$(stat -c '%a, owner uid %u' "$exchange")"
if ! chmod 1777 "$exchange" 2>/dev/null || ! usable; then
    fail "$exchange has mode $before and this process (uid $(id -u)) cannot make it 1777. As root on the machine that holds it (for NFS with root_squash: on the file server): chmod 1777 <that folder>"
fi
echo "exchange-permissions: $exchange was mode $before, now 1777"
