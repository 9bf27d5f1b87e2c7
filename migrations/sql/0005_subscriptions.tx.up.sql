-- Named subscriptions (fan-out) and the inbox. Each subscription of a
-- topic is a queue of its own in the message table and the ready tables:
-- the default subscription's queue is named like the topic, a named
-- subscription's is the topic's name, U+001F (which no topic name
-- contains) and the subscription's name. A publish writes one copy into
-- the queue of every subscription the topic has, or into the default
-- queue when it has none.
CREATE TABLE "{{.Prefix}}_subscriptions" (
    topic      text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    created_at timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, name)
);
--bun:split
-- Counts the changes of each topic's subscriptions: a publish checks, in
-- its own statement, that the subscriptions it writes copies for are those
-- of the version it read, and reads them again when they are not.
CREATE TABLE "{{.Prefix}}_fanout" (
    topic   text COLLATE "C" PRIMARY KEY,
    version bigint           NOT NULL
);
--bun:split
-- The keys claimed by the consumers of each queue (the idempotent
-- consumer), written in the consumer's transaction; pruned with the
-- finished rows' retention.
CREATE TABLE "{{.Prefix}}_inbox" (
    queue      text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    claimed_at timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, key)
);
--bun:split
CREATE INDEX "{{.Prefix}}_inbox_claimed_idx" ON "{{.Prefix}}_inbox" (claimed_at);
