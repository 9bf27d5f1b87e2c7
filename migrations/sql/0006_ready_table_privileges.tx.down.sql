-- 0003's function again: search_path fixed at the migration's, every role
-- may call it, no check of its argument. The roles 0006 (or an operator)
-- granted EXECUTE lose that grant, which PUBLIC's covers.
CREATE OR REPLACE FUNCTION "{{.Prefix}}_ready_table"(t text) RETURNS text
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
DO $do$
DECLARE
    r name;
BEGIN
    FOR r IN SELECT pg_get_userbyid(a.grantee)
        FROM pg_proc p, aclexplode(p.proacl) a
        WHERE p.oid = '"{{.Prefix}}_ready_table"(text)'::regprocedure AND a.grantee <> 0 AND a.grantee <> p.proowner
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION "{{.Prefix}}_ready_table"(text) FROM %I', r);
    END LOOP;
END
$do$;
--bun:split
GRANT EXECUTE ON FUNCTION "{{.Prefix}}_ready_table"(text) TO PUBLIC;
