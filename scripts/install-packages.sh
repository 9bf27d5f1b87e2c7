#!/usr/bin/env bash
# Installs, with apt-get, the Debian packages `make test` needs and this
# machine lacks: PostgreSQL's binaries (for a throwaway cluster, unless
# $DATABASE_URL is set), nats-server (the reliability tests start servers of
# their own even with $NATS_URL), chromium (the dashboard's browser test,
# unless $CHROMIUM names another build) and kcat (kafkapubsub's interop test
# with librdkafka). As root it runs apt-get itself, else
# through `sudo -n` when that needs no password; otherwise it says what to
# install and fails.
set -euo pipefail

have_pg_bins() {
	command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

missing=()
if [ -z "${DATABASE_URL:-}" ] && ! have_pg_bins; then
	missing+=(postgresql)
fi
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
	missing+=(nats-server)
fi
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
	missing+=(chromium)
fi
if ! command -v kcat >/dev/null 2>&1; then
	missing+=(kcat)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ]; then
	apt=(apt-get)
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	apt=(sudo -n apt-get)
else
	echo "make test needs these Debian packages: ${missing[*]}" >&2
	echo "install them with: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "installing with apt-get: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${apt[@]}" update -qq
"${apt[@]}" install -y -qq "${missing[@]}" >/dev/null
