package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

// The commands that change messages: requeue, purge, cancel. Those that
// delete, and requeue --all, ask for confirmation first (confirm).

var requeueCmd = &opsCommand{
	name:        "requeue",
	args:        "TOPIC [ID]",
	synopsis:    "TOPIC ID|-all",
	summary:     "make a dead message (or all, --all) ready again",
	destructive: true,
	help: `Makes the dead message ID of TOPIC ready again, with a fresh attempt count;
with --all, every dead message of TOPIC (after confirmation).

Flags:
  -all         re-queue every dead message
`,
	flags: func(fs *flag.FlagSet) { fs.Bool("all", false, "") },
	run: deadAction{
		allFlag: "all", done: "Re-queued", jsonKey: "requeued",
		askAll: "Re-queue every dead message of %s?",
		// One message: re-queuing undoes its death, not asked about.
		one: admin.RequeueDead, all: admin.RequeueAllDead,
	}.run,
}

var purgeCmd = &opsCommand{
	name:        "purge",
	args:        "TOPIC [ID]",
	synopsis:    "TOPIC ID|-all-dead",
	summary:     "delete a dead message (or all, --all-dead) for good",
	destructive: true,
	help: `Deletes the dead message ID of TOPIC for good; with --all-dead, every dead
message of TOPIC. Asks for confirmation.

Flags:
  -all-dead    delete every dead message
`,
	flags: func(fs *flag.FlagSet) { fs.Bool("all-dead", false, "") },
	run: deadAction{
		allFlag: "all-dead", done: "Deleted", jsonKey: "deleted",
		askAll: "Delete every dead message of %s for good?",
		askOne: "Delete dead message %s of %s for good?",
		one:    admin.DeleteDead, all: admin.PurgeDead,
	}.run,
}

// deadAction is what requeue and purge do to the dead messages of the
// target: to one, by ID, or to all of them with a flag.
type deadAction struct {
	allFlag string // the flag that acts on all
	done    string // the verb that says it was done
	jsonKey string // the key of the ID or count in the JSON document
	askAll  string // the question asked before acting on all (%s: the target)
	askOne  string // the question asked before acting on one (%s: the ID, the target); "": none
	one     func(ctx context.Context, t pubsub.Topic, id string) error
	all     func(ctx context.Context, t pubsub.Topic) (int, error)
}

func (a deadAction) run(c *opsCall) error {
	all := c.flag(a.allFlag) == "true"
	switch {
	case all && len(c.args) == 2:
		return usageErrorf("give an ID or --%s, not both", a.allFlag)
	case !all && len(c.args) < 2:
		return usageErrorf("missing ID: give a message ID, or --%s", a.allFlag)
	}
	t, err := c.target()
	if err != nil {
		return err
	}
	defer t.Close()
	if all {
		if err := c.confirm(fmt.Sprintf(a.askAll, c.label())); err != nil {
			return err
		}
		n, err := a.all(c.ctx, t)
		if err != nil {
			return err
		}
		return c.done(map[string]int{a.jsonKey: n}, "%s %d dead messages of %s.\n", a.done, n, c.label())
	}
	id := c.args[1]
	if err := c.checkState(t, id, admin.StateDead); err != nil {
		return err
	}
	if a.askOne != "" {
		if err := c.confirm(fmt.Sprintf(a.askOne, id, c.label())); err != nil {
			return err
		}
	}
	if err := a.one(c.ctx, t, id); err != nil {
		return err
	}
	return c.done(map[string]string{a.jsonKey: id}, "%s dead message %s of %s.\n", a.done, id, c.label())
}

var cancelCmd = &opsCommand{
	name:        "cancel",
	args:        "TOPIC ID",
	summary:     "delete a ready or scheduled message undelivered",
	destructive: true,
	help: `Deletes the ready or scheduled message ID of TOPIC: it is never delivered (to
this subscription). A message being processed cannot be canceled; a dead one
is deleted by purge. Asks for confirmation.
`,
	run: runCancel,
}

func runCancel(c *opsCall) error {
	t, err := c.target()
	if err != nil {
		return err
	}
	defer t.Close()
	id := c.args[1]
	if err := c.checkState(t, id, admin.StateReady, admin.StateScheduled); err != nil {
		return err
	}
	if err := c.confirm(fmt.Sprintf("Cancel message %s of %s (it will never be delivered)?", id, c.label())); err != nil {
		return err
	}
	if err := admin.Cancel(c.ctx, t, id); err != nil {
		return err
	}
	return c.done(map[string]string{"canceled": id}, "Canceled message %s of %s.\n", id, c.label())
}

// checkState looks message id up and returns the error saying it is not
// in one of the states, so that the command acts on it knowingly. Without
// a Peeker (NATS) it leaves the check to the action.
func (c *opsCall) checkState(t pubsub.Topic, id string, states ...admin.MessageState) error {
	info, _, err := admin.GetMessage(c.ctx, t, id)
	switch {
	case errors.Is(err, pubsub.ErrUnsupported):
		return nil
	case errors.Is(err, admin.ErrNotFound):
		return &cliError{code: exitNotFound, err: fmt.Errorf("no message %s in %s", id, c.label()),
			hint: "'conveyor peek " + c.args[0] + " --state " + string(states[0]) + "' lists them; an acked message is gone."}
	case err != nil:
		return err
	}
	for _, s := range states {
		if info.State == s {
			return nil
		}
	}
	want := make([]string, len(states))
	for i, s := range states {
		want[i] = string(s)
	}
	return &cliError{code: exitRefused, err: fmt.Errorf("message %s of %s is %s: %s applies to %s messages",
		id, c.label(), info.State, c.cmd.name, strings.Join(want, " or ")), hint: stateHint(c.cmd.name, info.State)}
}

// stateHint says what to do with a message in state s instead of cmd.
func stateHint(cmd string, s admin.MessageState) string {
	switch {
	case s == admin.StateDead && cmd == "cancel":
		return "'conveyor purge TOPIC ID' deletes a dead message."
	case s == admin.StateProcessing:
		return "It is leased to a consumer: wait for it to be settled or for its lease to run out."
	}
	return ""
}

// confirm asks the person at the terminal to type yes, unless --yes. When
// stdin is not a terminal it refuses: nobody can answer.
func (c *opsCall) confirm(question string) error {
	if c.yes {
		return nil
	}
	if !c.e.terminal || c.e.stdin == nil {
		return refusedErrorf("not confirmed: stdin is not a terminal; pass --yes to %s without asking", c.cmd.name)
	}
	fmt.Fprintf(c.stderr, "%s Type yes to go on: ", question)
	line, err := bufio.NewReader(c.e.stdin).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		if err != nil && line == "" {
			fmt.Fprintln(c.stderr)
		}
		return refusedErrorf("not confirmed: nothing was changed")
	}
	return nil
}

// done prints the outcome of a change: v as JSON with --json, else the
// sentence.
func (c *opsCall) done(v any, format string, a ...any) error {
	if c.json {
		return writeJSON(c.stdout, v)
	}
	_, err := fmt.Fprintf(c.stdout, format, a...)
	return err
}
