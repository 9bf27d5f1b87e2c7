#!/usr/bin/env bash
# insertcost.sh [K]
#
# Counts the instructions a PostgreSQL backend spends per inserted row, for
# the shapes of table and INSERT that the batch-enqueue numbers depend on:
# the baseline's bare table, a topic's ready table as dbpubsub makes it
# (migrations 0003 and 0004) with dbpubsub's statements, and the same
# without one part at a time. Instruction counts (valgrind's callgrind) repeat from run to
# run whatever else the machine does, where the bench's rates move by ±25%
# between repetitions on a shared 2-core machine.
#
# Each variant runs in a single-user backend (postgres --single) of a
# throwaway cluster: 10 and then 10+K statements of 100 rows inside one DO
# block; the difference, divided by K×100, is the cost of one row. It needs
# initdb and postgres (apt-get install postgresql) and valgrind; K defaults
# to 200 (about a minute in all). Run it as root or as a user who may run
# PostgreSQL; as root the cluster runs as nobody.
set -euo pipefail
K=${1:-200}

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bin" ] || ! command -v valgrind >/dev/null; then
	echo "insertcost: needs PostgreSQL's server binaries and valgrind (apt-get install postgresql valgrind)" >&2
	exit 1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/insertcost.XXXXXX")
trap 'rm -rf "$dir"' EXIT
as=()
if [ "$(id -u)" = 0 ]; then
	chown nobody "$dir"
	as=(runuser -u nobody --)
fi
"${as[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null

# The message table and the ready table as migrations 0001 to 0004 make
# them (each variable one line: a variant is read up to its line's end).
conveyor='CREATE TABLE m (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, topic text NOT NULL, data bytea NOT NULL);'
conveyor+=' CREATE TABLE r (id bigint NOT NULL, topic text COLLATE "C" NOT NULL, data bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (topic, id));'
conveyor+=" DO \$\$ BEGIN EXECUTE format('ALTER TABLE r ALTER COLUMN id SET DEFAULT nextval(%L::regclass)', pg_get_serial_sequence('m', 'id')); END \$\$;"
child='CREATE TABLE c (topic text COLLATE "C" NOT NULL CHECK (topic = '"'"'bench'"'"'), PRIMARY KEY (id)) INHERITS (r);'
unchecked='CREATE TABLE c (PRIMARY KEY (id)) INHERITS (r);'
blocks='ALTER TABLE m ALTER COLUMN id SET INCREMENT BY 1024;' # migration 0004

# name|setup|statement on the bytea[] a
variants=(
	"baseline: bare (id, data), SELECT unnest(a)|CREATE TABLE c (id bigserial PRIMARY KEY, data bytea NOT NULL);|INSERT INTO c (data) SELECT unnest(a)"
	"bare table with created_at|CREATE TABLE c (id bigserial PRIMARY KEY, data bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now());|INSERT INTO c (data) SELECT unnest(a)"
	"bare with created_at and topic|CREATE TABLE c (id bigserial PRIMARY KEY, topic text COLLATE \"C\" NOT NULL, data bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now());|INSERT INTO c (topic, data) SELECT 'bench', unnest(a)"
	"ready table without its CHECK, nextval per row|$conveyor $unchecked|INSERT INTO c (topic, data) SELECT 'bench', unnest(a)"
	"ready table, nextval per row (insertMany)|$conveyor $child|INSERT INTO c (topic, data) SELECT 'bench', unnest(a)"
	"ready table, unnest in FROM, ORDINALITY, ORDER BY|$conveyor $child|INSERT INTO c (topic, data) SELECT 'bench', u.d FROM unnest(a) WITH ORDINALITY AS u(d, n) ORDER BY u.n"
	"ready table, one block of ids (insertBlock)|$conveyor $child $blocks|WITH b AS MATERIALIZED (SELECT nextval('m_id_seq'::regclass) AS first) INSERT INTO c (id, topic, data) SELECT b.first + u.n - 1, 'bench', u.d FROM b, unnest(a) WITH ORDINALITY AS u(d, n)"
)

# instructions VARIANT-INDEX STATEMENTS
instructions() {
	local setup=$2 stmt=$3 n=$4 d="$dir/d$1-$4"
	cp -a "$dir/data" "$d"
	{
		echo "$setup"
		echo "DO \$\$ DECLARE a bytea[] := (SELECT array_agg(convert_to('{\"n\":' || i || ',\"t\":1764612345678901}', 'UTF8')) FROM generate_series(1, 100) i);" \
			"BEGIN FOR k IN 1..$n LOOP $stmt; END LOOP; END \$\$;"
	} >"$d.sql"
	"${as[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$bin/postgres" --single -D "$d" -F -c fsync=off -c autovacuum=off postgres <"$d.sql" 2>&1 |
		awk '/ERROR/ { print > "/dev/stderr"; bad = 1 } /Collected :/ { print $4 } END { exit bad }' || {
		echo "insertcost: the statements of variant $1 failed (the server's error is above)" >&2
		exit 1
	}
	rm -rf "$d" "$d.sql"
}

printf '%-52s %s\n' "variant (100-row statements)" "instructions per row"
for i in "${!variants[@]}"; do
	IFS='|' read -r name setup stmt <<<"${variants[$i]}"
	a=$(instructions "$i" "$setup" "$stmt" 10)
	b=$(instructions "$i" "$setup" "$stmt" $((10 + K)))
	printf '%-52s %d\n' "$name" $(((b - a) / (K * 100)))
done
