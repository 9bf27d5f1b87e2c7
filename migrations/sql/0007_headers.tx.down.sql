-- The messages lose their headers; the view is 0002's again.
DROP VIEW IF EXISTS "{{.Prefix}}_all";
--bun:split
ALTER TABLE "{{.Prefix}}_ready" DROP COLUMN IF EXISTS headers;
--bun:split
ALTER TABLE {{.Table}} DROP COLUMN IF EXISTS headers;
--bun:split
CREATE VIEW "{{.Prefix}}_all" AS
    SELECT id, topic, status, run_at, data, attempts, token, lease_until,
        last_error, unique_key, created_at, finished_at
    FROM {{.Table}}
    UNION ALL
    SELECT id, topic, 'pending', created_at, data, 0, 0, NULL::timestamptz,
        NULL::text, NULL::text, created_at, NULL::timestamptz
    FROM "{{.Prefix}}_ready";
