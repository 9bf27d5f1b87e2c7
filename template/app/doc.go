// Command app is a small shop built on conveyor: POST /orders dispatches an
// event that listeners handle in the background, a sales report is
// dispatched periodically, and GET /stats shows what was handled.
//
// Run it with `go run .`; configure it with environment variables (see
// Config): CONVEYOR_BACKEND=db with DATABASE_URL keeps the events in
// PostgreSQL instead of memory. SIGINT or SIGTERM stops it cleanly: it stops
// taking orders, finishes the work in flight and exits 0.
package main
