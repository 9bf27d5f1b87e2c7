-- The message table of dbpubsub: one row per message.
CREATE TABLE {{.Table}} (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic       text        NOT NULL,
    status      text        NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'processing', 'finished', 'dead')),
    run_at      timestamptz NOT NULL DEFAULT now(),
    data        bytea       NOT NULL,
    attempts    integer     NOT NULL DEFAULT 0,
    token       bigint      NOT NULL DEFAULT 0,
    lease_until timestamptz,
    last_error  text,
    unique_key  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
--bun:split
-- Serves the claim: the oldest ready row of a topic.
CREATE INDEX {{.Prefix}}_claim_idx ON {{.Table}} (topic, run_at, id) WHERE status = 'pending';
--bun:split
-- Serves the lease rescue.
CREATE INDEX {{.Prefix}}_lease_idx ON {{.Table}} (lease_until) WHERE status = 'processing';
--bun:split
-- Serves pruning of finished rows.
CREATE INDEX {{.Prefix}}_finished_idx ON {{.Table}} (finished_at) WHERE status = 'finished';
--bun:split
-- Serves listing dead letters, oldest death first.
CREATE INDEX {{.Prefix}}_dead_idx ON {{.Table}} (topic, finished_at, id) WHERE status = 'dead';
--bun:split
-- Serves unique enqueue: one message per key and topic while the row is
-- kept (finished rows until they are pruned).
CREATE UNIQUE INDEX {{.Prefix}}_unique_idx ON {{.Table}} (topic, unique_key) WHERE unique_key IS NOT NULL;
