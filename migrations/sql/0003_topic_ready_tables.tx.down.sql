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
            RAISE EXCEPTION 'the message table {{.Prefix}} keeps % message(s) not finished (ready, scheduled, processing or dead), which this down migration (%) could make undeliverable; deliver, purge or keep them (set conveyor.force_down = on, or migrations.WithForceDown, to run it anyway)', n, '0003_topic_ready_tables'
                USING ERRCODE = 'CVD01';
        END IF;
    END IF;
END
$guard$;
--bun:split
-- Moves the rows of the topics' ready tables back into the ready table.
DROP TRIGGER IF EXISTS route_to_topic ON "{{.Prefix}}_ready";
--bun:split
DO $$
DECLARE
    n int;
BEGIN
    FOR n IN SELECT id FROM "{{.Prefix}}_topics" LOOP
        IF to_regclass(quote_ident('{{.Prefix}}_ready_' || n)) IS NOT NULL THEN
            EXECUTE format('INSERT INTO %I (id, topic, data, created_at) SELECT id, topic, data, created_at FROM %I',
                '{{.Prefix}}_ready', '{{.Prefix}}_ready_' || n);
            EXECUTE format('DROP TABLE %I', '{{.Prefix}}_ready_' || n);
        END IF;
    END LOOP;
END
$$;
--bun:split
DROP FUNCTION IF EXISTS "{{.Prefix}}_ready_route"();
--bun:split
DROP FUNCTION IF EXISTS "{{.Prefix}}_ready_table"(text);
--bun:split
DROP TABLE IF EXISTS "{{.Prefix}}_topics";
