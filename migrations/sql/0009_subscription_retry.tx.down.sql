-- Refuses while a subscription has a retry policy of its own, which this
-- down migration would drop: its messages would then be retried with
-- each process's Options.Retry (see migrations.Down and
-- docs/design/migrations.md, "Down migrations"), unless
-- conveyor.force_down is on in the session.
DO $guard$
DECLARE
    n bigint;
BEGIN
    IF coalesce(current_setting('conveyor.force_down', true), '') <> 'on' THEN
        SELECT count(*) FROM "{{.Prefix}}_subscriptions" WHERE retry_max_attempts IS NOT NULL INTO n;
        IF n > 0 THEN
            RAISE EXCEPTION 'the message table {{.Prefix}} has % subscription(s) with a retry policy of their own, which this down migration (%) would drop; delete them or keep them (set conveyor.force_down = on, or migrations.WithForceDown, to run it anyway)', n, '0009_subscription_retry'
                USING ERRCODE = 'CVD01';
        END IF;
    END IF;
END
$guard$;
--bun:split
ALTER TABLE "{{.Prefix}}_subscriptions"
    DROP COLUMN IF EXISTS retry_max_attempts,
    DROP COLUMN IF EXISTS retry_min_backoff_ns,
    DROP COLUMN IF EXISTS retry_max_backoff_ns,
    DROP COLUMN IF EXISTS retry_jitter;
