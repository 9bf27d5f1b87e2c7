-- The whole store in one file. Times are Unix microseconds.
--
-- A message is one row per subscription that gets it (its copy, with an
-- ID of its own). state: 0 ready (due at run_at; a run_at in the future
-- is scheduled), 1 processing (leased until run_at, to the delivery whose
-- token is token), 2 finished (acked at run_at; data cleared, kept for
-- its unique key and the ack count until pruned), 3 dead (died at
-- run_at). AUTOINCREMENT: an ID is never used twice in a file.
CREATE TABLE conveyor_messages (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	topic      TEXT    NOT NULL,
	sub        TEXT    NOT NULL,
	state      INTEGER NOT NULL DEFAULT 0 CHECK (state BETWEEN 0 AND 3),
	run_at     INTEGER NOT NULL,
	attempt    INTEGER NOT NULL DEFAULT 0,
	token      INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	ukey       TEXT,
	last_error TEXT,
	header     TEXT,
	data       BLOB    NOT NULL
);
-- The claim: the oldest due ready copy of a subscription; Peek and the
-- counts by state.
CREATE INDEX conveyor_messages_due ON conveyor_messages (topic, sub, state, run_at);
-- The rescue: leases that ran out.
CREATE INDEX conveyor_messages_leased ON conveyor_messages (run_at) WHERE state = 1;
-- Pruning: finished and dead rows past their retention.
CREATE INDEX conveyor_messages_settled ON conveyor_messages (state, run_at) WHERE state >= 2;
-- A unique key is taken in a subscription while a copy keeps it.
CREATE UNIQUE INDEX conveyor_messages_key ON conveyor_messages (topic, sub, ukey) WHERE ukey IS NOT NULL;

-- The subscriptions of each topic, seen by every process on the file. A
-- topic with none delivers to its default subscription. retry_* NULL:
-- each PubSub's own Options.Retry.
CREATE TABLE conveyor_subscriptions (
	topic                TEXT    NOT NULL,
	name                 TEXT    NOT NULL,
	created_at           INTEGER NOT NULL,
	retry_max_attempts   INTEGER,
	retry_min_backoff_ns INTEGER,
	retry_max_backoff_ns INTEGER,
	retry_jitter         REAL,
	PRIMARY KEY (topic, name)
) WITHOUT ROWID;

-- Pauses of a subscription that is not in conveyor_subscriptions (the
-- default one of a topic without subscriptions).
CREATE TABLE conveyor_pauses (
	topic TEXT NOT NULL,
	sub   TEXT NOT NULL,
	PRIMARY KEY (topic, sub)
) WITHOUT ROWID;

-- The inbox (pubsub.Claim): the keys each subscription's consumers claimed.
CREATE TABLE conveyor_inbox (
	topic      TEXT    NOT NULL,
	sub        TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	claimed_at INTEGER NOT NULL,
	PRIMARY KEY (topic, sub, key)
) WITHOUT ROWID;
