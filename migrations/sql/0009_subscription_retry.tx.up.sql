-- Per-subscription retry policies (pubsub.SubscribeWith): a subscription
-- made with a policy of its own keeps it here, for every process on the
-- database; NULL columns (a subscription made on first use, or before
-- this migration) mean each process's own Options.Retry. The rescue reads
-- retry_max_attempts by the primary key to make a message dead when the
-- lease of its last attempt runs out.
ALTER TABLE "{{.Prefix}}_subscriptions"
    ADD COLUMN retry_max_attempts   integer CHECK (retry_max_attempts > 0),
    ADD COLUMN retry_min_backoff_ns bigint  CHECK (retry_min_backoff_ns > 0),
    ADD COLUMN retry_max_backoff_ns bigint  CHECK (retry_max_backoff_ns > 0),
    ADD COLUMN retry_jitter         double precision CHECK (retry_jitter <= 1);
