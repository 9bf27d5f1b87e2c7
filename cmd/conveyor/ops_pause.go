package main

import (
	"github.com/conveyorgo/conveyor/pubsub/admin"
)

var pauseCmd = &opsCommand{
	name:    "pause",
	args:    "TOPIC",
	summary: "hold a subscription's messages back from every consumer",
	help: `Pauses the subscription of TOPIC (the default one, or -subscription): no consumer
in any process gets its messages until resume; enqueues go on and the messages
wait. The pause is kept by the backend and survives restarts. Pausing a paused
subscription does nothing. NATS (JetStream 2.9) cannot pause.
`,
	run: func(c *opsCall) error { return setPaused(c, true) },
}

var resumeCmd = &opsCommand{
	name:    "resume",
	args:    "TOPIC",
	summary: "let a paused subscription's messages go out again",
	help: `Resumes the subscription of TOPIC (the default one, or -subscription): its
consumers, in every process, get its messages again. Resuming a subscription
that is not paused does nothing.
`,
	run: func(c *opsCall) error { return setPaused(c, false) },
}

// setPaused pauses or resumes the command's subscription.
func setPaused(c *opsCall, pause bool) error {
	t, err := c.target()
	if err != nil {
		return err
	}
	defer t.Close()
	if pause {
		err = admin.Pause(c.ctx, t)
	} else {
		err = admin.Resume(c.ctx, t)
	}
	if err != nil {
		return err
	}
	if pause {
		return c.done(map[string]any{"paused": true}, "Paused %s: no consumer gets its messages until resume.\n", c.label())
	}
	return c.done(map[string]any{"paused": false}, "Resumed %s.\n", c.label())
}
