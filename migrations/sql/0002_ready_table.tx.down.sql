-- Moves the ready rows back into the message table as pending rows.
INSERT INTO {{.Table}} (id, topic, data, run_at, created_at) OVERRIDING SYSTEM VALUE
    SELECT id, topic, data, created_at, created_at FROM "{{.Prefix}}_ready";
--bun:split
DROP VIEW IF EXISTS "{{.Prefix}}_all";
--bun:split
DROP TABLE IF EXISTS "{{.Prefix}}_ready";
