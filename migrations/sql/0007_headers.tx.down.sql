-- Refuses while the table keeps messages not finished (see
-- migrations.Down and docs/design/migrations.md, "Down migrations"),
-- unless conveyor.force_down is on in the session.
DO $guard$
DECLARE
    n bigint;
BEGIN
    IF coalesce(current_setting('conveyor.force_down', true), '') <> 'on' THEN
        SELECT (SELECT count(*) FROM {{.Table}} WHERE status <> 'finished')
            + (SELECT count(*) FROM "{{.Prefix}}_ready") INTO n;
        IF n > 0 THEN
            RAISE EXCEPTION 'the message table {{.Prefix}} keeps % message(s) not finished (ready, scheduled, processing or dead), which this down migration (%) could make undeliverable; deliver, purge or keep them (set conveyor.force_down = on, or migrations.WithForceDown, to run it anyway)', n, '0007_headers'
                USING ERRCODE = 'CVD01';
        END IF;
    END IF;
END
$guard$;
--bun:split
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
