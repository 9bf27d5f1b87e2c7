-- Back to one id per nextval. The block the next nextval would hand out
-- is taken first and left unused, so that no id of a block already handed
-- out is handed out again. Stop the processes that run dbpubsub at 0004 or
-- later before this: they keep filling blocks.
SELECT nextval(pg_get_serial_sequence('{{.Table}}', 'id'));
--bun:split
ALTER TABLE {{.Table}} ALTER COLUMN id SET INCREMENT BY 1;
