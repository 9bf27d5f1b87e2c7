package dbpubsub_test

import "github.com/conveyorgo/conveyor/dbpubsub/dbpubsubtest"

var (
	newStore  = dbpubsubtest.NewStore
	newPubSub = dbpubsubtest.New
	openDB    = dbpubsubtest.OpenDB
)
