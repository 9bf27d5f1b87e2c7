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
