// Package admin is what an operator's tools call on a running conveyor
// deployment: look at a subscription's messages without delivering them,
// cancel one, list, re-queue and purge dead letters, count messages and
// recent acks, pause a subscription, hold every consumer of a PubSub still
// (the quiesce gate), and list and delete topics' subscriptions. The
// dashboard (package dashboard) and the conveyor command (cmd/conveyor)
// are built on it; an application's own code needs package pubsub only.
//
// # The model
//
// Each call takes a pubsub.Topic handle (or a pubsub.PubSub) of any
// backend and acts on the subscription the handle reads: the default one
// for PubSub.Topic(name), a named one for a handle from pubsub.Subscribe.
// It finds the backend's optional ability (Peeker, Canceler, DeadLetters,
// Stater, Pauser, AckCounter, Quiescer, TopicLister) through wrappers with
// pubsub.As, and returns an error wrapping pubsub.ErrUnsupported where the
// backend lacks it; pubsubtest.Abilities says which backend has which.
//
// A message asked for by ID that the subscription does not keep in the
// state the call applies to wraps ErrNotFound; an ID that cannot be one of
// the backend's ErrInvalidID; Cancel of a leased or dead message
// ErrWrongState; a Peek cursor of another state ErrInvalidCursor. Match
// them with errors.Is.
//
// A peek is a snapshot in pages (PeekOptions, PeekPage): messages that
// change state between pages may be skipped or listed twice, a queue at
// rest is listed whole. Pause is kept by the store, for every process of
// a shared backend; Quiesce holds the consumers of this PubSub value only.
//
// # Example
//
//	t := ps.Topic("orders")
//	dead, err := admin.ListDead(ctx, t, 10)
//	for _, d := range dead {
//		fmt.Println(d.ID, d.Attempts, d.LastError)
//	}
//	n, err := admin.RequeueAllDead(ctx, t) // after the fix is deployed
//
//	page, err := admin.Peek(ctx, t, admin.PeekOptions{State: admin.StateScheduled})
//	for _, m := range page.Messages {
//		fmt.Println(m.ID, m.RunAt, string(m.Preview))
//	}
package admin
