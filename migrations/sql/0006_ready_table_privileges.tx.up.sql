-- <table>_ready_table runs with its owner's rights (SECURITY DEFINER), so
-- only the roles that use the tables may call it, and nothing the caller
-- can create may change what it does. Its search_path is the schema the
-- migrations run in (the message table's), then pg_temp, last: a
-- temporary table named like the registry no longer shadows it (with
-- pg_temp unlisted, PostgreSQL searched it first). Every table it names is
-- qualified with that schema as well. It refuses a name that is empty or
-- longer than 1000 bytes (dbpubsub passes a topic's name, or for a named
-- subscription the topic's name, U+001F and the subscription's; text
-- cannot hold a NUL). The body is the same as 0003's otherwise; the schema
-- is known only now, so the function is made by a DO block.
DO $do$
DECLARE
    s text := current_schema();
    body text := $body$
DECLARE
    s constant text := @schema@;
    n int;
    g record;
BEGIN
    IF t IS NULL OR t = '' OR octet_length(t) > 1000 THEN
        RAISE EXCEPTION '{{.Prefix}}_ready_table: a topic''s name must be 1 to 1000 bytes, got %',
            coalesce(octet_length(t) || ' bytes', 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE format('SELECT id FROM %I.%I WHERE topic = $1', s, '{{.Prefix}}_topics') INTO n USING t;
    IF n IS NULL THEN
        EXECUTE format('INSERT INTO %I.%I (topic) VALUES ($1) ON CONFLICT (topic) DO NOTHING RETURNING id',
            s, '{{.Prefix}}_topics') INTO n USING t;
        IF n IS NULL THEN
            EXECUTE format('SELECT id FROM %I.%I WHERE topic = $1', s, '{{.Prefix}}_topics') INTO STRICT n USING t;
        ELSE
            EXECUTE format('CREATE TABLE %I.%I (topic text COLLATE "C" NOT NULL CHECK (topic = %L), PRIMARY KEY (id)) '
                'INHERITS (%I.%I) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)',
                s, '{{.Prefix}}_ready_' || n, t, s, '{{.Prefix}}_ready');
            FOR g IN SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS who,
                    a.privilege_type AS what
                FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
                WHERE c.oid = format('%I.%I', s, '{{.Prefix}}_ready')::regclass AND a.grantee <> c.relowner
            LOOP
                EXECUTE format('GRANT %s ON %I.%I TO %s', g.what, s, '{{.Prefix}}_ready_' || n, g.who);
            END LOOP;
        END IF;
    END IF;
    RETURN format('%I.%I', s, '{{.Prefix}}_ready_' || n);
END
$body$;
BEGIN
    EXECUTE format('CREATE OR REPLACE FUNCTION %1$I.%2$I(t text) RETURNS text '
        'LANGUAGE plpgsql SECURITY DEFINER SET search_path = %1$I, pg_temp SET client_min_messages = warning AS %3$L',
        s, '{{.Prefix}}_ready_table', replace(body, '@schema@', quote_literal(s)));
END
$do$;
--bun:split
-- Only the roles that hold privileges on the message table or the ready
-- table (the app's, granted before this migration) may call it; a role
-- granted them later needs GRANT EXECUTE ON FUNCTION <table>_ready_table(text)
-- as well. Grants to PUBLIC are not copied: that would undo the revoke.
DO $do$
DECLARE
    s text := current_schema();
    r name;
BEGIN
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %I.%I(text) FROM PUBLIC', s, '{{.Prefix}}_ready_table');
    FOR r IN SELECT DISTINCT pg_get_userbyid(a.grantee)
        FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
        WHERE c.oid IN (format('%I.%I', s, '{{.Prefix}}')::regclass, format('%I.%I', s, '{{.Prefix}}_ready')::regclass)
            AND a.grantee <> 0 AND a.grantee <> c.relowner
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %I.%I(text) TO %I', s, '{{.Prefix}}_ready_table', r);
    END LOOP;
END
$do$;
