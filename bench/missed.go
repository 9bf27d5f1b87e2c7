package main

import "strings"

// whyMissed says, for a target line that a run missed, where the time goes:
// the findings of the design records (docs/design/dbpubsub.md, "Speed on a
// durable server"; docs/event.md, "Speed"; docs/natspubsub.md), written by
// hand. A run that meets the target shows nothing of it. Keys are
// prefixes of Target.Goal.
var whyMissed = []struct{ goal, why string }{
	{"Kafka conveyor kafkapubsub, enqueue",
		"each Enqueue waits for the cluster's acknowledgement of its record, as the baseline's does; conveyor's side adds the engine's checks, a message ID and its header, and a context bounded by RequestTimeout and Close per call (a timer and an AfterFunc: a quarter of its CPU in a profile); kfake answers in the same process, so the client's CPU is taken from the cluster's (docs/kafkapubsub.md)"},
	{"Kafka conveyor kafkapubsub (consumer groups), enqueue",
		"as in share-group mode: each Enqueue waits for its acknowledgement, and adds the engine's checks, an ID and a timeout context per call"},
	{"Kafka conveyor kafkapubsub, drain",
		"every record is a delivery with a lease (a timer and a lock renewal ticker), an acknowledgement of its own and a poll sized to the Receives waiting; the baseline polls thousands of records at once and commits an offset, with no per-record state"},
	{"Kafka conveyor kafkapubsub (consumer groups), drain",
		"every record is a delivery with a lease and a settle tracked per partition (inflight.go); the baseline polls and commits with no per-record state"},
	{"Kafka conveyor kafkapubsub, fan-out", "a batch is a Kafka transaction (all or none): its begin, the partitions added to it and its commit are round trips the baseline's plain produce does not make; each of the 4 subscriptions' consumers settles every record on its own"},
	{"Kafka conveyor kafkapubsub (consumer groups), fan-out", "a batch is a Kafka transaction, as in share-group mode; each record is settled on its own and tracked per partition"},
	{"drain ≥ 1.5× the fastest peer",
		"every delivery costs a claim (a statement that moves ready rows into the message table: a delete and an insert, with their WAL) and an ack (grouped, asynchronous); the peers' drains write less per message"},
	{"single enqueue ≥ 4× River",
		"each Enqueue returns once its row is committed; concurrent calls share one INSERT and one commit (one statement in flight per topic handle, its leader waiting up to 50 µs for the last statement's callers: ~7.7 rows a statement with 8 producers), so the rate is about group size / (WAL flush + statement), and this machine's commit rate swings 2-3× between minutes (pgbench -N in the same run)"},
	{"single enqueue ≥ 1.5× watermill-sql",
		"an Enqueue waits for a commit, grouped with the concurrent ones (~7.7 rows a statement with 8 producers); watermill-sql's INSERTs, side by side, share WAL flushes through PostgreSQL's own group commit"},
	{"single enqueue ≥ 0.9× baseline",
		"an Enqueue waits for its commit, grouped with the concurrent ones into one INSERT; the baseline's producers commit one row each, side by side"},
	{"batch enqueue ≥ 0.9× baseline",
		"a row of the ready table costs a primary key entry and id allocation in blocks; the baseline's table has a bigserial only"},
	{"latency p50", "a message waits for its enqueue's commit and WAL flush, then a claim's round trip, before the handler runs"},
	{"latency p99",
		"a flushed commit (the enqueue) and a claim per message on a 2-core machine shared by client and server: a commit that waits behind a checkpoint or another process's flush makes the tail; the p99 of the 10 s run moves by more than the margin between runs"},
	{"backlog drains with flat memory", "see the backlog section below"},
	{"fan-out to",
		"a publish writes one row per subscription and each copy is claimed and acked on its own (docs/design/dbpubsub.md, \"Copies per subscription, not a log and cursors\"); watermill-sql's consumer groups read one log with an offset each"},
	{"fan-out, one producer of batches: publish",
		"a publish writes one row per subscription, into each one's queue (4 or 16 rows a message); a plain topic writes one"},
	{"events on dbpubsub",
		"the server's statements are the bound: in pg_stat_statements, per event ~10 WAL records, 5 of them the claim's (it locks and deletes the ready row and inserts it into the message table), 3.6 the ack's (never a HOT update), 2 the enqueue's; claims take the most server time, 5-9 rows each, one after each enqueue commit; a producer's own waiting consumers could take its rows in the enqueue statement, saving the claim and the move (not built; docs/design/dbpubsub.md, \"Where the server's time goes in the events scenario\")"},
	{"events on channelpubsub",
		"JSON work and its garbage: 8 allocations, 912 B per event (BenchmarkDispatchHandle) against the baseline's few, and about twice the baseline's CPU per event; what is left is mostly JSON (marshal, the envelope's validating pass, the listener's decoder), channelpubsub's bookkeeping (~12% of the CPU), the metadata context and garbage collection; alternated runs of the third round gave 0.48-0.64× the baseline, the machine's load moving the ratio more than the round did (docs/event.md, \"Speed\")"},
	{"channelpubsub round trip", "a message is an entry with an id, a lease and a settle, where the raw channel moves a slice"},
	{"OTel cost at 1% sampling",
		"a message not sampled still costs, in the SDK, two span starts and ends (the sampler's decision and a non-recording span each: ~24% of the instrumented round trip's CPU in a profile of BenchmarkRoundTrip/otel_1pct) and two histogram records (the attribute set resolved and the bucket found each time: ~17%); then its traceparent formatted into a header on send (~17%) and parsed on delivery (~9%), four context values and the garbage of all that; spans' attributes are no longer copied for a span not sampled, nor the ctx searched for an exemplar (docs/observability.md)"},
	{"OTel overhead: channelpubsub round trip instrumented ≥ 0.7× uninstrumented, at 1% sampling",
		"a message not sampled still gets its two spans started and ended (non-recording, after the sampler's decision), its traceparent written and read, two histograms recorded and its trace context carried through HandlingContext: ~1.7-2.0 µs a message in BenchmarkRoundTrip/otel_1pct at GOMAXPROCS=1 (15 allocations, 1.3 kB), of which the SDK's own share (BenchmarkSDKFloor: two spans, the trace context written and read, two durations) is ~1.1-1.2 µs; one in a hundred costs a sampled pair as on the line above. The plain round trip costs ~0.3 µs a message, so 0.7× leaves ~0.15 µs for all of it"},
	{"OTel overhead: dbpubsub drain instrumented ≥ 0.9× uninstrumented, at 1% sampling",
		"a delivery not sampled still gets its process span started and ended (non-recording), its traceparent header decoded and parsed, and its counter and histogram recorded; the client shares the 2 cores with the PostgreSQL server, so its CPU comes out of the server's"},
	{"OTel overhead: channelpubsub round trip",
		"every message is sampled: its send and process spans and two measurements cost ~5 µs per message in BenchmarkRoundTrip/otel at GOMAXPROCS=1 (otelconveyor) where the plain round trip costs ~0.3 µs (2 allocations, 224 B); its CPU profile: the SDK's two span starts 23% (ids, sampler, attribute copies), their ends 14%, SetAttributes 12%, the two histograms 7%, writing and reading the traceparent 7%, malloc 21% and GC 12%, channelpubsub 10%. 0.7× leaves ~0.2 µs per message, less than one sampled span costs"},
	{"OTel overhead: dbpubsub drain",
		"each delivery gets a sampled process span and three measurements: in the harness's CPU profile of the drain (-cpuprofile, 5 repetitions of each), the consumer goroutines' CPU per message goes from 1.1 µs to 9.6 µs, the span's start and end most of it, and the whole client process's CPU (with the untimed prefill) from 1.3 s to 3.3 s; the client shares the 2 cores with the PostgreSQL server, so that time comes out of the server's"},
	{"NATS enqueue ≥ 1.5× watermill-nats",
		"both publish one message and wait for its PubAck: the server's acknowledgement round trip bounds both alike"},
	{"NATS drain ≥ 0.8× the nats.go baseline",
		"one fetch at a time (a pull of up to 256 messages, 1.3-2.5 ms each, back to back; the server deals the messages of concurrent pulls out in turn, so a second one in flight needs a merge by consumer sequence to keep one consumer's order: not built), and about twice the baseline's client CPU per message (a delivery with a lease, handed from the fetch to a Dequeue) on 2 cores the server shares; the baseline's 8 goroutines each Fetch(100) and ack what they got (docs/natspubsub.md, \"Where a drain's time goes\")"},
	{"NATS drain ≥ 1.5× watermill-nats",
		"one fetch at a time, as on the line above; watermill-benchmark's configuration runs W push consumers with asynchronous acks, which the server feeds without pull requests"},
	{"SQLite drain ≥ 1.5× River on SQLite",
		"at synchronous=FULL each commit waits for an fsync of the WAL; a consumer's claim and its ack are two commits, each shared with the other consumers' (group commit), so W consumers drain about W / (2 × fsync time); River tuned claims up to hundreds of jobs a fetch for its 2,000 workers and completes them in batches, after Work returns (docs/design/sqlitepubsub.md, \"Speed\")"},
	{"SQLite drain ≥ 1× the hand-written loop",
		"the loop's claim and delete are one statement each on one connection; sqlitepubsub's group commit needs concurrent consumers to share a commit"},
	{"SQLite enqueue ≥ 1.5× River on SQLite",
		"an Enqueue returns once committed (an fsync at FULL), grouped with the concurrent ones of the process"},
	{"SQLite latency p99",
		"at synchronous=FULL a message waits for two fsyncs of the WAL (its enqueue's commit, its claim's) on a disk shared with the other sessions of this machine; the tail is the disk's"},
	{"SQLite backlog", "see the backlog section below"},
	{"NATS batch enqueue ≥ 0.8× the nats.go baseline",
		"both publish every item asynchronously and then wait for the PubAcks; conveyor's items each carry a message ID header and a copy of the payload, and the batch runs in a goroutine bounded by RequestTimeout and Close, so that the caller returns by its ctx"},
	{"NATS fan-out delivered ≥ 0.8× the nats.go baseline",
		"the publish is pipelined now; delivery is the bound, as on drain: each Dequeue is handed one message from a background fetch and each Ack is a message of its own, on 4 subscriptions at once"},
	{"NATS enqueue ≥ 0.8× the nats.go baseline",
		"both publish asynchronously and wait for the PubAck; an Enqueue adds the engine's checks, a message ID in its header, a goroutine for the publish (a socket that stops taking writes must not hold the caller past its ctx) and a context bounded by RequestTimeout and Close (a timer and an AfterFunc)"},
}

// why returns whyMissed's entry for goal, or "".
func why(goal string) string {
	for _, w := range whyMissed {
		if strings.HasPrefix(goal, w.goal) {
			return w.why
		}
	}
	return ""
}
