#!/usr/bin/env bash
# with-postgres.sh CMD [ARGS...]
#
# Runs CMD with DATABASE_URL exported, pointing at a PostgreSQL server on
# 127.0.0.1, and exits with CMD's exit code:
#   1. $DATABASE_URL, when it is set and not empty;
#   2. else the server on 127.0.0.1:5432 (user postgres), when one answers;
#   3. else a throwaway cluster started for CMD and removed afterwards
#      (initdb/pg_ctl from PATH or /usr/lib/postgresql/*/bin; trust auth,
#      fsync off, listening on 127.0.0.1 only, on a free port).
#
# PG_DURABLE=1 starts the throwaway cluster at the server's defaults for
# durability instead (fsync, synchronous_commit and full_page_writes on),
# as production runs: `make bench` measures on it.
# PGPORT_FORCE_THROWAWAY=1 skips 1 and 2 and always starts a throwaway
# cluster (to test this script, or to get a clean server).
# When run as root, the cluster runs as user nobody (PostgreSQL refuses root).
set -euo pipefail

if [ "$#" -eq 0 ]; then
	echo "usage: $0 CMD [ARGS...]" >&2
	exit 2
fi

log() { echo "with-postgres: $*" >&2; }

if [ "${PGPORT_FORCE_THROWAWAY:-}" != "1" ]; then
	if [ -n "${DATABASE_URL:-}" ]; then
		exec "$@"
	fi
	answers=0
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -h 127.0.0.1 -p 5432 -t 2 && answers=1
	elif command -v psql >/dev/null 2>&1; then
		psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1 && answers=1
	else
		(exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null && answers=1
	fi
	if [ "$answers" = 1 ]; then
		export DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
		exec "$@"
	fi
fi

# A throwaway cluster.
find_bin() {
	if command -v "$1" >/dev/null 2>&1; then
		command -v "$1"
		return
	fi
	local f
	for f in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$f/$1" ]; then
			echo "$f/$1"
			return
		fi
	done
	return 1
}
if ! initdb=$(find_bin initdb) || ! pg_ctl=$(find_bin pg_ctl); then
	log "no PostgreSQL server answers on 127.0.0.1:5432 and initdb/pg_ctl are not installed."
	log "Install PostgreSQL (Debian/Ubuntu: apt-get install postgresql) or set DATABASE_URL."
	exit 1
fi

# free_port prints the first port from $1 on that nothing listens on.
free_port() {
	local p
	for p in $(seq "$1" 55532); do
		if ! (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/with-postgres.XXXXXX")
as_user=()
if [ "$(id -u)" = 0 ]; then
	chown nobody "$dir"
	if command -v runuser >/dev/null 2>&1; then
		as_user=(runuser -u nobody --)
	else
		as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
	fi
fi
chmod 700 "$dir"

cleanup() {
	"${as_user[@]}" "$pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${as_user[@]}" "$initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; exit 1; }
durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
if [ "${PG_DURABLE:-}" = 1 ]; then
	durability=""
	log "the throwaway cluster keeps the server's durability defaults (PG_DURABLE=1)"
fi
# Another process may take the free port before the server binds it: then
# the next free port is tried.
port=55431
for attempt in 1 2 3 4 5; do
	port=$(free_port $((port + 1))) || { log "no free port in 55432-55532"; exit 1; }
	log "starting a throwaway PostgreSQL on 127.0.0.1:$port in $dir"
	if "${as_user[@]}" "$pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir $durability -c max_connections=200" \
		start >/dev/null; then
		break
	fi
	if [ "$attempt" = 5 ] || ! grep -q "could not bind\|already in use" "$dir/server.log"; then
		cat "$dir/server.log" >&2
		exit 1
	fi
	log "port $port was taken meanwhile; trying another"
done

export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
set +e
"$@"
rc=$?
set -e
exit "$rc"
