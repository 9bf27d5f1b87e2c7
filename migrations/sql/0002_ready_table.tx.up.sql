-- The ready table of dbpubsub: messages enqueued for delivery at once and
-- not yet claimed. It has one index, so an enqueue costs about what an
-- insert into a bare (id, data) table costs; the claim moves each row into
-- the message table, as 'processing', in the statement that takes it.
-- Delayed and unique messages, and everything once claimed, live in the
-- message table.
CREATE TABLE "{{.Prefix}}_ready" (
    id         bigint           NOT NULL,
    topic      text COLLATE "C" NOT NULL,
    data       bytea            NOT NULL,
    created_at timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, id)
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
--bun:split
-- Ids come from the message table's sequence: a row keeps its id when it
-- moves.
DO $$ BEGIN
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id SET DEFAULT nextval(%L::regclass)',
        '{{.Prefix}}_ready', pg_get_serial_sequence('{{.Table}}', 'id'));
END $$;
--bun:split
-- Every message, wherever it is stored, in the message table's columns:
-- for inspection and reports, never used by dbpubsub itself.
CREATE VIEW "{{.Prefix}}_all" AS
    SELECT id, topic, status, run_at, data, attempts, token, lease_until,
        last_error, unique_key, created_at, finished_at
    FROM {{.Table}}
    UNION ALL
    SELECT id, topic, 'pending', created_at, data, 0, 0, NULL::timestamptz,
        NULL::text, NULL::text, created_at, NULL::timestamptz
    FROM "{{.Prefix}}_ready";
