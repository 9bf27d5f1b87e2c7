-- Ids are handed out in blocks of 1024: each nextval of the message
-- table's sequence reserves the ids from the value it returns up to 1023
-- above it, and dbpubsub gives the rows of a batch of up to 1024 messages
-- the ids of one block (its first id plus the row's position) instead of
-- calling nextval for each row, which cost PostgreSQL 15 about 1,400 of the
-- ~16,300 instructions of inserting a row into a topic's ready table. Ids
-- stay unique and follow the order in which statements take their blocks,
-- as they followed the order of their nextval calls; they are no longer
-- dense. Every other insert still takes one nextval, so one id of a block.
ALTER TABLE {{.Table}} ALTER COLUMN id SET INCREMENT BY 1024;
