// Command conveyor starts new conveyor apps and operates their messages.
//
//	go install github.com/conveyorgo/conveyor/cmd/conveyor@latest
//	conveyor new example.com/shop ./shop
//
// Without installing it, or from a conveyor checkout:
//
//	go run github.com/conveyorgo/conveyor/cmd/conveyor@latest new example.com/shop ./shop
//	go run ./cmd/conveyor new example.com/shop ../shop
//
// The app's directory must be outside every Go module's tree, the
// checkout's included.
//
// `conveyor new` writes a standalone app from conveyor's template (an HTTP
// service with events, listeners with injected dependencies, a periodic
// event, and the in-memory or PostgreSQL backend): its module path and
// imports rewritten, a go.mod requiring conveyor and a go.sum. Run
// `conveyor help new` for the details.
//
// # Operating
//
// The operator's commands look at and repair the messages an app keeps, on
// PostgreSQL (-database-url or $DATABASE_URL, -table), NATS (-nats-url or
// $NATS_URL, -prefix), a SQLite file (-sqlite) or Kafka (-kafka-brokers or
// $KAFKA_BROKERS, -prefix; dead messages only, no stats); the in-memory
// backend lives inside its app's process, out of reach of a command:
//
//	conveyor migrate                  create or update dbpubsub's tables
//	conveyor migrate -grant ROLE      ...and grant ROLE what an app needs, owning nothing
//	conveyor migrate -down [-force]   revert the newest migration (refused while messages wait)
//	conveyor topics                   list the topics and their subscriptions
//	conveyor stats [TOPIC]            count the messages of each state
//	conveyor peek TOPIC [-state S]    list messages in a state (-limit N, -after CURSOR)
//	conveyor show TOPIC ID            print one message whole
//	conveyor requeue TOPIC ID|-all    make dead messages ready again
//	conveyor purge TOPIC ID|-all-dead delete dead messages for good
//	conveyor cancel TOPIC ID          delete a ready or scheduled message undelivered
//	conveyor pause|resume TOPIC       hold back a subscription's messages, or let them go
//
// Each acts on the topic's default subscription, or on -subscription NAME
// (stats without it: on every subscription). Output is an aligned table,
// or one JSON document with -json. Commands that delete, and requeue -all,
// ask to type yes when stdin is a terminal, and refuse without -yes when it
// is not. A topic is checked against the backend's list of topics first, so
// a mistyped name is an error, never a new topic (on a backend that cannot
// list its topics, an unknown topic would look empty).
//
// Exit codes:
//
//	0  done
//	1  the operation failed: the backend's error, or a schema not migrated
//	   (run conveyor migrate)
//	2  usage error: bad flags or arguments, a malformed message ID
//	3  not found: unknown topic, subscription or message
//	4  refused: not confirmed, or the message is in a state the command
//	   does not apply to (cancel of a dead message, requeue of a ready one)
package main
