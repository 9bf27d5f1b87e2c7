-- Each message's header (pubsub.Header): a JSON object of strings, NULL
-- when the message has none. A column of the ready table is a column of
-- every topic's ready table (its children, those made before this
-- migration and those <table>_ready_table makes after), so the claim moves
-- a row's header with it into the message table. Nullable and without a
-- default, the columns are added without rewriting any table.
ALTER TABLE {{.Table}} ADD COLUMN headers jsonb;
--bun:split
ALTER TABLE "{{.Prefix}}_ready" ADD COLUMN headers jsonb;
--bun:split
-- The view over every message shows it too.
CREATE OR REPLACE VIEW "{{.Prefix}}_all" AS
    SELECT id, topic, status, run_at, data, attempts, token, lease_until,
        last_error, unique_key, created_at, finished_at, headers
    FROM {{.Table}}
    UNION ALL
    SELECT id, topic, 'pending', created_at, data, 0, 0, NULL::timestamptz,
        NULL::text, NULL::text, created_at, NULL::timestamptz, headers
    FROM "{{.Prefix}}_ready";
