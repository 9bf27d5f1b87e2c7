-- Paused queues are delivered again by the processes of 0007.
DROP INDEX IF EXISTS "{{.Prefix}}_died_idx";
--bun:split
DROP TABLE IF EXISTS "{{.Prefix}}_paused";
