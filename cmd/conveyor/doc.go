// Command conveyor starts new conveyor apps.
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
package main
