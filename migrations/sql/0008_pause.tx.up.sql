-- The paused queues (pubsub.Pauser): a queue named here (see 0005) is
-- paused, and no claim takes its messages until its row is deleted. The
-- claim looks its queue up by the primary key, once per statement.
CREATE TABLE "{{.Prefix}}_paused" (
    queue     text COLLATE "C" PRIMARY KEY,
    paused_at timestamptz      NOT NULL DEFAULT now()
);
--bun:split
-- Every claim reads the table, so the roles that may use the message
-- table get the same privileges on it (a role granted them later needs
-- them on <table>_paused too).
DO $do$
DECLARE
    s text := current_schema();
    g record;
BEGIN
    FOR g IN SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS who,
            a.privilege_type AS what
        FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
        WHERE c.oid = format('%I.%I', s, '{{.Prefix}}')::regclass AND a.grantee <> c.relowner
            AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE')
    LOOP
        EXECUTE format('GRANT %s ON %I.%I TO %s', g.what, s, '{{.Prefix}}_paused', g.who);
    END LOOP;
END
$do$;
--bun:split
-- Serves pruning of dead rows past their retention (the dead_idx of 0001
-- leads with the topic).
CREATE INDEX "{{.Prefix}}_died_idx" ON {{.Table}} (finished_at) WHERE status = 'dead';
