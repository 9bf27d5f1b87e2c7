package dbpubsub

import (
	"fmt"
	"strings"

	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/driver"
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
	settleAsync  string // settle with an asynchronous commit, for acks nobody waits for
	extend       string
	renew        string
	release      string
	rescue       string
	prune        string
	pruneDead    string

	// pausing (pause.go)
	pause  string
	resume string
	paused string

	// subscriptions (subscription.go) and the inbox (inbox.go)
	routeOf      string
	declare      string
	listSubs     string
	subRetry     string
	subExists    string
	dropSub      string
	dropCopies   string
	fanAt        string
	fanUnique    string
	claimInbox   string
	releaseInbox string
	pruneInbox   string
}

// guard is the condition that a publish statement's route is current: the
// version of topic $1's subscriptions is $n (0: it never had any). It is
// read in the statement's own snapshot, so the statement writes copies
// for exactly the subscriptions committed before it (subscription.go).
func guard(fanout string, n int) string {
	return fmt.Sprintf("coalesce((SELECT version FROM %s WHERE topic = $1), 0) = $%d", fanout, n)
}

// asyncCommit, an uncorrelated condition (evaluated once, before the
// statement's rows), turns synchronous_commit off for the statement's own
// transaction: its commit does not wait for the WAL flush. It is for the
// writes whose loss in a server crash only brings messages back, never
// loses one: claims, asynchronous acks, notifications (docs/design/dbpubsub.md,
// "Asynchronous commits").
const asyncCommit = `(SELECT set_config('synchronous_commit', 'off', true)) = 'off'`

// claimSQL takes up to $2 ready messages of topic $1 for a lease of $3
// µs, unless the queue is paused (p: one look-up of the paused table's
// primary key, evaluated once; then it takes nothing and returns one row
// of id 0, which no message has): first the due pending rows of the message table (delayed, retried,
// given back, unique), oldest first, then, for the rest, the rows of the
// topic's ready table above id $4 (the claim's keyset floor; 0 for all) in
// id order, moved into the message table as processing, with their
// headers. The last column tells the moved rows. RETURNING order is unspecified. The rows taken are
// found again by id = ANY (ARRAY(…)), an index condition in any plan (as a
// join, a generic plan may hash the whole ready table). Its commit is
// asynchronous ({ASYNC}): a claim lost in a server crash leaves its rows
// ready, to be delivered again.
const claimSQL = `WITH p AS MATERIALIZED (SELECT EXISTS (SELECT FROM {P} WHERE queue = $1) AS held),
	m AS MATERIALIZED (
		SELECT id FROM {T}
		WHERE topic = $1 AND status = 'pending' AND run_at <= now() AND {ASYNC} AND NOT (SELECT held FROM p)
		ORDER BY run_at, id LIMIT $2
		FOR UPDATE SKIP LOCKED),
	mu AS (
		UPDATE {T} AS t SET status = 'processing', attempts = t.attempts + 1, token = t.token + 1,
			lease_until = now() + $3 * interval '1 microsecond'
		WHERE t.id = ANY (ARRAY(SELECT id FROM m))
		RETURNING t.id, t.data, t.attempts, t.token, t.run_at, t.headers),
	r AS MATERIALIZED (
		SELECT id FROM {R}
		WHERE id > $4 AND NOT (SELECT held FROM p)
		ORDER BY id LIMIT greatest($2 - (SELECT count(*) FROM m), 0)
		FOR UPDATE SKIP LOCKED),
	rd AS (
		DELETE FROM {R} WHERE id = ANY (ARRAY(SELECT id FROM r))
		RETURNING id, data, created_at, headers),
	ri AS (
		INSERT INTO {T} (id, topic, data, status, run_at, attempts, token, lease_until, created_at, headers)
		OVERRIDING SYSTEM VALUE
		SELECT id, $1, data, 'processing', created_at, 1, 1,
			now() + $3 * interval '1 microsecond', created_at, headers
		FROM rd
		RETURNING id, data, attempts, token, run_at, headers)
	SELECT id, data, attempts, token, run_at, headers, false FROM mu
	UNION ALL
	SELECT id, data, attempts, token, run_at, headers, true FROM ri
	UNION ALL
	SELECT 0, NULL, 0, 0, now(), NULL, false FROM p WHERE p.held`

// settleSQL settles the deliveries of rows $1 with tokens $2: status $3,
// for status pending after $4 µs, with reason $5 (” keeps the last); it
// returns the rows settled (a row not returned was no longer leased to
// the delivery). {AND} is where the asynchronous variant adds {ASYNC}.
const settleSQL = `UPDATE {T} AS t SET
		status = s.status,
		run_at = CASE WHEN s.status = 'pending' THEN now() + s.delay * interval '1 microsecond' ELSE t.run_at END,
		last_error = coalesce(nullif(s.reason, ''), t.last_error),
		finished_at = CASE WHEN s.status = 'pending' THEN NULL ELSE now() END,
		lease_until = NULL
	FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[]) AS s(id, token, status, delay, reason)
	WHERE t.id = s.id AND t.token = s.token AND t.status = {PROCESSING} AND t.lease_until > now(){AND}
	RETURNING t.id, t.token`

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
	fan := quoteIdent(migrations.FanoutTable(table))
	r := strings.NewReplacer("{T}", t, "{PROCESSING}", processingByID, "{ASYNC}", asyncCommit,
		"{F}", fan, "{S}", quoteIdent(migrations.SubscriptionsTable(table)), "{I}", quoteIdent(migrations.InboxTable(table)),
		"{P}", quoteIdent(migrations.PausedTable(table)),
		"{G4}", guard(fan, 4), "{G5}", guard(fan, 5), "{G2}", guard(fan, 2))
	return statements{
		// The schema-qualified name of the table found in the search_path,
		// whether it has the headers column (migration 0007), whether
		// the paused table $2 is beside it (migration 0008), and whether
		// the subscriptions table $3 keeps retry policies (migration 0009;
		// true without the table, which its own statements report as 0005).
		resolve: `SELECT n.nspname || '.' || c.relname, EXISTS (SELECT FROM pg_catalog.pg_attribute a
				WHERE a.attrelid = c.oid AND a.attname = 'headers' AND NOT a.attisdropped),
				to_regclass(format('%I.%I', n.nspname, $2::text)) IS NOT NULL,
				to_regclass(format('%I.%I', n.nspname, $3::text)) IS NULL OR EXISTS (SELECT FROM pg_catalog.pg_attribute a
					WHERE a.attrelid = to_regclass(format('%I.%I', n.nspname, $3::text))
						AND a.attname = 'retry_max_attempts' AND NOT a.attisdropped)
			FROM pg_catalog.pg_class c
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
		// (a past time means now); $4 the route's version (guard); $5
		// the headers, or headers[] (NULL: none has one; see headerArg).
		insertAt: r.Replace(`INSERT INTO {T} (topic, data, run_at, headers)
			SELECT $1, $2, greatest(now(), $3::timestamptz), $5::jsonb WHERE {G4}`),
		insertManyAt: r.Replace(`INSERT INTO {T} (topic, data, run_at, headers)
			SELECT $1, u.d, greatest(now(), u.r), u.h
			FROM (SELECT unnest($2::bytea[]) AS d, unnest($3::timestamptz[]) AS r, unnest($5::jsonb[]) AS h) AS u
			WHERE {G4}`),

		// The enqueues in a caller's transaction, and the unique enqueue,
		// notify channel $n in the statement (so on commit) unless it is
		// '': then the notifier does it after.

		// $1 topic, $2 data, $3 run_at (a past time means now), $4 channel,
		// $5 the route's version (guard), $6 the headers.
		enqueueAt: r.Replace(`WITH ins AS (
				INSERT INTO {T} (topic, data, run_at, headers)
				SELECT $1, $2, greatest(now(), $3::timestamptz), $6::jsonb WHERE {G5} RETURNING id)
			SELECT pg_notify($4, '') FROM ins WHERE $4 <> ''`),

		// $1 topic, $2 data, $3 channel, $4 unique key, $5 the route's
		// version, $6 the headers. One row: whether the route was
		// current, and the id inserted, NULL when the key was taken.
		enqueueUniq: r.Replace(`WITH g AS MATERIALIZED (SELECT {G5} AS ok),
			ins AS (
				INSERT INTO {T} (topic, data, unique_key, headers) SELECT $1, $2, $4, $6::jsonb FROM g WHERE g.ok
				ON CONFLICT (topic, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
				RETURNING id)
			SELECT g.ok, ins.id FROM g LEFT JOIN ins ON true
				LEFT JOIN LATERAL (SELECT pg_notify($3, '') WHERE $3 <> '' AND ins.id IS NOT NULL) n ON true`),

		// $1 channels, $2 the payload naming the store (store.sender): the
		// notifier's round.
		notify: r.Replace(`SELECT pg_notify(c, $2) FROM unnest($1::text[]) AS c WHERE {ASYNC}`),

		// $1 topic: when the next pending message of the message table is
		// due (the ready table's are all due).
		nextRunAt: r.Replace(`SELECT min(run_at) FROM {T} WHERE topic = $1 AND status = 'pending'`),

		// Settles many deliveries in one statement, each fenced by its
		// token and its lease (see settleSQL); settleAsync for a batch of
		// asynchronous acks only.
		settle:      r.Replace(strings.Replace(settleSQL, "{AND}", "", 1)),
		settleAsync: r.Replace(strings.Replace(settleSQL, "{AND}", " AND {ASYNC}", 1)),

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
		// returns each topic it touched, how many rows, whether it got
		// messages back, and the rows it made dead ("id:attempts,...", NULL
		// if none). The rows are found again as in the claim.
		// $1 limit, $2 max attempts (of a subscription without its own:
		// the queue's subscription's retry_max_attempts, migration 0009,
		// found by the primary key from the queue's name, comes first),
		// $3 channel prefix, $4 qualified table.
		rescue: r.Replace(`WITH x AS MATERIALIZED (
				SELECT e.id, coalesce((SELECT s.retry_max_attempts FROM {S} AS s
						WHERE s.topic = split_part(e.topic, chr(31), 1)
							AND s.name = coalesce(nullif(split_part(e.topic, chr(31), 2), ''), '` + pubsub.DefaultSubscription + `')),
						$2) AS max
				FROM {T} AS e WHERE e.status = 'processing' AND e.lease_until <= now()
				ORDER BY e.lease_until LIMIT $1 FOR UPDATE OF e SKIP LOCKED),
			u AS (
				UPDATE {T} AS t SET
					status = CASE WHEN t.attempts >= x.max THEN 'dead' ELSE 'pending' END,
					run_at = now(),
					lease_until = NULL,
					last_error = CASE WHEN t.attempts >= x.max THEN '` + driver.ReasonLeaseExpired + `' ELSE t.last_error END,
					finished_at = CASE WHEN t.attempts >= x.max THEN now() END
				FROM x
				WHERE t.id = ANY (ARRAY(SELECT id FROM x)) AND t.id = x.id
				RETURNING t.topic, t.status, t.id, t.attempts)
			SELECT p.topic, p.n, p.pending, p.dead FROM (
					SELECT topic, count(*) AS n, bool_or(status = 'pending') AS pending,
						string_agg(id || ':' || attempts, ',') FILTER (WHERE status = 'dead') AS dead
					FROM u GROUP BY topic) p
				LEFT JOIN LATERAL (SELECT pg_notify($3::text || md5($4::text || ':' || p.topic), '')
					WHERE p.pending) n ON true`),

		// $1 topic: the version of its subscriptions and their names, in
		// name order, in one snapshot; one row with a NULL name when it
		// has none.
		routeOf: r.Replace(`SELECT coalesce((SELECT version FROM {F} WHERE topic = $1), 0), s.name
			FROM (SELECT) AS x LEFT JOIN {S} AS s ON s.topic = $1 ORDER BY s.name`),

		// Creates subscription $2 of topic $1 unless it exists, with the
		// retry policy $3 to $6 (NULL: none of its own; migration 0009),
		// and then counts the change.
		declare: r.Replace(`WITH s AS (
				INSERT INTO {S} (topic, name, retry_max_attempts, retry_min_backoff_ns, retry_max_backoff_ns, retry_jitter)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING topic)
			INSERT INTO {F} AS f (topic, version) SELECT topic, 1 FROM s
			ON CONFLICT (topic) DO UPDATE SET version = f.version + 1`),

		// The retry policy of subscription $2 of topic $1 (NULLs: none
		// of its own); no row when it does not exist.
		subRetry: r.Replace(`SELECT retry_max_attempts, retry_min_backoff_ns, retry_max_backoff_ns, retry_jitter
			FROM {S} WHERE topic = $1 AND name = $2`),

		// $1 topic.
		listSubs: r.Replace(`SELECT name FROM {S} WHERE topic = $1 ORDER BY name`),
		// Whether topic $1 has subscription $2.
		subExists: r.Replace(`SELECT EXISTS (SELECT FROM {S} WHERE topic = $1 AND name = $2)`),

		// Deletes subscription $2 of topic $1, counting the change; one
		// row when it existed.
		dropSub: r.Replace(`WITH d AS (DELETE FROM {S} WHERE topic = $1 AND name = $2 RETURNING topic),
			v AS (UPDATE {F} SET version = version + 1 WHERE topic IN (SELECT topic FROM d))
			SELECT 1 FROM d`),
		// The copies, inbox keys and pause of queue $1, once its
		// subscription is deleted (its ready table is emptied beside).
		dropCopies: r.Replace(`WITH i AS (DELETE FROM {I} WHERE queue = $1),
				p AS (DELETE FROM {P} WHERE queue = $1)
			DELETE FROM {T} WHERE topic = $1`),

		// A publish for later (or in a caller's transaction for later)
		// into queues $3 beside their topic $1 of version $2 (guard): the
		// rows of data $4 to run at $5 with headers $7, in the order
		// given, for each queue; channels $6 notified in the statement.
		// One row when the route was current.
		fanAt: r.Replace(`WITH g AS MATERIALIZED (SELECT {G2} AS ok),
			i AS (
				INSERT INTO {T} (topic, data, run_at, headers)
				SELECT q.name, u.d, greatest(now(), u.r), u.h
				FROM g, unnest($3::text[]) WITH ORDINALITY AS q(name, k),
					unnest($4::bytea[], $5::timestamptz[], $7::jsonb[]) WITH ORDINALITY AS u(d, r, h, n)
				WHERE g.ok ORDER BY q.k, u.n),
			n AS (SELECT pg_notify(c, '') FROM g, unnest($6::text[]) AS c WHERE g.ok)
			SELECT 1 FROM g WHERE g.ok AND (SELECT count(*) FROM n) >= 0`),

		// A unique publish into queues $3 beside their topic $1 of
		// version $2: data $4 with headers $7 under key $5 in each queue
		// that does not keep the key; channels $6 notified in the
		// statement when one was added. One row: whether the route was
		// current, and how many copies were added.
		fanUnique: r.Replace(`WITH g AS MATERIALIZED (SELECT {G2} AS ok),
			i AS (
				INSERT INTO {T} (topic, data, unique_key, headers)
				SELECT q, $4, $5, $7::jsonb FROM g, unnest($3::text[]) AS q WHERE g.ok
				ON CONFLICT (topic, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
				RETURNING topic),
			n AS (SELECT pg_notify(c, '') FROM unnest($6::text[]) AS c WHERE EXISTS (SELECT FROM i))
			SELECT g.ok, (SELECT count(*) FROM i) + 0 * (SELECT count(*) FROM n) FROM g`),

		// $1 queue, $2 key: one row affected when the claim is the first.
		claimInbox:   r.Replace(`INSERT INTO {I} (queue, key) VALUES ($1, $2) ON CONFLICT DO NOTHING`),
		releaseInbox: r.Replace(`DELETE FROM {I} WHERE queue = $1 AND key = $2`),
		// $1 retention µs, $2 limit.
		pruneInbox: r.Replace(`DELETE FROM {I} WHERE (queue, key) IN (
				SELECT queue, key FROM {I} WHERE claimed_at < now() - $1 * interval '1 microsecond'
				LIMIT $2 FOR UPDATE SKIP LOCKED)`),

		// $1 retention µs, $2 limit.
		// The rows are found again by id = ANY (ARRAY(…)), as in the
		// claim: as a join, the generic plan hashed the whole table.
		prune: r.Replace(`DELETE FROM {T} WHERE id = ANY (ARRAY(
				SELECT id FROM {T} WHERE status = 'finished' AND finished_at < now() - $1 * interval '1 microsecond'
				LIMIT $2 FOR UPDATE SKIP LOCKED))`),
		// The same for dead rows (their finished_at is when they died;
		// the died index of migration 0008).
		pruneDead: r.Replace(`DELETE FROM {T} WHERE id = ANY (ARRAY(
				SELECT id FROM {T} WHERE status = 'dead' AND finished_at < now() - $1 * interval '1 microsecond'
				LIMIT $2 FOR UPDATE SKIP LOCKED))`),

		// Pause and resume queue $1, telling its consumers in every
		// process on its channel $2 (the payload says which: listen.go);
		// whether queue $1 is paused.
		pause: r.Replace(`WITH i AS (INSERT INTO {P} (queue) VALUES ($1) ON CONFLICT DO NOTHING)
			SELECT pg_notify($2, '` + payloadPause + `')`),
		resume: r.Replace(`WITH d AS (DELETE FROM {P} WHERE queue = $1)
			SELECT pg_notify($2, '` + payloadResume + `')`),
		paused: r.Replace(`SELECT EXISTS (SELECT FROM {P} WHERE queue = $1)`),
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
// table whose id sequence is seq (schema-qualified and quoted). The
// enqueues write into the queue of a topic's default subscription when it
// is the topic's one route (subscription.go): each is guarded by the
// route's version.
func newReadyStatements(table, ready, seq string) readyStatements {
	fan := quoteIdent(migrations.FanoutTable(table))
	r := strings.NewReplacer("{T}", quoteIdent(table), "{R}", ready, "{SEQ}", quoteLiteral(seq),
		"{P}", quoteIdent(migrations.PausedTable(table)),
		"{G3}", guard(fan, 3), "{G4}", guard(fan, 4), "{ASYNC}", asyncCommit)
	const (
		// $1 topic, $2 data[] in the order given, {H} headers[] (NULL:
		// none has one), one nextval per row. Unnested in the select
		// list, the elements come out in array order, side by side (the
		// shorter, or NULL, array padded with NULLs), and each row takes
		// its id as it comes (TestEnqueueBigBatchAlone and the
		// conformance suite check it).
		perRow = `INSERT INTO {R} (topic, data, headers) SELECT $1, unnest($2::bytea[]), unnest({H}::jsonb[]) WHERE {G}`
		// The same with one nextval for the statement (the WITH query b,
		// run once): at most as many rows as the sequence's increment
		// (migration 0004: 1024) take the ids of the block it reserves, in
		// the order given by construction (the block's first id plus the
		// row's position).
		block     = `b AS MATERIALIZED (SELECT nextval({SEQ}::regclass) AS first)`
		blockRows = `INSERT INTO {R} (id, topic, data, headers)
			SELECT b.first + u.n - 1, $1, u.d, u.h FROM b, unnest($2::bytea[], {H}::jsonb[]) WITH ORDINALITY AS u(d, h, n)
			WHERE {G}`
		// In a caller's transaction: notify channel $3 in the statement
		// (so on commit) unless it is ''.
		notifyIns = `SELECT pg_notify($3, '') WHERE $3 <> '' AND EXISTS (SELECT FROM ins)`
	)
	// The route's version is $3 outside a caller's transaction, $4
	// inside; the headers ({H}) are the parameter after it.
	out := func(q string) string {
		return r.Replace(strings.NewReplacer("{G}", "{G3}", "{H}", "$4").Replace(q))
	}
	in := func(q string) string {
		return r.Replace(strings.NewReplacer("{G}", "{G4}", "{H}", "$5").Replace(q))
	}
	return readyStatements{
		// Outside a caller's transaction (enqueue.go): the notifier tells
		// the other processes after (notify.go). $1 topic, $2 data, or
		// data[]; $4 the headers, or headers[].
		insert:      out(`INSERT INTO {R} (topic, data, headers) SELECT $1, $2, {H}::jsonb WHERE {G}`),
		insertMany:  out(perRow),
		insertBlock: out(`WITH ` + block + ` ` + blockRows),

		// In a caller's transaction. $1 topic, $2 data or data[], $3
		// channel, $5 the headers or headers[].
		enqueue: in(`WITH ins AS (
				INSERT INTO {R} (topic, data, headers) SELECT $1, $2, {H}::jsonb WHERE {G} RETURNING id)
			SELECT pg_notify($3, '') FROM ins WHERE $3 <> ''`),
		enqueueBatch:      in(`WITH ins AS (` + perRow + ` RETURNING id) ` + notifyIns),
		enqueueBatchBlock: in(`WITH ` + block + `, ins AS (` + blockRows + ` RETURNING id) ` + notifyIns),

		// See claimSQL and topicState.claim.
		claim: r.Replace(claimSQL),
	}
}

// fanNowSQL is the statement that publishes messages for now to the queues
// whose ready tables are readies (schema-qualified and quoted), beside
// their topic $1 of version $2 (guard): the rows of data $4 with headers
// $6, in the order given, into each queue, the i-th named ($3)[i];
// channels $5 notified in the statement. One row when the route was current. With block, each
// queue's rows take the ids of one block of the sequence seq (as
// newReadyStatements's insertBlock does: at most its increment of rows),
// else one nextval each.
func fanNowSQL(table, seq string, readies []string, block bool) string {
	fan := quoteIdent(migrations.FanoutTable(table))
	var b strings.Builder
	fmt.Fprintf(&b, "WITH g AS MATERIALIZED (SELECT %s AS ok)", guard(fan, 2))
	for i, ready := range readies {
		if block {
			fmt.Fprintf(&b, `,
			b%d AS MATERIALIZED (SELECT nextval(%s::regclass) AS first),
			i%d AS (INSERT INTO %s (id, topic, data, headers) SELECT b%d.first + u.n - 1, ($3::text[])[%d], u.d, u.h
				FROM g, b%d, unnest($4::bytea[], $6::jsonb[]) WITH ORDINALITY AS u(d, h, n) WHERE g.ok)`, i, quoteLiteral(seq), i, ready, i, i+1, i)
			continue
		}
		fmt.Fprintf(&b, `,
			i%d AS (INSERT INTO %s (topic, data, headers) SELECT ($3::text[])[%d], u.d, u.h
				FROM g, unnest($4::bytea[], $6::jsonb[]) WITH ORDINALITY AS u(d, h, n) WHERE g.ok ORDER BY u.n)`, i, ready, i+1)
	}
	b.WriteString(`,
			n AS (SELECT pg_notify(c, '') FROM g, unnest($5::text[]) AS c WHERE g.ok)
		SELECT 1 FROM g WHERE g.ok AND (SELECT count(*) FROM n) >= 0`)
	return b.String()
}
