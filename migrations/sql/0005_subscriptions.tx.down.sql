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
            RAISE EXCEPTION 'the message table {{.Prefix}} keeps % message(s) not finished (ready, scheduled, processing or dead), which this down migration (%) could make undeliverable; deliver, purge or keep them (set conveyor.force_down = on, or migrations.WithForceDown, to run it anyway)', n, '0005_subscriptions'
                USING ERRCODE = 'CVD01';
        END IF;
    END IF;
END
$guard$;
--bun:split
-- The copies of named subscriptions stay in the message table and the
-- ready tables, in queues no process reads any more.
DROP TABLE IF EXISTS "{{.Prefix}}_inbox";
--bun:split
DROP TABLE IF EXISTS "{{.Prefix}}_fanout";
--bun:split
DROP TABLE IF EXISTS "{{.Prefix}}_subscriptions";
