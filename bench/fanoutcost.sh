#!/usr/bin/env bash
# fanoutcost.sh [S ...]
#
# Where a fan-out's copies can be written on PostgreSQL, measured with
# pgbench alone (docs/design/dbpubsub.md, "Second round (issue 35, item
# 1)"): for S subscriptions (default 1 4 16), each a table shaped as a
# topic's ready table, it reports in messages a second (statements of 100
# messages of 32 bytes, -M prepared)
#   - a publish writing a copy of each message into every subscription's
#     table in one statement (8 clients), as dbpubsub does today;
#   - a publish writing one row per message into a log (8 clients);
#   - a distributor moving 100 log rows at a time into every
#     subscription's table (DELETE ... FOR UPDATE SKIP LOCKED, then the
#     copies, in one statement; 2 clients, from a log of 1,000,000).
# It uses a database fanoutcost on the server scripts/with-postgres.sh
# gives ($DATABASE_URL's host, user and port, or the PG* variables), made
# afresh for each measurement and dropped at the end. Needs psql and
# pgbench.
set -euo pipefail
subs=("$@")
[ ${#subs[@]} -gt 0 ] || subs=(1 4 16)
dir=$(mktemp -d "${TMPDIR:-/tmp}/fanoutcost.XXXXXX")
db=fanoutcost
export PGOPTIONS="-c client_min_messages=warning"
trap 'psql -qd postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1; rm -rf "$dir"' EXIT
if [ -n "${DATABASE_URL:-}" ]; then
	eval "$(python3 -c 'import os,urllib.parse as u; p=u.urlparse(os.environ["DATABASE_URL"]); print(f"export PGHOST={p.hostname} PGPORT={p.port or 5432} PGUSER={p.username or \"postgres\"}")')"
fi
fresh() {
	psql -qd postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
	{
		echo "CREATE SEQUENCE ids CACHE 100;"
		echo "CREATE TABLE log (id bigint PRIMARY KEY DEFAULT nextval('ids'), data bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now());"
		for i in $(seq "$1"); do
			echo "CREATE TABLE r$i (id bigint PRIMARY KEY, data bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now());"
		done
	} | psql -qd "$db" >/dev/null
}
rate() { pgbench -n -M prepared "$@" "$db" 2>/dev/null | awk '/^tps/ {print int($3) * 100}'; }
v="(SELECT '\\x$(printf 'ab%.0s' $(seq 32))'::bytea AS d FROM generate_series(1, 100))"
for s in "${subs[@]}"; do
	{
		echo -n "WITH v AS $v"
		for i in $(seq 2 "$s"); do echo -n ", a$i AS (INSERT INTO r$i SELECT nextval('ids'), d FROM v)"; done
		echo " INSERT INTO r1 SELECT nextval('ids'), d FROM v;"
	} >"$dir/copies.sql"
	echo "INSERT INTO log (data) SELECT d FROM $v v;" >"$dir/log.sql"
	{
		echo -n "WITH m AS (DELETE FROM log WHERE id IN (SELECT id FROM log ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED) RETURNING id, data, created_at)"
		for i in $(seq 2 "$s"); do echo -n ", a$i AS (INSERT INTO r$i SELECT nextval('ids'), data, created_at FROM m)"; done
		echo " INSERT INTO r1 SELECT nextval('ids'), data, created_at FROM m;"
	} >"$dir/distribute.sql"
	fresh "$s"
	copies=$(rate -c 8 -j 2 -T 8 -f "$dir/copies.sql")
	fresh "$s"
	logged=$(rate -c 8 -j 2 -T 8 -f "$dir/log.sql")
	fresh "$s"
	psql -qd "$db" -c "INSERT INTO log (data) SELECT '\\xab'::bytea FROM generate_series(1, 1000000)" >/dev/null
	moved=$(rate -c 2 -j 2 -T 6 -f "$dir/distribute.sql")
	echo "subscriptions $s: publish with copies $copies msgs/s; publish to a log $logged msgs/s; distribute $moved msgs/s"
done
