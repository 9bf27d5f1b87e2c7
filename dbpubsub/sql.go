package dbpubsub

import (
	"strings"

	"github.com/conveyorgo/conveyor/internal/backend"
)

// statements are the constant SQL texts of the hot path and the background
// loops, built once per PubSub for its table. Values are always $n
// parameters; durations are passed in microseconds.
type statements struct {
	resolve      string
	sequence     string
	insertAt     string
	insertManyAt string
	enqueueAt    string
	notify       string
	enqueueUniq  string
	nextRunAt    string
	settle       string
	extend       string
	renew        string
	release      string
	rescue       string
	prune        string
}

// claimSQL takes up to $2 ready messages of topic $1 for a lease of $3
// µs: first the due pending rows of the message table (delayed, retried,
// given back, unique), oldest first, then, for the rest, the rows of the
// topic's ready table above id $4 (the claim's keyset floor; 0 for all) in
// id order, moved into the message table as processing. The last column
// tells the moved rows. RETURNING order is unspecified. The rows taken are
// found again by id = ANY (ARRAY(…)), an index condition in any plan (as a
// join, a generic plan may hash the whole ready table).
const claimSQL = `WITH m AS MATERIALIZED (
		SELECT id FROM {T}
		WHERE topic = $1 AND status = 'pending' AND run_at <= now()
		ORDER BY run_at, id LIMIT $2
		FOR UPDATE SKIP LOCKED),
	mu AS (
		UPDATE {T} AS t SET status = 'processing', attempts = t.attempts + 1, token = t.token + 1,
			lease_until = now() + $3 * interval '1 microsecond'
		WHERE t.id = ANY (ARRAY(SELECT id FROM m))
		RETURNING t.id, t.data, t.attempts, t.token, t.run_at),
	r AS MATERIALIZED (
		SELECT id FROM {R}
		WHERE id > $4
		ORDER BY id LIMIT greatest($2 - (SELECT count(*) FROM m), 0)
		FOR UPDATE SKIP LOCKED),
	rd AS (
		DELETE FROM {R} WHERE id = ANY (ARRAY(SELECT id FROM r))
		RETURNING id, data, created_at),
	ri AS (
		INSERT INTO {T} (id, topic, data, status, run_at, attempts, token, lease_until, created_at)
		OVERRIDING SYSTEM VALUE
		SELECT id, $1, data, 'processing', created_at, 1, 1,
			now() + $3 * interval '1 microsecond', created_at
		FROM rd
		RETURNING id, data, attempts, token, run_at)
	SELECT id, data, attempts, token, run_at, false FROM mu
	UNION ALL
	SELECT id, data, attempts, token, run_at, true FROM ri`

// processingByID stands for 'processing' in the statements that find
// delivered rows by the ids in an array (settle, renew, release): a
// sub-select is opaque to the planner's index matching, so the generic
// plan looks each id up in the primary key instead of scanning the lease
// index (docs/design/dbpubsub.md, "Plans").
const processingByID = "(SELECT 'processing')"

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// newStatements builds the statements on the message table named table.
// It is long because it is a table of constant texts, one entry per
// statement, each with its parameters beside it; it has no logic.
func newStatements(table string) statements {
	t := quoteIdent(table)
	r := strings.NewReplacer("{T}", t, "{PROCESSING}", processingByID)
	return statements{
		// The schema-qualified name of the table found in the search_path.
		resolve: `SELECT n.nspname || '.' || c.relname FROM pg_catalog.pg_class c
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE c.oid = to_regclass($1)`,

		// The id sequence of table $1 (schema-qualified and quoted), quoted
		// likewise, and its increment: how many ids one nextval reserves.
		sequence: `SELECT format('%I.%I', n.nspname, c.relname), s.seqincrement FROM pg_catalog.pg_sequence s
			JOIN pg_catalog.pg_class c ON c.oid = s.seqrelid
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE s.seqrelid = pg_catalog.pg_get_serial_sequence($1, 'id')::regclass`,

		// The delayed enqueues outside a caller's transaction
		// (enqueue.go; those for now are in readyStatements); the
		// notifier tells the other processes after (notify.go). $1 topic,
		// $2 data, or data[] in the order given; $3 run_at, or run_at[]
		// (a past time means now).
		insertAt: r.Replace(`INSERT INTO {T} (topic, data, run_at) VALUES ($1, $2, greatest(now(), $3::timestamptz))`),
		insertManyAt: r.Replace(`INSERT INTO {T} (topic, data, run_at)
			SELECT $1, u.d, greatest(now(), u.r) FROM (SELECT unnest($2::bytea[]) AS d, unnest($3::timestamptz[]) AS r) AS u`),

		// The enqueues in a caller's transaction, and the unique enqueue,
		// notify channel $n in the statement (so on commit) unless it is
		// '': then the notifier does it after.

		// $1 topic, $2 data, $3 run_at (a past time means now), $4 channel.
		enqueueAt: r.Replace(`WITH ins AS (
				INSERT INTO {T} (topic, data, run_at) VALUES ($1, $2, greatest(now(), $3::timestamptz)) RETURNING id)
			SELECT pg_notify($4, '') FROM ins WHERE $4 <> ''`),

		// $1 topic, $2 data, $3 channel, $4 unique key. One row when it
		// was inserted, none when the key was taken.
		enqueueUniq: r.Replace(`WITH ins AS (
				INSERT INTO {T} (topic, data, unique_key) VALUES ($1, $2, $4)
				ON CONFLICT (topic, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
				RETURNING id)
			SELECT ins.id FROM ins LEFT JOIN LATERAL (SELECT pg_notify($3, '') WHERE $3 <> '') n ON true`),

		// $1 channels: the notifier's round.
		notify: `SELECT pg_notify(c, '') FROM unnest($1::text[]) AS c`,

		// $1 topic: when the next pending message of the message table is
		// due (the ready table's are all due).
		nextRunAt: r.Replace(`SELECT min(run_at) FROM {T} WHERE topic = $1 AND status = 'pending'`),

		// Settles many deliveries in one statement, each fenced by its
		// token and its lease. $1 ids, $2 tokens, $3 new statuses, $4
		// delays µs (pending only), $5 reasons ('' keeps the last one).
		settle: r.Replace(`UPDATE {T} AS t SET
				status = s.status,
				run_at = CASE WHEN s.status = 'pending' THEN now() + s.delay * interval '1 microsecond' ELSE t.run_at END,
				last_error = coalesce(nullif(s.reason, ''), t.last_error),
				finished_at = CASE WHEN s.status = 'pending' THEN NULL ELSE now() END,
				lease_until = NULL
			FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[]) AS s(id, token, status, delay, reason)
			WHERE t.id = s.id AND t.token = s.token AND t.status = {PROCESSING} AND t.lease_until > now()
			RETURNING t.id, t.token`),

		// $1 id, $2 token, $3 lease µs.
		extend: r.Replace(`UPDATE {T} SET lease_until = now() + $3 * interval '1 microsecond'
			WHERE id = $1 AND token = $2 AND status = 'processing' AND lease_until > now()`),

		// Renews the leases of rows waiting in a buffer. $1 ids, $2
		// tokens, $3 lease µs; returns the ids renewed.
		renew: r.Replace(`UPDATE {T} AS t SET lease_until = now() + $3 * interval '1 microsecond'
			FROM unnest($1::bigint[], $2::bigint[]) AS s(id, token)
			WHERE t.id = s.id AND t.token = s.token AND t.status = {PROCESSING} AND t.lease_until > now()
			RETURNING t.id`),

		// Gives back rows claimed but never handed out, as if never
		// claimed. $1 ids, $2 tokens, $3 channel.
		release: r.Replace(`WITH r AS (
				UPDATE {T} AS t SET status = 'pending', attempts = t.attempts - 1, lease_until = NULL
				FROM unnest($1::bigint[], $2::bigint[]) AS s(id, token)
				WHERE t.id = s.id AND t.token = s.token AND t.status = {PROCESSING}
				RETURNING t.id)
			SELECT pg_notify($3, '') WHERE EXISTS (SELECT FROM r)`),

		// Makes rows whose lease ran out pending again at once, or dead if
		// their attempts are exhausted, and wakes their topics' consumers; it
		// returns each topic it touched, how many rows, and whether it got
		// messages back.
		// $1 limit, $2 max attempts, $3 channel prefix, $4 qualified table.
		rescue: r.Replace(`WITH x AS MATERIALIZED (
				SELECT id FROM {T} WHERE status = 'processing' AND lease_until <= now()
				ORDER BY lease_until LIMIT $1 FOR UPDATE SKIP LOCKED),
			u AS (
				UPDATE {T} AS t SET
					status = CASE WHEN t.attempts >= $2 THEN 'dead' ELSE 'pending' END,
					run_at = now(),
					lease_until = NULL,
					last_error = CASE WHEN t.attempts >= $2 THEN '` + backend.ReasonLeaseExpired + `' ELSE t.last_error END,
					finished_at = CASE WHEN t.attempts >= $2 THEN now() END
				FROM x WHERE t.id = x.id
				RETURNING t.topic, t.status)
			SELECT p.topic, p.n, p.pending FROM (
					SELECT topic, count(*) AS n, bool_or(status = 'pending') AS pending FROM u GROUP BY topic) p
				LEFT JOIN LATERAL (SELECT pg_notify($3::text || md5($4::text || ':' || p.topic), '')
					WHERE p.pending) n ON true`),

		// $1 retention µs, $2 limit.
		prune: r.Replace(`DELETE FROM {T} WHERE id IN (
				SELECT id FROM {T} WHERE status = 'finished' AND finished_at < now() - $1 * interval '1 microsecond'
				LIMIT $2 FOR UPDATE SKIP LOCKED)`),
	}
}

// readyStatements are the statements on one topic's ready table (migration
// 0003), built once the table is found: the enqueues of messages for now
// and the claim. The table's only index is its primary key on id.
type readyStatements struct {
	insert            string
	insertMany        string
	insertBlock       string
	enqueue           string
	enqueueBatch      string
	enqueueBatchBlock string
	claim             string
}

// newReadyStatements builds the statements on ready, the schema-qualified
// and quoted name of a topic's ready table, beside the message table named
// table whose id sequence is seq (schema-qualified and quoted).
func newReadyStatements(table, ready, seq string) readyStatements {
	r := strings.NewReplacer("{T}", quoteIdent(table), "{R}", ready, "{SEQ}", quoteLiteral(seq))
	const (
		// $1 topic, $2 data[] in the order given, one nextval per row.
		// Unnested in the select list, the elements come out in array
		// order and each row takes its id as it comes
		// (TestEnqueueBigBatchAlone and the conformance suite check it).
		perRow = `INSERT INTO {R} (topic, data) SELECT $1, unnest($2::bytea[])`
		// The same with one nextval for the statement (the WITH query b,
		// run once): at most as many rows as the sequence's increment
		// (migration 0004: 1024) take the ids of the block it reserves, in
		// the order given by construction (the block's first id plus the
		// row's position).
		block     = `b AS MATERIALIZED (SELECT nextval({SEQ}::regclass) AS first)`
		blockRows = `INSERT INTO {R} (id, topic, data)
			SELECT b.first + u.n - 1, $1, u.d FROM b, unnest($2::bytea[]) WITH ORDINALITY AS u(d, n)`
		// In a caller's transaction: notify channel $3 in the statement
		// (so on commit) unless it is ''.
		notifyIns = `SELECT pg_notify($3, '') WHERE $3 <> '' AND EXISTS (SELECT FROM ins)`
	)
	return readyStatements{
		// Outside a caller's transaction (enqueue.go): the notifier tells
		// the other processes after (notify.go). $1 topic, $2 data, or
		// data[].
		insert:      r.Replace(`INSERT INTO {R} (topic, data) VALUES ($1, $2)`),
		insertMany:  r.Replace(perRow),
		insertBlock: r.Replace(`WITH ` + block + ` ` + blockRows),

		// In a caller's transaction. $1 topic, $2 data or data[], $3
		// channel.
		enqueue: r.Replace(`WITH ins AS (
				INSERT INTO {R} (topic, data) VALUES ($1, $2) RETURNING id)
			SELECT pg_notify($3, '') FROM ins WHERE $3 <> ''`),
		enqueueBatch:      r.Replace(`WITH ins AS (` + perRow + ` RETURNING id) ` + notifyIns),
		enqueueBatchBlock: r.Replace(`WITH ` + block + `, ins AS (` + blockRows + ` RETURNING id) ` + notifyIns),

		// See claimSQL and topicState.claim.
		claim: r.Replace(claimSQL),
	}
}
