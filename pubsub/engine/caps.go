package engine

import (
	"github.com/conveyorgo/conveyor/pubsub"
	"github.com/conveyorgo/conveyor/pubsub/admin"
	"github.com/conveyorgo/conveyor/pubsub/driver"
)

// caps are the optional capabilities a handle found on its store's topic
// and subscription, nil where the store lacks one.
type caps struct {
	features driver.Features
	batch    driver.BatchPublisher
	pipeline driver.PipelinePublisher
	dead     driver.DeadLetters
	stats    driver.Stater
	peek     driver.Peeker
	cancel   driver.Canceler
	delDead  driver.DeadDeleter
	pause    driver.Pauser
	acks     driver.AckCounter
	inbox    driver.Inbox
	slots    driver.SlotReceiver
	release  driver.Releaser
}

func findCaps(f driver.Features, dt driver.Topic, ds driver.Subscription) caps {
	c := caps{features: f}
	c.batch, _ = dt.(driver.BatchPublisher)
	c.pipeline, _ = dt.(driver.PipelinePublisher)
	c.dead, _ = ds.(driver.DeadLetters)
	c.stats, _ = ds.(driver.Stater)
	c.peek, _ = ds.(driver.Peeker)
	c.cancel, _ = ds.(driver.Canceler)
	c.delDead, _ = ds.(driver.DeadDeleter)
	c.pause, _ = ds.(driver.Pauser)
	c.acks, _ = ds.(driver.AckCounter)
	c.inbox, _ = ds.(driver.Inbox)
	c.slots, _ = ds.(driver.SlotReceiver)
	c.release, _ = ds.(driver.Releaser)
	return c
}

// has reports whether the handle has the optional ability whose interface
// type is given as a nil pointer (see wrap.Forwarder). An ability the
// engine gives every handle, or one it does not know, is had.
func (c *caps) has(ability any) bool {
	switch ability.(type) {
	case *pubsub.Delayer:
		return c.features.Has(driver.Delay)
	case *pubsub.UniqueEnqueuer:
		return c.features.Has(driver.Unique)
	case *pubsub.BatchEnqueuer:
		return c.batch != nil
	case *pubsub.PipelinedEnqueuer:
		return c.pipeline != nil
	case *admin.DeadLetters:
		return c.dead != nil
	case *admin.Stater:
		return c.stats != nil
	case *admin.Peeker:
		return c.peek != nil
	case *admin.Canceler:
		return c.cancel != nil
	case *admin.DeadDeleter:
		return c.delDead != nil
	case *admin.Pauser:
		return c.pause != nil
	case *admin.AckCounter:
		return c.acks != nil
	case *pubsub.Inbox:
		return c.inbox != nil
	}
	return true
}
