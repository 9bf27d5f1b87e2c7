// Package dashboard is conveyor's web dashboard: an http.Handler that shows
// a PubSub's topics and messages and lets an operator repair them, on any
// backend, through the optional abilities of package pubsub.
//
// Pages (server-rendered with html/template; the style sheet is embedded,
// nothing is loaded from elsewhere, and no page needs JavaScript):
//
//   - the topics: each subscription's counts by state, the age of its
//     oldest ready message, whether it is paused, and a chart of its recent
//     acks per second and backlog;
//   - a subscription's messages in one state, a page at a time, with a
//     preview of their data, and a search by message id;
//   - a message: its attempts, times, last error, header, and data (shown
//     as indented JSON when it is JSON, as text when it is text, else as a
//     hex dump; the first MaxDataShown bytes);
//   - the actions: requeue or delete one dead message or all of them,
//     cancel a ready or scheduled message, pause and resume a subscription.
//
// Guarantees:
//
//   - Every action is a link to a confirmation page whose form POSTs it;
//     nothing changes on a GET. A POST is refused (403) from another site
//     (http.CrossOriginProtection) and without the form's token, an HMAC
//     of a random value in the browser's SameSite=Strict cookie under a
//     key made by New. Options.ReadOnly hides and refuses every action.
//   - Every value from the backend (data, header, errors, names) is HTML
//     escaped: a message holding <script> shows as that text.
//   - Each backend call is bounded by Options.Timeout; the pages' queries
//     are the backends' indexed inspection calls (a page of Peek, Stats),
//     never a scan of the messages. A backend without a Peeker (NATS,
//     Kafka) shows its dead messages only, from admin.ListDead (at most
//     admin.MaxPeekLimit); one without stats (Kafka) shows no counts.
//   - A topic or subscription not listed by the backend (or in
//     Options.Topics) is answered 404: a mistyped URL never creates one.
//   - The charts come from a sampler that reads each subscription's Stats
//     and admin.AckedSince every Options.SampleInterval, in the process
//     serving the dashboard; Close stops it.
//
// The dashboard can change every message of the backend: mount it behind
// the application's own authentication in production, or set ReadOnly. The
// template app binds to 127.0.0.1 by default and mounts it at /conveyor/:
//
//	d, err := dashboard.New(ps, dashboard.Options{Prefix: "/conveyor"})
//	if err != nil {
//		return err
//	}
//	defer d.Close()
//	mux.Handle("/conveyor/", requireAdmin(d))
package dashboard
