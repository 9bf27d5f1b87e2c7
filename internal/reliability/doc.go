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
// docs/design/reliability.md lists the tests by the issue item each proves.
package reliability
