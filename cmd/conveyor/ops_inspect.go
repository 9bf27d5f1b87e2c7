package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/conveyorgo/conveyor/internal/timefmt"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The commands that look without changing anything: topics, stats, peek,
// show.

var topicsCmd = &opsCommand{
	name:    "topics",
	summary: "list the topics and their subscriptions",
	help: `Lists the topics the backend keeps, with their subscriptions (a topic without
any keeps its messages for its default subscription).
`,
	run: runTopics,
}

func runTopics(c *opsCall) error {
	ts, err := admin.ListTopics(c.ctx, c.ps)
	if err != nil {
		return err
	}
	if c.json {
		out := make([]jsonTopic, len(ts))
		for i, t := range ts {
			out[i] = jsonTopic{Name: t.Name, Subscriptions: t.Subscriptions}
		}
		return writeJSON(c.stdout, out)
	}
	tw := newTable(c.stdout, "TOPIC", "SUBSCRIPTIONS")
	for _, t := range ts {
		subs := strings.Join(t.Subscriptions, ",")
		if subs == "" {
			subs = "-"
		}
		tw.row(t.Name, subs)
	}
	return tw.flush()
}

var statsCmd = &opsCommand{
	name:    "stats",
	args:    "[TOPIC]",
	summary: "count the messages of each state",
	help: `Counts the messages of TOPIC (of every topic without one) by state, for each of
its subscriptions (the one of --subscription when given), with how long the
oldest ready message has waited.
`,
	run: runStats,
}

func runStats(c *opsCall) error {
	var topics []string
	if len(c.args) == 1 {
		topics = c.args
	} else {
		ts, err := admin.ListTopics(c.ctx, c.ps)
		if err != nil {
			return fmt.Errorf("%w (name a TOPIC)", err)
		}
		for _, t := range ts {
			topics = append(topics, t.Name)
		}
	}
	var rows []jsonStats
	for _, topic := range topics {
		subs, err := c.subscriptionsOf(topic)
		var nf *cliError
		if len(c.args) == 0 && errors.As(err, &nf) && nf.code == exitNotFound {
			continue // --subscription: a topic without it
		}
		if err != nil {
			return err
		}
		for _, sub := range subs {
			t, err := c.topic(topic, sub)
			if err != nil {
				return err
			}
			s, err := admin.TopicStats(c.ctx, t)
			t.Close()
			if err != nil {
				return err
			}
			rows = append(rows, jsonStats{Topic: topic, Subscription: sub, Ready: s.Ready, Scheduled: s.Scheduled,
				Processing: s.Processing, Dead: s.Dead, OldestReadySeconds: s.OldestReady.Seconds()})
		}
	}
	if c.json {
		if rows == nil {
			rows = []jsonStats{}
		}
		return writeJSON(c.stdout, rows)
	}
	tw := newTable(c.stdout, "TOPIC", "SUBSCRIPTION", "READY", "SCHEDULED", "PROCESSING", "DEAD", "OLDEST READY")
	for _, r := range rows {
		tw.row(r.Topic, r.Subscription, r.Ready, r.Scheduled, r.Processing, r.Dead,
			timefmt.Age(time.Duration(r.OldestReadySeconds*float64(time.Second))))
	}
	return tw.flush()
}

var peekCmd = &opsCommand{
	name:     "peek",
	args:     "TOPIC",
	synopsis: "TOPIC [-state S] [-limit N]",
	summary:  "list messages in a state without taking them",
	help: `Lists the messages of TOPIC in a state, without delivering them, in the
backend's order (ready: the order of delivery; dead: oldest death first),
with a preview of their data. When there are more, the command that lists
the next page is printed on stderr.

Flags:
  -state S     ready (default), scheduled, processing or dead
  -limit N     the most messages to list (default 50, at most 1000)
  -after C     list the page after cursor C (printed with the previous page)
`,
	flags: func(fs *flag.FlagSet) {
		fs.String("state", string(admin.StateReady), "")
		fs.Int("limit", admin.DefaultPeekLimit, "")
		fs.String("after", "", "")
	},
	run: runPeek,
}

func runPeek(c *opsCall) error {
	state := admin.MessageState(c.flag("state"))
	if !state.Valid() {
		return usageErrorf("-state %q: want ready, scheduled, processing or dead", state)
	}
	var limit int
	if _, err := fmt.Sscan(c.flag("limit"), &limit); err != nil || limit <= 0 {
		return usageErrorf("-limit %s: want a number of messages, 1 or more", c.flag("limit"))
	}
	t, err := c.target()
	if err != nil {
		return err
	}
	defer t.Close()
	page, err := admin.Peek(c.ctx, t, admin.PeekOptions{State: state, Limit: limit, After: c.flag("after")})
	if err != nil {
		return err
	}
	if c.json {
		out := jsonPage{Messages: make([]jsonMessage, len(page.Messages)), Next: page.Next}
		for i, m := range page.Messages {
			out.Messages[i] = newJSONMessage(m, nil)
		}
		return writeJSON(c.stdout, out)
	}
	tw := newTable(c.stdout, "ID", "ATTEMPTS", timeColumn(state), "SIZE", "DATA", "LAST ERROR")
	for _, m := range page.Messages {
		tw.row(m.ID, m.Attempts, formatTime(m.RunAt), m.Size, preview(m.Preview, m.Size), preview([]byte(m.LastError), len(m.LastError)))
	}
	if err := tw.flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(c.stderr, "More: conveyor peek %s --state %s --limit %d --after %s\n", c.args[0], state, limit, page.Next)
	}
	return nil
}

// timeColumn names a peeked state's MessageInfo.RunAt.
func timeColumn(s admin.MessageState) string {
	switch s {
	case admin.StateProcessing:
		return "LEASE UNTIL"
	case admin.StateDead:
		return "DIED AT"
	}
	return "RUN AT"
}

var showCmd = &opsCommand{
	name:    "show",
	args:    "TOPIC ID",
	summary: "print one message whole",
	help: `Prints the message ID of TOPIC (ready, scheduled, processing or dead) with its
whole data: indented when it is JSON, as text when it is printable, else as a
hex dump.
`,
	run: runShow,
}

func runShow(c *opsCall) error {
	t, err := c.target()
	if err != nil {
		return err
	}
	defer t.Close()
	info, data, err := admin.GetMessage(c.ctx, t, c.args[1])
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, newJSONMessage(info, data))
	}
	writeMessage(c.stdout, info, data)
	return nil
}

// flag returns the value of the command's flag name as given.
func (c *opsCall) flag(name string) string { return c.flags[name] }
