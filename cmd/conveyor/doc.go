// Command conveyor starts new conveyor apps.
//
//	go run github.com/conveyorgo/conveyor/cmd/conveyor new example.com/shop ./shop
//	go install github.com/conveyorgo/conveyor/cmd/conveyor@latest
//
// `conveyor new` writes a standalone app from conveyor's template (an HTTP
// service with events, listeners with injected dependencies, a periodic
// event, and the in-memory or PostgreSQL backend): its module path and
// imports rewritten, a go.mod requiring conveyor and a go.sum. Run
// `conveyor help new` for the details.
package main
