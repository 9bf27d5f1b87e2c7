// Package reliability holds conveyor's fault, bad-input and shutdown tests
// (tracker issue 7). It has no code of its own: everything is in its
// _test.go files, which drive the public API of pubsub, channelpubsub,
// dbpubsub, event, di and migrations the way an application would.
//
// Every fault test counts each message it enqueued and logs one line
//
//	RESULT fault="…" messages=N acked=A dead=D lost=L duplicates=U
//
// failing when L (enqueued − acked − dead) is not 0. Duplicates are
// deliveries beyond the first (allowed by at-least-once delivery) and are
// counted, not failed.
//
// The tests, by the item of issue 7 they prove:
//
//  1. TestConsumerCrash: consumer processes draining 20,000 messages are
//     SIGKILLed at random moments and restarted.
//  2. TestConnectionLoss: pg_terminate_backend kills the consumers' pooled
//     and LISTEN connections every 200 ms during a drain of 10,000.
//  3. TestDatabaseRestart: pg_ctl restart -m fast of a cluster the test
//     owns, while producers enqueue and consumers drain 3,000.
//  4. TestProducerCancellation, TestEnqueueCanceledMidStatement,
//     TestAckCanceledMidStatement, TestConsumerCancellation,
//     TestBatchAllOrNoneOnFullTopic: contexts ending at random points, and
//     at the worst ones (mid-statement, a batch waiting for room).
//  5. TestStaleSettle: late Ack, Nack and ExtendLease of a delivery whose
//     lease ran out.
//  6. TestShutdownUnderLoad: event.Service.Run canceled with 1,000 events in
//     flight, then a restarted Service; TestCloseWithDeliveriesInHand.
//  7. The tests above that apply run on channelpubsub too, and on dbpubsub
//     with Options.ConfirmAck as well as its default acks (eachBackend),
//     and TestNackAccounting checks nacks and dead letters on both. Tests
//     1, 2 and 3 and TestSilentConnections run in both ack modes
//     (eachAckMode): with ConfirmAck a message acked twice fails them; by
//     default it is a counted duplicate (an ack queued when the fault hit).
//
// TestSilentConnections (issue 21, item 1): a TCP proxy the test owns
// silences every connection of a consumer's PubSub while new ones work;
// consumption resumes once the stalled statements pass StatementTimeout.
// TestCloseOnFrozenServer (item 2): with every connection silenced, new
// ones too, Close returns after CloseTimeout and Shutdown when its ctx
// ends, and the Enqueue in flight fails with pubsub.ErrClosed.
//
// Issue 30: TestAckStorm (item 3) counts the messages handled twice with
// the default acks while pg_terminate_backend kills the consumers'
// connections every 100-250 ms (at most 1%: queued acks cut off are
// written again); TestSettleOnFrozenServer (item 2) checks that Nack,
// Fail, Reject, ExtendLease and Ack with ConfirmAck return by their ctx's
// deadline on a frozen server.
//
// TestBadInput is the table of bad inputs (topic names, data, messages,
// topics, events, di, migrations).
//
// On NATS JetStream (natspubsub, nats_*_test.go): TestNatsSharedSubscription
// (three consumer processes on one named subscription ack every message
// exactly once), TestNatsConsumerCrash (item 1: ten SIGKILLs and restarts),
// TestNatsServerRestart (item 3: a server the test owns, started with
// nats-server from PATH or /usr/sbin, restarted in lame duck mode twice,
// every call bounded by its ctx) and TestNatsBadInput (the shared cases and
// NATS's own). TestNatsSilentConnection (issue 30, item 11: the proxy of
// proxy_test.go silences the open connection to a server the test owns;
// Enqueue and Dequeue succeed again, on Connect's connection and on a
// caller's with nats.go's default pings) and
// TestNatsEnqueueDeadlineOnPartition (item 12: the proxy stops reading,
// the socket buffers fill under producers of ~1 MB messages; every Enqueue
// returns by its ctx's deadline and works again after). They use $NATS_URL
// (scripts/with-nats.sh) and a stream prefix of their own, or a server of
// their own.
//
// The tests need PostgreSQL, as every database test of the module does:
// run them with `make test` or
//
//	scripts/with-postgres.sh go test -race ./internal/reliability/
//
// The database-restart test starts a throwaway cluster of its own with
// initdb and pg_ctl (from PATH or /usr/lib/postgresql/*/bin; Debian and
// Ubuntu: apt-get install postgresql), and fails, never skips, without them.
//
// The consumer-crash, shared-subscription and concurrent-migration tests
// run copies of the test binary as child processes (see TestMain): each
// child is told its role by the environment variable RELIABILITY_CHILD.
package reliability
