// Package logkeys is the slog key convention of every conveyor package:
// one name per thing logged, the same in each package, so that an
// operator filters every log line of a topic, a message or an event with
// one query. Its test fails on a key of a log call that is not listed
// here; add a new key here, with its meaning, and to
// docs/observability.md.
package logkeys

// Keys are the log keys and what each holds.
var Keys = map[string]string{
	"error":           "the error that made the record (an error value)",
	"topic":           "the topic's name",
	"subscription":    "the subscription's name",
	"message_id":      "the backend's id of a message (a string)",
	"attempt":         "a delivery's number: 1 on the first delivery",
	"event_id":        "an event's CloudEvents id",
	"event_type":      "an event's CloudEvents type",
	"listener":        "the name of an event listener",
	"took":            "how long the work logged took (a duration)",
	"wait":            "how long the logger waits before it tries again (a duration)",
	"panic":           "the value a recovered panic carried",
	"stack":           "the goroutine's stack at a recovered panic",
	"schedule":        "the name of a scheduled event",
	"tick":            "the time of a schedule's tick",
	"next":            "the time of a schedule's next tick",
	"from":            "where a relay reads (a topic or a URL)",
	"to":              "where a relay writes",
	"relay":           "a relay's name",
	"published":       "how many messages a relay published",
	"drain_timeout":   "how long a stopping service lets the work in hand finish",
	"channels":        "the LISTEN channels of dbpubsub's listener",
	"count":           "how many messages the work logged concerns",
	"table":           "a PostgreSQL table (dbpubsub)",
	"stream":          "a JetStream stream (natspubsub)",
	"relayed":         "how many messages a relay command relayed",
	"duplicates":      "how many messages a relay command found already relayed",
	"rejected":        "how many messages a relay command made dead in the source",
	"failed":          "how many messages failed and will be retried",
	"unique":          "whether a relay publishes with unique enqueue (the destination drops a second copy) or plainly (the consumers' inbox does)",
	"trace_id":        "the trace of the span the record was logged in (otelconveyor.LogHandler)",
	"span_id":         "the span the record was logged in (otelconveyor.LogHandler)",
	"action":          "an operator's action done from the dashboard (requeue, purge, cancel, pause...)",
	"page":            "a dashboard page (its template's name)",
	"server":          "the server a connection is to (natspubsub, its URL without credentials)",
	"request_timeout": "the deadline of each request to the server (natspubsub's Options.RequestTimeout)",
	"duplicate":       "whether the server found the message already stored (a bool)",
}
