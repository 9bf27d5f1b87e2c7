-- Each topic's ready messages wait in a table of its own, a child of the
-- ready table (table inheritance) whose only index is its primary key on
-- id: an enqueue then costs what an insert into a bare (id, data) table
-- costs, where the shared table's (topic, id) key cost 15-20% of the
-- insert rate. Reading the ready table still shows every topic's rows (the
-- view <table>_all and the processes older than this migration see them).
-- The registry of topics names each topic's table: <table>_ready_<id>.
CREATE TABLE "{{.Prefix}}_topics" (
    id         int              GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic      text COLLATE "C" NOT NULL UNIQUE,
    created_at timestamptz      NOT NULL DEFAULT now()
);
--bun:split
-- Returns the schema-qualified, quoted name of topic t's ready table,
-- creating the table (and registering t) on first use. Concurrent first
-- calls are serialised by the registry's unique key: the second waits for
-- the first to commit, then finds its table. It runs with the rights of
-- its owner (who ran the migrations), so an app whose role may only read
-- and write the tables can use new topics; the new table gets the grants
-- that the ready table has.
CREATE FUNCTION "{{.Prefix}}_ready_table"(t text) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path FROM CURRENT
SET client_min_messages = warning
AS $f$
DECLARE
    n int;
    g record;
BEGIN
    SELECT id INTO n FROM "{{.Prefix}}_topics" WHERE topic = t;
    IF n IS NULL THEN
        INSERT INTO "{{.Prefix}}_topics" (topic) VALUES (t)
            ON CONFLICT (topic) DO NOTHING RETURNING id INTO n;
        IF n IS NULL THEN
            SELECT id INTO STRICT n FROM "{{.Prefix}}_topics" WHERE topic = t;
        ELSE
            EXECUTE format('CREATE TABLE %I (topic text COLLATE "C" NOT NULL CHECK (topic = %L), PRIMARY KEY (id)) '
                'INHERITS (%I) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)',
                '{{.Prefix}}_ready_' || n, t, '{{.Prefix}}_ready');
            FOR g IN SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS who,
                    a.privilege_type AS what
                FROM pg_class c, aclexplode(c.relacl) a
                WHERE c.oid = '"{{.Prefix}}_ready"'::regclass AND a.grantee <> c.relowner
            LOOP
                EXECUTE format('GRANT %s ON %I TO %s', g.what, '{{.Prefix}}_ready_' || n, g.who);
            END LOOP;
        END IF;
    END IF;
    RETURN quote_ident(current_schema()) || '.' || quote_ident('{{.Prefix}}_ready_' || n);
END
$f$;
--bun:split
-- The rows waiting in the ready table move to their topics' tables.
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT DISTINCT topic FROM ONLY "{{.Prefix}}_ready" LOOP
        EXECUTE format('WITH d AS (DELETE FROM ONLY %I WHERE topic = $1 RETURNING id, topic, data, created_at) '
            'INSERT INTO %s (id, topic, data, created_at) SELECT id, topic, data, created_at FROM d',
            '{{.Prefix}}_ready', "{{.Prefix}}_ready_table"(t)) USING t;
    END LOOP;
END
$$;
--bun:split
-- A process older than this migration inserts into the ready table
-- itself: its rows go on to their topic's table.
CREATE FUNCTION "{{.Prefix}}_ready_route"() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $f$
BEGIN
    EXECUTE format('INSERT INTO %s (id, topic, data, created_at) VALUES ($1, $2, $3, $4)',
        "{{.Prefix}}_ready_table"(NEW.topic)) USING NEW.id, NEW.topic, NEW.data, NEW.created_at;
    RETURN NULL;
END
$f$;
--bun:split
CREATE TRIGGER route_to_topic BEFORE INSERT ON "{{.Prefix}}_ready"
    FOR EACH ROW EXECUTE FUNCTION "{{.Prefix}}_ready_route"();
