-- The copies of named subscriptions stay in the message table and the
-- ready tables, in queues no process reads any more.
DROP TABLE IF EXISTS "{{.Prefix}}_inbox";
--bun:split
DROP TABLE IF EXISTS "{{.Prefix}}_fanout";
--bun:split
DROP TABLE IF EXISTS "{{.Prefix}}_subscriptions";
