// Package pubsubtest is the conformance suite of the pubsub contract. Every
// backend's conformance test calls Run with a Harness that says how to make
// a fresh backend and which optional abilities it has:
//
//	func TestConformance(t *testing.T) {
//		pubsubtest.Run(t, pubsubtest.Harness{
//			New: func(t testing.TB, cfg pubsubtest.Config) pubsub.PubSub {
//				ps, err := mybackend.New(cfg.Retry, cfg.Lease, cfg.MaxDataSize)
//				if err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { ps.Close() })
//				return ps
//			},
//			Register: func(_ testing.TB, ctx context.Context) error { return mybackend.Register(ctx) },
//			Abilities: pubsubtest.AllMessageAbilities(), // what the backend offers, declared once
//		})
//	}
//
// The suite checks that the backend offers exactly the abilities declared.
// Wrap(h) runs it all again through the thinnest wrapping Topic, so that a
// backend's abilities are shown to survive middleware (pubsub.As).
//
// Subscriptions and the inbox have cases of their own (subscriptions.go):
// fan-out, the default subscription's rules, per-subscription settling
// and dead letters, deletion, names, claims. A publish in a transaction
// that rolls back must leave no copy in any subscription: the suite cannot
// make a transaction of the backend's store, so the backend's own tests
// check that. Message headers (headers.go) are checked on every enqueue
// the backend offers and on every kind of delivery: every backend must
// carry them. Pausing (pause.go) is checked per subscription, across
// handles, and on a durable or shared backend across PubSubs. Counting
// acks (ackcount.go) is checked per subscription, two seconds clear of the
// acks, since a backend may time them by its own clock.
//
// The cases run in parallel, each on its own backend. Timing cases use short
// leases and backoffs from Config; they assert lower bounds (a message must
// not come back before its backoff) and wait generously for what must
// happen, so a slow machine does not fail a correct backend. Cases for an
// ability the harness does not declare are skipped, and say so.
package pubsubtest
