package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/internal/natstest"
	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// fixture is a migrated schema holding, on topic "orders": a dead message
// (rejected), two ready ones (the first with a header) and a scheduled
// one; on topic "events", with subscriptions "audit" and "mail", one
// message each; on topic "work", a message being processed.
type fixture struct {
	env                    env
	dead, ready1, ready2   string // the IDs on orders
	scheduled, auditCopyID string
	processing             string // on work
}

const (
	deadData   = `{"order":7,"qty":-1}`
	ready1Data = `{"order":8}`
	ready2Data = "line one\nline two"
	deadReason = "qty must be positive"
)

func newFixture(t *testing.T) fixture {
	t.Helper()
	dsn, db := pgtest.NewSchema(t)
	ctx := context.Background()
	if err := migrations.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	ps, err := dbpubsub.New(db, dbpubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	f := fixture{env: env{vars: map[string]string{"DATABASE_URL": dsn}}}
	orders := ps.Topic("orders")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(orders.Enqueue(ctx, []byte(deadData)))
	m, err := orders.Dequeue(ctx)
	must(err)
	f.dead = m.ID()
	must(pubsub.Reject(ctx, m, errors.New(deadReason)))
	must(orders.Enqueue(pubsub.WithHeader(ctx, pubsub.Header{"traceparent": "00-abc-01"}), []byte(ready1Data)))
	must(orders.Enqueue(ctx, []byte(ready2Data)))
	must(pubsub.EnqueueDelayed(ctx, orders, []byte("later"), time.Hour))
	page, err := admin.Peek(ctx, orders, admin.PeekOptions{State: admin.StateReady})
	must(err)
	if len(page.Messages) != 2 {
		t.Fatalf("the fixture has %d ready messages, want 2", len(page.Messages))
	}
	f.ready1, f.ready2 = page.Messages[0].ID, page.Messages[1].ID
	page, err = admin.Peek(ctx, orders, admin.PeekOptions{State: admin.StateScheduled})
	must(err)
	f.scheduled = page.Messages[0].ID

	audit, err := pubsub.Subscribe(ctx, ps, "events", "audit")
	must(err)
	_, err = pubsub.Subscribe(ctx, ps, "events", "mail")
	must(err)
	must(ps.Topic("events").Enqueue(ctx, []byte("signed up")))
	page, err = admin.Peek(ctx, audit, admin.PeekOptions{State: admin.StateReady})
	must(err)
	f.auditCopyID = page.Messages[0].ID

	work := ps.Topic("work")
	must(work.Enqueue(ctx, []byte("slow job")))
	m, err = work.Dequeue(ctx) // never settled: processing until its lease (30s) ends
	must(err)
	f.processing = m.ID()
	return f
}

// columns aligns rows as the commands' tables do: each column but the last
// padded to its widest cell and two spaces.
func columns(rows ...[]string) string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i < len(r)-1 {
				c += strings.Repeat(" ", widths[i]-len([]rune(c))+2)
			}
			b.WriteString(c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

var (
	timeRE = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	ageRE  = regexp.MustCompile(`(?m)  [0-9.]+(µs|ms|s|m[0-9]+s|h[0-9]+m)$`)
)

// normalize replaces the times and ages of a command's output, which vary.
func normalize(s string) string {
	s = timeRE.ReplaceAllString(s, "YYYY-MM-DD hh:mm:ss")
	return ageRE.ReplaceAllString(s, "  AGE")
}

const anyTime = "YYYY-MM-DD hh:mm:ss"

// TestOpsPostgres runs the commands that change nothing, and the refusals
// of those that would, against one fixture.
func TestOpsPostgres(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	noTerminal := f.env
	bothBackends := env{vars: map[string]string{"DATABASE_URL": f.env.vars["DATABASE_URL"], "NATS_URL": "nats://127.0.0.1:4222"}}
	cases := []struct {
		name   string
		env    env
		args   []string
		code   int
		stdout string   // exact, after normalize; "" to not check
		stderr []string // fragments
	}{
		{"Topics", f.env, []string{"topics"}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTIONS"}, []string{"events", "audit,mail"}, []string{"orders", "default"},
			[]string{"work", "default"}), nil},
		{"StatsTopic", f.env, []string{"stats", "orders"}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTION", "READY", "SCHEDULED", "PROCESSING", "DEAD", "OLDEST READY"},
			[]string{"orders", "default", "2", "1", "0", "1", "AGE"}), nil},
		{"StatsAll", f.env, []string{"stats"}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTION", "READY", "SCHEDULED", "PROCESSING", "DEAD", "OLDEST READY"},
			[]string{"events", "audit", "1", "0", "0", "0", "AGE"},
			[]string{"events", "mail", "1", "0", "0", "0", "AGE"},
			[]string{"orders", "default", "2", "1", "0", "1", "AGE"},
			[]string{"work", "default", "0", "0", "1", "0", "-"}), nil},
		{"StatsSubscription", f.env, []string{"stats", "events", "--subscription", "mail"}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTION", "READY", "SCHEDULED", "PROCESSING", "DEAD", "OLDEST READY"},
			[]string{"events", "mail", "1", "0", "0", "0", "AGE"}), nil},
		{"PeekReady", f.env, []string{"peek", "orders"}, 0, columns(
			[]string{"ID", "ATTEMPTS", "RUN AT", "SIZE", "DATA", "LAST ERROR"},
			[]string{f.ready1, "0", anyTime, "11", `"{\"order\":8}"`, "-"},
			[]string{f.ready2, "0", anyTime, "17", `"line one\nline two"`, "-"}), nil},
		{"PeekDead", f.env, []string{"peek", "orders", "--state", "dead"}, 0, columns(
			[]string{"ID", "ATTEMPTS", "DIED AT", "SIZE", "DATA", "LAST ERROR"},
			[]string{f.dead, "1", anyTime, "20", `"{\"order\":7,\"qty\":-1}"`, `"qty must be positive"`}), nil},
		{"PeekLimit", f.env, []string{"peek", "-limit", "1", "orders"}, 0, columns(
			[]string{"ID", "ATTEMPTS", "RUN AT", "SIZE", "DATA", "LAST ERROR"},
			[]string{f.ready1, "0", anyTime, "11", `"{\"order\":8}"`, "-"}),
			[]string{"More: conveyor peek orders --state ready --limit 1 --after "}},
		{"PeekProcessing", f.env, []string{"peek", "work", "--state", "processing"}, 0, columns(
			[]string{"ID", "ATTEMPTS", "LEASE UNTIL", "SIZE", "DATA", "LAST ERROR"},
			[]string{f.processing, "1", anyTime, "8", `"slow job"`, "-"}), nil},
		{"PeekSubscription", f.env, []string{"peek", "events", "--subscription", "audit"}, 0, columns(
			[]string{"ID", "ATTEMPTS", "RUN AT", "SIZE", "DATA", "LAST ERROR"},
			[]string{f.auditCopyID, "0", anyTime, "9", `"signed up"`, "-"}), nil},
		{"Show", f.env, []string{"show", "orders", f.dead}, 0, fmt.Sprintf(`ID:          %s
State:       dead
Attempts:    1
Died at:     %s
Created at:  %s
Last error:  "qty must be positive"
Size:        20 bytes
Data:
{
  "order": 7,
  "qty": -1
}
`, f.dead, anyTime, anyTime), nil},
		{"ShowHeader", f.env, []string{"show", "orders", f.ready1}, 0, fmt.Sprintf(`ID:                    %s
State:                 ready
Attempts:              0
Run at:                %s
Created at:            %s
Header "traceparent":  "00-abc-01"
Size:                  11 bytes
Data:
{
  "order": 8
}
`, f.ready1, anyTime, anyTime), nil},
		{"ShowText", f.env, []string{"show", "orders", f.ready2}, 0, fmt.Sprintf(`ID:          %s
State:       ready
Attempts:    0
Run at:      %s
Created at:  %s
Size:        17 bytes
Data:
line one
line two
`, f.ready2, anyTime, anyTime), nil},

		// Bad input.
		{"NoBackend", env{}, []string{"topics"}, 2, "", []string{"no backend: pass --database-url (or set $DATABASE_URL)", "--nats-url"}},
		{"TwoBackends", bothBackends, []string{"stats"}, 2, "", []string{"pick one backend"}},
		{"UnknownTopic", f.env, []string{"peek", "nosuch"}, 3, "",
			[]string{"conveyor peek: unknown topic \"nosuch\" (conveyor topics lists them)\n"}},
		{"UnknownTopicStats", f.env, []string{"stats", "nosuch"}, 3, "", []string{`unknown topic "nosuch"`}},
		{"UnknownSubscription", f.env, []string{"show", "events", "1", "--subscription", "nope"}, 3, "",
			[]string{`unknown subscription "nope" of topic "events" (conveyor topics lists them)`}},
		{"BadTopicName", f.env, []string{"stats", " orders"}, 2, "", []string{"invalid topic name", "conveyor help stats"}},
		{"MalformedID", f.env, []string{"show", "orders", "abc"}, 2, "",
			[]string{"conveyor show: ", `invalid message ID "abc"`, "'conveyor peek TOPIC' lists the messages' IDs."}},
		{"MalformedIDRequeue", f.env, []string{"requeue", "orders", "abc"}, 2, "", []string{`invalid message ID "abc"`}},
		{"NoSuchMessage", f.env, []string{"show", "orders", "987654"}, 3, "", []string{"message not found"}},
		{"NoSuchDead", f.env, []string{"purge", "orders", "987654", "--yes"}, 3, "",
			[]string{`no message 987654 in topic "orders"`, "conveyor peek orders --state dead"}},
		{"BadState", f.env, []string{"peek", "orders", "--state", "done"}, 2, "", []string{`-state "done"`}},
		{"BadLimit", f.env, []string{"peek", "orders", "--limit", "0"}, 2, "", []string{"-limit 0"}},
		{"UnknownFlag", f.env, []string{"topics", "--force"}, 2, "", []string{"-force", "conveyor help topics"}},
		{"MissingTopic", f.env, []string{"peek"}, 2, "", []string{"missing arguments: want TOPIC"}},
		{"TooManyArgs", f.env, []string{"show", "orders", "1", "2"}, 2, "", []string{"too many arguments"}},
		{"RequeueNoID", f.env, []string{"requeue", "orders"}, 2, "", []string{"missing ID: give a message ID, or --all"}},
		{"RequeueIDAndAll", f.env, []string{"requeue", "orders", f.dead, "--all"}, 2, "", []string{"not both"}},
		{"RequeueReady", f.env, []string{"requeue", "orders", f.ready1}, 4, "",
			[]string{fmt.Sprintf(`message %s of topic "orders" is ready: requeue applies to dead messages`, f.ready1)}},
		{"CancelDead", f.env, []string{"cancel", "orders", f.dead, "--yes"}, 4, "",
			[]string{"is dead: cancel applies to ready or scheduled messages", "conveyor purge TOPIC ID"}},
		{"CancelProcessing", f.env, []string{"cancel", "work", f.processing, "--yes"}, 4, "",
			[]string{"is processing: cancel applies to ready or scheduled messages", "It is leased to a consumer"}},
		{"CancelNotConfirmed", noTerminal, []string{"cancel", "orders", f.ready1}, 4, "",
			[]string{"not confirmed: stdin is not a terminal; pass --yes to cancel without asking"}},
		{"PurgeNotConfirmed", noTerminal, []string{"purge", "orders", "--all-dead"}, 4, "", []string{"pass --yes"}},
		{"AnsweredNo", env{vars: f.env.vars, terminal: true, stdin: strings.NewReader("no\n")},
			[]string{"purge", "orders", f.dead}, 4, "", []string{"Type yes to go on", "not confirmed: nothing was changed"}},
		{"MigrateNATS", env{vars: map[string]string{"NATS_URL": "nats://127.0.0.1:4222"}}, []string{"migrate"}, 2, "",
			[]string{"migrate applies to PostgreSQL only"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCmd(t, c.env, c.args...)
			if code != c.code {
				t.Errorf("conveyor %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, out, errs)
			}
			if c.code == 0 && c.stdout != "" {
				if got := normalize(out); got != c.stdout {
					t.Errorf("conveyor %s: stdout\n%s\nwant\n%s", strings.Join(c.args, " "), got, c.stdout)
				}
			}
			if c.code != 0 && out != "" {
				t.Errorf("conveyor %s failed and wrote to stdout: %q", strings.Join(c.args, " "), out)
			}
			for _, w := range c.stderr {
				if !strings.Contains(errs, w) {
					t.Errorf("conveyor %s: stderr %q does not say %q", strings.Join(c.args, " "), errs, w)
				}
			}
		})
	}

	// Nothing was changed by the refusals.
	code, out, _ := runCmd(t, f.env, "stats", "orders", "--json")
	var stats []jsonStats
	if err := json.Unmarshal([]byte(out), &stats); code != 0 || err != nil || len(stats) != 1 {
		t.Fatalf("stats --json: exit %d, %v: %s", code, err, out)
	}
	if s := stats[0]; s.Ready != 2 || s.Scheduled != 1 || s.Dead != 1 || s.OldestReadySeconds <= 0 {
		t.Errorf("stats after the refusals: %+v", s)
	}
}

// TestOpsJSON checks the --json documents.
func TestOpsJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	decode := func(v any, args ...string) {
		t.Helper()
		code, out, errs := runCmd(t, f.env, append(args, "--json")...)
		if code != 0 {
			t.Fatalf("conveyor %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil || dec.More() {
			t.Fatalf("conveyor %s --json: not one document (%v):\n%s", strings.Join(args, " "), err, out)
		}
	}
	var topics []jsonTopic
	decode(&topics, "topics")
	if len(topics) != 3 || topics[0].Name != "events" || strings.Join(topics[0].Subscriptions, ",") != "audit,mail" || topics[1].Name != "orders" {
		t.Errorf("topics --json: %+v", topics)
	}

	var page jsonPage
	decode(&page, "peek", "orders", "--state", "scheduled")
	if len(page.Messages) != 1 || page.Next != "" {
		t.Fatalf("peek --state scheduled --json: %+v", page)
	}
	m := page.Messages[0]
	if m.ID != f.scheduled || m.State != "scheduled" || m.Size != 5 || m.Data == nil || *m.Data != "later" ||
		m.RunAt == nil || time.Until(*m.RunAt) < 59*time.Minute || m.Truncated {
		t.Errorf("peek --state scheduled --json: %+v", m)
	}

	var shown jsonMessage
	decode(&shown, "show", "orders", f.dead)
	if shown.ID != f.dead || shown.State != "dead" || shown.Attempts != 1 || shown.LastError != deadReason ||
		shown.Data == nil || *shown.Data != deadData || shown.CreatedAt == nil {
		t.Errorf("show --json: %+v", shown)
	}
}

// TestOpsRepair runs the commands that change messages, each on a fixture
// of its own, and checks what they changed.
func TestOpsRepair(t *testing.T) {
	t.Parallel()
	type step struct {
		args   []string
		stdin  string // answered at a terminal, when not ""
		code   int
		stdout string
	}
	cases := []struct {
		name  string
		steps func(f fixture) []step
		stats [4]int64 // ready, scheduled, processing, dead of orders afterwards
	}{
		{"RequeueOne", func(f fixture) []step {
			return []step{{[]string{"requeue", "orders", f.dead}, "", 0, fmt.Sprintf("Re-queued dead message %s of topic \"orders\".\n", f.dead)}}
		}, [4]int64{3, 1, 0, 0}},
		{"RequeueAll", func(f fixture) []step {
			return []step{{[]string{"requeue", "orders", "--all", "--yes"}, "", 0, "Re-queued 1 dead messages of topic \"orders\".\n"}}
		}, [4]int64{3, 1, 0, 0}},
		{"RequeueAllConfirmed", func(f fixture) []step {
			return []step{{[]string{"requeue", "--all", "orders"}, "yes\n", 0, "Re-queued 1 dead messages of topic \"orders\".\n"}}
		}, [4]int64{3, 1, 0, 0}},
		{"PurgeOne", func(f fixture) []step {
			return []step{
				{[]string{"purge", "orders", f.dead, "--yes"}, "", 0, fmt.Sprintf("Deleted dead message %s of topic \"orders\".\n", f.dead)},
				{[]string{"show", "orders", f.dead}, "", 3, ""},
			}
		}, [4]int64{2, 1, 0, 0}},
		{"PurgeAllJSON", func(f fixture) []step {
			return []step{{[]string{"purge", "orders", "--all-dead", "--yes", "--json"}, "", 0, "{\n  \"deleted\": 1\n}\n"}}
		}, [4]int64{2, 1, 0, 0}},
		{"CancelReady", func(f fixture) []step {
			return []step{{[]string{"cancel", "orders", f.ready1}, "yes\n", 0, fmt.Sprintf("Canceled message %s of topic \"orders\".\n", f.ready1)}}
		}, [4]int64{1, 1, 0, 1}},
		{"CancelScheduled", func(f fixture) []step {
			return []step{{[]string{"cancel", "orders", f.scheduled, "--yes"}, "", 0, fmt.Sprintf("Canceled message %s of topic \"orders\".\n", f.scheduled)}}
		}, [4]int64{2, 0, 0, 1}},
		{"CancelSubscriptionCopy", func(f fixture) []step {
			return []step{
				{[]string{"cancel", "events", f.auditCopyID, "--subscription", "audit", "--yes"}, "", 0,
					fmt.Sprintf("Canceled message %s of topic \"events\" (subscription \"audit\").\n", f.auditCopyID)},
				{[]string{"show", "events", f.auditCopyID, "--subscription", "audit"}, "", 3, ""},
			}
		}, [4]int64{2, 1, 0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			for _, s := range c.steps(f) {
				e := f.env
				if s.stdin != "" {
					e.terminal, e.stdin = true, strings.NewReader(s.stdin)
				}
				code, out, errs := runCmd(t, e, s.args...)
				if code != s.code || s.stdout != "" && out != s.stdout {
					t.Fatalf("conveyor %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q",
						strings.Join(s.args, " "), code, out, errs, s.code, s.stdout)
				}
			}
			code, out, errs := runCmd(t, f.env, "stats", "orders", "--json")
			var stats []jsonStats
			if err := json.Unmarshal([]byte(out), &stats); code != 0 || err != nil || len(stats) != 1 {
				t.Fatalf("stats --json: exit %d, %v: %s%s", code, err, out, errs)
			}
			s := stats[0]
			if got := [4]int64{s.Ready, s.Scheduled, s.Processing, s.Dead}; got != c.stats {
				t.Errorf("orders afterwards: ready, scheduled, processing, dead = %v, want %v", got, c.stats)
			}
		})
	}
}

// TestOpsNotMigrated runs a command on a schema without dbpubsub's tables,
// then migrates it with the migrate command.
func TestOpsNotMigrated(t *testing.T) {
	t.Parallel()
	dsn, _ := pgtest.NewSchema(t)
	e := env{vars: map[string]string{"DATABASE_URL": dsn}}
	code, out, errs := runCmd(t, e, "stats", "orders")
	if code != 1 || out != "" || !strings.Contains(errs, `the message table "conveyor_events" is missing`) ||
		!strings.Contains(errs, "Run 'conveyor migrate' (with the same --database-url and --table) to bring the schema up to date.") {
		t.Errorf("stats on a schema not migrated: exit %d, stdout %q, stderr %q; want exit 1 and the hint", code, out, errs)
	}
	code, out, errs = runCmd(t, e, "migrate", "--table", "jobs")
	if code != 0 || out != "Table \"jobs\" is up to date.\n" {
		t.Fatalf("migrate: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = runCmd(t, e, "topics")
	if code != 1 || !strings.Contains(errs, "conveyor migrate") {
		t.Errorf("topics on the default table after migrating another: exit %d, stderr %q", code, errs)
	}
	code, out, errs = runCmd(t, e, "topics", "--table", "jobs")
	if code != 0 || out != "TOPIC  SUBSCRIPTIONS\n" {
		t.Errorf("topics --table jobs: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runCmd(t, e, "migrate", "--table", "Bad-Name")
	if code != 2 || out != "" || !strings.Contains(errs, `--table "Bad-Name"`) {
		t.Errorf("migrate --table Bad-Name: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestOpsNATS runs the commands natspubsub offers the abilities of: stats,
// peek of dead messages (through DeadLetters), requeue, purge.
func TestOpsNATS(t *testing.T) {
	t.Parallel()
	url := natstest.URL(t)
	prefix := natstest.Prefix(t, url)
	ctx := context.Background()
	ps, err := natspubsub.Connect(url, natspubsub.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	orders := ps.Topic("orders")
	if err := orders.Enqueue(pubsub.WithHeader(ctx, pubsub.Header{"tenant": "acme"}), []byte(deadData)); err != nil {
		t.Fatal(err)
	}
	m, err := orders.Dequeue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dead := m.ID()
	if err := pubsub.Reject(ctx, m, errors.New(deadReason)); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	// A PubSub that never consumed, so that no message is leased.
	ps, err = natspubsub.Connect(url, natspubsub.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Topic("orders").Enqueue(ctx, []byte(ready1Data)); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}

	e := env{vars: map[string]string{"NATS_URL": url}}
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"Stats", []string{"stats", "orders"}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTION", "READY", "SCHEDULED", "PROCESSING", "DEAD", "OLDEST READY"},
			[]string{"orders", "default", "1", "0", "0", "1", "AGE"}), nil},
		{"PeekDead", []string{"peek", "orders", "--state", "dead"}, 0, columns(
			[]string{"ID", "ATTEMPTS", "DIED AT", "SIZE", "DATA", "LAST ERROR"},
			[]string{dead, "1", anyTime, "20", `"{\"order\":7,\"qty\":-1}"`, `"qty must be positive"`}), nil},
		{"PeekReady", []string{"peek", "orders"}, 1, "", []string{"not supported by this backend"}},
		{"Pause", []string{"pause", "orders"}, 1, "", []string{"not supported by this backend"}},
		{"Topics", []string{"topics"}, 0, columns(
			[]string{"TOPIC", "SUBSCRIPTIONS"},
			[]string{"orders", "default"}), nil},
		{"UnknownTopic", []string{"stats", "nosuch"}, 3, "", []string{`unknown topic "nosuch" (conveyor topics lists them)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCmd(t, e, append(c.args, "--prefix", prefix)...)
			if code != c.code {
				t.Errorf("conveyor %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, c.code, out, errs)
			}
			if c.code == 0 {
				if got := normalize(out); got != c.stdout {
					t.Errorf("conveyor %s: stdout\n%s\nwant\n%s", strings.Join(c.args, " "), got, c.stdout)
				}
			}
			for _, w := range c.stderr {
				if !strings.Contains(errs, w) {
					t.Errorf("conveyor %s: stderr %q does not say %q", strings.Join(c.args, " "), errs, w)
				}
			}
		})
	}
	// The dead message's header comes through ListDead.
	code, out, errs := runCmd(t, e, "peek", "orders", "--state", "dead", "--json", "--prefix", prefix)
	if code != 0 || !strings.Contains(out, `"tenant": "acme"`) {
		t.Errorf("peek --state dead --json on NATS: exit %d, stdout %q (want the header), stderr %q", code, out, errs)
	}
	code, out, errs = runCmd(t, e, "requeue", "orders", dead, "--prefix", prefix)
	if code != 0 || out != fmt.Sprintf("Re-queued dead message %s of topic \"orders\".\n", dead) {
		t.Errorf("requeue on NATS: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = runCmd(t, e, "stats", "orders", "--json", "--prefix", prefix)
	if code != 0 || !strings.Contains(out, `"ready": 2,`) || !strings.Contains(out, `"dead": 0,`) {
		t.Errorf("stats on NATS after the requeue: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
